//! `tmux-wait log`: what attention saw happen on a server, in order: each
//! pane that needed someone, how it ended (answered, and by whom; or
//! gone) and how long it waited; a need not over yet says how long it has
//! waited so far. The events are the server's attention log
//! (`state::journal`), written by the plugin's watch, its hooks and
//! `answer`.

use crate::error::Result;
use crate::notify::{local_time, took};
use crate::state::AttentionEvent;
use crate::tmux::Socket;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;

/// A validated `tmux-wait log`.
#[derive(Debug, Clone)]
pub struct LogRequest {
    pub socket: Socket,
    /// Only the events of the last this long.
    pub since: Option<Duration>,
}

/// One event, and for a need not over yet how long it has waited.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    #[serde(flatten)]
    pub event: AttentionEvent,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LogResult {
    pub events: Vec<LogEntry>,
}

impl LogResult {
    pub fn human(&self) -> String {
        if self.events.is_empty() {
            return "no attention events (attention keeps them while it is on: prefix A, or @tmux-wait-attention on)".into();
        }
        let lines: Vec<String> = self
            .events
            .iter()
            .map(|e| {
                let mut l = line(&e.event, false);
                if let Some(w) = e.waiting {
                    l.push_str(&format!(" (still waiting: {})", took(w)));
                }
                crate::report::sanitize(&l)
            })
            .collect();
        lines.join("\n")
    }
}

/// `tmux-wait log`.
pub fn log(req: &LogRequest) -> Result<LogResult> {
    let store = crate::waits::store::store_for(&req.socket)?;
    let now = crate::sys::clock::boot_secs();
    let all = store.journal_events();
    let open = open_needs(&all);
    let from = req.since.map_or(f64::MIN, |d| now - d.as_secs_f64());
    let events = all
        .into_iter()
        .enumerate()
        .filter(|(_, e)| e.boot >= from)
        .map(|(i, e)| LogEntry {
            waiting: open
                .contains(&i)
                .then(|| ((now - e.boot).max(0.0) * 1e3).round() / 1e3),
            event: e,
        })
        .collect();
    Ok(LogResult { events })
}

/// The `needs` events (their indexes) whose need is not over yet: the
/// last of its pane, with no end after it.
fn open_needs(events: &[AttentionEvent]) -> Vec<usize> {
    let mut open: HashMap<&str, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.event == "needs" {
            open.insert(&e.pane, i);
        } else {
            open.remove(e.pane.as_str());
        }
    }
    let mut v: Vec<usize> = open.into_values().collect();
    v.sort_unstable();
    v
}

/// One event for people: `12:03:14 %3 api:1 needs you: asking
/// (reads_line): Deploy? [y/N]`, `... answered y from the menu after
/// 2m06s`. `short`: `HH:MM` and fewer words (the menu).
pub fn line(e: &AttentionEvent, short: bool) -> String {
    let when = local_time(e.time.max(0.0) as u64, !short);
    let head = format!("{when} {} {}", e.pane, e.place);
    let state = e.state.as_deref().unwrap_or("");
    let q = e
        .question
        .as_deref()
        .map(|q| format!(": {q}"))
        .unwrap_or_default();
    let after = e
        .waited
        .map(|w| format!(" after {}", took(w)))
        .unwrap_or_default();
    match e.event.as_str() {
        "needs" => {
            let why = match (e.reason.as_deref(), short) {
                (Some(r), false) => format!(" ({r})"),
                (Some("reads_password"), true) => " (password)".into(),
                _ => String::new(),
            };
            let seen = if e.seen && !short {
                " (on a screen)"
            } else {
                ""
            };
            format!("{head} needs you: {state}{why}{q}{seen}")
        }
        "answered" => {
            let choice = e
                .choice
                .as_deref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            let by = match e.by.as_deref() {
                Some("menu") => " from the menu",
                Some("script") => " by a script",
                _ => " (keys typed in the pane)",
            };
            let moved = match e.moved_on {
                Some(false) => ", and it did not move on",
                _ => "",
            };
            if short {
                format!("{head} answered{choice}{after}{moved}")
            } else {
                format!("{head} answered{choice}{by}{after}{moved}{q}")
            }
        }
        _ => {
            let how = e.how.as_deref().unwrap_or("");
            format!("{head} {state} gone ({how}){after}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, pane: &str, boot: f64) -> AttentionEvent {
        let mut e = AttentionEvent::now(event, pane, "main:1", boot);
        e.time = 1_700_000_000.0;
        e
    }

    #[test]
    fn needs_not_over_yet() {
        let events = vec![
            ev("needs", "%1", 1.0),
            ev("needs", "%2", 2.0),
            ev("answered", "%1", 3.0),
            ev("needs", "%1", 4.0),
            ev("gone", "%2", 5.0),
        ];
        assert_eq!(open_needs(&events), [3]);
    }

    #[test]
    fn lines_for_people() {
        let mut n = ev("needs", "%3", 1.0);
        n.state = Some("asking".into());
        n.reason = Some("reads_line".into());
        n.question = Some("Deploy? [y/N]".into());
        let l = line(&n, false);
        assert!(
            l.ends_with(" %3 main:1 needs you: asking (reads_line): Deploy? [y/N]"),
            "{l}"
        );
        let mut a = ev("answered", "%3", 127.0);
        a.by = Some("menu".into());
        a.choice = Some("y".into());
        a.waited = Some(126.0);
        a.moved_on = Some(true);
        let l = line(&a, false);
        assert!(
            l.contains(" %3 main:1 answered y from the menu after 2m06s"),
            "{l}"
        );
        let mut g = ev("gone", "%4", 3.0);
        g.state = Some("prompt".into());
        g.how = Some("seen".into());
        g.waited = Some(4.0);
        assert!(line(&g, true).ends_with(" %4 main:1 prompt gone (seen) after 4s"));
    }
}
