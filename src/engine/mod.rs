//! Turns a pane into a stream of new lines to judge. Two sources behind one
//! interface: the control-mode engine (events, the default) and the polling
//! fallback (`capture-pane` every interval, like the peer).

pub mod control;
pub mod pidwatch;
pub mod poll;
pub mod shell;
pub mod vt;

use crate::error::Result;
use std::time::{Duration, Instant};
pub use vt::Candidate;

/// Which engine a wait uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Control mode, or polling where control mode cannot attach.
    Auto,
    Control,
    Poll,
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
    /// Read this pane option (a cursor) first and capture the history from
    /// where it points, as part of the entry state (control engine only).
    pub cursor_option: Option<String>,
    /// Share the session's control client through the hub (control engine
    /// only; see `hub`). Only for waits that send nothing but queries.
    pub shared: bool,
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
    /// New output (not echo) was written on the main screen.
    fn saw_output(&self) -> bool;
    /// The pane was on the alternate screen at some point.
    fn saw_alternate(&self) -> bool;
    /// Shell prompts that came back, and the last exit status reported
    /// (control engine only; polling cannot see them).
    fn prompts(&self) -> (u32, Option<i32>) {
        (0, None)
    }
    /// Check the pane is still the one we watched and read its tail.
    fn finish(&mut self) -> Result<Final>;
}

/// Rows of a capture with trailing blanks dropped, each right-trimmed.
pub fn trim_rows(rows: Vec<String>) -> Vec<String> {
    let mut rows: Vec<String> = rows.into_iter().map(|r| r.trim_end().to_owned()).collect();
    while rows.last().is_some_and(|r| r.is_empty()) {
        rows.pop();
    }
    rows
}

/// Parse TAB-separated numeric fields of a format reply.
pub fn fields(line: &str) -> Vec<i64> {
    line.split('\t')
        .map(|f| f.trim().parse().unwrap_or(-1))
        .collect()
}

/// Split a reply whose format starts with `#{pane_id}`: the id and the
/// numeric fields after it.
pub fn pane_fields(lines: &[String]) -> (String, Vec<i64>) {
    let line = lines.first().map(String::as_str).unwrap_or("");
    match line.split_once('\t') {
        Some((id, rest)) => (id.to_owned(), fields(rest)),
        None => (line.to_owned(), Vec::new()),
    }
}
