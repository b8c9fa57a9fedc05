//! One tmux server of this host, watched as `any` watches one (every pane
//! of it, new ones too), its events handed on as they come: what counts
//! is decided as `any` decides it.

use super::super::AnyRequest;
use super::super::machine::{Change, Status, What};
use super::super::report::{PaneReport, Problem};
use super::super::targets::Scope;
use super::super::watcher::{Watch, WatchEvent};
use crate::error::{Error, Kind};
use crate::tmux::Socket;
use std::time::Instant;

/// What the watch of a server tells its owner.
#[derive(Debug)]
pub enum LocalEvent {
    /// Every pane there at the start is watched.
    Armed,
    /// A change or state that counts (`--until`, `--now`), as a report.
    Pane(PaneReport),
    /// A pane's state now (every change, counted or not), or its end.
    State {
        pane_id: String,
        state: &'static str,
        gone: bool,
    },
    /// The server could not be watched, or went away.
    Problem(Problem),
    /// A signal ended the wait.
    Failed(Error),
}

/// Watch every pane of `socket` until `deadline`; reports carry the
/// pane's last rows when `tail`. Returns when the deadline passes, the
/// server goes, or `sink` says stop (returns false).
pub fn watch(
    socket: &Socket,
    req: &AnyRequest,
    tail: bool,
    deadline: Instant,
    mut sink: impl FnMut(LocalEvent) -> bool,
) {
    let server = socket.absolute().path().to_string_lossy().into_owned();
    let gone = |e: Error| {
        LocalEvent::Problem(Problem {
            event: if matches!(e.kind, Kind::NoServer) {
                "no_server"
            } else {
                "server_gone"
            },
            server: Some(server.clone()),
            host: None,
            message: format!("{server}: {}", e.message),
        })
    };
    // A signal ends the whole wait; anything else, this server's watch.
    let failed = |e: Error| {
        if matches!(e.kind, Kind::Interrupted(_)) {
            LocalEvent::Failed(e)
        } else {
            gone(e)
        }
    };
    let mut w = match Watch::start(
        socket,
        vec![Scope::Server],
        req.quiet_after,
        req.patterns.clone(),
        req.profiles.clone(),
    ) {
        Ok(w) => w,
        Err(e) => {
            sink(failed(e));
            return;
        }
    };
    // (What it found is said as it happens, by pane id.)
    w.forget_closed = true;
    let mut armed_all = false;
    loop {
        let ev = match w.next(deadline) {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                sink(failed(e));
                return;
            }
        };
        let mut hits: Vec<(usize, Change)> = Vec::new();
        // The panes whose state to hand on, for the others' `pending` and
        // for `--all`.
        let which: Vec<usize> = match &ev {
            WatchEvent::AllArmed => (0..w.entries.len()).collect(),
            WatchEvent::Change(i, _) | WatchEvent::Gone(i) | WatchEvent::Armed(i) => vec![*i],
        };
        let all_armed = matches!(ev, WatchEvent::AllArmed);
        match ev {
            WatchEvent::AllArmed => {
                armed_all = true;
                for (i, e) in w.entries.iter().enumerate() {
                    if let Some(s) = e.status()
                        && req.now
                        && req.until.has(What::State(s.state))
                    {
                        hits.push((i, now_change(s)));
                    }
                }
            }
            WatchEvent::Armed(i) => {
                if armed_all
                    && req.now
                    && let Some(s) = w.entries[i].status()
                    && req.until.has(What::State(s.state))
                {
                    hits.push((i, now_change(s)));
                }
            }
            WatchEvent::Change(i, c) => {
                if req.until.has(c.what) {
                    hits.push((i, c));
                }
            }
            WatchEvent::Gone(_) => {}
        }
        for i in which {
            let e = &w.entries[i];
            let state = e.status().map_or("unknown", |s| s.state.as_str());
            let m = LocalEvent::State {
                pane_id: e.row.pane_id.clone(),
                state,
                gone: e.gone,
            };
            if !sink(m) {
                return;
            }
        }
        for (i, c) in hits {
            if !sink(LocalEvent::Pane(w.report(i, &c, tail))) {
                return;
            }
        }
        if all_armed && !sink(LocalEvent::Armed) {
            return;
        }
        // A server whose panes are all gone has ended (exit-empty).
        if armed_all && !w.entries.is_empty() && w.entries.iter().all(|e| e.gone) {
            let alive = socket.run(["display-message", "-p", "#{pid}"]).is_ok();
            if !alive {
                sink(gone(Error::new(Kind::ServerExited, "the server exited")));
                return;
            }
        }
    }
    w.leave();
}

fn now_change(s: &Status) -> Change {
    Change {
        what: What::State(s.state),
        status: s.clone(),
        line: None,
    }
}
