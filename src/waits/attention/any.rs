//! `tmux-wait any`: the watch's events, until one that counts. Which
//! events count (`--until`, `--now`, `--all`), what is printed as it
//! happens (`--ndjson`), and the answer.

use super::AnyRequest;
use super::machine::{Change, Status, What};
use super::report::{AnyResult, PaneReport};
use super::targets;
use super::watcher::{Watch, WatchEvent};
use crate::error::Result;
use crate::report::seconds;
use std::time::Instant;

/// `tmux-wait any`: until a pane changes into a state `--until` names (or
/// every pane has, with `--all`), or the timeout. With `ndjson`, every
/// change goes to `emit` as it happens, until the timeout.
pub fn any(req: &AnyRequest, emit: impl FnMut(&PaneReport, f64)) -> Result<AnyResult> {
    any_armed(req, emit, || {})
}

/// `any`, calling `armed` once every pane is watched (after the `--now`
/// lines of `ndjson`): a tmux-wait that merges this one's lines from
/// another host knows from then on that a line is a change.
pub fn any_armed(
    req: &AnyRequest,
    mut emit: impl FnMut(&PaneReport, f64),
    mut armed: impl FnMut(),
) -> Result<AnyResult> {
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
    // (With --all, what each place found is kept to the end.)
    w.forget_closed = !req.all;
    let done = |start: Instant, outcome, pane, panes, pending| AnyResult {
        outcome,
        pane,
        panes,
        pending,
        elapsed_seconds: seconds(start.elapsed()),
        effective_timeout: seconds(req.timeout),
        problems: Vec::new(),
    };
    // With --all: each pane's first report that counts.
    let mut reached: Vec<Option<PaneReport>> = Vec::new();
    let mut armed_all = false;
    loop {
        let Some(ev) = w.next(deadline)? else {
            let got = req
                .all
                .then(|| reached.iter().flatten().cloned().collect::<Vec<_>>());
            let res = done(start, "timeout", None, got, w.pending(None));
            w.leave();
            return Ok(res);
        };
        reached.resize(w.entries.len(), None);
        let mut hits: Vec<(usize, Change)> = Vec::new();
        match ev {
            WatchEvent::AllArmed => {
                armed_all = true;
                if let Some(ch) = &req.ready {
                    req.socket.run(["wait-for", "-S", "--", ch])?;
                }
                if req.now {
                    for (i, e) in w.entries.iter().enumerate() {
                        if let Some(s) = e.status()
                            && req.until.has(What::State(s.state))
                        {
                            hits.push((i, now_change(s)));
                        }
                    }
                }
                if req.ndjson && req.now {
                    for (i, e) in w.entries.iter().enumerate() {
                        if let Some(s) = e.status()
                            && req.until.has(What::State(s.state))
                        {
                            emit(
                                &w.report(i, &now_change(s), false),
                                seconds(start.elapsed()),
                            );
                        }
                    }
                }
                armed();
            }
            WatchEvent::Armed(i) => {
                // A pane that came after the start, watched now.
                if armed_all
                    && req.now
                    && let Some(s) = w.entries[i].status()
                    && req.until.has(What::State(s.state))
                {
                    hits.push((i, now_change(s)));
                }
            }
            WatchEvent::Change(i, c) => {
                if req.ndjson && req.until.has(c.what) {
                    emit(&w.report(i, &c, false), seconds(start.elapsed()));
                }
                if req.until.has(c.what) {
                    hits.push((i, c));
                }
            }
            WatchEvent::Gone(_) => {}
        }
        if req.ndjson {
            continue;
        }
        for (i, c) in hits {
            if !req.all {
                let r = w.report(i, &c, true);
                let res = done(start, "attention", Some(r), None, w.pending(Some(i)));
                w.leave();
                return Ok(res);
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
                w.leave();
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
