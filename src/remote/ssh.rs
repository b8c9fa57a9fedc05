//! ssh, one connection per host: ssh's own multiplexing (`ControlMaster`)
//! with its socket in tmux-wait's private directory, kept a minute after
//! its last use; `BatchMode`, so a password is never asked of nobody.
//! Every child ssh is owned by a [`Guard`] that ends it, also on a panic,
//! and dies with the thread that started it (Linux).

use super::host::Host;
use crate::error::{Error, Kind, Result};
use crate::tmux::protocol::{quote, quote_words};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Seconds ssh gives a connection to be made.
pub const CONNECT_TIMEOUT: u32 = 10;

/// How the helper is found on a host: its `PATH`, then `~/.local/bin`
/// (where `tmux-wait remote install` puts it; ssh's non-interactive
/// shells rarely have it on `PATH`).
const FIND_HELPER: &str = "PATH=\"$PATH:$HOME/.local/bin\"; export PATH;";

/// This build's version, the oldest a host may run.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// ssh with the options every call shares.
#[derive(Debug, Clone)]
pub struct Ssh {
    config: Option<PathBuf>,
    dir: PathBuf,
}

/// A child process that is ended (SIGTERM, then reaped) when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // SAFETY: a signal to our own child, not yet reaped.
            unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        }
        let _ = self.0.wait();
    }
}

/// What a host said before anything ran there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// `uname -sm`: `Linux x86_64`.
    pub uname: String,
    /// `tmux-wait --version`'s version, if there is one.
    pub version: Option<String>,
}

impl Ssh {
    /// `config`: an ssh config file for every call (`-F`), else ssh's own.
    pub fn new(config: Option<PathBuf>) -> Result<Ssh> {
        if let Some(c) = &config
            && !c.is_file()
        {
            return Err(Error::usage(format!(
                "--ssh-config {}: no such file",
                c.display()
            )));
        }
        let dir = crate::state::user_dir("ssh")?;
        Ok(Ssh { config, dir })
    }

    /// The master connection's socket for `host`: a hash of its spec and
    /// the config file, so that one host has one connection.
    pub fn control_path(&self, host: &Host) -> PathBuf {
        let mut key = host.spec.clone().into_bytes();
        key.push(0);
        if let Some(c) = &self.config {
            key.extend(c.as_os_str().as_encoded_bytes());
        }
        self.dir.join(format!("{:016x}", fnv1a(&key)))
    }

    fn options(&self, host: &Host) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        if let Some(c) = &self.config {
            v.push("-F".into());
            v.push(c.into());
        }
        let path = self.control_path(host).to_string_lossy().replace('%', "%%");
        for o in [
            "ControlMaster=auto".to_owned(),
            format!("ControlPath=\"{path}\""),
            "ControlPersist=60".to_owned(),
            "BatchMode=yes".to_owned(),
            format!("ConnectTimeout={CONNECT_TIMEOUT}"),
            "ServerAliveInterval=10".to_owned(),
            "ServerAliveCountMax=3".to_owned(),
        ] {
            v.push("-o".into());
            v.push(o.into());
        }
        v
    }

    /// `ssh [-t] OPTIONS -- DEST REMOTE`: `remote` is a command line for
    /// the host's shell, already quoted.
    pub fn command(&self, host: &Host, remote: &str, tty: bool) -> Command {
        let mut c = Command::new("ssh");
        if tty {
            c.arg("-t");
        }
        c.args(self.options(host))
            .arg("--")
            .arg(host.destination())
            .arg(remote);
        c
    }

    /// The words of `ssh -t ... DEST REMOTE`, for a tmux window's shell.
    pub fn interactive_words(&self, host: &Host, remote: &str) -> Vec<String> {
        let mut v = vec!["ssh".to_owned(), "-t".to_owned()];
        v.extend(
            self.options(host)
                .into_iter()
                .map(|o| o.to_string_lossy().into_owned()),
        );
        v.extend(["--".to_owned(), host.destination(), remote.to_owned()]);
        v
    }

    /// Run `tmux-wait ARGS` on the host (its socket's `-L`/`-S` first):
    /// the command, its output piped, owned by a guard. With `stdin_open`
    /// its stdin is a pipe kept open: when this process ends, the remote
    /// command's input ends too.
    pub fn spawn_helper(&self, host: &Host, args: &[String], stdin_open: bool) -> Result<Guard> {
        let mut words = host.socket_args();
        words.extend(args.iter().cloned());
        let remote = helper_line(&words);
        let mut c = self.command(host, &remote, false);
        c.stdin(if stdin_open {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        crate::tmux::die_with_parent(&mut c);
        c.spawn()
            .map(Guard)
            .map_err(|e| Error::io("cannot run ssh", e))
    }

    /// Reach the host (making its connection, one at a time per host) and
    /// ask what it is and which tmux-wait it runs.
    pub fn preflight(&self, host: &Host) -> Result<Remote> {
        let _lock = self.lock(host)?;
        let script = format!(
            "{FIND_HELPER} uname -sm; if command -v tmux-wait >/dev/null 2>&1; then tmux-wait --version 2>&1 | head -n 1; else echo 'tmux-wait: none'; fi"
        );
        let out = self.output(host, &format!("sh -c {}", quote(&script)))?;
        let mut lines = out.lines();
        let uname = lines.next().unwrap_or("").trim().to_owned();
        let version = lines
            .next()
            .and_then(|l| l.trim().strip_prefix("tmux-wait "))
            .filter(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit()))
            .map(str::to_owned);
        Ok(Remote { uname, version })
    }

    /// Run `remote` on the host and return its stdout; ssh's failure (or
    /// the command's) as an error with ssh's own last words.
    pub fn output(&self, host: &Host, remote: &str) -> Result<String> {
        self.run(host, remote, None)
    }

    /// [`output`](Self::output), with the bytes of `input` (a file here)
    /// as the remote command's stdin, through the same connection: how a
    /// file is copied there, with no sftp or scp on the host.
    pub fn output_with_input(&self, host: &Host, remote: &str, input: &Path) -> Result<String> {
        self.run(host, remote, Some(input))
    }

    fn run(&self, host: &Host, remote: &str, input: Option<&Path>) -> Result<String> {
        let file = input
            .map(std::fs::File::open)
            .transpose()
            .map_err(|e| Error::io("cannot read the file to copy", e))?;
        let mut c = self.command(host, remote, false);
        c.stdin(if file.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        crate::tmux::die_with_parent(&mut c);
        let mut g = Guard(c.spawn().map_err(|e| Error::io("cannot run ssh", e))?);
        // (Written beside the readers: a command that answers before it
        // has read everything must not stall the copy, nor the copy it.
        // Its end closes the remote command's stdin.)
        let writer = match (file, g.0.stdin.take()) {
            (Some(mut f), Some(mut to)) => Some(std::thread::spawn(move || {
                std::io::copy(&mut f, &mut to).map(|_| ())
            })),
            _ => None,
        };
        let (mut out, mut err) = (String::new(), String::new());
        let stderr = g.0.stderr.take();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut e) = stderr {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        if let Some(mut o) = g.0.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        if let Ok(e) = reader.join() {
            err = e;
        }
        let status =
            g.0.wait()
                .map_err(|e| Error::io("cannot wait for ssh", e))?;
        // (A copy cut short shows in the check there; ssh's failure
        // below says more than a broken pipe here.)
        let _ = writer.map(std::thread::JoinHandle::join);
        match status.code() {
            Some(0) => Ok(out),
            Some(255) | None => Err(unreachable(host, &err)),
            Some(n) => Err(Error::new(
                Kind::Tmux,
                format!(
                    "{}: the command failed (exit {n}): {}",
                    host.spec,
                    last_words(&err)
                ),
            )),
        }
    }

    /// The host's lock, held while its connection is made: two processes
    /// that find no connection make one, not two. The file goes with the
    /// lock (a lock taken on a file already gone is taken again).
    fn lock(&self, host: &Host) -> Result<HostLock> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        let mut path = self.control_path(host).into_os_string();
        path.push(".lock");
        let path = PathBuf::from(path);
        let failed = |e| Error::io("cannot lock the ssh connection", e);
        loop {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
                .map_err(failed)?;
            // SAFETY: flock on a descriptor we own; EINTR is retried.
            while unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    return Err(failed(e));
                }
            }
            let same = match (f.metadata(), std::fs::symlink_metadata(&path)) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if same {
                return Ok(HostLock { path, _file: f });
            }
        }
    }
}

/// A host's lock: its file is removed, then the lock let go.
struct HostLock {
    path: PathBuf,
    _file: std::fs::File,
}

impl Drop for HostLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The host could not be reached: ssh's own message.
pub fn unreachable(host: &Host, stderr: &str) -> Error {
    Error::new(
        Kind::HostUnreachable,
        format!("{}: {}", host.spec, last_words(stderr)),
    )
}

/// ssh's last line on stderr, as one safe line.
pub fn last_words(stderr: &str) -> String {
    let line = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("ssh failed without a message");
    crate::report::sanitize(&line.chars().take(300).collect::<String>())
}

/// The command line that runs `tmux-wait WORDS` on a host, for its login
/// shell: `sh -c SCRIPT tmux-wait WORD...`, every word quoted.
pub fn helper_line(words: &[String]) -> String {
    let script = format!("{FIND_HELPER} exec tmux-wait \"$@\"");
    format!("sh -c {} tmux-wait {}", quote(&script), quote_words(words))
}

/// Whether a host's tmux-wait is recent enough; else the one line that
/// says so and how to install it.
pub fn check_helper(host: &Host, r: &Remote) -> Result<()> {
    let install = format!("tmux-wait remote install {}", quote(&host.spec));
    match &r.version {
        None => Err(Error::new(
            Kind::NoHelper,
            format!(
                "{}: no tmux-wait there; install it with `{install}`",
                host.spec
            ),
        )),
        Some(v) if older(v, VERSION) => Err(Error::new(
            Kind::NoHelper,
            format!(
                "{}: tmux-wait {} there is older than {VERSION}; update it with `{install}`",
                host.spec,
                crate::report::sanitize(v)
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// `a` is an older version than `b` (numeric x.y.z; anything else after
/// the numbers ignored).
pub fn older(a: &str, b: &str) -> bool {
    let nums = |v: &str| -> Vec<u64> {
        v.split(['.', '-', '+'])
            .take(3)
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    nums(a) < nums(b)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(older("0.0.9", "0.1.0"));
        assert!(!older("0.1.0", "0.1.0"));
        assert!(!older("0.2.0", "0.1.9"));
        assert!(older("0.1.0-rc1", "0.1.1"));
    }

    #[test]
    fn the_remote_line_runs_the_words_as_given() {
        let words: Vec<String> = ["any", "-t", "a'b; touch /x", "$(id)", "\\"]
            .map(String::from)
            .to_vec();
        let line = helper_line(&words);
        assert!(line.starts_with("sh -c '"), "{line}");
        // As a login shell reads it: `sh -c SCRIPT tmux-wait WORDS`, the
        // words reach "$@" whole (here printed instead of run).
        let probe = line.replacen("exec tmux-wait", "printf %s\\\\n", 1);
        let out = std::process::Command::new("sh")
            .args(["-c", &probe])
            .output()
            .unwrap();
        let got = String::from_utf8(out.stdout).unwrap();
        assert_eq!(got, "any\n-t\na'b; touch /x\n$(id)\n\\\n", "{probe}");
    }

    #[test]
    fn a_host_without_the_helper_is_told_how_to_install_it() {
        let h = Host::parse("box").unwrap();
        let e = check_helper(
            &h,
            &Remote {
                uname: "Linux x86_64".into(),
                version: None,
            },
        )
        .unwrap_err();
        assert_eq!(e.kind, Kind::NoHelper);
        assert!(e.message.contains("tmux-wait remote install 'box'"), "{e}");
    }
}
