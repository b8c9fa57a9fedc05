//! The hub: one tmux control client per session, shared by the text waits
//! and watches on that session.
//!
//! Why: on every turn of its event loop tmux walks every pane for every
//! client (3.3a, server-client.c: the per-pane buffer check looks up each
//! control client's offset for each pane, and other checks walk the client
//! list per pane). A hundred waits holding a hundred control clients in a
//! session of a hundred panes make each turn ten thousand steps: in the
//! fan-out benchmark the server saturated a core and every wake queued
//! behind it. Through the hub the server sees one client per session
//! whatever the number of waits.
//!
//! Protocol: a waiter connects to a Unix socket beside the tmux socket
//! (`.NAME.tmux-wait-hub-N`, N the session's number; created 0600, and
//! peers of another uid are refused) and sends
//! `tmux-wait-hub 1 $SESSION %PANE`. The hub answers with an empty reply
//! block, standing in for the reply to `attach-session` a `tmux -C` client
//! starts with, lets its client's output of that pane through (the panes
//! nobody waits on are paused), and from then
//! on the waiter speaks the control protocol as it would to `tmux -C`: each
//! line it sends is one tmux command, the replies come back in order, and it
//! receives `%output` of its pane and the structural notifications, in the
//! order tmux wrote them. Ordering is what the waits rely on ("output that
//! arrives before a reply is already in what the reply shows"); a waiter's
//! commands and its pane's output are a subsequence of the one stream, so it
//! holds as it does for a private client. Commands that would change the
//! shared client (refresh-client, switch-client, detach, a blocking
//! wait-for) or run more than one command per line are refused by closing
//! the waiter's connection.
//!
//! Lifetime: started detached by the first waiter that finds none; a lock
//! beside the socket keeps it to one per session. It leaves `LINGER` after
//! its last waiter (so waits in a row share it too), and at once when the
//! server or the session goes. A waiter that stops reading (stopped with
//! SIGSTOP: its reader thread otherwise drains the socket as it comes) is
//! queued for up to `queue_limit` bytes and then dropped; the hub never
//! stops reading from tmux for one waiter, so the others never wait for it.

use crate::error::{Error, Kind, Result};
use crate::tmux::control::RawClient;
use crate::tmux::protocol::quote;
use crate::tmux::{Socket, SocketLock, Version};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The first line a waiter sends, followed by ` $SESSION %PANE`.
pub const HELLO: &str = "tmux-wait-hub 1";
/// How long the hub stays after its last waiter left.
const LINGER: Duration = Duration::from_millis(250);
/// Output queued for a waiter past which it is dropped, in MiB
/// (`TMUX_WAIT_HUB_QUEUE_MB` changes it, for tests).
const QUEUE_MB: usize = 64;
/// Most bytes read from tmux in one turn of the loop, so waiters are
/// written to (and a flood cannot grow the queues unchecked) in between.
const READ_PER_TURN: usize = 1 << 20;
/// How long a new connection has to say hello.
const HELLO_WITHIN: Duration = Duration::from_secs(2);

/// `TMUX_WAIT_NO_HUB=1`: every wait attaches its own control client.
pub fn disabled() -> bool {
    std::env::var_os("TMUX_WAIT_NO_HUB").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The hub's socket for `session_id` (`$N`) of this server, or None where
/// it cannot be had (an odd session id, a path too long for a Unix socket).
pub fn path(socket: &Socket, session_id: &str) -> Option<PathBuf> {
    let n = session_number(session_id)?;
    let sock = socket.path();
    let name = sock.file_name()?.to_string_lossy().into_owned();
    let p = sock.with_file_name(format!(".{name}.tmux-wait-hub-{n}"));
    // sun_path holds 108 bytes with its terminating NUL.
    (p.as_os_str().len() < 104).then_some(p)
}

fn session_number(session_id: &str) -> Option<&str> {
    let n = session_id.strip_prefix('$')?;
    (!n.is_empty() && n.len() <= 10 && n.bytes().all(|b| b.is_ascii_digit())).then_some(n)
}

/// A connection to the hub of `session_id` with the hello sent, starting
/// a hub when none answers. None when sharing cannot be had here (then the
/// caller attaches a client of its own).
pub fn connect(
    socket: &Socket,
    session_id: &str,
    pane_id: &str,
    version: Version,
    deadline: Instant,
) -> Option<UnixStream> {
    let path = path(socket, session_id)?;
    let until = deadline.min(Instant::now() + Duration::from_secs(2));
    // Who starts a hub: the waiter holding this lock (one file per server),
    // until it is connected or gives up on that hub; the others only try
    // to connect meanwhile. Waits started all at once start one hub, not
    // one each.
    let mut starting: Option<(std::fs::File, Instant)> = None;
    loop {
        if let Ok(mut s) = UnixStream::connect(&path) {
            let hello = format!("{HELLO} {session_id} {pane_id}\n");
            if s.write_all(hello.as_bytes()).is_ok() {
                return Some(s);
            }
        }
        let now = Instant::now();
        if now >= until {
            return None;
        }
        // A hub that found another one serving leaves; one that does not
        // answer in 500 ms is started again (by whoever gets the lock).
        if starting
            .as_ref()
            .is_some_and(|(_, t)| now - *t > Duration::from_millis(500))
        {
            starting = None;
        }
        if starting.is_none()
            && let SocketLock::Held(lock) =
                crate::tmux::lock_beside_socket(socket, "tmux-wait-hub-start", true, now)
        {
            let v = format!("{}.{}", version.0, version.1);
            let args = ["hub", "--session", session_id, "--tmux-version", &v];
            crate::waits::hooks::spawn_detached(&socket.absolute(), &args, "the tmux-wait hub")
                .ok()?;
            starting = Some((lock, now));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Run the hub of `session_id` until it is no longer needed.
pub fn serve(socket: &Socket, session_id: &str, version: Version) -> Result<()> {
    let n = session_number(session_id).ok_or_else(|| {
        Error::usage(format!(
            "invalid session id '{}'",
            session_id.escape_debug()
        ))
    })?;
    // Detached and long-lived: keep no directory busy.
    let _ = std::env::set_current_dir("/");
    if !version.has_client_flags() {
        return Err(Error::usage("the hub needs tmux 3.2 or newer"));
    }
    let path = path(socket, session_id)
        .ok_or_else(|| Error::usage("the tmux socket's path is too long for a hub socket"))?;
    // One hub per session. One that is leaving holds the lock until its
    // socket is gone: wait for it briefly; leave if another hub answers.
    let started = Instant::now();
    let lock_name = format!("tmux-wait-hub-{n}.lock");
    let lock = loop {
        match crate::tmux::lock_beside_socket(socket, &lock_name, true, Instant::now()) {
            SocketLock::Held(f) => break f,
            SocketLock::Unavailable => {
                return Err(Error::new(Kind::Tmux, "cannot create the hub's lock file"));
            }
            SocketLock::TimedOut => {}
        }
        if UnixStream::connect(&path).is_ok() || started.elapsed() > Duration::from_secs(2) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // A hub that took the lock as another one left may find a third one
    // already serving (see the lock file's removal below): leave it be.
    if UnixStream::connect(&path).is_ok() {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut client = RawClient::spawn(socket, session_id, version, deadline)?;
    let mut hub = Hub::new(&mut client, session_id)?;
    hub.wait_attached(deadline)?;
    client.attached();
    hub.send_hub(
        &format!("list-panes -s -t {} -F '#{{pane_id}}'", quote(session_id)),
        HubReply::Panes,
    );
    let _ = std::fs::remove_file(&path);
    // SAFETY: umask only swaps the process's file mode mask.
    let old = unsafe { libc::umask(0o077) };
    let bound = UnixListener::bind(&path);
    // SAFETY: as above, restoring it.
    unsafe { libc::umask(old) };
    let listener = bound.map_err(|e| Error::io("cannot create the hub's socket", e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("cannot set up the hub's socket", e))?;
    let inode = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(p)
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    let mine = inode(&path);
    let r = hub.run(&listener);
    // Gone before the lock is released (a new hub binds only under it),
    // and only if it is still ours. The lock file goes too, so sessions
    // come and go without leaving files beside the socket.
    if mine.is_some() && inode(&path) == mine {
        let _ = std::fs::remove_file(&path);
    }
    drop(listener);
    drop(client);
    if let Some(lock_path) = crate::tmux::beside_socket(socket, &lock_name) {
        let _ = std::fs::remove_file(lock_path);
    }
    drop(lock);
    r
}

/// Whose reply the next `%begin` block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Hub(HubReply),
    Waiter(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HubReply {
    Ignore,
    Panes,
}

struct Waiter {
    stream: UnixStream,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    /// How much of `out` was written.
    sent: usize,
    /// The pane it waits on, once it said hello.
    pane: Option<u32>,
    since: Instant,
}

impl Waiter {
    fn pending(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Write what can be written now; false when the waiter is gone.
    fn flush(&mut self) -> bool {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return false,
                Ok(k) => self.sent += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        } else if self.sent > (1 << 20) && self.sent * 2 > self.out.len() {
            self.out.drain(..self.sent);
            self.sent = 0;
        }
        true
    }
}

struct Block {
    owner: Owner,
    guard: Vec<u8>,
    lines: Vec<String>,
}

struct Hub {
    tmux_in: std::process::ChildStdin,
    tmux_out: std::process::ChildStdout,
    session_id: String,
    to_tmux: Vec<u8>,
    from_tmux: Vec<u8>,
    read_buf: Vec<u8>,
    fifo: VecDeque<Owner>,
    block: Option<Block>,
    waiters: HashMap<u64, Waiter>,
    next_id: u64,
    /// Pane number → the waiters on it.
    subs: HashMap<u32, Vec<u64>>,
    /// Panes whose output the hub's client has paused. Paused, not `off`:
    /// before tmux 3.7 switching a pane off keeps the output already queued
    /// for the client while letting the pane's buffer be trimmed under it,
    /// and writing that output later reads freed memory and crashes the
    /// server (tmux issue 5054; seen here within two toggles on a busy
    /// pane). `pause` discards what was queued (tmux 3.2+).
    off: HashSet<u32>,
    tmux_eof: bool,
    leaving: bool,
    queue_limit: usize,
}

impl Hub {
    fn new(client: &mut RawClient, session_id: &str) -> Result<Hub> {
        let (tmux_in, tmux_out) = client.take_pipes()?;
        for fd in [tmux_in.as_raw_fd(), tmux_out.as_raw_fd()] {
            set_nonblocking(fd).map_err(|e| Error::io("cannot set up the control client", e))?;
        }
        Ok(Hub {
            tmux_in,
            tmux_out,
            session_id: session_id.to_owned(),
            to_tmux: Vec::new(),
            from_tmux: Vec::new(),
            read_buf: Vec::new(),
            // The first reply is the attach's own.
            fifo: VecDeque::from([Owner::Hub(HubReply::Ignore)]),
            block: None,
            waiters: HashMap::new(),
            next_id: 1,
            subs: HashMap::new(),
            off: HashSet::new(),
            tmux_eof: false,
            leaving: false,
            queue_limit: std::env::var("TMUX_WAIT_HUB_QUEUE_MB")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(QUEUE_MB)
                .clamp(1, 4096)
                << 20,
        })
    }

    /// Read until the attach's own reply has ended.
    fn wait_attached(&mut self, deadline: Instant) -> Result<()> {
        while self.fifo.front() == Some(&Owner::Hub(HubReply::Ignore)) || self.block.is_some() {
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::new(
                    Kind::Tmux,
                    "tmux control client did not attach in time",
                ));
            }
            let mut p = [pollfd(self.tmux_out.as_raw_fd(), libc::POLLIN)];
            poll(&mut p, Some(deadline - now));
            self.read_tmux();
            if self.tmux_eof {
                return Err(Error::new(
                    Kind::ServerExited,
                    "the tmux control client could not attach",
                ));
            }
        }
        Ok(())
    }

    fn send_hub(&mut self, line: &str, what: HubReply) {
        self.to_tmux.extend_from_slice(line.as_bytes());
        self.to_tmux.push(b'\n');
        self.fifo.push_back(Owner::Hub(what));
    }

    fn run(&mut self, listener: &UnixListener) -> Result<()> {
        // Signals wake the poll through a socket (no periodic wake-ups: an
        // idle hub costs nothing).
        let (wake, wake_tx) = UnixStream::pair()
            .map_err(|e| Error::io("cannot set up the hub's signal socket", e))?;
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            let tx = wake_tx
                .try_clone()
                .map_err(|e| Error::io("cannot set up the hub's signal socket", e))?;
            signal_hook::low_level::pipe::register(sig, tx)
                .map_err(|e| Error::io("cannot handle signals in the hub", e))?;
        }
        let mut idle_since = Some(Instant::now());
        loop {
            if self.tmux_eof || self.leaving || crate::signals::pending().is_some() {
                self.farewell();
                return Ok(());
            }
            // When to look again without an event: the linger's end, a
            // connection's time to say hello; otherwise never.
            let mut timeout: Option<Duration> = None;
            if self.waiters.is_empty() {
                let since = *idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= LINGER && self.to_tmux.is_empty() {
                    return Ok(());
                }
                timeout = Some(LINGER.saturating_sub(since.elapsed()));
            } else {
                idle_since = None;
            }
            self.drop_stalled();
            for w in self.waiters.values() {
                if w.pane.is_none() {
                    let left = HELLO_WITHIN.saturating_sub(w.since.elapsed());
                    timeout = Some(timeout.map_or(left, |t| t.min(left)));
                }
            }
            let mut fds = Vec::with_capacity(self.waiters.len() + 4);
            fds.push(pollfd(self.tmux_out.as_raw_fd(), libc::POLLIN));
            let to_tmux_events = if self.to_tmux.is_empty() {
                0
            } else {
                libc::POLLOUT
            };
            fds.push(pollfd(self.tmux_in.as_raw_fd(), to_tmux_events));
            fds.push(pollfd(listener.as_raw_fd(), libc::POLLIN));
            fds.push(pollfd(wake.as_raw_fd(), libc::POLLIN));
            let ids: Vec<u64> = self.waiters.keys().copied().collect();
            for id in &ids {
                let w = &self.waiters[id];
                let mut ev = libc::POLLIN;
                if w.pending() > 0 {
                    ev |= libc::POLLOUT;
                }
                fds.push(pollfd(w.stream.as_raw_fd(), ev));
            }
            poll(&mut fds, timeout);
            if fds[3].revents != 0 {
                // A signal: `signals::pending` says which; leave.
                self.leaving = true;
            }
            if fds[0].revents != 0 {
                self.read_tmux();
            }
            if fds[2].revents != 0 {
                self.accept(listener);
            }
            for (i, id) in ids.iter().enumerate() {
                let r = fds[4 + i].revents;
                if r & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                    self.read_waiter(*id);
                }
            }
            self.flush_all();
        }
    }

    /// The server or the session went: pass on what is buffered, then close.
    fn farewell(&mut self) {
        let end = Instant::now() + Duration::from_millis(200);
        while Instant::now() < end && self.waiters.values().any(|w| w.pending() > 0) {
            self.flush_all();
            std::thread::sleep(Duration::from_millis(1));
        }
        self.waiters.clear();
    }

    fn flush_all(&mut self) {
        while !self.to_tmux.is_empty() {
            match self.tmux_in.write(&self.to_tmux) {
                Ok(0) => {
                    self.tmux_eof = true;
                    break;
                }
                Ok(k) => {
                    self.to_tmux.drain(..k);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.tmux_eof = true;
                    break;
                }
            }
        }
        let gone: Vec<u64> = self
            .waiters
            .iter_mut()
            .filter_map(|(id, w)| (!w.flush()).then_some(*id))
            .collect();
        for id in gone {
            self.remove(id);
        }
    }

    fn drop_stalled(&mut self) {
        let now = Instant::now();
        let mut gone = Vec::new();
        for (id, w) in self.waiters.iter() {
            if w.pane.is_none() && now - w.since > HELLO_WITHIN {
                gone.push(*id);
            }
            if w.pending() > self.queue_limit {
                gone.push(*id);
            }
        }
        for id in gone {
            self.remove(id);
        }
    }

    fn accept(&mut self, listener: &UnixListener) {
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if !same_user(&stream) || stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let id = self.next_id;
                    self.next_id += 1;
                    self.waiters.insert(
                        id,
                        Waiter {
                            stream,
                            inbuf: Vec::new(),
                            out: Vec::new(),
                            sent: 0,
                            pane: None,
                            since: Instant::now(),
                        },
                    );
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn read_waiter(&mut self, id: u64) {
        let mut buf = [0u8; 16 * 1024];
        let mut eof = false;
        let Some(w) = self.waiters.get_mut(&id) else {
            return;
        };
        loop {
            match w.stream.read(&mut buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(k) => w.inbuf.extend_from_slice(&buf[..k]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    eof = true;
                    break;
                }
            }
            if w.inbuf.len() > (1 << 20) {
                eof = true;
                break;
            }
        }
        let Some(end) = w.inbuf.iter().rposition(|&b| b == b'\n') else {
            if eof {
                self.remove(id);
            }
            return;
        };
        let lines: Vec<u8> = w.inbuf.drain(..=end).collect();
        let mut ok = true;
        for line in lines.split(|&b| b == b'\n') {
            if line.is_empty() {
                continue;
            }
            ok = match self.waiters.get(&id).and_then(|w| w.pane) {
                None => self.hello(id, line),
                Some(_) => self.command(id, line),
            };
            if !ok {
                break;
            }
        }
        if eof || !ok {
            self.remove(id);
        }
    }

    fn hello(&mut self, id: u64, line: &[u8]) -> bool {
        let text = String::from_utf8_lossy(line);
        let Some(rest) = text.strip_prefix(HELLO) else {
            return false;
        };
        let mut words = rest.split_whitespace();
        let (Some(session), Some(pane), None) = (words.next(), words.next(), words.next()) else {
            return false;
        };
        let Some(num) = pane.strip_prefix('%').and_then(|p| p.parse::<u32>().ok()) else {
            return false;
        };
        if session != self.session_id {
            return false;
        }
        let subs = self.subs.entry(num).or_default();
        subs.push(id);
        if subs.len() == 1 && self.off.remove(&num) {
            self.send_hub(
                &format!("refresh-client -A '%{num}:continue'"),
                HubReply::Ignore,
            );
        }
        if let Some(w) = self.waiters.get_mut(&id) {
            w.pane = Some(num);
            // Stands in for the reply to attach-session.
            w.out.extend_from_slice(b"%begin 0 0 0\n%end 0 0 0\n");
        }
        true
    }

    fn command(&mut self, id: u64, line: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        if !allowed(text) {
            return false;
        }
        self.to_tmux.extend_from_slice(line);
        self.to_tmux.push(b'\n');
        self.fifo.push_back(Owner::Waiter(id));
        true
    }

    fn remove(&mut self, id: u64) {
        let Some(w) = self.waiters.remove(&id) else {
            return;
        };
        if let Some(num) = w.pane
            && let Some(subs) = self.subs.get_mut(&num)
        {
            subs.retain(|&x| x != id);
            if subs.is_empty() {
                self.subs.remove(&num);
                if !self.tmux_eof && self.off.insert(num) {
                    self.send_hub(
                        &format!("refresh-client -A '%{num}:pause'"),
                        HubReply::Ignore,
                    );
                }
            }
        }
    }

    fn read_tmux(&mut self) {
        let mut buf = std::mem::take(&mut self.read_buf);
        buf.resize(256 * 1024, 0);
        let mut taken = 0;
        while taken < READ_PER_TURN {
            match self.tmux_out.read(&mut buf) {
                Ok(0) => {
                    self.tmux_eof = true;
                    break;
                }
                Ok(k) => {
                    self.from_tmux.extend_from_slice(&buf[..k]);
                    taken += k;
                    if k < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.tmux_eof = true;
                    break;
                }
            }
        }
        self.read_buf = buf;
        let data = std::mem::take(&mut self.from_tmux);
        let mut start = 0;
        while let Some(k) = data[start..].iter().position(|&b| b == b'\n') {
            self.on_line(&data[start..=start + k]);
            start += k + 1;
        }
        self.from_tmux = data;
        self.from_tmux.drain(..start);
    }

    /// Route one line from tmux (with its newline).
    fn on_line(&mut self, line: &[u8]) {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if let Some(block) = &mut self.block {
            let end = crate::tmux::protocol::block_end(body, &block.guard).is_some();
            match block.owner {
                Owner::Waiter(id) => {
                    if let Some(w) = self.waiters.get_mut(&id) {
                        w.out.extend_from_slice(line);
                    }
                }
                Owner::Hub(_) if !end => block.lines.push(String::from_utf8_lossy(body).into()),
                Owner::Hub(_) => {}
            }
            if end && let Some(done) = self.block.take() {
                self.on_hub_reply(done);
            }
            return;
        }
        if let Some(guard) = body.strip_prefix(b"%begin ") {
            let owner = self
                .fifo
                .pop_front()
                .unwrap_or(Owner::Hub(HubReply::Ignore));
            if let Owner::Waiter(id) = owner
                && let Some(w) = self.waiters.get_mut(&id)
            {
                w.out.extend_from_slice(line);
            }
            self.block = Some(Block {
                owner,
                guard: guard.to_vec(),
                lines: Vec::new(),
            });
            return;
        }
        if let Some((num, _)) = crate::tmux::protocol::output_line(body) {
            if let Some(ids) = self.subs.get(&num) {
                for id in ids {
                    if let Some(w) = self.waiters.get_mut(id) {
                        w.out.extend_from_slice(line);
                    }
                }
            }
            return;
        }
        let text = String::from_utf8_lossy(body);
        let mut words = text.split(' ');
        let name = words.next().unwrap_or("");
        match name {
            "%exit" => {
                self.send_to_all(line);
                self.leaving = true;
                return;
            }
            "%session-changed" if words.next() != Some(self.session_id.as_str()) => {
                // The session went and tmux moved the client elsewhere.
                self.leaving = true;
                return;
            }
            "%window-add" | "%layout-change" => {
                // New panes start switched on: pause those nobody
                // waits on.
                self.send_hub(
                    &format!(
                        "list-panes -s -t {} -F '#{{pane_id}}'",
                        quote(&self.session_id)
                    ),
                    HubReply::Panes,
                );
            }
            _ => {}
        }
        if crate::engine::control::NOTIFICATIONS.contains(&name) {
            self.send_to_all(line);
        }
    }

    fn send_to_all(&mut self, line: &[u8]) {
        for w in self.waiters.values_mut() {
            if w.pane.is_some() {
                w.out.extend_from_slice(line);
            }
        }
    }

    fn on_hub_reply(&mut self, block: Block) {
        if block.owner != Owner::Hub(HubReply::Panes) {
            return;
        }
        let quiet: Vec<u32> = block
            .lines
            .iter()
            .filter_map(|l| l.strip_prefix('%').and_then(|n| n.trim().parse().ok()))
            .filter(|n| !self.subs.contains_key(n) && !self.off.contains(n))
            .collect();
        for chunk in quiet.chunks(100) {
            let args: Vec<String> = chunk.iter().map(|n| format!("-A '%{n}:pause'")).collect();
            self.send_hub(
                &format!("refresh-client {}", args.join(" ")),
                HubReply::Ignore,
            );
            self.off.extend(chunk.iter().copied());
        }
    }
}

/// A waiter's line is one command the hub may pass on: a query, or a
/// wait-for that only signals. Anything that changes the shared client, or
/// a line of several commands (an unquoted `;`), is refused.
fn allowed(line: &str) -> bool {
    let mut words = line.split(' ');
    let ok = match words.next().unwrap_or("") {
        "display-message" | "capture-pane" | "show-options" | "list-panes" => true,
        "wait-for" => words.next() == Some("-S"),
        _ => false,
    };
    ok && !has_unquoted_semicolon(line)
}

fn has_unquoted_semicolon(line: &str) -> bool {
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in line.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            ';' if !single && !double => return true,
            _ => {}
        }
    }
    false
}

fn same_user(stream: &UnixStream) -> bool {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    // SAFETY: geteuid has no preconditions.
    r == 0 && cred.uid == unsafe { libc::geteuid() }
}

fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Wait for events on `fds`, at most `timeout` (None: as long as it takes).
fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) {
    let ms = match timeout {
        // Rounded up: a wake-up just before the moment would only loop.
        Some(t) => {
            libc::c_int::try_from(t.as_micros().div_ceil(1000).max(1)).unwrap_or(libc::c_int::MAX)
        }
        None => -1,
    };
    // SAFETY: `fds` is a valid slice of pollfd for its length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_single_queries_pass() {
        assert!(allowed("display-message -p -t '%1' '#{pane_id}'"));
        assert!(allowed("capture-pane -p -J -t '%1' -S '-' -E -"));
        assert!(allowed("wait-for -S 'ready;x'"));
        assert!(!allowed("wait-for 'x'"));
        assert!(!allowed("switch-client -t '$1'"));
        assert!(!allowed("refresh-client -A '%1:on'"));
        assert!(!allowed("display-message -p x ; kill-server"));
        assert!(!allowed("display-message -p 'a' ;kill-server"));
        assert!(allowed("display-message -p 'a;b' \"c;d\""));
    }

    #[test]
    fn paths() {
        let s = Socket::Path("/tmp/x/sock".into());
        assert_eq!(
            path(&s, "$12").unwrap(),
            PathBuf::from("/tmp/x/.sock.tmux-wait-hub-12")
        );
        assert!(path(&s, "12").is_none());
        assert!(path(&s, "$1a").is_none());
        let long = Socket::Path(PathBuf::from(format!("/tmp/{}/s", "d".repeat(120))));
        assert!(path(&long, "$1").is_none());
    }
}
