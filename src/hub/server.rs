//! The hub process (`tmux-wait hub`): owns the pipes of the panes waits
//! read and hands each pane's stream to every wait on it. See the module
//! above for the protocol; this is the event loop.

use super::budget::{Budget, Held};
use super::conn::log;
use super::conn::{Conn, Role};
use super::feed::{MAX_TOKEN, recv_with_fds};
use super::pipe::Started;
use super::policy::{allowed, entry_queries, valid_pane};
use super::protocol::{EndReason, Entry, Frame, HELLO, Request};
use super::router::{Requested, Router, Sends};
use super::sieve::Framer;
use super::starts::{self, StartJob, Starts};
use super::tap::Tap;
use crate::error::{Error, Kind, Result};
use crate::sys::poller::Poller;
use crate::sys::wake::{Post, Wake};
use crate::sys::{bytes_waiting, same_user, set_nonblocking};
use crate::tmux::{Socket, SocketLock};
use std::collections::HashMap;
use std::io::ErrorKind;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

mod stream;

/// How long the hub stays after its last wait left.
const LINGER: Duration = Duration::from_millis(250);
/// How long a pane's pipe stays after its last wait left, for the next
/// call on the pane to join (a script's calls in a row skip the pipe's
/// start); never past the hub's own stay.
const KEEP: Duration = LINGER;
/// Output queued for a wait past which it is dropped, in MiB
/// (`TMUX_WAIT_HUB_QUEUE_MB` changes it, for tests).
const QUEUE_MB: usize = 64;
/// Most bytes read from one pipe in one turn of the loop, so the waits of
/// other panes are served in between.
const READ_PER_TURN: usize = 1 << 20;
/// How long a new connection has to send its request.
const HELLO_WITHIN: Duration = Duration::from_secs(2);
/// How long a pipe's command has to hand its socket over after tmux
/// opened the pipe.
const FEED_WITHIN: Duration = Duration::from_secs(3);
/// Longest request line.
const MAX_REQUEST: usize = 1 << 20;
/// The poller's keys: the listener, the wake-up pipe; a wait's connection
/// is its id times two, a pane's pipe its key times two plus one.
const KEY_LISTENER: u64 = 0;
const KEY_WAKE: u64 = 1;

/// Run the server's hub until it is no longer needed.
pub fn serve(socket: &Socket) -> Result<()> {
    // Detached and long-lived: keep no directory busy.
    let _ = std::env::set_current_dir("/");
    let path = super::path(socket)
        .ok_or_else(|| Error::usage("the tmux socket's path is too long for a hub socket"))?;
    // One hub per server. One that is leaving holds the lock until its
    // socket is gone: wait for it briefly; leave if another hub answers.
    let started = Instant::now();
    let lock_name = "tmux-wait-hub.lock";
    let lock = loop {
        match crate::tmux::lock_beside_socket(socket, lock_name, true, Instant::now()) {
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
    if UnixStream::connect(&path).is_ok() {
        return Ok(());
    }
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
    // (A screen redrawn in place is parsed here once for all the waits on
    // its pane: see `sieve`.)
    let mut hub = Hub::new(socket, Some(crate::pane::vt::frame_run))?;
    // SIGTERM, SIGINT, SIGHUP: leave as when idle (pipes closed, socket
    // and lock file removed).
    {
        let wake = hub.wake.waker();
        let stop = hub.stop.clone();
        crate::signals::route_to(move |_| {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            wake.wake();
        });
    }
    hub.run(&listener);
    // Gone before the lock is released (a new hub binds only under it),
    // and only if it is still ours; the lock file goes with the lock.
    if mine.is_some() && inode(&path) == mine {
        let _ = std::fs::remove_file(&path);
    }
    drop(listener);
    drop(hub);
    drop(lock);
    // What processes killed while they held a lock left beside the sockets
    // of servers that are gone.
    if let Some(dir) = path.parent() {
        crate::tmux::sweep_gone_servers(dir);
    }
    Ok(())
}

struct Hub {
    socket: Socket,
    /// The pipe's command line, without its token.
    feed_cmd: String,
    conns: HashMap<u64, Conn>,
    taps: HashMap<String, Tap>,
    router: Router,
    next_id: u64,
    /// Where the pipe starts' threads post (no descriptor each).
    started: Post<Started>,
    started_rx: Receiver<Started>,
    wake: Wake,
    queue_limit: usize,
    idle_since: Option<Instant>,
    /// Panes whose pipe the hub closed, and when: tmux takes a moment to
    /// see it, and meanwhile `#{pane_pipe}` still says piped.
    closed: HashMap<String, Instant>,
    /// A signal asked the hub to leave.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The open-files limit and the count against it.
    budget: Budget,
    /// Pipe starts queued and running.
    starts: Starts,
    dropped: super::dropped::Dropped,
    /// What a turn read from one pipe (see [`Hub::read_tap`]).
    chunk: Vec<u8>,
    /// Finds the runs of a screen redrawn in place the sieve may leave
    /// out (see `sieve`).
    framer: Option<Framer>,
}

/// How long after closing a pane's pipe a "piped" answer is taken for our
/// own pipe on its way out, and asked again.
const CLOSING: Duration = Duration::from_secs(1);

impl Hub {
    fn new(socket: &Socket, framer: Option<Framer>) -> Result<Hub> {
        let feed_cmd = super::pipe::feed_command(socket)?;
        let wake = Wake::new().map_err(|e| Error::io("cannot set up the hub", e))?;
        let (started_tx, started_rx) = channel();
        let queue_limit = std::env::var("TMUX_WAIT_HUB_QUEUE_MB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&m| m > 0)
            .unwrap_or(QUEUE_MB)
            << 20;
        Ok(Hub {
            socket: socket.absolute(),
            feed_cmd,
            conns: HashMap::new(),
            taps: HashMap::new(),
            router: Router::default(),
            next_id: 1,
            started: Post::new(started_tx, wake.waker()),
            started_rx,
            wake,
            queue_limit,
            idle_since: Some(Instant::now()),
            closed: HashMap::new(),
            stop: Default::default(),
            budget: Budget::new(),
            starts: Starts::default(),
            dropped: Default::default(),
            chunk: Vec::new(),
            framer,
        })
    }

    fn run(&mut self, listener: &UnixListener) {
        let mut buf = vec![0u8; 64 * 1024];
        let Ok(mut poller) = Poller::new() else {
            return;
        };
        let mut conns_ready: Vec<u64> = Vec::new();
        let mut taps_ready: Vec<u64> = Vec::new();
        loop {
            // Each turn names every descriptor it waits on; the poller tells
            // the kernel only what changed, and hears only what is ready.
            let now = Instant::now();
            let listen = if self.may_accept() { libc::POLLIN } else { 0 };
            poller.want(listener.as_raw_fd(), KEY_LISTENER, listen);
            poller.want(self.wake.as_raw_fd(), KEY_WAKE, libc::POLLIN);
            for (id, c) in &self.conns {
                let mut ev = libc::POLLIN;
                if c.pending() > 0 {
                    ev |= libc::POLLOUT;
                }
                poller.want(c.stream.as_raw_fd(), id << 1, ev);
            }
            for (p, t) in &self.taps {
                if let Some(fd) = &t.fd
                    && self.router.is_live(p)
                    && t.paused(now).is_none()
                {
                    poller.want(fd.as_raw_fd(), (t.poll_key << 1) | 1, libc::POLLIN);
                }
            }
            let (mut accept, mut woken) = (false, false);
            conns_ready.clear();
            taps_ready.clear();
            for r in poller.wait(self.next_timeout(now)) {
                match r.key {
                    KEY_LISTENER => accept = true,
                    KEY_WAKE => woken = true,
                    k if k & 1 == 1 => taps_ready.push(k >> 1),
                    k => {
                        if r.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                            conns_ready.push(k >> 1);
                        }
                    }
                }
            }
            if accept {
                self.accept(listener);
            }
            if woken {
                self.wake.drain();
            }
            while let Ok(s) = self.started_rx.try_recv() {
                self.on_started(s);
            }
            if !taps_ready.is_empty() {
                let panes: Vec<String> = self
                    .taps
                    .iter()
                    .filter(|(_, t)| t.fd.is_some() && taps_ready.contains(&t.poll_key))
                    .map(|(p, _)| p.clone())
                    .collect();
                for p in panes {
                    self.read_tap(&p, READ_PER_TURN);
                }
            }
            for id in &conns_ready {
                self.read_conn(*id, &mut buf);
            }
            self.pass_due();
            self.expire();
            // Starts held back for room may run now that waits left.
            self.pump_starts();
            self.flush_all();
            if self.stop.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            if self.idle() && !self.dropped.pending() {
                let since = *self.idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= LINGER {
                    return;
                }
            } else {
                self.idle_since = None;
            }
        }
    }

    /// No wait is served and no pipe starts: every pipe is idle.
    fn idle(&self) -> bool {
        self.conns.is_empty() && self.taps.keys().all(|p| self.router.is_idle(p))
    }

    /// How long the loop may sleep: until the linger ends, an idle pipe
    /// closes, a request or a feed is overdue, or a pipe left out of this
    /// turn's poll as paused at `now` may be read (at once if its pause
    /// ended since: it is not polled).
    fn next_timeout(&self, now: Instant) -> Option<Duration> {
        let mut next: Option<Instant> = None;
        let mut at = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
        if self.idle() {
            at(self.idle_since.unwrap_or_else(Instant::now) + LINGER);
        }
        if let Some(t) = self.router.next_expiry(KEEP) {
            at(t);
        }
        if self.dropped.any() {
            at(Instant::now() + super::dropped::LOOK_EVERY);
        }
        for c in self.conns.values() {
            if matches!(c.role, Role::New) {
                at(c.since + HELLO_WITHIN);
            }
        }
        for (p, t) in &self.taps {
            if self.router.is_live(p) && t.fd.is_none() {
                at(t.live_since + FEED_WITHIN);
            }
            if let Some(until) = t.paused(now) {
                at(until);
            }
            if let Some(until) = t.held_until() {
                at(until);
            }
        }
        if let Some(t) = self.budget.paused() {
            at(t);
        }
        // Starts held back for room: looked at again now and then, whatever
        // else happens.
        if self.starts.waiting() {
            at(Instant::now() + Duration::from_millis(50));
        }
        next.map(|n| n.saturating_duration_since(Instant::now()))
    }

    /// Accept while the budget has room, past it one connection at a time
    /// (see `Budget::may_accept`); not at all while accepting is paused.
    fn may_accept(&self) -> bool {
        self.budget.paused().is_none()
            && (self.budget.may_accept(self.held())
                || !self.conns.values().any(|c| matches!(c.role, Role::New)))
    }

    fn accept(&mut self, listener: &UnixListener) {
        while self.may_accept() {
            match listener.accept() {
                Ok((stream, _)) => {
                    if !same_user(&stream) || stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let id = self.next_id;
                    self.next_id += 1;
                    log(format_args!("accept {id}"));
                    self.conns.insert(
                        id,
                        Conn {
                            stream,
                            inbuf: Vec::new(),
                            out: Vec::new(),
                            sent: 0,
                            role: Role::New,
                            since: Instant::now(),
                            wants: None,
                            streamed: 0,
                            left_out: 0,
                        },
                    );
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if crate::error::is_out_of_descriptors(&e) => {
                    if !self.budget.refuse_one(listener) {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }

    /// What the hub holds, for the budget.
    fn held(&self) -> Held {
        Held {
            conns: self.conns.len(),
            taps: self.taps.len(),
            unfed: self.taps.values().filter(|t| t.fd.is_none()).count(),
            starting: self.starts.running,
        }
    }

    fn read_conn(&mut self, id: u64, buf: &mut [u8]) {
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return;
            };
            let mut fds = Vec::new();
            match recv_with_fds(&c.stream, buf, &mut fds) {
                Ok(0) => return self.drop_conn(id),
                Ok(n) => {
                    if c.inbuf.len() + n > MAX_REQUEST {
                        return self.drop_conn(id);
                    }
                    c.inbuf.extend_from_slice(&buf[..n]);
                    if let Some(fd) = fds.into_iter().next() {
                        return self.on_feed(id, fd);
                    }
                    while let Some(nl) = self
                        .conns
                        .get(&id)
                        .and_then(|c| c.inbuf.iter().position(|&b| b == b'\n'))
                    {
                        let Some(c) = self.conns.get_mut(&id) else {
                            return;
                        };
                        let line: Vec<u8> = c.inbuf.drain(..=nl).collect();
                        self.on_line(id, &line[..line.len() - 1]);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.drop_conn(id),
            }
        }
    }

    /// A pipe's command handed over its socket.
    fn on_feed(&mut self, id: u64, fd: OwnedFd) {
        log(format_args!("feed from {id}"));
        let line = self.conns.remove(&id).map(|c| c.inbuf).unwrap_or_default();
        let token = String::from_utf8_lossy(&line);
        let token = token.trim().strip_prefix("feed ").unwrap_or("");
        if token.is_empty() || token.len() > MAX_TOKEN {
            return;
        }
        // An unknown token (its waits left meanwhile): dropping the
        // descriptor closes the pipe.
        if let Some(t) = self
            .taps
            .values_mut()
            .find(|t| t.token == token && t.fd.is_none())
        {
            let _ = set_nonblocking(fd.as_raw_fd());
            t.fd = Some(fd);
            t.poll_key = self.next_id;
            self.next_id += 1;
        }
    }

    fn on_line(&mut self, id: u64, line: &[u8]) {
        let role_new = matches!(self.conns.get(&id).map(|c| &c.role), Some(Role::New));
        if role_new {
            let req: Option<Request> = serde_json::from_slice(line).ok();
            match req {
                Some(r)
                    if r.hello == HELLO
                        && valid_pane(&r.pane)
                        && r.extra.iter().all(|c| allowed(c)) =>
                {
                    self.on_request(id, r)
                }
                _ => self.drop_conn(id),
            }
            return;
        }
        // A wait's later lines.
        let text = String::from_utf8_lossy(line).into_owned();
        self.on_wait_line(id, &text);
    }

    fn on_request(&mut self, id: u64, req: Request) {
        log(format_args!("request {id} {}", req.pane));
        // A wait that does not fit is refused at once (once idle pipes made
        // what room they can); the others go on.
        let fits = |h: &Self| h.budget.fits(h.held(), !h.taps.contains_key(&req.pane));
        if !fits(self) {
            for p in self.router.take_all_idle() {
                self.close_pipe(&p);
            }
        }
        if !fits(self) {
            log(format_args!(
                "refused {id}: out of descriptors {:?}",
                self.held()
            ));
            if let Some(c) = self.conns.get_mut(&id) {
                c.push(&Frame::Entry(Budget::refusal()));
            }
            return;
        }
        if let Some(c) = self.conns.get_mut(&id) {
            c.role = Role::Waiter {
                pane: req.pane.clone(),
                entered: false,
            };
        }
        // (A wait joins where the stream stands: after what was held.)
        self.pass_held(&req.pane);
        match self.router.request(id, &req.pane, req.mark) {
            Requested::Start => {}
            Requested::Queued => return,
            Requested::Joined(sends) => return self.send(sends),
        }
        let token = crate::state::random_id();
        self.taps
            .insert(req.pane.clone(), Tap::new(token.clone(), self.framer));
        let mut queries = entry_queries(&req.pane);
        queries.extend(req.extra);
        self.starts.push(StartJob {
            pane: req.pane,
            feed: format!("{} {token}", self.feed_cmd),
            queries,
        });
        self.pump_starts();
    }

    /// Run queued pipe starts while the budget allows.
    fn pump_starts(&mut self) {
        while self.starts.waiting() && self.budget.may_start(self.held()) {
            let Some(job) = self.starts.next() else {
                return;
            };
            self.closed.retain(|_, at| at.elapsed() < CLOSING);
            let closing = self.closed.get(&job.pane).map(|at| *at + CLOSING);
            starts::spawn(job, self.socket.clone(), closing, self.started.clone());
        }
    }

    /// Send each frame to its wait; an entry marks the wait as entered
    /// (its `sync` lines are answered from then on).
    fn send(&mut self, sends: Sends) {
        for (id, frame) in sends {
            if let Some(c) = self.conns.get_mut(&id) {
                c.push(&frame);
                if let (Frame::Entry(_), Role::Waiter { entered, .. }) = (&frame, &mut c.role) {
                    *entered = true;
                }
            }
        }
    }

    fn on_started(&mut self, mut s: Started) {
        self.starts.ended();
        self.pump_starts();
        match &s.result {
            Err(e) if e.kind == Kind::TooManyOpenFiles => {
                s.result = Err(Error::too_many_open_files("tmux-wait's hub"));
            }
            Err(e) if e.kind == Kind::PaneDied => {
                let dead = format!("pane {} is dead (its program has exited)", s.pane);
                s.result = Err(Error::new(Kind::PaneDied, dead));
            }
            _ => {}
        }
        log(format_args!("started {} {}", s.pane, s.outcome()));
        if !self.taps.contains_key(&s.pane) {
            return;
        }
        let entry = match s.result {
            Ok(e) => e,
            Err(e) => Entry::Failed {
                kind: e.kind.as_str().to_owned(),
                message: e.message,
            },
        };
        let fresh = matches!(entry, Entry::Fresh { .. });
        let sends = self.router.started(&s.pane, entry);
        self.send(sends);
        if !fresh {
            // Nobody streams this pane; every wait on it heard why.
            self.taps.remove(&s.pane);
            return;
        }
        if let Some(t) = self.taps.get_mut(&s.pane) {
            t.live_since = Instant::now();
        }
        // Its waits may all have left while it started.
        self.router.settle(&s.pane, Instant::now());
    }

    /// The pane's stream ended: tell its waits, forget the pipe.
    pub(super) fn end_tap(&mut self, pane: &str, why: EndReason) {
        self.pass_held(pane);
        log(format_args!("end {pane} {why:?}"));
        self.taps.remove(pane);
        for id in self.router.end(pane) {
            if let Some(c) = self.conns.get_mut(&id) {
                c.push(&Frame::End(why.clone()));
            }
        }
    }

    /// Requests and feeds that are overdue.
    fn expire(&mut self) {
        let late: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| matches!(c.role, Role::New) && c.since.elapsed() > HELLO_WITHIN)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            self.drop_conn(id);
        }
        let unfed: Vec<String> = self
            .taps
            .iter()
            .filter(|(p, t)| {
                self.router.is_live(p) && t.fd.is_none() && t.live_since.elapsed() > FEED_WITHIN
            })
            .map(|(p, _)| p.clone())
            .collect();
        for p in unfed {
            self.end_tap(&p, EndReason::NoFeed);
        }
        for p in self.router.expired(Instant::now(), KEEP) {
            self.close_pipe(&p);
        }
    }

    fn flush_all(&mut self) {
        let gone: Vec<u64> = self
            .conns
            .iter_mut()
            .filter_map(|(id, c)| (c.pending() > 0 && !c.flush()).then_some(*id))
            .collect();
        for id in gone {
            self.drop_conn(id);
        }
    }

    fn drop_conn(&mut self, id: u64) {
        let Some(c) = self.conns.remove(&id) else {
            return log(format_args!("drop {id}"));
        };
        log(format_args!(
            "drop {id}: streamed {}, left out {}",
            c.streamed, c.left_out
        ));
        if let Role::Waiter { pane, .. } = c.role {
            self.router.leave(id, &pane, Instant::now());
        }
    }

    /// Dropping our end of the pipe's socket makes tmux close it at once
    /// (`-I`).
    fn close_pipe(&mut self, pane: &str) {
        self.taps.remove(pane);
        self.closed.insert(pane.to_owned(), Instant::now());
        log(format_args!("close {pane}"));
    }
}
