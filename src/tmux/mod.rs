//! The one seam to tmux: which server, running commands against it (one
//! command, or a list run back to back), pane formats and their parsers,
//! the version. Knows processes and bytes, no wait logic. tmux-wait never
//! attaches a client to a session (see `hub` for why).
//!
//! A command runs through an in-process client of tmux's own protocol
//! (`native`, framing in `imsg`), which costs no process; a `tmux` process
//! runs it when that client gives way (`runner`).

pub mod imsg;
mod lock;
pub mod native;
pub mod protocol;
mod runner;

pub use lock::{LockFile, SocketLock, beside_socket, lock_beside_socket, sweep_gone_servers};
pub use runner::{Finished, Runner};

use crate::error::{Error, Kind, Result};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Socket {
    /// tmux's default socket.
    Default,
    /// `-L NAME`.
    Name(String),
    /// `-S PATH`.
    Path(PathBuf),
}

impl Socket {
    /// From `-L`/`-S`; without them, the server in `$TMUX`, else the default.
    pub fn resolve(name: Option<String>, path: Option<PathBuf>) -> Self {
        if let Some(n) = name {
            return Socket::Name(n);
        }
        if let Some(p) = path {
            return Socket::Path(p);
        }
        match tmux_env_socket() {
            Some(p) => Socket::Path(p),
            None => Socket::Default,
        }
    }

    /// True when this is the server whose pane `$TMUX_PANE` names.
    pub fn is_current_server(&self) -> bool {
        match (self, tmux_env_socket()) {
            (Socket::Path(p), Some(env)) => *p == env,
            _ => false,
        }
    }

    /// The same server named so that it does not depend on the working
    /// directory (a relative `-S` made absolute), for detached helpers.
    pub fn absolute(&self) -> Socket {
        match self {
            Socket::Path(p) if p.is_relative() => match std::env::current_dir() {
                Ok(cwd) => Socket::Path(cwd.join(p)),
                Err(_) => self.clone(),
            },
            _ => self.clone(),
        }
    }

    pub fn args(&self) -> Vec<OsString> {
        match self {
            Socket::Default => vec![],
            Socket::Name(n) => vec!["-L".into(), n.into()],
            Socket::Path(p) => vec!["-S".into(), p.into()],
        }
    }

    /// Start `tmux-wait` with this socket's options and `args`, detached
    /// (see [`crate::sys::spawn_self_detached`]); returns its pid.
    pub fn spawn_helper(&self, args: &[&str], what: &str) -> crate::error::Result<u32> {
        let mut all = self.args();
        all.extend(args.iter().map(OsString::from));
        crate::sys::spawn_self_detached(&all, what)
    }

    /// Where this server's socket is, without asking the server (tmux's own
    /// rules: `-S` as given, else `$TMUX_TMPDIR` or /tmp, `tmux-UID/NAME`).
    pub fn path(&self) -> PathBuf {
        let dir = || {
            let base = std::env::var_os("TMUX_TMPDIR")
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| "/tmp".into());
            // SAFETY: getuid cannot fail.
            let uid = unsafe { libc::getuid() };
            PathBuf::from(base).join(format!("tmux-{uid}"))
        };
        match self {
            Socket::Path(p) => p.clone(),
            Socket::Name(n) => dir().join(n),
            Socket::Default => tmux_env_socket().unwrap_or_else(|| dir().join("default")),
        }
    }

    /// A `tmux` command for this server. `TMUX` and `TMUX_PANE` are removed
    /// so that tmux resolves targets only from what we pass explicitly; it
    /// gets the open-files limit tmux-wait started with.
    pub fn command(&self) -> Command {
        let mut c = Command::new(tmux_binary());
        // UTF-8 whatever the locale: without it (cron, a bare environment)
        // tmux prints every tab and non-ASCII character as `_`.
        c.arg("-u");
        c.args(self.args());
        c.env_remove("TMUX").env_remove("TMUX_PANE");
        c.stdin(Stdio::null());
        crate::sys::fds::restore_in_child(&mut c);
        c
    }

    /// Run one tmux command and return its stdout lines.
    pub fn run<I, S>(&self, args: I) -> Result<Vec<String>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.run_inner(args, None)
    }

    /// Run one tmux command with `input` on its standard input.
    pub fn run_with_input<I, S>(&self, args: I, input: &str) -> Result<Vec<String>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.run_inner(args, Some(input))
    }

    /// Run `cmds` as one command list in one tmux client and return each
    /// one's output. tmux runs a list back to back, without reading any
    /// pane in between (none of these commands may block), so the replies
    /// describe one moment. Each reply is found by a line of 64 random bits
    /// printed before it, which no pane's text can forge.
    pub fn batch(&self, cmds: &[Vec<String>]) -> Result<Vec<Vec<String>>> {
        let nonce = crate::state::random_id();
        let lines = self.run(tagged(&nonce, cmds))?;
        split_replies(&lines, &nonce, cmds.len())
    }

    fn run_inner<I, S>(&self, args: I, input: Option<&str>) -> Result<Vec<String>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| literal_arg(a.as_ref())).collect();
        let out = self.exec(&args, input, Runner::configured())?;
        if !out.success {
            return Err(classify_failure(&String::from_utf8_lossy(&out.stderr)));
        }
        let s = String::from_utf8_lossy(&out.stdout);
        let mut lines: Vec<String> = s.lines().map(str::to_owned).collect();
        if lines.iter().any(|l| has_dollar_escape(l)) && self.version() == Some(Version(3, 4)) {
            for l in &mut lines {
                *l = undo_dollar_escapes(l);
            }
        }
        Ok(lines)
    }
}

/// The tmux executable: `$TMUX_WAIT_TMUX` if set (for testing other
/// versions), else `tmux` on PATH.
pub fn tmux_binary() -> OsString {
    std::env::var_os("TMUX_WAIT_TMUX")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "tmux".into())
}

fn tmux_env_socket() -> Option<PathBuf> {
    let v = std::env::var("TMUX").ok()?;
    let path = v.split(',').next()?;
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// Make a long-lived child (a control client, a `wait-for` client) end when
/// this process ends, even by SIGKILL: an orphaned control client would stay
/// attached with nobody reading its output, and tmux 3.3a then cannot finish
/// a `kill-server` (seen once in the suite). Linux only (`PR_SET_PDEATHSIG`);
/// elsewhere orphans end with the server or their wait.
pub fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id();
        // SAFETY: prctl and getppid are async-signal-safe; nothing else runs.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died before the flag was set: do not start.
                if libc::getppid() as u32 != parent {
                    return Err(std::io::Error::other("tmux-wait is gone"));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Map tmux's error text to an error kind.
pub fn classify_failure(stderr: &str) -> Error {
    let msg = stderr
        .trim()
        .lines()
        .next()
        .unwrap_or("tmux failed")
        .to_owned();
    // A pane kept by remain-on-exit whose program exited (pipe-pane's
    // refusal): the same as a pane that dies during a wait.
    if msg.starts_with("target pane has exited") {
        return Error::new(Kind::PaneDied, "the pane is dead (its program has exited)");
    }
    let kind = if msg.starts_with("no server running")
        || msg.starts_with("error connecting to")
        || msg.contains("server exited unexpectedly")
    {
        Kind::NoServer
    } else if msg.starts_with("can't find pane")
        || msg.starts_with("can't find window")
        || msg.starts_with("can't find session")
        || msg.starts_with("no current")
        || msg.starts_with("no such")
    {
        Kind::NoPane
    } else {
        Kind::Tmux
    };
    Error::new(kind, format!("tmux: {msg}"))
}

/// An argument as tmux must receive it to read it as itself: tmux takes an
/// argument ending in `;` for the end of a command, unless the `;` is
/// escaped (`\;`). A lone `;` is left alone: it is how tmux-wait itself
/// separates the commands of a list.
fn literal_arg(a: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let b = a.as_bytes();
    if b.len() > 1 && b.ends_with(b";") {
        let mut v = b[..b.len() - 1].to_vec();
        v.extend_from_slice(b"\\;");
        return std::ffi::OsString::from_vec(v);
    }
    a.to_owned()
}

/// tmux 3.4 prints `\$NAME` for `$NAME` in what commands print
/// (display-message -p, show-options: utf8_stravisx in utf8.c); 3.5 fixed
/// it. A `$` followed by a letter, `_` or `{` got one backslash before it.
fn has_dollar_escape(l: &str) -> bool {
    l.as_bytes().windows(3).any(|w| {
        w[0] == b'\\'
            && w[1] == b'$'
            && (w[2].is_ascii_alphabetic() || w[2] == b'_' || w[2] == b'{')
    })
}

/// Remove the backslash tmux 3.4 put before each such `$` (exact: every
/// other backslash is printed as it is).
fn undo_dollar_escapes(l: &str) -> String {
    let b = l.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && b.get(i + 1) == Some(&b'$')
            && b.get(i + 2)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || *c == b'{')
        {
            i += 1;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Servers' versions, as learnt by `resolve_pane` or asked once.
static VERSIONS: std::sync::Mutex<Vec<(PathBuf, Version)>> = std::sync::Mutex::new(Vec::new());

impl Socket {
    /// Remember the server's version (it was read anyway).
    pub fn remember_version(&self, v: Version) {
        if let Ok(mut vs) = VERSIONS.lock()
            && !vs.iter().any(|(p, _)| *p == self.path())
        {
            vs.push((self.path(), v));
        }
    }

    /// The server's version: remembered, or asked once.
    pub fn version(&self) -> Option<Version> {
        if let Ok(vs) = VERSIONS.lock()
            && let Some((_, v)) = vs.iter().find(|(p, _)| *p == self.path())
        {
            return Some(*v);
        }
        let args = ["display-message", "-p", "#{version}"].map(OsString::from);
        let out = self.exec(&args, None, Runner::configured()).ok()?;
        let v = Version::parse(String::from_utf8_lossy(&out.stdout).trim());
        out.success.then(|| {
            self.remember_version(v);
            v
        })
    }
}

/// `cmds` as one command list whose replies [`split_replies`] tells apart:
/// each led by a `NONCE:I` line, the list ended by `NONCE:end`.
fn tagged(nonce: &str, cmds: &[Vec<String>]) -> Vec<String> {
    let tag = |t: String| {
        [
            "display-message".to_owned(),
            "-p".to_owned(),
            format!("{nonce}:{t}"),
        ]
    };
    let mut args: Vec<String> = Vec::new();
    for (i, c) in cmds.iter().enumerate() {
        args.extend(tag(i.to_string()));
        args.push(";".into());
        args.extend(c.iter().cloned());
        args.push(";".into());
    }
    args.extend(tag("end".to_owned()));
    args
}

/// Split the output of a command list whose replies are each led by a
/// `NONCE:I` line and which ends with `NONCE:end`.
pub fn split_replies(lines: &[String], nonce: &str, n: usize) -> Result<Vec<Vec<String>>> {
    let mut out: Vec<Vec<String>> = Vec::with_capacity(n);
    let mut ended = false;
    let mut cur: Option<Vec<String>> = None;
    for l in lines {
        if let Some(tag) = l.strip_prefix(nonce).and_then(|r| r.strip_prefix(':')) {
            if let Some(c) = cur.take() {
                out.push(c);
            }
            if tag == "end" {
                ended = true;
                break;
            }
            if tag != out.len().to_string() {
                break;
            }
            cur = Some(Vec::new());
        } else if let Some(c) = &mut cur {
            c.push(l.clone());
        }
    }
    if !ended || out.len() != n {
        return Err(Error::new(
            Kind::Tmux,
            format!("tmux answered {} of {n} commands", out.len()),
        ));
    }
    Ok(out)
}

/// What an entry needs to know of a pane, in one format.
pub const PANE_STATE_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_width}\t#{cursor_x}\t#{cursor_y}\t#{alternate_on}\t#{history_size}\t#{history_limit}\t#{pane_height}\t#{pane_tty}";

/// A pane's state, from [`PANE_STATE_FORMAT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneState {
    pub pane_id: String,
    pub pane_pid: u32,
    pub dead: bool,
    pub width: u32,
    pub cursor_x: u32,
    pub cursor_y: u32,
    pub alternate_on: bool,
    pub history_size: u64,
    pub history_limit: u64,
    pub height: u32,
    pub tty: String,
}

impl PaneState {
    /// Parse a reply; a malformed one is an error that quotes it.
    pub fn parse(reply: &[String]) -> Result<PaneState> {
        let line = reply.first().map(String::as_str).unwrap_or("");
        let bad = || {
            Error::new(
                Kind::Tmux,
                format!(
                    "unexpected pane state from tmux: {:?}",
                    line.escape_debug().to_string()
                ),
            )
        };
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 || !f[0].starts_with('%') {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let small = |s: &str| s.parse::<u32>().map_err(|_| bad());
        let flag = |s: &str| match s {
            "1" => Ok(true),
            "0" | "" => Ok(false),
            _ => Err(bad()),
        };
        Ok(PaneState {
            pane_id: f[0].to_owned(),
            // tmux 3.8 shows no pid once the pane's program has exited,
            // marked dead or not yet.
            pane_pid: if f[1].is_empty() { 0 } else { small(f[1])? },
            dead: flag(f[2])? || f[1].is_empty(),
            width: small(f[3])?.max(1),
            cursor_x: small(f[4])?,
            cursor_y: small(f[5])?,
            alternate_on: flag(f[6])?,
            history_size: num(f[7])?,
            history_limit: num(f[8])?,
            height: small(f[9])?.max(1),
            tty: f[10].to_owned(),
        })
    }
}

/// A tmux version as `(major, minor)`; `3.3a` is `(3, 3)`, `next-3.4` is
/// `(3, 4)`, `master` is taken as the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32);

impl Version {
    pub fn parse(s: &str) -> Version {
        let s = s.trim();
        let s = s.strip_prefix("tmux ").unwrap_or(s);
        let s = s.strip_prefix("next-").unwrap_or(s);
        let mut parts = s.split('.');
        let major = parts.next().and_then(|p| p.parse().ok());
        let minor = parts.next().map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        });
        match (major, minor) {
            (Some(a), Some(b)) => Version(a, b),
            (Some(a), None) => Version(a, 0),
            _ => Version(u32::MAX, 0),
        }
    }

    /// The oldest tmux tmux-wait supports: what the hub relies on
    /// (`pipe-pane -I -O`, `if-shell -F` inserting its commands in place,
    /// pane user options, `display-menu`) is all there in 3.2.
    pub const OLDEST: Version = Version(3, 2);

    pub fn supported(self) -> bool {
        self >= Self::OLDEST
    }
}

/// What the helper needs to know about the target pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneInfo {
    pub pane_id: String,
    pub session_id: String,
    pub pane_pid: u32,
    pub pane_dead: bool,
    pub pane_tty: String,
    pub version: Version,
    /// The server the pane was found on, when it was asked in the same
    /// command list (it names the server's state directory).
    pub server: Option<ServerId>,
}

/// Which server this is: its pid and start time (a restarted server on the
/// same socket is another one), and its socket's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerId {
    pub pid: String,
    pub start: String,
    pub socket_path: PathBuf,
}

/// The format of [`ServerId::parse`].
pub const SERVER_ID_FORMAT: &str = "#{pid}\t#{start_time}\t#{socket_path}";

impl ServerId {
    /// A reply to [`SERVER_ID_FORMAT`] (the path is last: it may hold a
    /// TAB).
    pub fn parse(reply: &str) -> ServerId {
        let mut f = reply.splitn(3, '\t');
        let mut next = || f.next().unwrap_or("").to_owned();
        ServerId {
            pid: next(),
            start: next(),
            socket_path: PathBuf::from(next()),
        }
    }
}

/// The format `PaneInfo::parse` reads. Fields are TAB-separated and none
/// but the last (the server's socket path) can contain a TAB (ids,
/// numbers, a tty path, a version).
pub const PANE_INFO_FORMAT: &str = concat!(
    "#{pane_id}\t#{session_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_tty}\t#{version}\t",
    "#{pid}\t#{start_time}\t#{socket_path}"
);

impl PaneInfo {
    /// A reply to [`PANE_INFO_FORMAT`], or to its first six fields (no
    /// server then).
    pub fn parse(line: &str) -> Option<PaneInfo> {
        let f: Vec<&str> = line.splitn(7, '\t').collect();
        if f.len() < 6 || !f[0].starts_with('%') || !f[1].starts_with('$') {
            return None;
        }
        Some(PaneInfo {
            pane_id: f[0].to_owned(),
            session_id: f[1].to_owned(),
            // tmux 3.8 gives a dead pane no pid, nor one whose program has
            // just exited (marked dead a moment later).
            pane_pid: match f[2] {
                "" => 0,
                pid => pid.parse().ok()?,
            },
            pane_dead: f[3] == "1" || f[2].is_empty(),
            pane_tty: f[4].to_owned(),
            version: Version::parse(f[5]),
            server: f.get(6).map(|s| ServerId::parse(s)),
        })
    }

    /// The pane's number (`%12` is 12), as control mode names it.
    pub fn number(&self) -> u32 {
        self.pane_id[1..].parse().unwrap_or(u32::MAX)
    }
}

/// Find the pane `target` names (or the one tmux would pick).
pub fn resolve_pane(socket: &Socket, target: Option<&str>) -> Result<PaneInfo> {
    resolve_pane_with(socket, target, |_| Vec::new()).map(|(pane, _)| pane)
}

/// Find the pane `target` names, and run the commands `extra` makes of
/// the target's arguments (`-t TARGET`, or none for the pane tmux picks)
/// in the same command list: one client for both, and their replies
/// describe the pane found.
pub fn resolve_pane_with(
    socket: &Socket,
    target: Option<&str>,
    extra: impl FnOnce(&[String]) -> Vec<Vec<String>>,
) -> Result<(PaneInfo, Vec<Vec<String>>)> {
    // display-message falls back to another pane when its target does not
    // resolve; capture-pane does not, and an error ends the command list.
    let mut args: Vec<String> = Vec::new();
    let env_pane = std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty());
    let target = match target {
        Some(t) => Some(t.to_owned()),
        None if socket.is_current_server() => env_pane,
        None => None,
    };
    let mut target_args: Vec<String> = Vec::new();
    if let Some(t) = &target {
        target_args.push("-t".into());
        target_args.push(t.clone());
    }
    args.extend(["capture-pane", "-p", "-S", "0", "-E", "0"].map(String::from));
    args.extend(target_args.iter().cloned());
    args.push(";".into());
    args.extend(["display-message", "-p"].map(String::from));
    args.extend(target_args.iter().cloned());
    args.push(PANE_INFO_FORMAT.into());
    let extra = extra(&target_args);
    let nonce = crate::state::random_id();
    if !extra.is_empty() {
        args.push(";".into());
        args.extend(tagged(&nonce, &extra));
    }
    let lines = socket.run(&args).map_err(|e| match (e.kind, &target) {
        (Kind::NoPane, Some(t)) => Error::new(
            Kind::NoPane,
            format!(
                "no pane matches target '{}' ({})",
                t.escape_debug(),
                e.message
            ),
        ),
        _ => e,
    })?;
    // (The capture is one line; a socket path may hold a line feed.)
    let tag = format!("{nonce}:0");
    let info_end = lines.iter().position(|l| *l == tag).unwrap_or(lines.len());
    let info = lines
        .get(1..info_end)
        .and_then(|l| PaneInfo::parse(&l.join("\n")));
    if let Some(p) = &info {
        socket.remember_version(p.version);
        if !p.version.supported() {
            return Err(Error::new(
                Kind::Tmux,
                format!(
                    "this tmux server is version {}.{}; tmux-wait needs tmux 3.2 or newer",
                    p.version.0, p.version.1
                ),
            ));
        }
    }
    let info = info.ok_or_else(|| {
        Error::new(
            Kind::NoPane,
            "tmux named no pane (is there a session on this server?)",
        )
    })?;
    let replies = if extra.is_empty() {
        Vec::new()
    } else {
        split_replies(&lines, &nonce, extra.len())?
    };
    Ok((info, replies))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(Version::parse("3.3a"), Version(3, 3));
        assert_eq!(Version::parse("tmux 3.2"), Version(3, 2));
        assert_eq!(Version::parse("next-3.4"), Version(3, 4));
        assert_eq!(Version::parse("2.9a"), Version(2, 9));
        assert!(Version::parse("master").supported());
        assert!(Version::parse("3.2a").supported());
        assert!(!Version::parse("3.1c").supported());
    }

    #[test]
    fn pane_info() {
        let p = PaneInfo::parse("%3\t$1\t123\t0\t/dev/pts/4\t3.3a").unwrap();
        assert_eq!(p.number(), 3);
        assert_eq!(p.session_id, "$1");
        assert!(!p.pane_dead);
        assert_eq!(PaneInfo::parse("garbage"), None);
        // tmux 3.8: a dead pane has no pid.
        let p = PaneInfo::parse("%3\t$1\t\t1\t/dev/pts/4\tnext-3.8").unwrap();
        assert!(p.pane_dead);
        // Nor one whose program has just exited, not yet marked dead.
        let p = PaneInfo::parse("%3\t$1\t\t0\t/dev/pts/4\tnext-3.8").unwrap();
        assert!(p.pane_dead);
        assert_eq!(PaneInfo::parse("%3\t$1\tx\t0\t/dev/pts/4\t3.3a"), None);
        assert_eq!(p.server, None);
        // With the server, whose socket path may hold a TAB.
        let p =
            PaneInfo::parse("%3\t$1\t123\t0\t/dev/pts/4\t3.3a\t77\t1796217840\t/tmp/a\tb").unwrap();
        assert_eq!(p.version, Version(3, 3));
        let server = p.server.unwrap();
        assert_eq!(
            (server.pid.as_str(), server.start.as_str()),
            ("77", "1796217840")
        );
        assert_eq!(server.socket_path, PathBuf::from("/tmp/a\tb"));
        assert!(PANE_INFO_FORMAT.ends_with(&format!("\t{SERVER_ID_FORMAT}")));
    }

    #[test]
    fn arguments_ending_in_a_semicolon_stay_whole() {
        let lit = |s: &str| literal_arg(s.as_ref()).into_string().unwrap();
        assert_eq!(lit(";"), ";");
        assert_eq!(lit("label;"), "label\\;");
        assert_eq!(lit("a\\;"), "a\\\\;");
        assert_eq!(lit("plain"), "plain");
    }

    #[test]
    fn tmux_3_4_dollar_escapes_are_undone() {
        assert!(has_dollar_escape("echo \\$HOME"));
        assert!(!has_dollar_escape("cost \\$5 $HOME"));
        assert_eq!(
            undo_dollar_escapes("echo \\$HOME \\${X} \\\\$Y"),
            "echo $HOME ${X} \\$Y"
        );
        assert_eq!(undo_dollar_escapes("a\\b \\$1"), "a\\b \\$1");
    }

    #[test]
    fn replies_are_split_by_their_nonce() {
        let l = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let out =
            split_replies(&l(&["N:0", "a", "b", "N:1", "N:2", "c", "N:end"]), "N", 3).unwrap();
        assert_eq!(out, vec![l(&["a", "b"]), l(&[]), l(&["c"])]);
        // A pane line that looks like another nonce is text.
        let out = split_replies(&l(&["N:0", "M:1", "N:end"]), "N", 1).unwrap();
        assert_eq!(out, vec![l(&["M:1"])]);
        assert!(split_replies(&l(&["N:0", "a"]), "N", 1).is_err());
        assert!(split_replies(&l(&["N:0", "N:end"]), "N", 2).is_err());
        assert!(split_replies(&l(&["N:1", "N:end"]), "N", 1).is_err());
    }

    #[test]
    fn pane_state() {
        let l = vec!["%3\t123\t0\t80\t2\t5\t0\t100\t2000\t24\t/dev/pts/4".to_owned()];
        let s = PaneState::parse(&l).unwrap();
        assert_eq!(
            (s.width, s.cursor_x, s.cursor_y, s.history_size),
            (80, 2, 5, 100)
        );
        assert_eq!(s.tty, "/dev/pts/4");
        let err = PaneState::parse(&["%3\tx".to_owned()]).unwrap_err();
        assert!(err.message.contains("%3"), "{}", err.message);
        assert!(PaneState::parse(&[]).is_err());
    }

    #[test]
    fn failures_are_classified() {
        assert_eq!(
            classify_failure("no server running on /tmp/x\n").kind,
            Kind::NoServer
        );
        assert_eq!(classify_failure("can't find pane: %9").kind, Kind::NoPane);
        assert_eq!(classify_failure("unknown command: x").kind, Kind::Tmux);
    }
}
