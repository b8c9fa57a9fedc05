//! Many panes at once, on one thread: every pane's stream connection and
//! pidfd in one `ppoll`, with the earliest of their timers as its
//! timeout, so a still pane costs nothing at all. Streams are opened by a
//! few helper threads (each open waits for the hub and tmux), and new
//! panes of the watched windows and sessions are picked up as they appear
//! (a new terminal device in `/dev/pts` is the kernel's word that a pane
//! may have been made). `any` decides from the events when to return; the
//! plugin keeps marks from the same events (`plugin`).

use super::Profiles;
use super::feed::Feed;
use super::machine::{Change, Status};
use super::pane::{Ctx, Out, PaneWatch, Source};
use super::report::{PaneReport, Pending};
use super::targets::{self, Row, Scope};
use crate::error::{Error, Kind, Result};
use crate::matcher::PatternList;
use crate::report::bound_lines;
use crate::sys::poller::Poller;
use crate::sys::wake::{Post, Wake};
use crate::tmux::{PaneInfo, Socket, Version};
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Threads that open streams at most (each open waits for the hub's tmux
/// command).
const OPENERS: usize = 16;

/// One pane of the watch.
pub struct WatchedPane {
    pub row: Row,
    pub pane: PaneWatch,
    /// Its watch ended: the pane exited or closed.
    pub gone: bool,
    /// Came after the watch began (a new pane of a watched session).
    pub late: bool,
    /// A pane watched before, come back with a new program
    /// (`respawn-pane`), not a new pane.
    pub respawned: bool,
    armed: bool,
    /// Which open of the pane's stream is awaited (a late answer to an
    /// earlier one is dropped).
    opening: u64,
    /// A closed pane's place, free for the next new pane (see
    /// [`Watch::forget_closed`]).
    vacant: bool,
}

impl WatchedPane {
    pub fn status(&self) -> Option<&Status> {
        self.pane.status()
    }
}

/// What the watch saw next.
#[derive(Debug)]
pub enum WatchEvent {
    Armed(usize),
    /// Every pane there at the start is watched.
    AllArmed,
    Change(usize, Change),
    Gone(usize),
}

/// What other threads tell the loop.
enum Msg {
    Opened {
        pane: String,
        opening: u64,
        result: Result<Box<Feed>>,
    },
    Rescan,
    Signal(i32),
}

struct Job {
    pane: PaneInfo,
    opening: u64,
    /// The watch looks at every line (it has patterns).
    lines: bool,
}

pub struct Watch {
    socket: Socket,
    /// The server's socket path, as reports name it.
    server: String,
    scopes: Vec<Scope>,
    version: Version,
    ctx: Ctx,
    pub entries: Vec<WatchedPane>,
    unarmed: usize,
    queue: VecDeque<WatchEvent>,
    rx: Receiver<Msg>,
    wake: Wake,
    /// Told only what changed of the descriptors waited on (see
    /// `sys::poller`): a turn costs what is ready, not every pane.
    poller: Poller,
    /// The places of panes that closed are taken by new ones (the rescan
    /// finds them closed), so that a watch over a day of panes stays the
    /// size of the panes there are. Off where a caller keeps what each
    /// place found (`any --all`).
    pub forget_closed: bool,
    openers: Openers,
    buf: Vec<u8>,
    /// How the end of the tmux server is seen: a watch whose panes have
    /// all gone (a server with attention on every session) has nothing
    /// else that ends with the server.
    server_end: ServerEnd,
}

/// The tmux server's end: its pidfd (Linux), else a look now and then.
enum ServerEnd {
    Pidfd(std::os::fd::OwnedFd),
    Look { pid: u32, next: Instant },
    Unknown,
}

/// Without a pidfd, how often the server's pid is looked at.
const SERVER_LOOK: Duration = Duration::from_secs(30);

impl ServerEnd {
    fn watch(pid: u32) -> ServerEnd {
        use crate::sys::pidfd::{Pidfd, open};
        if pid <= 1 {
            return ServerEnd::Unknown;
        }
        match open(pid) {
            Pidfd::Open(fd) => ServerEnd::Pidfd(fd),
            Pidfd::Gone | Pidfd::Unsupported => ServerEnd::Look {
                pid,
                next: Instant::now(),
            },
        }
    }

    fn wake(&self) -> Option<Instant> {
        match self {
            ServerEnd::Look { next, .. } => Some(*next),
            _ => None,
        }
    }

    /// Whether the server is gone, looked at if the look is due.
    fn gone(&mut self, now: Instant) -> bool {
        match self {
            ServerEnd::Look { pid, next } if *next <= now => {
                *next = now + SERVER_LOOK;
                let pid = nix::unistd::Pid::from_raw(*pid as i32);
                matches!(
                    nix::sys::signal::kill(pid, None),
                    Err(nix::errno::Errno::ESRCH)
                )
            }
            _ => false,
        }
    }
}

fn server_exited() -> Error {
    Error::new(Kind::ServerExited, "the tmux server exited during the wait")
}

/// The poller's keys: the wake-up pipe, and for a pane's stream its feed's
/// serial, its entry and whether it is the pidfd (the serial keeps a
/// descriptor number used again by another feed from passing for the
/// old one).
const KEY_WAKE: u64 = 0;
/// The server's pidfd (a feed's serial is never 0, so its keys are never
/// this small).
const KEY_SERVER: u64 = 1;
const ENTRY_BITS: u32 = 24;

fn feed_key(serial: u64, entry: usize, pid: bool) -> u64 {
    (serial << (ENTRY_BITS + 1)) | ((entry as u64) << 1) | u64::from(pid)
}

/// The entry, whether the pidfd, and the feed's serial.
fn key_entry(key: u64) -> (usize, bool, u64) {
    (
        ((key >> 1) & ((1 << ENTRY_BITS) - 1)) as usize,
        key & 1 == 1,
        key >> (ENTRY_BITS + 1),
    )
}

/// The threads that open streams: up to `OPENERS` while there are streams
/// to open, none once they have been idle for a second.
struct Openers {
    jobs: Sender<Job>,
    rx: Arc<Mutex<Receiver<Job>>>,
    live: Arc<AtomicUsize>,
    waker: Post<Msg>,
    socket: Socket,
}

impl Openers {
    fn open(&self, job: Job) {
        let _ = self.jobs.send(job);
        // (Counted after the send: an opener that gave up meanwhile has
        // counted itself out, and one more is started.)
        if self.live.load(Ordering::SeqCst) >= OPENERS {
            return;
        }
        self.live.fetch_add(1, Ordering::SeqCst);
        let (rx, live, waker, socket) = (
            self.rx.clone(),
            self.live.clone(),
            self.waker.clone(),
            self.socket.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("attention-open".into())
            .spawn(move || {
                loop {
                    let job = {
                        let Ok(rx) = rx.lock() else { return };
                        match rx.recv_timeout(Duration::from_secs(1)) {
                            Ok(job) => job,
                            Err(_) => {
                                // Counted out while holding the queue.
                                live.fetch_sub(1, Ordering::SeqCst);
                                return;
                            }
                        }
                    };
                    let deadline = Instant::now() + Duration::from_secs(10);
                    let result = Feed::open(&socket, &job.pane, job.lines, deadline).map(Box::new);
                    let m = Msg::Opened {
                        pane: job.pane.pane_id.clone(),
                        opening: job.opening,
                        result,
                    };
                    if !waker.post(m) {
                        return;
                    }
                }
            });
        if spawned.is_err() {
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Watch {
    /// Start watching every pane `scopes` cover.
    pub fn start(
        socket: &Socket,
        scopes: Vec<Scope>,
        quiet_after: Duration,
        patterns: PatternList,
        profiles: Profiles,
    ) -> Result<Watch> {
        crate::sys::fds::raise();
        // (New terminals are heard of from before the panes are listed: a
        // pane made in between is not missed.)
        let rescans = scopes.iter().any(|s| !matches!(s, Scope::Pane(_)));
        let terminals = rescans.then(crate::sys::pts::NewTerminals::watch);
        let all = targets::list(socket)?;
        let server_pid = all.first().map_or(0, |r| r.server_pid);
        let rows = targets::select(&all, &scopes);
        if rows.is_empty() {
            return Err(Error::new(Kind::NoPane, "the targets hold no pane"));
        }
        let version = socket.version().unwrap_or(Version(3, 2));
        let (tx, rx) = channel();
        let wake = Wake::new().map_err(|e| Error::io("cannot make a pipe", e))?;
        let waker = Post::new(tx, wake.waker());
        {
            let w = waker.clone();
            crate::signals::route_to(move |sig| {
                w.post(Msg::Signal(sig));
            });
        }
        let (jobs, job_rx) = channel::<Job>();
        let openers = Openers {
            jobs,
            rx: Arc::new(Mutex::new(job_rx)),
            live: Arc::new(AtomicUsize::new(0)),
            waker: waker.clone(),
            socket: socket.clone(),
        };
        if let Some(t) = terminals {
            // (Sent when the server may have made a pane: a terminal of
            // its own appeared.)
            let tx = waker;
            t.on_each(Some(server_pid).filter(|&p| p > 1), move || {
                tx.post(Msg::Rescan)
            });
        }
        let mut w = Watch {
            socket: socket.clone(),
            server: socket.absolute().path().to_string_lossy().into_owned(),
            scopes,
            version,
            ctx: Ctx::new(socket.clone(), quiet_after, patterns, profiles),
            entries: Vec::new(),
            forget_closed: false,
            unarmed: rows.len(),
            queue: VecDeque::new(),
            rx,
            wake,
            poller: Poller::new().map_err(|e| Error::io("cannot make a poller", e))?,
            openers,
            buf: vec![0u8; 256 * 1024],
            server_end: ServerEnd::watch(server_pid),
        };
        for r in rows {
            w.add(r, false);
        }
        Ok(w)
    }

    fn add(&mut self, row: Row, late: bool) {
        let info = row.info(self.version);
        let mut e = WatchedPane {
            pane: PaneWatch::new(info, late),
            row,
            gone: false,
            late,
            respawned: false,
            armed: false,
            opening: 0,
            vacant: false,
        };
        let i = match self.index(&e.row.pane_id) {
            Some(i) => {
                e.respawned = true;
                self.entries[i] = e;
                i
            }
            None => match self.entries.iter().position(|x| x.vacant) {
                Some(i) => {
                    self.entries[i] = e;
                    i
                }
                None => {
                    self.entries.push(e);
                    self.entries.len() - 1
                }
            },
        };
        self.open(i);
    }

    /// Pane `i` closed for good: its place goes free (its stream and its
    /// state with it).
    fn vacate(&mut self, i: usize) {
        let mut row = self.entries[i].row.clone();
        row.pane_id.clear();
        let info = row.info(self.version);
        self.entries[i] = WatchedPane {
            pane: PaneWatch::new(info, false),
            row,
            gone: true,
            late: false,
            respawned: false,
            armed: true,
            opening: 0,
            vacant: true,
        };
    }

    fn open(&mut self, i: usize) {
        let e = &mut self.entries[i];
        e.opening += 1;
        e.pane.source = Source::Opening;
        self.openers.open(Job {
            pane: e.pane.pane.clone(),
            opening: e.opening,
            lines: !self.ctx.patterns.is_empty(),
        });
    }

    fn index(&self, pane: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| !e.vacant && e.row.pane_id == pane)
    }

    /// Take what pane `i` found.
    fn collect(&mut self, i: usize, outs: Vec<Out>) -> Result<()> {
        if !outs.is_empty() {
            crate::trace!("{} {outs:?}", self.entries[i].row.pane_id);
        }
        for o in outs {
            match o {
                Out::Armed => {
                    let e = &mut self.entries[i];
                    if !e.armed {
                        e.armed = true;
                        if !e.late {
                            self.unarmed -= 1;
                        }
                    }
                    self.queue.push_back(WatchEvent::Armed(i));
                    if self.unarmed == 0 {
                        self.unarmed = usize::MAX;
                        self.queue.push_back(WatchEvent::AllArmed);
                    }
                }
                Out::Change(c) => self.queue.push_back(WatchEvent::Change(i, c)),
                Out::Gone => {
                    self.entries[i].gone = true;
                    self.queue.push_back(WatchEvent::Gone(i));
                }
                Out::Fatal(e) => return Err(e),
                Out::Open => self.open(i),
            }
        }
        Ok(())
    }

    fn message(&mut self, m: Msg) -> Result<()> {
        match m {
            Msg::Opened {
                pane,
                opening,
                result,
            } => {
                let Some(i) = self.index(&pane) else {
                    return Ok(());
                };
                if self.entries[i].opening != opening {
                    return Ok(());
                }
                let mut out = Vec::new();
                self.entries[i].pane.opened(&self.ctx, result, &mut out);
                self.collect(i, out)
            }
            Msg::Rescan => {
                self.rescan();
                Ok(())
            }
            Msg::Signal(sig) => Err(Error::new(Kind::Interrupted(sig), "interrupted")),
        }
    }

    /// The next event, or None at `deadline`.
    pub fn next(&mut self, deadline: Instant) -> Result<Option<WatchEvent>> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Ok(Some(e));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            self.poller
                .want(self.wake.as_raw_fd(), KEY_WAKE, libc::POLLIN);
            if let ServerEnd::Pidfd(fd) = &self.server_end {
                self.poller.want(fd.as_raw_fd(), KEY_SERVER, libc::POLLIN);
            }
            if self.server_end.gone(now) {
                return Err(server_exited());
            }
            let mut wake = self.server_end.wake().map_or(deadline, |w| w.min(deadline));
            for (i, e) in self.entries.iter().enumerate() {
                if let Source::Stream(f) = &e.pane.source {
                    let p = &mut self.poller;
                    p.want(f.conn_fd(), feed_key(f.serial, i, false), libc::POLLIN);
                    if let Some(pid) = f.pid_fd() {
                        p.want(pid, feed_key(f.serial, i, true), libc::POLLIN);
                    }
                }
                if let Some(w) = e.pane.wake() {
                    wake = wake.min(w);
                }
            }
            let mut woken = false;
            let mut who: Vec<(usize, bool, u64)> = Vec::new();
            for r in self.poller.wait_fine(wake.saturating_duration_since(now)) {
                match r.key {
                    KEY_WAKE => woken = true,
                    KEY_SERVER => return Err(server_exited()),
                    k => who.push(key_entry(k)),
                }
            }
            if woken {
                self.wake.drain();
                while let Ok(m) = self.rx.try_recv() {
                    self.message(m)?;
                }
            }
            // (In the order of the panes, the pidfd after the stream.)
            who.sort_unstable();
            for (i, pid, serial) in who {
                // (A message may have given the entry another feed.)
                if !self.entries.get(i).is_some_and(
                    |e| matches!(&e.pane.source, Source::Stream(f) if f.serial == serial),
                ) {
                    continue;
                }
                let mut out = Vec::new();
                if pid {
                    self.entries[i].pane.pid_exited();
                } else {
                    self.entries[i]
                        .pane
                        .readable(&self.ctx, &mut self.buf, &mut out);
                }
                self.collect(i, out)?;
            }
            let now = Instant::now();
            for i in 0..self.entries.len() {
                if self.entries[i].pane.wake().is_some_and(|w| w <= now) {
                    let mut out = Vec::new();
                    self.entries[i].pane.timer(&self.ctx, now, &mut out);
                    self.collect(i, out)?;
                }
            }
        }
    }

    /// Pick up panes that appeared in the scopes (and panes that came
    /// back: a dead pane respawned).
    fn rescan(&mut self) {
        let Ok(all) = targets::list(&self.socket) else {
            crate::trace!("rescan: no list");
            return;
        };
        crate::trace!(
            "rescan: {:?}",
            all.iter().map(|r| r.pane_id.as_str()).collect::<Vec<_>>()
        );
        if self.forget_closed {
            for i in 0..self.entries.len() {
                let e = &self.entries[i];
                if e.gone && !e.vacant && !all.iter().any(|r| r.pane_id == e.row.pane_id) {
                    self.vacate(i);
                }
            }
        }
        for r in targets::select(&all, &self.scopes) {
            match self.index(&r.pane_id) {
                None => self.add(r, true),
                Some(i) if self.entries[i].gone && !r.dead => self.add(r, true),
                Some(_) => {}
            }
        }
    }

    /// Where the pane is now (its session and window may have moved), as
    /// a report of `change`, with its last rows when `tail`.
    pub fn report(&self, i: usize, change: &Change, tail: bool) -> PaneReport {
        let e = &self.entries[i];
        let (mut session, mut window) = (e.row.session_name.clone(), e.row.window_index);
        let s = |a: &str| a.to_owned();
        let p = e.row.pane_id.clone();
        let mut cmds = vec![vec![
            s("display-message"),
            s("-p"),
            s("-t"),
            p.clone(),
            s("#{pane_id}\t#{window_index}\t#{session_name}"),
        ]];
        if tail {
            cmds.push(vec![
                s("capture-pane"),
                s("-p"),
                s("-J"),
                s("-t"),
                p.clone(),
            ]);
        }
        let replies = if e.gone {
            Vec::new()
        } else {
            self.socket.batch(&cmds).unwrap_or_default()
        };
        if let Some(line) = replies.first().and_then(|r| r.first()) {
            let f: Vec<&str> = line.splitn(3, '\t').collect();
            if f.len() == 3 && f[0] == p {
                window = f[1].parse().unwrap_or(window);
                session = f[2].to_owned();
            }
        }
        let mut r = PaneReport::new(&p, &session, window, change);
        r.server = self.server.clone();
        if tail {
            let rows = replies.get(1).cloned().unwrap_or_default();
            r.tail = Some(bound_lines(crate::engine::trim_rows(rows), true));
        }
        r
    }

    /// The answer is found: leave the streams to the process's end, which
    /// closes them all at once, instead of closing each before the answer
    /// is printed.
    pub fn leave(self) {
        std::mem::forget(self);
    }

    /// Every pane but `except`, and its state.
    pub fn pending(&self, except: Option<usize>) -> Vec<Pending> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, e)| Some(*i) != except && !e.vacant)
            .map(|(_, e)| Pending {
                pane_id: e.row.pane_id.clone(),
                state: e.status().map_or("unknown", |s| s.state.as_str()),
                server: None,
            })
            .collect()
    }
}
