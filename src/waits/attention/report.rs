//! What `any` and `panes` print: the JSON objects and the lines for
//! people, from one value each.

use super::machine::{Change, Status};
use crate::report::sanitize;
use serde::Serialize;

/// One pane: its state (or the event that happened) and why.
#[derive(Debug, Clone, Serialize)]
pub struct PaneReport {
    pub pane_id: String,
    /// The session's name.
    pub session: String,
    /// The window's index.
    pub window: i64,
    /// The state, or the event (`bell`, `text`).
    pub state: &'static str,
    pub reason: &'static str,
    pub question: Option<String>,
    pub command: Option<String>,
    pub exit_status: Option<i32>,
    /// The coding agent in the pane (its profile's name).
    pub agent: Option<String>,
    /// What said so: `kernel`, `stream`, `screen`, `title`, `hook`, `tmux`.
    pub source: &'static str,
    /// The line a `--pattern` matched.
    pub line: Option<String>,
    /// When the pane entered its state (seconds since the epoch).
    pub since: f64,
    /// The pane's last rows (not in `--ndjson` lines and `panes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<Vec<String>>,
    /// The pane's tmux server: its socket's path (on `host`).
    pub server: String,
    /// The host it is on (as `--host` named it), or null: this one.
    pub host: Option<String>,
}

impl PaneReport {
    pub fn new(pane_id: &str, session: &str, window: i64, c: &Change) -> PaneReport {
        let mut r = PaneReport::of_status(pane_id, session, window, &c.status);
        r.state = c.what.as_str();
        // (A bell, or the desktop notification a program asked for.)
        if c.what == super::What::Bell && c.status.reason != "notification" {
            r.reason = "bell";
        }
        if c.what == super::What::Text {
            r.reason = "pattern";
        }
        r.line.clone_from(&c.line);
        r
    }

    pub fn of_status(pane_id: &str, session: &str, window: i64, s: &Status) -> PaneReport {
        PaneReport {
            pane_id: pane_id.to_owned(),
            session: session.to_owned(),
            window,
            state: s.state.as_str(),
            reason: s.reason,
            question: s.question.clone(),
            command: s.command.clone(),
            exit_status: s.exit_status,
            agent: s.agent.clone(),
            source: s.source,
            line: None,
            since: s.since,
            tail: None,
            server: String::new(),
            host: None,
        }
    }

    /// `%3 api:1 asking (reads_line, python3): Proceed? [y/N]`
    pub fn human(&self) -> String {
        let mut why = vec![self.reason.to_owned()];
        if let Some(c) = &self.command {
            why.push(sanitize(c));
        }
        if let Some(a) = &self.agent {
            why.push(sanitize(a));
        }
        if let Some(x) = self.exit_status {
            why.push(format!("exit {x}"));
        }
        let mut s = format!(
            "{} {}:{} {} ({})",
            self.pane_id,
            sanitize(&self.session),
            self.window,
            self.state,
            why.join(", ")
        );
        if let Some(q) = self.question.as_ref().or(self.line.as_ref()) {
            s.push_str(": ");
            s.push_str(&sanitize(q));
        }
        s
    }
}

/// A pane that did not decide, and its state.
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    pub pane_id: String,
    pub state: &'static str,
    /// Its server, when the wait covers several servers or hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// A server or host that could not be watched, or stopped being watched,
/// during a wait over several (`host_unreachable`, `no_helper`,
/// `server_gone`, ...).
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub event: &'static str,
    pub server: Option<String>,
    pub host: Option<String>,
    pub message: String,
}

/// The result of `any`.
#[derive(Debug, Clone, Serialize)]
pub struct AnyResult {
    /// `attention`, `all` or `timeout`.
    pub outcome: &'static str,
    /// The pane that needs someone (`attention`).
    #[serde(flatten)]
    pub pane: Option<PaneReport>,
    /// Every pane, with `--all` (on a timeout: those that got there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub panes: Option<Vec<PaneReport>>,
    /// The other panes and their states (on a timeout: every pane).
    pub pending: Vec<Pending>,
    pub elapsed_seconds: f64,
    pub effective_timeout: f64,
    /// Servers and hosts that could not be watched (several only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
}

impl AnyResult {
    pub fn exit_code(&self) -> i32 {
        if self.outcome == "timeout" {
            crate::error::exit::TIMEOUT
        } else {
            crate::error::exit::OK
        }
    }

    pub fn human(&self) -> String {
        match (self.outcome, &self.pane, &self.panes) {
            ("attention", Some(p), _) => p.human(),
            ("all", _, Some(ps)) => ps
                .iter()
                .map(PaneReport::human)
                .collect::<Vec<_>>()
                .join("\n"),
            _ => {
                let states: Vec<String> = self
                    .pending
                    .iter()
                    .map(|p| format!("{} {}", p.pane_id, p.state))
                    .collect();
                format!(
                    "timed out after {}s; {}",
                    self.effective_timeout,
                    if states.is_empty() {
                        "no panes".to_owned()
                    } else {
                        states.join(", ")
                    }
                )
            }
        }
    }
}

/// The result of `panes`.
#[derive(Debug, Clone, Serialize)]
pub struct PanesResult {
    pub panes: Vec<PaneReport>,
}

impl PanesResult {
    pub fn human(&self) -> String {
        let now = super::pane::now_secs();
        let mut out =
            String::from("PANE   WHERE        STATE    SINCE   COMMAND      WHY / QUESTION");
        for p in &self.panes {
            let ago = (now - p.since).max(0.0);
            let since = if ago < 60.0 {
                format!("{ago:.0}s")
            } else if ago < 3600.0 {
                format!("{:.0}m", ago / 60.0)
            } else {
                format!("{:.0}h", ago / 3600.0)
            };
            let mut why = p.reason.to_owned();
            if let Some(q) = &p.question {
                why = format!("{why}: {}", sanitize(q));
            }
            out.push_str(&format!(
                "\n{:<6} {:<12} {:<8} {:<7} {:<12} {}",
                p.pane_id,
                format!("{}:{}", sanitize(&p.session), p.window),
                p.state,
                since,
                p.command
                    .as_deref()
                    .map(sanitize)
                    .unwrap_or_else(|| "-".into()),
                why
            ));
        }
        out
    }
}
