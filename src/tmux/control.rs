//! A tmux control-mode client (`tmux -C`) attached to one session.
//!
//! Its stdout is drained continuously on a dedicated thread: a control client
//! that stops reading makes tmux stop reading the pane when it is the only
//! client, which would stall the program we are watching. Messages are
//! stamped with the time they were read and handed over a channel, which
//! other event sources (signals) can feed too.
//!
//! Side effects of attaching, kept minimal: the client is `read-only` and
//! `ignore-size` (tmux 3.2+; `-r` before), so it never types into panes nor
//! changes window sizes; it still counts in `session_attached` and runs
//! `client-attached`/`client-detached` hooks while it lives.

use super::protocol::{Decoder, Message};
use super::{Socket, Version, classify_failure};
use crate::error::{Error, Kind, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What wakes a waiter.
#[derive(Debug)]
pub enum Event {
    /// A control-mode message and when it was read.
    Control(Message, Instant),
    /// The control client's stdout closed: it exited.
    Eof,
    /// A signal we handle (SIGINT, SIGTERM, SIGHUP) arrived.
    Signal(i32),
    /// The watched pane's process exited (see `engine::pidwatch`).
    PaneExited,
}

/// Serialises, among tmux-wait processes on one server, the moments a
/// control client identifies itself and the moments one goes away: on tmux
/// before 3.7 a detach announced to a client that is still identifying
/// crashes the server (tmux issue 4980; see
/// `Version::notifies_half_identified_clients`). A departing client is
/// killed and reaped under the lock, shared (departures do not harm each
/// other); an arriving one, under the lock held exclusively, first
/// makes one round trip to the server, which by then has processed the loss
/// of every client that departed before (their sockets were closed before
/// the round trip's connected), and only then identifies. An advisory lock
/// file beside the server's socket, held for milliseconds.
struct IdentifyLock(Option<std::fs::File>);

impl IdentifyLock {
    /// Shared, for a client about to go (held for milliseconds).
    fn departing(socket: &Socket, version: Version) -> IdentifyLock {
        Self::acquire(
            socket,
            version,
            false,
            Instant::now() + Duration::from_millis(500),
        )
    }

    /// `exclusive` for an arriving client (it must be alone), shared for a
    /// departing one (departures do not harm each other, only an arrival).
    fn acquire(
        socket: &Socket,
        version: Version,
        exclusive: bool,
        deadline: Instant,
    ) -> IdentifyLock {
        if !version.notifies_half_identified_clients() {
            return IdentifyLock(None);
        }
        match super::lock_beside_socket(socket, "tmux-wait-lock", exclusive, deadline) {
            super::SocketLock::Held(f) => IdentifyLock(Some(f)),
            // Holders keep it for milliseconds; if it cannot be had, waiting
            // longer would only make the wait itself fail.
            super::SocketLock::Unavailable | super::SocketLock::TimedOut => IdentifyLock(None),
        }
    }
}

/// Start `tmux -C attach-session -t SESSION` (read-only, ignoring size)
/// under the identify lock, which the caller holds until the attach is
/// confirmed.
fn spawn_attach(
    socket: &Socket,
    session_id: &str,
    version: Version,
    deadline: Instant,
    stderr: Stdio,
) -> Result<(Child, IdentifyLock)> {
    let mut cmd = socket.command();
    cmd.arg("-C")
        .arg("attach-session")
        .arg("-t")
        .arg(session_id);
    if version.has_client_flags() {
        cmd.arg("-f").arg("ignore-size,read-only");
    } else {
        cmd.arg("-r");
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr);
    super::die_with_parent(&mut cmd);
    let identifying = IdentifyLock::acquire(socket, version, true, deadline);
    if identifying.0.is_some() {
        let _ = socket.run(["display-message", "-p", "."]);
    }
    let child = cmd
        .spawn()
        .map_err(|e| Error::io("cannot start tmux control client", e))?;
    Ok((child, identifying))
}

/// A control client whose output the caller reads raw (the hub passes
/// lines on as they are).
pub struct RawClient {
    child: Child,
    socket: Socket,
    version: Version,
    identifying: Option<IdentifyLock>,
}

impl RawClient {
    /// Start it; call `attached` once its first reply has ended.
    pub fn spawn(
        socket: &Socket,
        session_id: &str,
        version: Version,
        deadline: Instant,
    ) -> Result<RawClient> {
        let (child, identifying) =
            spawn_attach(socket, session_id, version, deadline, Stdio::null())?;
        Ok(RawClient {
            child,
            socket: socket.clone(),
            version,
            identifying: Some(identifying),
        })
    }

    /// Its stdin and stdout (once).
    pub fn take_pipes(&mut self) -> Result<(ChildStdin, std::process::ChildStdout)> {
        match (self.child.stdin.take(), self.child.stdout.take()) {
            (Some(i), Some(o)) => Ok((i, o)),
            _ => Err(Error::new(Kind::Tmux, "control client pipes already taken")),
        }
    }

    /// The attach was confirmed: others may identify now.
    pub fn attached(&mut self) {
        self.identifying = None;
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        self.identifying = None;
        let departing = IdentifyLock::departing(&self.socket, self.version);
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(departing);
    }
}

pub struct ControlClient {
    /// The `tmux -C` process, or None when connected through the hub.
    child: Option<Child>,
    /// The connection to the hub, when shared.
    hub: Option<UnixStream>,
    socket: Socket,
    version: Version,
    stdin: Option<Box<dyn Write + Send>>,
    rx: Receiver<Event>,
    tx: Sender<Event>,
    reader: Option<JoinHandle<()>>,
    /// The reader's EOF was handed out (it sends only one).
    eof_seen: std::cell::Cell<bool>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl ControlClient {
    /// Start `tmux -C attach-session -t SESSION` and wait for the attach to
    /// be confirmed. `deadline` bounds the wait.
    /// `keep` decides, on the reader thread, which output and notifications
    /// are worth waking the waiter for (replies and `%exit` always are):
    /// with many control clients on a server, every attach and detach is
    /// announced to all of them.
    pub fn attach(
        socket: &Socket,
        session_id: &str,
        version: Version,
        deadline: Instant,
        keep: fn(&Message) -> bool,
    ) -> Result<Self> {
        // Held until the attach is confirmed (identification done).
        let (mut child, _identifying) =
            spawn_attach(socket, session_id, version, deadline, Stdio::piped())?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        let reader_tx = tx.clone();
        let reader = std::thread::Builder::new()
            .name("tmux-control-reader".into())
            .spawn(move || read_loop(stdout, reader_tx, keep))
            .map_err(|e| Error::io("cannot start reader thread", e))?;
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_buf = Arc::clone(&stderr);
        let stderr_reader = std::thread::Builder::new()
            .name("tmux-control-stderr".into())
            .spawn(move || {
                let mut buf = Vec::new();
                let _ = stderr_pipe.take(64 * 1024).read_to_end(&mut buf);
                if let Ok(mut s) = stderr_buf.lock() {
                    *s = String::from_utf8_lossy(&buf).into_owned();
                }
            })
            .map_err(|e| Error::io("cannot start reader thread", e))?;
        let mut client = ControlClient {
            stdin: child
                .stdin
                .take()
                .map(|s| Box::new(s) as Box<dyn Write + Send>),
            child: Some(child),
            hub: None,
            socket: socket.clone(),
            version,
            rx,
            tx,
            reader: Some(reader),
            eof_seen: std::cell::Cell::new(false),
            stderr,
            stderr_reader: Some(stderr_reader),
        };
        // The first reply is the attach-session command's own.
        loop {
            match client.recv(deadline) {
                Some(Event::Control(Message::Reply { ok: true, .. }, _)) => return Ok(client),
                Some(Event::Control(Message::Reply { ok: false, lines }, _)) => {
                    return Err(classify_failure(&lines.join(" ")));
                }
                Some(Event::Control(..)) | Some(Event::PaneExited) => continue,
                Some(Event::Signal(sig)) => {
                    return Err(Error::new(Kind::Interrupted(sig), "interrupted"));
                }
                Some(Event::Eof) => return Err(client.lost_error()),
                None => {
                    return Err(Error::new(
                        Kind::Tmux,
                        "tmux control client did not attach in time",
                    ));
                }
            }
        }
    }

    /// Share the session's control client through the hub (see `hub`)
    /// instead of attaching one: None where that cannot be had (disabled,
    /// tmux before 3.2, the hub cannot start), and the caller attaches its
    /// own. A hub that went away as we connected is retried.
    pub fn attach_shared(
        socket: &Socket,
        session_id: &str,
        pane_id: &str,
        version: Version,
        deadline: Instant,
        keep: fn(&Message) -> bool,
    ) -> Result<Option<Self>> {
        if crate::hub::disabled() || !version.has_client_flags() {
            return Ok(None);
        }
        for _ in 0..3 {
            let Some(stream) = crate::hub::connect(socket, session_id, pane_id, version, deadline)
            else {
                return Ok(None);
            };
            let (Ok(reading), Ok(writing)) = (stream.try_clone(), stream.try_clone()) else {
                return Ok(None);
            };
            let (tx, rx) = mpsc::channel();
            let reader_tx = tx.clone();
            let reader = std::thread::Builder::new()
                .name("tmux-hub-reader".into())
                .spawn(move || read_loop(reading, reader_tx, keep))
                .map_err(|e| Error::io("cannot start reader thread", e))?;
            let client = ControlClient {
                child: None,
                hub: Some(stream),
                socket: socket.clone(),
                version,
                stdin: Some(Box::new(writing)),
                rx,
                tx,
                reader: Some(reader),
                eof_seen: std::cell::Cell::new(false),
                stderr: Arc::new(Mutex::new(String::new())),
                stderr_reader: None,
            };
            // The hub's first reply stands in for the attach's.
            loop {
                match client.recv(deadline) {
                    Some(Event::Control(Message::Reply { ok: true, .. }, _)) => {
                        return Ok(Some(client));
                    }
                    Some(Event::Eof) | Some(Event::Control(Message::Reply { .. }, _)) => break,
                    Some(Event::Control(..)) | Some(Event::PaneExited) => continue,
                    Some(Event::Signal(sig)) => {
                        return Err(Error::new(Kind::Interrupted(sig), "interrupted"));
                    }
                    None => return Ok(None),
                }
            }
        }
        Ok(None)
    }

    /// Connected through the hub (see `attach_shared`).
    pub fn is_shared(&self) -> bool {
        self.hub.is_some()
    }

    /// A sender into this client's event queue (for signal forwarding).
    pub fn sender(&self) -> Sender<Event> {
        self.tx.clone()
    }

    /// Send one command line. Callers quote every argument they did not
    /// write themselves with `protocol::quote`.
    pub fn send(&mut self, line: &str) -> Result<()> {
        debug_assert!(!line.contains('\n'));
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::new(Kind::Tmux, "control client closed"))?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        stdin
            .write_all(&buf)
            .and_then(|_| stdin.flush())
            .map_err(|_| Error::new(Kind::ServerExited, "tmux control connection closed"))
    }

    /// The next event, or None when `deadline` passes first.
    pub fn recv(&self, deadline: Instant) -> Option<Event> {
        let now = Instant::now();
        if deadline <= now {
            return self.rx.try_recv().ok().map(|e| self.note(e));
        }
        match self.rx.recv_timeout(deadline - now) {
            Ok(e) => Some(self.note(e)),
            Err(RecvTimeoutError::Timeout) => None,
            // Unreachable while `self.tx` lives; treat as EOF.
            Err(RecvTimeoutError::Disconnected) => Some(Event::Eof),
        }
    }

    /// An event that is already waiting, if any.
    pub fn try_recv(&self) -> Option<Event> {
        self.rx.try_recv().ok().map(|e| self.note(e))
    }

    fn note(&self, e: Event) -> Event {
        if matches!(e, Event::Eof) {
            self.eof_seen.set(true);
        }
        e
    }

    /// Why the client went away, from its stderr if it said anything.
    pub fn lost_error(&mut self) -> Error {
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
        let text = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        if text.trim().is_empty() {
            Error::new(Kind::ServerExited, "the tmux control connection closed")
        } else {
            classify_failure(&text)
        }
    }

    /// End the client: kill it and reap it. A control client that is told
    /// to exit (EOF on stdin) first waits for the server's acknowledgement,
    /// which a busy server (many clients attaching and detaching) delays by
    /// tens of milliseconds; the server treats a killed client exactly like
    /// one that detached. Always reaps the child.
    fn shutdown(&mut self) {
        if let Some(hub) = self.hub.take() {
            // Our side of the shared client only: the hub carries on.
            drop(self.stdin.take());
            let _ = hub.shutdown(std::net::Shutdown::Both);
            if let Some(h) = self.reader.take() {
                let _ = h.join();
            }
            return;
        }
        let Some(mut child) = self.child.take() else {
            return;
        };
        let departing = IdentifyLock::departing(&self.socket, self.version);
        let _ = child.kill();
        drop(self.stdin.take());
        // The reader reports EOF once the client has closed its stdout,
        // which it does as it exits; only then is waiting for it prompt.
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut eof = self.eof_seen.get() || matches!(child.try_wait(), Ok(Some(_)));
        while !eof {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match self.rx.recv_timeout(deadline - now) {
                Ok(Event::Eof) | Err(RecvTimeoutError::Disconnected) => eof = true,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => break,
            }
        }
        if !eof {
            let _ = child.kill();
        }
        let _ = child.wait();
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
        drop(departing);
    }
}

impl Drop for ControlClient {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn read_loop(stdout: impl Read, tx: Sender<Event>, keep: fn(&Message) -> bool) {
    let mut reader = BufReader::with_capacity(256 * 1024, stdout);
    let mut decoder = Decoder::new();
    let mut line = Vec::with_capacity(8192);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let at = Instant::now();
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if let Some(msg) = decoder.feed(&line) {
                    let wanted =
                        matches!(msg, Message::Reply { .. } | Message::Exit { .. }) || keep(&msg);
                    if wanted && tx.send(Event::Control(msg, at)).is_err() {
                        return;
                    }
                }
            }
        }
    }
    let _ = tx.send(Event::Eof);
}
