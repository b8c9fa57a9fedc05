//! Hosts for the remote tests, on this machine: a real `sshd` (Debian's
//! openssh-server) per host on 127.0.0.1 and a free port, with host and
//! user keys made here, each host with its own HOME, tmux socket
//! directory and PATH (sshd's `SetEnv`), and an ssh config file of the
//! test's own: nothing of the user's `~/.ssh` is read or written.
//!
//! Every sshd, and every process it started, is killed when its `Sshd`
//! drops; every tmux server when its `Tmux` drops (also on a panic).

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// Whether the tests can run here (sshd installed), else why not.
pub fn missing() -> Option<String> {
    if !Path::new(SSHD).is_file() {
        return Some(format!(
            "{SSHD} is not installed (openssh-server; scripts/test installs it)"
        ));
    }
    None
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Every process descended from `pid` (from /proc).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
                let after = stat.rsplit(')').next().unwrap_or("");
                if let Some(pp) = after.split_whitespace().nth(1).and_then(|x| x.parse().ok()) {
                    parent_of.push((p, pp));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for (c, pp) in &parent_of {
            if *pp == p && !out.contains(c) {
                out.push(*c);
                todo.push(*c);
            }
        }
    }
    out
}

/// The keys and the ssh config every host of a test shares.
pub struct Keys {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Keys {
    pub fn new() -> Keys {
        let dir = tempfile::Builder::new().prefix("tw-ssh").tempdir().unwrap();
        let d = dir.path();
        for k in ["hostkey", "userkey"] {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(k))
                .status()
                .unwrap();
            assert!(st.success(), "ssh-keygen");
        }
        std::fs::copy(d.join("userkey.pub"), d.join("authorized_keys")).unwrap();
        std::fs::write(d.join("known_hosts"), "").unwrap();
        std::fs::create_dir_all(d.join("run")).unwrap();
        let config = d.join("ssh_config");
        std::fs::write(&config, "").unwrap();
        Keys { config, dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `XDG_RUNTIME_DIR` of the tmux-wait that reaches the hosts (its ssh
    /// connections' sockets go there).
    pub fn run_dir(&self) -> PathBuf {
        self.path().join("run")
    }

    /// Add `alias` at `port` to the ssh config and known hosts.
    fn add(&self, alias: &str, port: u16) {
        let d = self.path();
        let key = std::fs::read_to_string(d.join("hostkey.pub")).unwrap();
        let key: Vec<&str> = key.split_whitespace().take(2).collect();
        let mut known = std::fs::read_to_string(d.join("known_hosts")).unwrap();
        known.push_str(&format!("{alias} {}\n", key.join(" ")));
        std::fs::write(d.join("known_hosts"), known).unwrap();
        let mut cfg = std::fs::read_to_string(&self.config).unwrap();
        cfg.push_str(&format!(
            "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {d}/userkey\n  IdentitiesOnly yes\n  HostKeyAlias {alias}\n  UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
            user = user(),
            d = d.display()
        ));
        std::fs::write(&self.config, cfg).unwrap();
    }
}

/// One host: its sshd, its HOME and tmux socket directory.
pub struct Sshd {
    pub port: u16,
    pub dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
}

impl Sshd {
    /// A host called `alias` whose PATH has this build's tmux-wait
    /// (`with_helper`) or not.
    pub fn start(keys: &Keys, alias: &str, with_helper: bool) -> Sshd {
        let bin = Path::new(BIN).parent().unwrap().display().to_string();
        let mut path = vec![
            tmux_dir().display().to_string(),
            "/usr/bin".into(),
            "/bin".into(),
        ];
        if with_helper {
            path.insert(0, bin);
        }
        Sshd::start_with(keys, alias, &path, true)
    }

    /// A minimal host, as a small container or a hardened sshd: no sftp
    /// subsystem, and a PATH of only tmux and the few commands a POSIX
    /// system always has (no scp, no tmux-wait).
    pub fn start_minimal(keys: &Keys, alias: &str) -> Sshd {
        let tools = keys.path().join(alias).join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        for t in [
            "sh", "cat", "cksum", "mkdir", "chmod", "mv", "rm", "uname", "head", "echo",
        ] {
            let found = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(t))
                .find(|p| p.is_file())
                .unwrap_or_else(|| panic!("no {t} here"));
            std::os::unix::fs::symlink(found, tools.join(t)).unwrap();
        }
        std::os::unix::fs::symlink(tmux_dir().join("tmux"), tools.join("tmux")).unwrap();
        Sshd::start_with(keys, alias, &[tools.display().to_string()], false)
    }

    fn start_with(keys: &Keys, alias: &str, path: &[String], sftp: bool) -> Sshd {
        if is_root() && !Path::new("/run/sshd").is_dir() {
            // sshd's privilege separation directory, which the package's
            // service makes at boot.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let dir = keys.path().join(alias);
        for sub in ["home", "tmux", "run"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let port = free_port();
        let d = keys.path().display().to_string();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nPidFile none\n\
                 AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\n\
                 PermitRootLogin prohibit-password\n{sftp}\
                 MaxSessions 100\nMaxStartups 100\n\
                 SetEnv HOME={h}/home TMUX_TMPDIR={h}/tmux XDG_RUNTIME_DIR={h}/run PATH={p} LC_ALL=C.UTF-8\n",
                h = dir.display(),
                p = path.join(":"),
                sftp = if sftp {
                    "Subsystem sftp internal-sftp\n"
                } else {
                    ""
                },
            ),
        )
        .unwrap();
        keys.add(alias, port);
        let mut s = Sshd {
            port,
            dir,
            config,
            child: None,
        };
        s.restart();
        s
    }

    /// Start its sshd (again, on the same port); returns once it listens.
    pub fn restart(&mut self) {
        let mut child = Command::new(SSHD)
            .arg("-f")
            .arg(&self.config)
            .args(["-D", "-e"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sshd");
        let err = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(err).lines();
            for l in lines.by_ref().map_while(Result::ok) {
                let ok = l.contains("Server listening");
                let _ = tx.send(l);
                if ok {
                    break;
                }
            }
            // (Drained, so that sshd never blocks on a full pipe.)
            for _ in lines {}
        });
        self.child = Some(child);
        let end = Instant::now() + DEADLINE;
        let mut said = Vec::new();
        loop {
            match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
                Ok(l) if l.contains("Server listening") => return,
                Ok(l) => said.push(l),
                Err(_) => panic!("sshd did not listen: {said:?}"),
            }
        }
    }

    /// Kill its sshd and everything it started (the sessions, the
    /// commands run through them), as a crash or a reboot would.
    pub fn kill(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        let mut all = descendants(c.id());
        all.push(c.id());
        for p in all {
            // SAFETY-free: a signal through kill(1).
            let _ = Command::new("kill")
                .args(["-9", &p.to_string()])
                .stderr(Stdio::null())
                .status();
        }
        let _ = c.wait();
    }

    /// Its connections' own sshd processes: not the listener, nor what
    /// they run.
    pub fn sessions(&self) -> Vec<u32> {
        let Some(c) = &self.child else {
            return Vec::new();
        };
        descendants(c.id())
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sshd")
            })
            .collect()
    }

    /// A tmux server of this host (its default socket there).
    pub fn tmux(&self, panes: usize) -> Tmux {
        Tmux::start(&self.dir.join("tmux"), "default", panes)
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A tmux server on a socket `name` in tmux's directory under `tmpdir`
/// (`$TMUX_TMPDIR`), with `panes` panes at a `$ ` prompt; killed on drop.
pub struct Tmux {
    pub tmpdir: PathBuf,
    pub name: String,
    pub panes: Vec<String>,
}

impl Tmux {
    pub fn start(tmpdir: &Path, name: &str, panes: usize) -> Tmux {
        let rc = tmpdir.join(format!("{name}.bashrc"));
        std::fs::write(&rc, "PS1='$ '\nunset PROMPT_COMMAND\nHISTFILE=/dev/null\n").unwrap();
        let conf = tmpdir.join(format!("{name}.conf"));
        std::fs::write(
            &conf,
            format!(
                "set -g default-command 'exec bash --noprofile --rcfile {}'\nset -g status off\nset -g exit-empty on\n",
                rc.display()
            ),
        )
        .unwrap();
        let mut t = Tmux {
            tmpdir: tmpdir.to_owned(),
            name: name.to_owned(),
            panes: Vec::new(),
        };
        let out = t
            .cmd()
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-s", "main", "-x", "80", "-y", "24"])
            .args(["-P", "-F", "#{pane_id}"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        t.panes
            .push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
        for _ in 1..panes {
            let p = t.run(&["new-window", "-d", "-P", "-F", "#{pane_id}"]);
            t.panes.push(p.trim().to_owned());
        }
        for p in t.panes.clone() {
            t.wait_for(&p, "its prompt", |row| row == "$");
        }
        t
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.name])
            .env("TMUX_TMPDIR", &self.tmpdir)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The socket's path.
    pub fn socket(&self) -> String {
        self.run(&["display-message", "-p", "#{socket_path}"])
            .trim()
            .to_owned()
    }

    pub fn type_line(&self, pane: &str, line: &str) {
        self.run(&["send-keys", "-t", pane, "-l", line]);
        self.run(&["send-keys", "-t", pane, "Enter"]);
    }

    /// Wait (with the deadline) until the cursor's row of `pane` is what
    /// `ok` wants.
    pub fn wait_for(&self, pane: &str, what: &str, ok: impl Fn(&str) -> bool) {
        let end = Instant::now() + DEADLINE;
        loop {
            let y = self.run(&["display-message", "-p", "-t", pane, "#{cursor_y}"]);
            let y = y.trim();
            let row = self.run(&["capture-pane", "-p", "-t", pane, "-S", y, "-E", y]);
            if ok(row.trim_end()) {
                return;
            }
            assert!(
                Instant::now() < end,
                "{pane} never showed {what}; it shows:\n{}",
                self.run(&["capture-pane", "-p", "-t", pane])
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait, with the deadline, for a `tmux wait-for` channel here.
    pub fn wait_channel(&self, ch: &str, beside: &mut Child) {
        let mut w = self.cmd().args(["wait-for", ch]).spawn().unwrap();
        let end = Instant::now() + DEADLINE;
        loop {
            if let Ok(Some(_)) = w.try_wait() {
                return;
            }
            if let Ok(Some(st)) = beside.try_wait() {
                let _ = w.kill();
                let _ = w.wait();
                panic!("tmux-wait ended ({st}) before it was ready");
            }
            if Instant::now() > end {
                let _ = w.kill();
                let _ = w.wait();
                panic!("tmux-wait was not ready in time");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self
            .cmd()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
