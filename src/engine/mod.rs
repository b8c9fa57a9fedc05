//! Turns a pane into a stream of new lines to judge. Two sources behind one
//! interface: the stream engine (the pane's own bytes through `pipe-pane`
//! and the hub, the default) and the polling fallback (`capture-pane` every
//! interval, as libtmux-mcp does), used where another program pipes the
//! pane already.

pub mod pidwatch;
pub mod poll;
pub mod stream;

use crate::error::{Error, Kind, Result};
use crate::hub::EndReason;
pub use crate::pane::vt::Candidate;
use crate::tmux::{PaneInfo, Socket};
use std::time::{Duration, Instant};

/// Which engine a wait uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// The stream, or polling where another program pipes the pane.
    Auto,
    Stream,
    Poll,
}

/// What wakes a wait up.
#[derive(Debug)]
pub enum Event {
    /// Bytes the pane's program wrote, and when they arrived.
    Data(Vec<u8>, Instant),
    /// The same with plain lines the wait cannot use left out (see
    /// `hub::sieve`).
    Sieved(crate::hub::Sieved, Instant),
    /// The hub's answer to `sync N`.
    Synced(u64),
    /// A wait that asked for this token joined the pane's stream here.
    Mark(String),
    /// The pane's stream ended.
    End(EndReason),
    /// The hub's connection broke.
    HubLost,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(i32),
    /// The pane's process exited.
    PaneExited,
    /// A helper process (a `wait-for` client) ended.
    Eof,
}

/// Open the source `kind` names for `pane`; `Auto` falls back to polling
/// when another program pipes the pane.
pub fn open_source(
    kind: EngineKind,
    socket: &Socket,
    pane: &PaneInfo,
    setup: &Setup,
) -> Result<Box<dyn PaneSource>> {
    match kind {
        EngineKind::Poll => Ok(Box::new(poll::PollSource::open(socket, pane, setup)?)),
        EngineKind::Stream => Ok(Box::new(stream::StreamSource::open(socket, pane, setup)?)),
        EngineKind::Auto => match stream::StreamSource::open(socket, pane, setup) {
            Ok(s) => Ok(Box::new(s)),
            Err(e) if e.kind == Kind::PipeBusy => {
                Ok(Box::new(poll::PollSource::open(socket, pane, setup)?))
            }
            Err(e) => Err(e),
        },
    }
}

/// What every engine needs to start.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Polling interval (poll engine only).
    pub interval: Duration,
    /// Channel to signal once the wait is armed.
    pub ready: Option<String>,
    /// Bounds the setup itself.
    pub deadline: Instant,
    /// Emit lines as they end up, with empty lines and marks (command
    /// output), instead of every state a line passed through (text waits).
    pub final_lines: bool,
    /// A cursor read first: capture the history from where it points, as
    /// part of the entry state (stream engine only).
    pub cursor: Option<CursorRead>,
    /// Join the pane's stream at this point of every other wait's stream on
    /// it, marked with this token (stream engine only; see `hub`).
    pub mark: Option<String>,
}

/// A cursor option's value, and the row the entry's capture starts from
/// to show what it has not shown (`cursor::capture_start`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorRead {
    pub value: String,
    pub from: String,
}

impl CursorRead {
    /// The commands that read cursor option `option` of the pane `target`
    /// names (`-t PANE`, or nothing for tmux's choice) and the geometry
    /// its place is found with.
    pub fn queries(target: &[String], option: &str) -> Vec<Vec<String>> {
        let cmd = |head: &[&str], last: &str| {
            let mut c: Vec<String> = head.iter().map(|s| (*s).to_owned()).collect();
            c.extend(target.iter().cloned());
            c.push(last.to_owned());
            c
        };
        vec![
            cmd(&["display-message", "-p"], crate::cursor::GEOMETRY_FORMAT),
            cmd(&["show-options", "-pqv"], option),
        ]
    }

    /// What [`CursorRead::queries`] were answered.
    pub fn from_replies(replies: &[Vec<String>]) -> Result<CursorRead> {
        let (Some(geometry), Some(value)) = (replies.first(), replies.get(1)) else {
            return Err(crate::error::Error::new(
                crate::error::Kind::Tmux,
                "tmux did not answer the cursor's queries",
            ));
        };
        let value = value.join("\n");
        let g = Reply::new(geometry);
        let f = [g.num(0)?, g.num(1)?, g.num(2)?, g.num(3)?];
        let from = crate::cursor::capture_start(&value, &f);
        Ok(CursorRead { value, from })
    }
}

/// How the pane looked at the end.
#[derive(Debug, Clone, Default)]
pub struct Final {
    /// Rows from the entry cursor row down (wrapped rows joined), trailing
    /// blank rows dropped; not yet bounded.
    pub tail: Vec<String>,
}

/// A pane as a stream of new lines.
pub trait PaneSource {
    /// Text visible at entry, one entry per line (for `matched_at_entry`).
    fn entry_lines(&self) -> &[String];
    /// The next batch of new lines, or None when `deadline` passed.
    fn next_batch(&mut self, deadline: Instant) -> Result<Option<Vec<Candidate>>>;
    /// A batch the caller is done with (its strings may hold later lines).
    fn recycle(&mut self, _batch: Vec<Candidate>) {}
    /// New output (not echo) was written on the main screen.
    fn saw_output(&self) -> bool;
    /// The pane was on the alternate screen at some point.
    fn saw_alternate(&self) -> bool;
    /// Shell prompts that came back, and the last exit status reported
    /// (stream engine only; polling cannot see them).
    fn prompts(&self) -> (u32, Option<i32>) {
        (0, None)
    }
    /// The tail as the stream drew it up to now, when it can tell (see
    /// [`crate::pane::vt::LineTracker::screen_tail`]): a verdict reached from the stream
    /// is reported without asking tmux again.
    fn seen_tail(&self) -> Option<Vec<String>> {
        None
    }
    /// The stream stopped during the wait (another program took the
    /// pane's pipe, the hub went away) and the wait went on another way.
    fn fallback(&self) -> Option<crate::report::Fallback> {
        None
    }
    /// Check the pane is still the one we watched and read its tail.
    fn finish(&mut self) -> Result<Final>;
    /// Only lines `needed` can hit, and the last `keep_last` lines, are
    /// wanted in batches (see [`crate::pane::vt::LineTracker::set_needed`]): a source
    /// may leave the others out. Polling keeps them all.
    fn only_lines_hit_by(&mut self, _needed: crate::matcher::Needed, _keep_last: usize) {}
}

/// Rows of a capture with trailing blanks dropped, each right-trimmed.
pub fn trim_rows(rows: Vec<String>) -> Vec<String> {
    let mut rows: Vec<String> = rows.into_iter().map(|r| r.trim_end().to_owned()).collect();
    while rows.last().is_some_and(|r| r.is_empty()) {
        rows.pop();
    }
    rows
}

/// The reply to a `display-message -p` of TAB-separated fields, read by
/// position: a field that is missing or not what it should be is an error
/// that shows the reply, never a made-up value.
#[derive(Debug, Clone)]
pub struct Reply {
    line: String,
    fields: Vec<String>,
}

impl Reply {
    /// The first line of `lines` (the reply to one command).
    pub fn new(lines: &[String]) -> Reply {
        let line = lines.first().cloned().unwrap_or_default();
        let fields = line.split('\t').map(|f| f.trim().to_owned()).collect();
        Reply { line, fields }
    }

    /// Field `i` as text ("" when missing).
    pub fn text(&self, i: usize) -> &str {
        self.fields.get(i).map_or("", String::as_str)
    }

    /// Field `i` as a number.
    pub fn num(&self, i: usize) -> Result<i64> {
        self.text(i).parse().map_err(|_| self.bad(i))
    }

    /// Field `i` as a flag (`1` or `0`).
    pub fn flag(&self, i: usize) -> Result<bool> {
        match self.text(i) {
            "1" => Ok(true),
            "0" => Ok(false),
            _ => Err(self.bad(i)),
        }
    }

    fn bad(&self, i: usize) -> Error {
        Error::new(
            Kind::Tmux,
            format!(
                "unexpected reply from tmux: {:?} (field {} is {:?})",
                self.line,
                i + 1,
                self.text(i)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_read_by_position_and_a_bad_field_is_an_error() {
        let r = Reply::new(&["%3\t120\t0\t\tx".to_owned()]);
        assert_eq!(r.text(0), "%3");
        assert_eq!(r.num(1).unwrap(), 120);
        assert!(!r.flag(2).unwrap());
        for bad in [r.num(3), r.num(4), r.num(9)] {
            let e = bad.unwrap_err();
            assert_eq!(e.kind, Kind::Tmux);
            assert!(e.message.contains("%3\\t120"), "{}", e.message);
        }
        assert!(r.flag(4).is_err());
    }
}
