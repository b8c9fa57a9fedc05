//! The attention log, as the plugin writes it: a pane newly needs
//! someone (it is marked), and that need is over (answered, and by whom;
//! or gone). Every process that marks or clears a mark writes here: the
//! watch, the visit hooks, the toggle; `answer` writes its own answers.
//!
//! An end is written once however many processes see it (the log keeps
//! out a second end of the same need), and a pane that closes with its
//! mark is found by `marks::refresh`, which keeps the marked panes' ids
//! (the pane's options went with it: what it waited for is the log's
//! last `needs` of it).
//!
//! It sits below `marks`, which clears marks and logs their ends here.

use super::super::answer::ANSWERED;
use super::super::machine::{Change, State, What};
use super::options::Marked;
use crate::state::{AttentionEvent, Store};
use crate::tmux::Socket;

/// How long after an `answer` typed into a pane its tag still names who
/// answered (the watch sees the pane move on within milliseconds).
const TAG_FRESH: f64 = 30.0;

/// How a need ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// The pane moved on from its question (or, for another need, works
    /// again): answered, for a question.
    MovedOn,
    /// Over otherwise: `seen` (visited), `respawned`, `off`, `replaced`
    /// (another need took its mark).
    Gone(&'static str),
}

/// The server's log, as the watch keeps it open.
pub(super) struct Journal {
    store: Option<Store>,
}

impl Journal {
    pub fn open(socket: &Socket) -> Journal {
        Journal {
            store: crate::waits::store::store_for(socket).ok(),
        }
    }

    /// `pane` was just marked, or its mark reworded, for `c` at `began`
    /// (boot clock); `seen`: on a person's screen.
    pub fn needs(&self, socket: &Socket, pane: &str, c: &Change, began: f64, seen: bool) {
        let Some(store) = &self.store else { return };
        let place = socket
            .run([
                "display-message",
                "-p",
                "-t",
                pane,
                "#{session_name}:#{window_index}",
            ])
            .ok()
            .and_then(|l| l.into_iter().next())
            .unwrap_or_default();
        let mut e = AttentionEvent::now("needs", pane, &place, began);
        e.state = Some(c.what.as_str().to_owned());
        e.reason = Some(c.status.reason.to_owned());
        e.question = c.status.question.clone().or_else(|| c.line.clone());
        e.seen = seen;
        let _ = store.journal(&e);
    }

    /// The need `m` (read before its mark went or changed) is over; `at`:
    /// when (boot clock; None: now), the instant the need that replaces it
    /// began, so that the log lists the end first.
    pub fn over(&self, socket: &Socket, m: &Marked, end: End, at: Option<f64>) {
        let now = at.unwrap_or_else(crate::sys::clock::boot_secs);
        over(socket, self.store.as_ref(), m, end, now);
    }
}

/// Log that the need `m` is over, at `now`: a question moved on from is
/// answered (by `menu` or `script` when `answer` typed it: it logs that
/// itself, so nothing is written here; else by `keys`), anything else
/// gone.
pub(super) fn over(socket: &Socket, store: Option<&Store>, m: &Marked, end: End, now: f64) {
    let Some(store) = store else { return };
    let asking = m.mark == What::State(State::Asking).as_str();
    let mut e = AttentionEvent::now("gone", &m.pane, m.place(), now);
    match end {
        End::MovedOn if asking => {
            if answered_by_us(socket, &m.pane, now) {
                return;
            }
            e.event = "answered".into();
            e.by = Some("keys".into());
        }
        End::MovedOn => e.how = Some("working".into()),
        End::Gone(how) => e.how = Some(how.into()),
    }
    e.state = Some(m.mark.clone());
    e.question = m
        .what()
        .split_once(": ")
        .map(|(_, q)| q.to_owned())
        .filter(|q| !q.is_empty());
    e.waited = m.waited(now);
    let began = m.began.parse().unwrap_or(0.0);
    let _ = store.journal_end(&e, began);
}

/// Whether `answer` typed into `pane` lately: its tag is taken (unset)
/// if so.
fn answered_by_us(socket: &Socket, pane: &str, now: f64) -> bool {
    let tag = socket
        .run([
            "display-message",
            "-p",
            "-t",
            pane,
            &format!("#{{{ANSWERED}}}"),
        ])
        .ok()
        .and_then(|l| l.into_iter().next())
        .unwrap_or_default();
    let Some((_, at)) = tag.trim().split_once(' ') else {
        return false;
    };
    let _ = socket.run(["set-option", "-pqu", "-t", pane, ANSWERED]);
    at.parse::<f64>().is_ok_and(|t| (now - t).abs() < TAG_FRESH)
}

/// For the processes that clear marks without a watch (the visit hooks,
/// the toggle): each of `marks` is over, `how`.
pub(super) fn gone_all(socket: &Socket, marks: &[Marked], how: &'static str) {
    if marks.is_empty() {
        return;
    }
    let store = crate::waits::store::store_for(socket).ok();
    let now = crate::sys::clock::boot_secs();
    for m in marks {
        over(socket, store.as_ref(), m, End::Gone(how), now);
    }
}

/// `panes` closed while marked: the need the log last has for each is
/// over (`closed`).
pub(super) fn closed(socket: &Socket, panes: &[&str]) {
    if panes.is_empty() {
        return;
    }
    let Ok(store) = crate::waits::store::store_for(socket) else {
        return;
    };
    let now = crate::sys::clock::boot_secs();
    for p in panes {
        let Some(n) = store.journal_open_need(p) else {
            continue;
        };
        let mut e = AttentionEvent::now("gone", p, &n.place, now);
        e.how = Some("closed".into());
        e.state = n.state;
        e.question = n.question;
        e.waited = Some(now - n.boot);
        let _ = store.journal_end(&e, n.boot);
    }
}
