//! Many panes at once: a thread per pane (see `pane`), one place that
//! takes their reports in order, and new panes of the targeted windows
//! and sessions picked up as they appear (a new terminal device in
//! `/dev/pts` is the kernel's word that a pane may have been made).
//! `any` decides from the reports when to return; the plugin keeps
//! marks from the same reports (`plugin`).

use super::machine::{Change, Status, What};
use super::pane::{self, Msg, Shared};
use super::report::{AnyResult, PaneReport, Pending};
use super::targets::{self, Row, Scope};
use super::{AnyRequest, Profiles};
use crate::error::{Error, Kind, Result};
use crate::matcher::PatternList;
use crate::report::{bound_lines, seconds};
use crate::tmux::{Socket, Version};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// One pane of the watch.
#[derive(Debug, Clone)]
pub struct Entry {
    pub row: Row,
    /// Its state (None until its watch is armed).
    pub status: Option<Status>,
    /// Its thread ended: the pane exited or closed.
    pub gone: bool,
    /// Came after the watch began (a new pane of a watched session).
    pub late: bool,
}

/// What the watch saw next.
#[derive(Debug)]
pub enum Event {
    Armed(usize),
    /// Every pane there at the start is watched.
    AllArmed,
    Change(usize, Change),
    Gone(usize),
}

pub struct Watch {
    socket: Socket,
    scopes: Vec<Scope>,
    version: Version,
    shared: Arc<Shared>,
    rx: Receiver<Msg>,
    pub entries: Vec<Entry>,
    unarmed: usize,
}

impl Watch {
    /// Start watching every pane `targets` cover.
    pub fn start(
        socket: &Socket,
        scopes: Vec<Scope>,
        quiet_after: Duration,
        patterns: PatternList,
        profiles: Profiles,
    ) -> Result<Watch> {
        crate::sys::nofile::raise();
        let rows = targets::select(&targets::list(socket)?, &scopes);
        if rows.is_empty() {
            return Err(Error::new(Kind::NoPane, "the targets hold no pane"));
        }
        let version = socket.version().unwrap_or(Version(3, 2));
        let (tx, rx) = channel();
        let shared = Arc::new(Shared::new(
            socket.clone(),
            quiet_after,
            patterns,
            profiles,
            tx.clone(),
        ));
        if scopes.iter().any(|s| !matches!(s, Scope::Pane(_))) {
            watch_new_terminals(tx);
        }
        let mut w = Watch {
            socket: socket.clone(),
            scopes,
            version,
            shared,
            rx,
            entries: Vec::new(),
            unarmed: rows.len(),
        };
        for r in rows {
            w.add(r, false);
        }
        Ok(w)
    }

    fn add(&mut self, row: Row, late: bool) {
        pane::spawn(self.shared.clone(), row.info(self.version));
        self.entries.push(Entry {
            row,
            status: None,
            gone: false,
            late,
        });
    }

    fn index(&self, pane: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.row.pane_id == pane)
    }

    /// The next event, or None at `deadline`.
    pub fn next(&mut self, deadline: Instant) -> Result<Option<Event>> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = match self.rx.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::new(Kind::Tmux, "every pane's watch ended"));
                }
            };
            match msg {
                Msg::Armed { pane, status } => {
                    let Some(i) = self.index(&pane) else { continue };
                    if self.entries[i].status.is_none() && !self.entries[i].late {
                        self.unarmed -= 1;
                    }
                    self.entries[i].status = Some(status);
                    if self.unarmed == 0 && !self.entries[i].late {
                        self.unarmed = usize::MAX;
                        return Ok(Some(Event::AllArmed));
                    }
                    return Ok(Some(Event::Armed(i)));
                }
                Msg::Change { pane, change } => {
                    let Some(i) = self.index(&pane) else { continue };
                    if matches!(change.what, What::State(_)) {
                        self.entries[i].status = Some(change.status.clone());
                    }
                    return Ok(Some(Event::Change(i, change)));
                }
                Msg::Gone { pane } => {
                    let Some(i) = self.index(&pane) else { continue };
                    self.entries[i].gone = true;
                    return Ok(Some(Event::Gone(i)));
                }
                Msg::Fatal(e) => return Err(e),
                Msg::Signal(sig) => return Err(Error::new(Kind::Interrupted(sig), "interrupted")),
                Msg::Rescan => self.rescan(),
            }
        }
    }

    /// Pick up panes that appeared in the scopes (and panes that came
    /// back: a dead pane respawned).
    fn rescan(&mut self) {
        let Ok(all) = targets::list(&self.socket) else {
            return;
        };
        for r in targets::select(&all, &self.scopes) {
            match self.index(&r.pane_id) {
                None => self.add(r, true),
                Some(i) if self.entries[i].gone && !r.dead => {
                    self.entries.remove(i);
                    self.add(r, true);
                }
                Some(_) => {}
            }
        }
    }

    /// Where the pane is now (its session and window may have moved), as
    /// a report of `change`, with its last rows when `tail`.
    pub fn report(&self, i: usize, change: &Change, tail: bool) -> PaneReport {
        let e = &self.entries[i];
        let (mut session, mut window) = (e.row.session_name.clone(), e.row.window_index);
        if !e.gone
            && let Ok(l) = self.socket.run([
                "display-message",
                "-p",
                "-t",
                &e.row.pane_id,
                "#{pane_id}\t#{window_index}\t#{session_name}",
            ])
            && let Some(line) = l.first()
        {
            let f: Vec<&str> = line.splitn(3, '\t').collect();
            if f.len() == 3 && f[0] == e.row.pane_id {
                window = f[1].parse().unwrap_or(window);
                session = f[2].to_owned();
            }
        }
        let mut r = PaneReport::new(&e.row.pane_id, &session, window, change);
        if tail {
            let rows = self
                .socket
                .run(["capture-pane", "-p", "-J", "-t", &e.row.pane_id])
                .unwrap_or_default();
            r.tail = Some(bound_lines(crate::engine::trim_rows(rows), true));
        }
        r
    }

    /// Every pane but `except`, and its state.
    pub fn pending(&self, except: Option<usize>) -> Vec<Pending> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != except)
            .map(|(_, e)| Pending {
                pane_id: e.row.pane_id.clone(),
                state: e.status.as_ref().map_or("unknown", |s| s.state.as_str()),
            })
            .collect()
    }

    pub fn socket(&self) -> &Socket {
        &self.socket
    }
}

/// `tmux-wait any`: until a pane changes into a state `--until` names (or
/// every pane has, with `--all`), or the timeout. With `ndjson`, every
/// change goes to `emit` as it happens, until the timeout.
pub fn any(req: &AnyRequest, mut emit: impl FnMut(&PaneReport, f64)) -> Result<AnyResult> {
    let start = Instant::now();
    let deadline = start + req.timeout;
    let scopes = targets::resolve(&req.socket, &req.targets, req.server)?;
    let mut w = Watch::start(
        &req.socket,
        scopes,
        req.quiet_after,
        req.patterns.clone(),
        req.profiles.clone(),
    )?;
    let done = |start: Instant, outcome, pane, panes, pending| AnyResult {
        outcome,
        pane,
        panes,
        pending,
        elapsed_seconds: seconds(start.elapsed()),
        effective_timeout: seconds(req.timeout),
    };
    // With --all: each pane's first report that counts.
    let mut reached: Vec<Option<PaneReport>> = Vec::new();
    let mut armed_all = false;
    loop {
        let Some(ev) = w.next(deadline)? else {
            let got = req
                .all
                .then(|| reached.iter().flatten().cloned().collect::<Vec<_>>());
            return Ok(done(start, "timeout", None, got, w.pending(None)));
        };
        reached.resize(w.entries.len(), None);
        let mut hits: Vec<(usize, Change)> = Vec::new();
        match ev {
            Event::AllArmed => {
                armed_all = true;
                if let Some(ch) = &req.ready {
                    req.socket.run(["wait-for", "-S", "--", ch])?;
                }
                if req.now {
                    for (i, e) in w.entries.iter().enumerate() {
                        if let Some(s) = &e.status
                            && req.until.has(What::State(s.state))
                        {
                            hits.push((i, now_change(s)));
                        }
                    }
                }
                if req.ndjson && req.now {
                    for (i, e) in w.entries.iter().enumerate() {
                        if let Some(s) = &e.status
                            && req.until.has(What::State(s.state))
                        {
                            emit(
                                &w.report(i, &now_change(s), false),
                                seconds(start.elapsed()),
                            );
                        }
                    }
                }
            }
            Event::Armed(i) => {
                // A pane that came after the start, watched now.
                if armed_all
                    && req.now
                    && let Some(s) = &w.entries[i].status
                    && req.until.has(What::State(s.state))
                {
                    hits.push((i, now_change(s)));
                }
            }
            Event::Change(i, c) => {
                if req.ndjson && req.until.has(c.what) {
                    emit(&w.report(i, &c, false), seconds(start.elapsed()));
                }
                if req.until.has(c.what) {
                    hits.push((i, c));
                }
            }
            Event::Gone(_) => {}
        }
        if req.ndjson {
            continue;
        }
        for (i, c) in hits {
            if !req.all {
                let r = w.report(i, &c, true);
                return Ok(done(start, "attention", Some(r), None, w.pending(Some(i))));
            }
            if reached[i].is_none() {
                reached[i] = Some(w.report(i, &c, true));
            }
        }
        if req.all && armed_all {
            let waiting = w
                .entries
                .iter()
                .zip(&reached)
                .any(|(e, r)| r.is_none() && !e.gone);
            if !waiting {
                let panes = reached.iter().flatten().cloned().collect();
                return Ok(done(start, "all", None, Some(panes), Vec::new()));
            }
        }
    }
}

/// A pane already in a state, as a report (`--now`).
fn now_change(s: &Status) -> Change {
    Change {
        what: What::State(s.state),
        status: s.clone(),
        line: None,
    }
}

/// Send `Rescan` when a terminal device appears (a pane may have been
/// made): inotify on `/dev/pts` (Linux); elsewhere every two seconds.
fn watch_new_terminals(tx: std::sync::mpsc::Sender<Msg>) {
    let _ = std::thread::Builder::new()
        .name("new-panes".into())
        .spawn(move || {
            #[cfg(target_os = "linux")]
            if let Some(fd) = inotify_pts() {
                let mut buf = [0u8; 4096];
                loop {
                    // SAFETY: reading into a buffer we own.
                    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                    if n <= 0 {
                        let e = std::io::Error::last_os_error();
                        if e.raw_os_error() == Some(libc::EINTR) {
                            continue;
                        }
                        break;
                    }
                    // Events of one creation come together: let tmux
                    // finish making the pane, then look once.
                    std::thread::sleep(Duration::from_millis(20));
                    drain(fd, &mut buf);
                    if tx.send(Msg::Rescan).is_err() {
                        return;
                    }
                }
            }
            loop {
                std::thread::sleep(Duration::from_secs(2));
                if tx.send(Msg::Rescan).is_err() {
                    return;
                }
            }
        });
}

#[cfg(target_os = "linux")]
fn inotify_pts() -> Option<libc::c_int> {
    // SAFETY: plain system calls; the path is a NUL-terminated literal.
    unsafe {
        let fd = libc::inotify_init1(libc::IN_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let wd = libc::inotify_add_watch(fd, c"/dev/pts".as_ptr(), libc::IN_CREATE);
        if wd < 0 {
            libc::close(fd);
            return None;
        }
        Some(fd)
    }
}

#[cfg(target_os = "linux")]
fn drain(fd: libc::c_int, buf: &mut [u8]) {
    loop {
        let mut p = crate::sys::pollfd(fd, libc::POLLIN);
        crate::sys::poll(std::slice::from_mut(&mut p), Some(Duration::from_millis(1)));
        if p.revents & libc::POLLIN == 0 {
            return;
        }
        // SAFETY: reading into a buffer we own.
        if unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } <= 0 {
            return;
        }
    }
}
