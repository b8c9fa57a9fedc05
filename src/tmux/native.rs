//! A tmux command client in-process: one connection to the server's socket
//! per command, speaking tmux's own client protocol (see `imsg`), so that a
//! command costs no `tmux` process. It stands in for `tmux -u -S/-L ...
//! ARGS` with standard input from /dev/null and is told apart from it only
//! by its pid: the same identify messages (no terminal: no `CLIENT_TERMINAL`,
//! no session, so it is never anyone's current client), the same command,
//! the same replies read the same way.
//!
//! It gives way to the process (`Attempt::NotRun`) whenever the server
//! cannot have run the command: the socket does not connect, the command
//! does not fit one message, or the server answers `MSG_VERSION` (a server
//! of another protocol drops everything after the first message it reads).
//! Anything it cannot follow once the command may have run is an error,
//! never a second run.
//!
//! Short-lived clients need no lock here: tmux issue 4980 (3.3a crashing
//! when a client still identifying is notified of another one's detach)
//! concerns control clients only (`CONTROL_SHOULD_NOTIFY_CLIENT` checks
//! `CLIENT_CONTROL`), which this client never is, as a `tmux` command
//! client never is.

use super::imsg::{self, Decoder, Message, Open, msg};
use super::{Finished, Socket};
use crate::error::{Error, Kind};
use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a command may take before the client gives up, unless it is
/// one that waits by design (see [`bound_for`]).
pub const BOUND: Duration = Duration::from_secs(30);

/// Commands whose client tmux keeps waiting until a person, a shell
/// command or a channel lets it go (full names and aliases; tmux-wait
/// never abbreviates a command), and the flags that make each return at
/// once instead.
const WAITING: &[(&str, &str)] = &[
    ("display-menu", ""),
    ("menu", ""),
    ("display-popup", ""),
    ("popup", ""),
    ("confirm-before", "b"),
    ("confirm", "b"),
    ("command-prompt", ""),
    ("display-panes", "b"),
    ("displayp", "b"),
    ("run-shell", "b"),
    ("run", "b"),
    ("if-shell", "Fb"),
    ("if", "Fb"),
    ("wait-for", "SU"),
    ("wait", "SU"),
    ("source-file", ""),
    ("source", ""),
];

/// The bound for a command line: none when a command in it waits by
/// design (a menu open until chosen, a `run-shell`, a hook's own command
/// list), as a `tmux` process would wait, else [`BOUND`]. (A command list
/// inside an argument, as `if-shell -F` takes, is not looked into:
/// tmux-wait nests no waiting command there.)
pub fn bound_for(args: &[OsString]) -> Option<Duration> {
    let waits = args.split(|a| a.as_bytes() == b";").any(command_waits);
    (!waits).then_some(BOUND)
}

fn command_waits(cmd: &[OsString]) -> bool {
    let Some((name, rest)) = cmd.split_first() else {
        return false;
    };
    let Some((_, quick)) = WAITING
        .iter()
        .find(|(n, _)| name.as_bytes() == n.as_bytes())
    else {
        return false;
    };
    // The leading flags (a flag after a value is not seen: the command is
    // then taken to wait, which only costs the bound).
    let flags: Vec<&[u8]> = rest
        .iter()
        .map(|a| a.as_bytes())
        .take_while(|a| a.len() > 1 && a[0] == b'-' && *a != b"--")
        .collect();
    !quick
        .bytes()
        .any(|q| flags.iter().any(|f| f[1..].contains(&q)))
}

/// How one attempt went.
#[derive(Debug)]
pub enum Attempt {
    /// tmux ran the command (or failed it) and the client ended as a
    /// `tmux` process would.
    Finished(Finished),
    /// No server to talk to here (the socket does not connect, or only
    /// tmux can tell where it is): tmux itself says what is wrong.
    Unreachable(String),
    /// The server cannot have run the command: run it another way.
    NotRun(String),
    /// The command may have run and what followed is not tmux's protocol
    /// as this client knows it, or the server did not answer in time.
    Failed(Error),
}

/// Run `args` (already as tmux must read them, see `literal_arg`) on the
/// server, with `input` as the client's standard input (none: /dev/null).
pub fn run(
    socket: &Socket,
    args: &[OsString],
    input: Option<&[u8]>,
    bound: Option<Duration>,
) -> Attempt {
    let deadline = bound.map(|b| Instant::now() + b);
    let (path, flags) = match target(socket) {
        Ok(t) => t,
        Err(why) => return Attempt::Unreachable(why),
    };
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let Some(hello) = hello(flags, Identity::this_process(), &argv) else {
        return Attempt::NotRun("the command does not fit one tmux message".into());
    };
    let stream = match connect(&path, bound) {
        Ok(s) => s,
        Err(e) if is_timeout(&e) => return Attempt::Failed(timed_out(bound)),
        // Out of descriptors: a `tmux` process would need more.
        Err(e) if crate::error::is_out_of_descriptors(&e) => {
            return Attempt::Failed(Error::io("cannot connect to tmux", e));
        }
        Err(e) => {
            return Attempt::Unreachable(format!("cannot connect to {}: {e}", path.display()));
        }
    };
    match send(&stream, &hello, deadline) {
        Ok(()) => {}
        Err(e) if is_timeout(&e) => return Attempt::Failed(timed_out(bound)),
        // The command's frame, the last one, did not all go: not run.
        Err(e) => return Attempt::Unreachable(format!("tmux closed the connection: {e}")),
    }
    let attempt = converse(stream, Exchange::new(input), deadline, bound);
    if let Attempt::NotRun(_) = attempt
        && let Ok(mut off) = GAVE_WAY.lock()
    {
        // Another protocol: so it stays for this server's life.
        off.push(path);
    }
    attempt
}

/// Servers that answered in another protocol (by socket path).
static GAVE_WAY: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Whether this server answered this process in another protocol before:
/// the process runs its commands from then on.
pub fn gave_way(socket: &Socket) -> bool {
    if GAVE_WAY.lock().is_ok_and(|off| off.is_empty()) {
        return false;
    }
    let Ok((path, _)) = target(socket) else {
        return false;
    };
    GAVE_WAY.lock().is_ok_and(|off| off.contains(&path))
}

/// Read the server's replies until the client's end.
fn converse(
    stream: UnixStream,
    mut ex: Exchange,
    deadline: Option<Instant>,
    bound: Option<Duration>,
) -> Attempt {
    let mut dec = Decoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut reply = Vec::new();
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) || stream.set_read_timeout(left).is_err() {
            return Attempt::Failed(timed_out(bound));
        }
        match (&stream).read(&mut buf) {
            Ok(0) => return Attempt::Finished(ex.lost()),
            Ok(n) => dec.feed(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) => return Attempt::Failed(timed_out(bound)),
            // A reset is the server gone, as EOF.
            Err(_) => return Attempt::Finished(ex.lost()),
        }
        loop {
            let m = match dec.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(bad) => return Attempt::Failed(broken(&bad.0)),
            };
            reply.clear();
            let step = ex.take(&m, &mut reply);
            if !reply.is_empty()
                && let Err(e) = send(&stream, &reply, deadline)
                && is_timeout(&e)
            {
                return Attempt::Failed(timed_out(bound));
            }
            // (Another failure to send is the server gone: the next read
            // says so.)
            match step {
                Ok(Step::More) => {}
                Ok(Step::Done) => return Attempt::Finished(ex.finish()),
                Err(Surprise::NotRun(why)) => return Attempt::NotRun(why),
                Err(Surprise::Broken(why)) => return Attempt::Failed(broken(&why)),
            }
        }
    }
}

fn broken(why: &str) -> Error {
    Error::new(
        Kind::Tmux,
        format!(
            "tmux: unexpected reply from the server ({why}); TMUX_WAIT_NATIVE=0 runs tmux itself"
        ),
    )
}

fn timed_out(bound: Option<Duration>) -> Error {
    Error::new(
        Kind::Tmux,
        format!(
            "tmux: the server did not answer a command within {} s (is it stopped or busy?)",
            bound.unwrap_or_default().as_secs_f64()
        ),
    )
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// The socket `tmux -u` with this socket's options would connect to and
/// the flags it would send; `Err` when only tmux itself can tell (it
/// refuses an unsafe socket directory, which is its message to give).
fn target(socket: &Socket) -> Result<(PathBuf, u64), String> {
    let name = match socket {
        Socket::Path(p) => return Ok((p.clone(), imsg::flags::UTF8)),
        Socket::Name(n) => n.as_str(),
        // Our `tmux` runs without $TMUX, so the default is tmux's own.
        Socket::Default => "default",
    };
    let base = match std::env::var_os("TMUX_TMPDIR") {
        None => PathBuf::from("/tmp"),
        Some(d) if !d.is_empty() => PathBuf::from(d),
        // tmux 3.2a and 3.7 read an empty one differently.
        Some(_) => return Err("TMUX_TMPDIR is empty".into()),
    };
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = base.join(format!("tmux-{uid}"));
    if !safe_socket_dir(&dir, uid) {
        return Err(format!(
            "{} is not a private directory of ours",
            dir.display()
        ));
    }
    Ok((
        dir.join(name),
        imsg::flags::UTF8 | imsg::flags::DEFAULT_SOCKET,
    ))
}

/// What tmux checks of `tmux-UID` before it uses a socket in it: a
/// directory (not a link), ours, no access for others.
fn safe_socket_dir(dir: &Path, uid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o007 == 0)
}

/// What a client tells the server about itself.
#[derive(Debug, Clone)]
pub struct Identity {
    pub term: Vec<u8>,
    pub cwd: Vec<u8>,
    pub pid: i32,
    /// `NAME=VALUE` entries.
    pub environ: Vec<Vec<u8>>,
}

impl Identity {
    /// [`Identity::of_this_process`], made once: a call sends several
    /// commands, and finding the working directory as tmux does resolves
    /// two paths each time. (The hub moves to `/` before its first.)
    pub fn this_process() -> &'static Identity {
        static ID: std::sync::OnceLock<Identity> = std::sync::OnceLock::new();
        ID.get_or_init(Identity::of_this_process)
    }

    /// This process, as the `tmux` it would run sees itself: the same
    /// environment without `TMUX` and `TMUX_PANE`, standard input not a
    /// terminal.
    pub fn of_this_process() -> Identity {
        let environ = std::env::vars_os()
            .filter(|(k, _)| k != "TMUX" && k != "TMUX_PANE")
            .map(|(k, v)| {
                let mut e = k.as_bytes().to_vec();
                e.push(b'=');
                e.extend_from_slice(v.as_bytes());
                e
            })
            .collect();
        Identity {
            term: std::env::var_os("TERM")
                .map(|t| t.as_bytes().to_vec())
                .unwrap_or_default(),
            cwd: cwd(),
            pid: std::process::id() as i32,
            environ,
        }
    }
}

/// tmux's `find_cwd`: `$PWD` when it is the working directory (to keep
/// its links), else the working directory; else home, else `/`.
fn cwd() -> Vec<u8> {
    let Ok(wd) = std::env::current_dir() else {
        return std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| h.as_bytes().to_vec())
            .unwrap_or_else(|| b"/".to_vec());
    };
    if let Some(pwd) = std::env::var_os("PWD").filter(|p| !p.is_empty())
        && let (Ok(a), Ok(b)) = (std::fs::canonicalize(&pwd), std::fs::canonicalize(&wd))
        && a == b
    {
        return pwd.as_bytes().to_vec();
    }
    wd.as_os_str().as_bytes().to_vec()
}

/// Everything the client sends: the identify messages in the order tmux's
/// `client_send_identify` sends them (3.5+: flags as 64 bits; standard
/// input and output with no descriptor, which leaves the server where a
/// non-terminal stdin leaves it: no tty, `c->fd` -1), then the command.
/// `None` if the command does not fit one message or holds a NUL.
pub fn hello(flags: u64, id: &Identity, argv: &[&[u8]]) -> Option<Vec<u8>> {
    if argv.is_empty() {
        // tmux's default command (new-session): never ours to send.
        return None;
    }
    let command = imsg::command(argv)?;
    let mut out = Vec::with_capacity(1024);
    imsg::encode(msg::IDENTIFY_LONGFLAGS, &flags.to_ne_bytes(), &mut out)?;
    imsg::encode(msg::IDENTIFY_TERM, &imsg::string(&id.term)?, &mut out)?;
    imsg::encode(msg::IDENTIFY_FEATURES, &0i32.to_ne_bytes(), &mut out)?;
    // ttyname(3) of /dev/null: none.
    imsg::encode(msg::IDENTIFY_TTYNAME, b"\0", &mut out)?;
    imsg::encode(msg::IDENTIFY_CWD, &imsg::string(&id.cwd)?, &mut out)?;
    imsg::encode(msg::IDENTIFY_STDIN, &[], &mut out)?;
    imsg::encode(msg::IDENTIFY_STDOUT, &[], &mut out)?;
    imsg::encode(msg::IDENTIFY_CLIENTPID, &id.pid.to_ne_bytes(), &mut out)?;
    for e in &id.environ {
        // tmux skips what does not fit a message, as here.
        if let Some(s) = imsg::string(e)
            && s.len() <= imsg::MAX_MESSAGE - imsg::HEADER
        {
            imsg::encode(msg::IDENTIFY_ENVIRON, &s, &mut out)?;
        }
    }
    imsg::encode(msg::IDENTIFY_DONE, &[], &mut out)?;
    imsg::encode(msg::COMMAND, &command, &mut out)?;
    Some(out)
}

/// Connect, bounded (a server whose listen queue is full makes connect(2)
/// wait).
fn connect(path: &Path, bound: Option<Duration>) -> std::io::Result<UnixStream> {
    use std::os::fd::FromRawFd;
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: a zeroed sockaddr_un is valid; we fill its family and path.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: a new socket; on success we own the descriptor.
    #[cfg(target_os = "linux")]
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    #[cfg(not(target_os = "linux"))]
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is ours and open.
    #[cfg(not(target_os = "linux"))]
    unsafe {
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // SAFETY: fd is ours and open; UnixStream closes it from now on.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    stream.set_write_timeout(bound.map(|b| b.max(Duration::from_millis(1))))?;
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    // SAFETY: addr is a valid sockaddr_un of at least len bytes.
    let rc = unsafe {
        libc::connect(
            fd,
            (&raw const addr).cast::<libc::sockaddr>(),
            len as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stream)
}

/// Send all of `bytes` by `deadline` (no SIGPIPE on a closed socket).
fn send(stream: &UnixStream, mut bytes: &[u8], deadline: Option<Instant>) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    while !bytes.is_empty() {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Err(ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(left)?;
        // SAFETY: a send of our own buffer on our own socket.
        let n = unsafe {
            libc::send(
                stream.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Where a stream the server opened goes.
#[derive(Debug)]
enum Sink {
    Stdout,
    Stderr,
    File(std::fs::File),
    /// Opened with an error: what comes is dropped, as tmux's client does.
    Nowhere,
}

/// What one message did to the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    More,
    Done,
}

/// A message the client cannot take.
#[derive(Debug, PartialEq, Eq)]
pub enum Surprise {
    /// The server read nothing of ours: safe to run the command elsewhere.
    NotRun(String),
    /// Too late for that.
    Broken(String),
}

/// The client's side of one command, from the server's first reply to its
/// last: what tmux's `client_dispatch_wait` and the client half of
/// `file.c` do, with stdout and stderr kept in memory. Replies (write
/// ready, read data) are appended to the caller's buffer to send.
#[derive(Debug)]
pub struct Exchange<'a> {
    input: Option<&'a [u8]>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    streams: Vec<(i32, Sink)>,
    status: i32,
    received: usize,
}

impl<'a> Exchange<'a> {
    pub fn new(input: Option<&'a [u8]>) -> Self {
        Exchange {
            input,
            stdout: Vec::new(),
            stderr: Vec::new(),
            streams: Vec::new(),
            status: 0,
            received: 0,
        }
    }

    /// Take one message from the server.
    pub fn take(&mut self, m: &Message, reply: &mut Vec<u8>) -> Result<Step, Surprise> {
        let first = self.received == 0;
        self.received += 1;
        let bad = |what: &str| Surprise::Broken(format!("{what} from tmux"));
        if m.kind == msg::VERSION {
            let why = format!(
                "protocol version mismatch (client {}, server {})",
                imsg::PROTOCOL_VERSION,
                m.version()
            );
            return Err(if first {
                Surprise::NotRun(why)
            } else {
                Surprise::Broken(why)
            });
        }
        if m.version() != imsg::PROTOCOL_VERSION {
            return Err(Surprise::Broken(format!(
                "a message of protocol version {}",
                m.version()
            )));
        }
        match m.kind {
            msg::EXIT | msg::SHUTDOWN => {
                let (status, message) = imsg::exit(&m.data).ok_or_else(|| bad("a bad exit"))?;
                if let Some(s) = status {
                    self.status = s;
                }
                if let Some(text) = message {
                    self.stderr.extend_from_slice(text.as_bytes());
                    self.stderr.push(b'\n');
                }
                Ok(Step::Done)
            }
            msg::EXITED => Ok(Step::Done),
            msg::DETACH | msg::DETACHKILL => {
                let _ = imsg::encode(msg::EXITING, &[], reply);
                Ok(Step::More)
            }
            msg::FLAGS if m.data.len() == 8 => Ok(Step::More),
            msg::FLAGS => Err(bad("bad flags")),
            msg::READY => Err(bad("an attach (MSG_READY)")),
            msg::SHELL => Err(bad("a shell (MSG_SHELL)")),
            msg::OLDSTDERR | msg::OLDSTDIN | msg::OLDSTDOUT => Err(Surprise::Broken(
                "server version is too old for client".into(),
            )),
            msg::WRITE_OPEN => {
                let open = Open::write(&m.data).ok_or_else(|| bad("a bad write open"))?;
                let (sink, error) = if self.sink(open.stream).is_some() {
                    (Sink::Nowhere, libc::EBADF)
                } else {
                    open_for_write(&open)
                };
                self.streams.push((open.stream, sink));
                let _ = imsg::encode(
                    msg::WRITE_READY,
                    &imsg::stream_status(open.stream, error),
                    reply,
                );
                Ok(Step::More)
            }
            msg::WRITE => {
                let (stream, bytes) =
                    imsg::write_data(&m.data).ok_or_else(|| bad("a bad write"))?;
                match self.streams.iter_mut().find(|(s, _)| *s == stream) {
                    Some((_, Sink::Stdout)) => self.stdout.extend_from_slice(bytes),
                    Some((_, Sink::Stderr)) => self.stderr.extend_from_slice(bytes),
                    Some((_, Sink::File(f))) => {
                        use std::io::Write;
                        // A failed write is the file's problem, as in tmux.
                        let _ = f.write_all(bytes);
                    }
                    Some((_, Sink::Nowhere)) => {}
                    None => return Err(bad("a write to an unknown stream")),
                }
                Ok(Step::More)
            }
            msg::WRITE_CLOSE => {
                let stream = imsg::stream_only(&m.data).ok_or_else(|| bad("a bad write close"))?;
                let at = self
                    .streams
                    .iter()
                    .position(|(s, _)| *s == stream)
                    .ok_or_else(|| bad("a close of an unknown stream"))?;
                self.streams.remove(at);
                Ok(Step::More)
            }
            msg::READ_OPEN => {
                let open = Open::read(&m.data).ok_or_else(|| bad("a bad read open"))?;
                self.read(&open, reply);
                Ok(Step::More)
            }
            // Everything was read and sent at the open.
            msg::READ_CANCEL => imsg::stream_only(&m.data)
                .map(|_| Step::More)
                .ok_or_else(|| bad("a bad read cancel")),
            // tmux's client ignores what it does not know.
            _ => Ok(Step::More),
        }
    }

    fn sink(&self, stream: i32) -> Option<&Sink> {
        self.streams
            .iter()
            .find(|(s, _)| *s == stream)
            .map(|(_, k)| k)
    }

    /// Answer a read: all of it at once, then done (a standard input
    /// that is not given is /dev/null).
    fn read(&self, open: &Open, reply: &mut Vec<u8>) {
        let data = match open.fd {
            0 => Ok(self.input.unwrap_or_default().to_vec()),
            -1 => std::fs::read(std::ffi::OsStr::from_bytes(&open.path)),
            _ => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
        };
        let error = match data {
            Ok(bytes) => {
                for chunk in bytes.chunks(imsg::MAX_READ_CHUNK) {
                    let _ = imsg::encode(msg::READ, &imsg::read_data(open.stream, chunk), reply);
                }
                0
            }
            Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
        };
        let _ = imsg::encode(
            msg::READ_DONE,
            &imsg::stream_status(open.stream, error),
            reply,
        );
    }

    /// The client's end after its exit message.
    pub fn finish(self) -> Finished {
        Finished {
            // The process's exit status is the low byte of tmux's value.
            success: self.status & 0xff == 0,
            stdout: self.stdout,
            stderr: self.stderr,
        }
    }

    /// The server went away before the command ended; tmux's client says
    /// so and exits 1.
    pub fn lost(mut self) -> Finished {
        self.stderr
            .extend_from_slice(b"server exited unexpectedly\n");
        Finished {
            success: false,
            stdout: self.stdout,
            stderr: self.stderr,
        }
    }
}

/// Open what the server asks to write: our stdout or stderr (kept), or a
/// file by path as tmux's client opens it. The errno to answer with.
fn open_for_write(open: &Open) -> (Sink, i32) {
    match open.fd {
        1 => (Sink::Stdout, 0),
        2 => (Sink::Stderr, 0),
        -1 => {
            use std::os::fd::FromRawFd;
            let Ok(path) = std::ffi::CString::new(open.path.clone()) else {
                return (Sink::Nowhere, libc::EINVAL);
            };
            // SAFETY: a NUL-terminated path; on success we own the descriptor.
            let fd = unsafe {
                libc::open(
                    path.as_ptr(),
                    open.flags | libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                    0o644 as libc::c_uint,
                )
            };
            if fd < 0 {
                let e = std::io::Error::last_os_error();
                return (Sink::Nowhere, e.raw_os_error().unwrap_or(libc::EIO));
            }
            // SAFETY: fd is a new descriptor of ours.
            (Sink::File(unsafe { std::fs::File::from_raw_fd(fd) }), 0)
        }
        _ => (Sink::Nowhere, libc::EBADF),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kind: u32, data: &[u8]) -> Message {
        Message {
            kind,
            peer_id: 8,
            data: data.to_vec(),
        }
    }

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    fn write(stream: i32, text: &[u8]) -> Message {
        m(msg::WRITE, &imsg::read_data(stream, text))
    }

    /// Decode what the client answered.
    fn frames(bytes: &[u8]) -> Vec<Message> {
        let mut d = Decoder::default();
        d.feed(bytes);
        std::iter::from_fn(|| d.next_message().unwrap()).collect()
    }

    /// A recorded reply to `display-message -p hi` (tmux 3.3a): open
    /// stdout, the line, exit 0.
    #[test]
    fn stdout_and_a_clean_exit() {
        let mut ex = Exchange::new(None);
        let mut reply = Vec::new();
        assert_eq!(
            ex.take(&m(msg::WRITE_OPEN, &ints(&[1, 1, 0])), &mut reply),
            Ok(Step::More)
        );
        let r = frames(&reply);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].kind, r[0].data.clone()),
            (msg::WRITE_READY, ints(&[1, 0]))
        );
        assert_eq!(ex.take(&write(1, b"hi\n"), &mut reply), Ok(Step::More));
        assert_eq!(
            ex.take(&m(msg::EXIT, &ints(&[0])), &mut reply),
            Ok(Step::Done)
        );
        let f = ex.finish();
        assert!(f.success);
        assert_eq!(f.stdout, b"hi\n");
        assert!(f.stderr.is_empty());
    }

    #[test]
    fn an_error_is_stderr_and_status_1() {
        let mut ex = Exchange::new(None);
        let mut reply = Vec::new();
        ex.take(&m(msg::WRITE_OPEN, &ints(&[2, 2, 0])), &mut reply)
            .unwrap();
        ex.take(&write(2, b"can't find pane: %99\n"), &mut reply)
            .unwrap();
        assert_eq!(
            ex.take(&m(msg::EXIT, &ints(&[1])), &mut reply),
            Ok(Step::Done)
        );
        let f = ex.finish();
        assert!(!f.success);
        assert_eq!(f.stderr, b"can't find pane: %99\n");
        // An exit status whose low byte is 0 is a success, as a process's.
        let mut ex = Exchange::new(None);
        ex.take(&m(msg::EXIT, &ints(&[256])), &mut reply).unwrap();
        assert!(ex.finish().success);
    }

    #[test]
    fn an_exit_message_is_a_line_of_stderr() {
        let mut ex = Exchange::new(None);
        let mut data = ints(&[1]);
        data.extend_from_slice(b"lost tty\0");
        ex.take(&m(msg::EXIT, &data), &mut Vec::new()).unwrap();
        let f = ex.finish();
        assert!(!f.success);
        assert_eq!(f.stderr, b"lost tty\n");
        // A shutdown with no status (kill-server under a wait-for): 0.
        let mut ex = Exchange::new(None);
        assert_eq!(
            ex.take(&m(msg::SHUTDOWN, &[]), &mut Vec::new()),
            Ok(Step::Done)
        );
        assert!(ex.finish().success);
    }

    #[test]
    fn version_mismatch_first_is_not_run_later_is_broken() {
        let v = Message {
            kind: msg::VERSION,
            peer_id: 9,
            data: vec![],
        };
        let mut ex = Exchange::new(None);
        match ex.take(&v, &mut Vec::new()) {
            Err(Surprise::NotRun(why)) => assert!(why.contains("server 9"), "{why}"),
            other => panic!("{other:?}"),
        }
        let mut ex = Exchange::new(None);
        ex.take(&m(msg::WRITE_OPEN, &ints(&[1, 1, 0])), &mut Vec::new())
            .unwrap();
        assert!(matches!(
            ex.take(&v, &mut Vec::new()),
            Err(Surprise::Broken(_))
        ));
        // Another protocol in any other message: the command may have run.
        let mut ex = Exchange::new(None);
        let odd = Message {
            kind: msg::EXIT,
            peer_id: 7,
            data: ints(&[0]),
        };
        assert!(matches!(
            ex.take(&odd, &mut Vec::new()),
            Err(Surprise::Broken(_))
        ));
    }

    #[test]
    fn malformed_replies_are_errors_not_panics() {
        let cases: Vec<Message> = vec![
            m(msg::WRITE_OPEN, &[1, 2]),
            m(msg::WRITE, &[1]),
            write(5, b"x"),
            m(msg::WRITE_CLOSE, &ints(&[1, 2])),
            m(msg::WRITE_CLOSE, &ints(&[9])),
            m(msg::READ_OPEN, &[0]),
            m(msg::READ_CANCEL, &[]),
            m(msg::EXIT, &[1, 2, 3]),
            m(msg::FLAGS, &[1]),
            m(msg::READY, &[]),
            m(msg::SHELL, b"/bin/sh\0"),
            m(msg::OLDSTDOUT, &[]),
        ];
        for c in cases {
            let mut ex = Exchange::new(None);
            assert!(
                matches!(ex.take(&c, &mut Vec::new()), Err(Surprise::Broken(_))),
                "{c:?}"
            );
        }
        // Unknown types are ignored, as tmux's client ignores them.
        let mut ex = Exchange::new(None);
        assert_eq!(ex.take(&m(999, b"?"), &mut Vec::new()), Ok(Step::More));
    }

    #[test]
    fn a_second_open_of_a_stream_is_refused() {
        let mut ex = Exchange::new(None);
        let mut reply = Vec::new();
        ex.take(&m(msg::WRITE_OPEN, &ints(&[1, 1, 0])), &mut reply)
            .unwrap();
        reply.clear();
        ex.take(&m(msg::WRITE_OPEN, &ints(&[1, 1, 0])), &mut reply)
            .unwrap();
        assert_eq!(frames(&reply)[0].data, ints(&[1, libc::EBADF]));
        // A descriptor other than stdout and stderr too.
        reply.clear();
        ex.take(&m(msg::WRITE_OPEN, &ints(&[4, 7, 0])), &mut reply)
            .unwrap();
        assert_eq!(frames(&reply)[0].data, ints(&[4, libc::EBADF]));
    }

    #[test]
    fn standard_input_is_sent_in_pieces_then_done() {
        let input = vec![b'a'; imsg::MAX_READ_CHUNK + 10];
        let mut ex = Exchange::new(Some(&input));
        let mut reply = Vec::new();
        ex.take(&m(msg::READ_OPEN, &ints(&[3, 0])), &mut reply)
            .unwrap();
        let r = frames(&reply);
        assert_eq!(
            r.iter().map(|f| f.kind).collect::<Vec<_>>(),
            [msg::READ, msg::READ, msg::READ_DONE]
        );
        assert_eq!(r[0].data.len(), 4 + imsg::MAX_READ_CHUNK);
        assert_eq!(r[1].data, imsg::read_data(3, &[b'a'; 10]));
        assert_eq!(r[2].data, ints(&[3, 0]));
        // No input: /dev/null, done at once.
        let ex = Exchange::new(None);
        let mut reply = Vec::new();
        ex.read(&Open::read(&ints(&[3, 0])).unwrap(), &mut reply);
        assert_eq!(frames(&reply).len(), 1);
    }

    #[test]
    fn files_by_path_are_read_and_written() {
        let dir = std::env::temp_dir().join(format!("tw-native-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let mut open = ints(&[5, -1, libc::O_TRUNC]);
        open.extend_from_slice(path.as_os_str().as_bytes());
        open.push(0);
        let mut ex = Exchange::new(None);
        let mut reply = Vec::new();
        ex.take(&m(msg::WRITE_OPEN, &open), &mut reply).unwrap();
        assert_eq!(frames(&reply)[0].data, ints(&[5, 0]));
        ex.take(&write(5, b"saved"), &mut reply).unwrap();
        ex.take(&m(msg::WRITE_CLOSE, &ints(&[5])), &mut reply)
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"saved");
        let mut open = ints(&[6, -1]);
        open.extend_from_slice(path.as_os_str().as_bytes());
        reply.clear();
        ex.read(&Open::read(&open).unwrap(), &mut reply);
        let r = frames(&reply);
        assert_eq!(r[0].data, imsg::read_data(6, b"saved"));
        open = ints(&[7, -1]);
        open.extend_from_slice(b"/nonexistent/x");
        reply.clear();
        ex.read(&Open::read(&open).unwrap(), &mut reply);
        assert_eq!(frames(&reply)[0].data, ints(&[7, libc::ENOENT]));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_lost_server_reads_as_tmux_says_it() {
        let mut ex = Exchange::new(None);
        ex.take(&m(msg::WRITE_OPEN, &ints(&[1, 1, 0])), &mut Vec::new())
            .unwrap();
        ex.take(&write(1, b"partial"), &mut Vec::new()).unwrap();
        let f = ex.lost();
        assert!(!f.success);
        assert_eq!(f.stderr, b"server exited unexpectedly\n");
        assert_eq!(
            crate::tmux::classify_failure(&String::from_utf8_lossy(&f.stderr)).kind,
            Kind::NoServer
        );
    }

    #[test]
    fn commands_that_wait_by_design_have_no_bound() {
        let b = |a: &[&str]| bound_for(&a.iter().map(OsString::from).collect::<Vec<_>>());
        for quick in [
            &["display-message", "-p", "x"][..],
            &["wait-for", "-S", "--", "ch"],
            &["run-shell", "-b", "true"],
            &["if-shell", "-F", "-t", "%1", "#{pane_pipe}", "a", "b"],
            &[
                "display-message",
                "-p",
                "menu",
                ";",
                "send-keys",
                "-l",
                "run",
            ],
            &["wait", "-U", "ch"],
        ] {
            assert_eq!(b(quick), Some(BOUND), "{quick:?}");
        }
        for waits in [
            &["display-menu", "-c", "/dev/pts/1", "--", "x", "", ""][..],
            &["source-file", "-"],
            &["wait-for", "ch"],
            &["wait-for", "-L", "ch"],
            &["run-shell", "sleep 1"],
            &["if-shell", "true", "a"],
            &[
                "display-message",
                "-p",
                "x",
                ";",
                "run",
                "-t",
                "%1",
                "-b",
                "x",
            ],
        ] {
            assert_eq!(b(waits), None, "{waits:?}");
        }
    }

    #[test]
    fn hello_is_identify_then_the_command() {
        let id = Identity {
            term: b"xterm".to_vec(),
            cwd: b"/w".to_vec(),
            pid: 42,
            environ: vec![b"A=1".to_vec(), vec![b'B'; imsg::MAX_MESSAGE]],
        };
        let out = hello(imsg::flags::UTF8, &id, &[b"display-message", b"-p", b"x"]).unwrap();
        let f = frames(&out);
        let kinds: Vec<u32> = f.iter().map(|x| x.kind).collect();
        assert_eq!(
            kinds,
            [
                msg::IDENTIFY_LONGFLAGS,
                msg::IDENTIFY_TERM,
                msg::IDENTIFY_FEATURES,
                msg::IDENTIFY_TTYNAME,
                msg::IDENTIFY_CWD,
                msg::IDENTIFY_STDIN,
                msg::IDENTIFY_STDOUT,
                msg::IDENTIFY_CLIENTPID,
                msg::IDENTIFY_ENVIRON,
                msg::IDENTIFY_DONE,
                msg::COMMAND
            ]
        );
        assert!(f.iter().all(|x| x.peer_id == 8));
        assert_eq!(f[0].data, imsg::flags::UTF8.to_ne_bytes());
        assert_eq!(f[1].data, b"xterm\0");
        assert_eq!(f[3].data, b"\0");
        assert_eq!(f[7].data, 42i32.to_ne_bytes());
        assert_eq!(f[8].data, b"A=1\0");
        assert_eq!(&f[10].data[..4], &3i32.to_ne_bytes());
        assert_eq!(&f[10].data[4..], b"display-message\0-p\0x\0");
        // No command, a NUL in an argument, or too long: not sent.
        assert!(hello(0, &id, &[]).is_none());
        assert!(hello(0, &id, &[b"a\0b"]).is_none());
        let long = vec![b'x'; imsg::MAX_MESSAGE];
        assert!(hello(0, &id, &[&long]).is_none());
    }
}
