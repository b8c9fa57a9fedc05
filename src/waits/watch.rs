//! `tmux-wait watch`, `list`, `cancel` and `status`: waits that run in the
//! background for a person (started from a key binding), are listed and
//! cancelled by id, and report through the status line, messages, the bell,
//! desktop notifications, a hook and a `wait-for` channel.
//!
//! A watch is one `tmux-wait watch` process: it records itself in the
//! server's private state directory, waits, reports, and removes its record.
//! It ends on its own at its timeout, when its pane or server goes away, or
//! when cancelled (SIGTERM); a record whose process is gone is dropped by
//! the next reader.

use super::store::{store_for, store_of};
use super::text::{self, TextRequest};
use crate::engine::{EngineKind, PaneSource, Setup, open_source};
use crate::error::{Error, Kind, Result};
use crate::notify::{self, Done, Options};
use crate::pane::shell::line_editor_active;
use crate::report::{WatchOutcome, bound_lines, sanitize, seconds};
use crate::state::{self, LastResult, WatchRecord};
use crate::tmux::{PaneInfo, Socket, resolve_pane};
use serde::Serialize;
use std::time::{Duration, Instant};

/// What a watch waits for.
#[derive(Debug, Clone)]
pub enum WatchKind {
    /// New output matching patterns (a text wait).
    Text(Box<TextRequest>),
    /// The command running in the pane finishes: its shell prompt returns.
    Done,
    /// No new output for this long.
    Quiet(Duration),
}

#[derive(Debug, Clone)]
pub struct WatchRequest {
    pub socket: Socket,
    pub target: Option<String>,
    pub kind: WatchKind,
    pub timeout: Duration,
    pub channel: Option<String>,
    pub label: Option<String>,
    /// The channel to signal once armed (a text watch's is its text
    /// request's).
    pub ready: Option<String>,
}

/// The result of a watch (printed with `--json`).
#[derive(Debug, Clone, Serialize)]
pub struct WatchResult {
    pub id: String,
    pub pane_id: String,
    pub kind: String,
    pub label: String,
    /// `matched`, `any_output`, `stopped`, `alternate_screen`, `timeout`,
    /// `done`, `quiet`.
    pub outcome: WatchOutcome,
    pub ok: bool,
    /// For `done`: the command's exit status when the shell reported it
    /// (OSC 133), else null.
    pub exit_status: Option<i32>,
    /// For `done`: how long the command ran, from its process's start
    /// (Linux), else null.
    pub command_seconds: Option<f64>,
    pub line: String,
    pub channel: String,
    pub elapsed_seconds: f64,
}

impl WatchResult {
    pub fn human(&self) -> String {
        let mut s = format!(
            "watch {} ({}) in {}: {} after {:.3}s",
            self.id, self.label, self.pane_id, self.outcome, self.elapsed_seconds
        );
        if let Some(c) = self.exit_status {
            s.push_str(&format!(", exit {c}"));
        }
        if let Some(t) = self.command_seconds {
            s.push_str(&format!(", the command ran {t:.1}s"));
        }
        if !self.line.is_empty() {
            s.push_str(": ");
            s.push_str(&sanitize(&self.line));
        }
        s
    }

    pub fn exit_code(&self) -> i32 {
        self.outcome.exit_code()
    }
}

pub fn watch(req: &WatchRequest) -> Result<WatchResult> {
    let start = Instant::now();
    let pane = resolve_pane(&req.socket, req.target.as_deref())?;
    let store = store_of(&req.socket, &pane)?;
    let opts = Options::read(&req.socket);
    let id = state::new_id();
    let channel = req
        .channel
        .clone()
        .unwrap_or_else(|| format!("tmux-wait-done-{id}"));
    let (kind, default_label) = match &req.kind {
        WatchKind::Text(t) => ("text", t.describe()),
        WatchKind::Done => ("done", "command to finish".to_owned()),
        WatchKind::Quiet(d) => ("quiet", format!("quiet for {}s", d.as_secs_f64())),
    };
    let label = req.label.clone().unwrap_or(default_label);
    // A dead pane's pid may be anyone's by now: it is reported dead below.
    if matches!(req.kind, WatchKind::Done)
        && !pane.pane_dead
        && line_editor_active(pane.pane_pid, &pane.pane_tty)
    {
        return Err(Error::new(
            Kind::Usage,
            format!(
                "nothing is running in {}: its shell is at the prompt",
                pane.pane_id
            ),
        ));
    }
    // For --done: the command started before the watch; its process says when.
    let command_age = match req.kind {
        WatchKind::Done => crate::pane::shell::foreground_age(pane.pane_pid),
        _ => None,
    };
    let record = WatchRecord {
        id: id.clone(),
        pid: std::process::id(),
        pane_id: pane.pane_id.clone(),
        kind: kind.to_owned(),
        label: label.clone(),
        started: state::now_secs(),
        timeout_seconds: req.timeout.as_secs_f64(),
        channel: channel.clone(),
    };
    store.add(&record)?;
    notify::refresh_status(&req.socket, &store, &opts);
    // The pane existed when the watch was recorded: if it cannot be found
    // now, it died in between.
    let outcome = run_kind(req, &pane, start).map_err(|e| match e.kind {
        Kind::NoPane => Error::new(
            Kind::PaneDied,
            format!("pane {} was closed during the wait", pane.pane_id),
        ),
        _ => e,
    });
    store.remove(&id);
    let (outcome, ok, line, exit_status) = match outcome {
        Ok(o) => o,
        Err(e) if matches!(e.kind, Kind::Interrupted(_)) => {
            // Cancelled: no announcement, only the status line changes.
            notify::refresh_status(&req.socket, &store, &opts);
            return Err(e);
        }
        Err(e) if e.kind == Kind::ServerExited => return Err(e),
        Err(e) => (
            WatchOutcome::Failed(e.kind.as_str().to_owned()),
            false,
            e.message.clone(),
            None,
        ),
    };
    let elapsed = start.elapsed();
    let command_seconds = command_age.map(|a| seconds(a + elapsed));
    let last = LastResult {
        id: id.clone(),
        pane_id: pane.pane_id.clone(),
        label: label.clone(),
        outcome: outcome.clone(),
        ok,
        elapsed_seconds: command_seconds.unwrap_or(seconds(elapsed)),
        finished: state::now_secs(),
    };
    let _ = store.set_last(&last);
    notify::refresh_status(&req.socket, &store, &opts);
    notify::announce(
        &req.socket,
        &opts,
        &Done {
            last,
            line: line.clone(),
            channel: channel.clone(),
            exit_status,
            pane_tty: pane.pane_tty.clone(),
        },
    );
    Ok(WatchResult {
        id,
        pane_id: pane.pane_id,
        kind: kind.to_owned(),
        label,
        outcome,
        ok,
        exit_status,
        command_seconds,
        line,
        channel,
        elapsed_seconds: seconds(elapsed),
    })
}

const TIMEOUT: WatchOutcome = WatchOutcome::Text(crate::report::Outcome::Timeout);

type KindOutcome = (WatchOutcome, bool, String, Option<i32>);

fn run_kind(req: &WatchRequest, pane: &PaneInfo, start: Instant) -> Result<KindOutcome> {
    match &req.kind {
        WatchKind::Text(t) => {
            let mut t = (**t).clone();
            t.target = Some(pane.pane_id.clone());
            t.timeout = req.timeout;
            let r = text::run(&t)?;
            let line = r.matched_lines.first().cloned().unwrap_or_default();
            Ok((WatchOutcome::Text(r.outcome), r.found, line, None))
        }
        WatchKind::Done => {
            let mut src = open(req, pane, start)?;
            let deadline = start + req.timeout;
            loop {
                match src.next_batch(deadline)? {
                    None => return Ok((TIMEOUT, false, String::new(), None)),
                    Some(batch) => {
                        src.recycle(batch);
                        let (prompts, status) = src.prompts();
                        if prompts > 0 {
                            let ok = status.is_none_or(|s| s == 0);
                            return Ok((WatchOutcome::Done, ok, String::new(), status));
                        }
                    }
                }
            }
        }
        WatchKind::Quiet(quiet) => {
            let mut src = open(req, pane, start)?;
            let deadline = start + req.timeout;
            let mut last_output = Instant::now();
            loop {
                let until = (last_output + *quiet).min(deadline);
                match src.next_batch(until)? {
                    Some(batch) => {
                        src.recycle(batch);
                        last_output = Instant::now();
                    }
                    None if Instant::now() >= deadline && last_output + *quiet > deadline => {
                        return Ok((TIMEOUT, false, String::new(), None));
                    }
                    None => {
                        return Ok((WatchOutcome::Quiet, true, String::new(), None));
                    }
                }
            }
        }
    }
}

fn open(req: &WatchRequest, pane: &PaneInfo, start: Instant) -> Result<Box<dyn PaneSource>> {
    open_source(
        EngineKind::Auto,
        &req.socket,
        pane,
        &Setup {
            interval: Duration::from_millis(50),
            ready: req.ready.clone(),
            deadline: (start + req.timeout).max(Instant::now() + Duration::from_secs(10)),
            final_lines: false,
            cursor: None,
            mark: None,
        },
    )
}

/// `tmux-wait list`: the running watches of the server.
pub fn list(socket: &Socket) -> Result<Vec<WatchRecord>> {
    Ok(store_for(socket)?.watches())
}

pub fn list_human(watches: &[WatchRecord]) -> String {
    if watches.is_empty() {
        return "no watches".into();
    }
    let now = state::now_secs();
    let mut out = String::from("ID      PANE   KIND   AGE     WAITING FOR");
    for w in watches {
        out.push_str(&format!(
            "\n{:<7} {:<6} {:<6} {:<7} {}",
            w.id,
            w.pane_id,
            w.kind,
            format!("{}s", now.saturating_sub(w.started)),
            sanitize(&w.label)
        ));
    }
    out
}

/// Which watches `cancel` ends.
#[derive(Debug, Clone)]
pub enum Selection {
    Id(String),
    Pane(String),
    All,
}

/// `tmux-wait cancel`: SIGTERM the selected watches (each cleans up after
/// itself); returns the ids cancelled.
pub fn cancel(socket: &Socket, sel: &Selection) -> Result<Vec<String>> {
    let store = store_for(socket)?;
    let pane = match sel {
        Selection::Pane(p) => Some(resolve_pane(socket, Some(p))?.pane_id),
        _ => None,
    };
    let chosen: Vec<WatchRecord> = store
        .watches()
        .into_iter()
        .filter(|w| match sel {
            Selection::Id(id) => &w.id == id,
            Selection::Pane(_) => Some(&w.pane_id) == pane.as_ref(),
            Selection::All => true,
        })
        .collect();
    if let (Selection::Id(id), true) = (sel, chosen.is_empty()) {
        return Err(Error::new(
            Kind::Usage,
            format!("no watch with id '{}'", sanitize(id)),
        ));
    }
    let done = chosen
        .into_iter()
        .filter(|w| state::terminate(w.pid))
        .map(|w| w.id)
        .collect();
    Ok(done)
}

/// `tmux-wait status [--clear]`: push the status segment again.
pub fn status(socket: &Socket, clear: bool) -> Result<String> {
    let store = store_for(socket)?;
    if clear {
        store.clear_last();
    }
    notify::refresh_status(socket, &store, &Options::read(socket));
    let v = socket.run(["show-option", "-gqv", notify::STATUS_OPTION])?;
    Ok(v.join(""))
}

impl TextRequest {
    /// A short description for lists and messages.
    pub fn describe(&self) -> String {
        let shown: Vec<String> = bound_lines(self.pattern_sources.clone(), false);
        if shown.is_empty() {
            "any output".into()
        } else {
            shown.join(" | ")
        }
    }
}
