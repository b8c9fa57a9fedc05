//! The polling engine: `capture-pane` every interval, as libtmux-mcp does,
//! for panes whose output another program pipes already (a pane has one
//! pipe, and tmux-wait never takes a user's).
//!
//! It compares rows by position (counted from the oldest history line), not
//! by value, so a repeated identical line is still new. What it cannot do,
//! by its nature, is documented in docs/limits.md: text overwritten between two
//! polls is missed, output that scrolls past `history-limit` between polls
//! is missed, typed echo is not told apart, and rows are matched one by one
//! (a marker split across a wrap is not joined).

use super::{Candidate, Event, Final, PaneSource, Reply, Setup, trim_rows};
use crate::error::{Error, Kind, Result};
use crate::signals;
use crate::tmux::{PaneInfo, Socket};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How far back a resumed wait looks for the rows it had seen.
const RECOVER_ROWS: i64 = 200;

/// How a pane whose program exited during the wait is reported.
const EXITED: &str = "'s program exited during the wait";
const STATE_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{history_size}\t#{cursor_y}\t#{pane_height}\t#{alternate_on}\t#{history_limit}";

struct PaneState {
    pid: i64,
    history: i64,
    cursor_y: i64,
    height: i64,
    alternate: bool,
    history_limit: i64,
}

pub struct PollSource {
    socket: Socket,
    pane: PaneInfo,
    interval: Duration,
    signals: Receiver<Event>,
    entry_lines: Vec<String>,
    entry_abs: i64,
    /// The rows last looked at, from absolute row `base`; None for a row
    /// below the cursor that was never reported (it may still be written
    /// to: a marker written between `state` and `capture` lands there).
    known: Vec<Option<String>>,
    base: i64,
    last_history: i64,
    saw_output: bool,
    saw_alternate: bool,
    /// The row the cursor was on at the last poll while the pane's shell
    /// read its command line: what changes there was typed.
    typing: Option<i64>,
}

impl PollSource {
    pub fn open(socket: &Socket, pane: &PaneInfo, setup: &Setup) -> Result<Self> {
        let (tx, rx) = mpsc::channel();
        signals::route_to(move |sig| {
            let _ = tx.send(Event::Signal(sig));
        });
        let mut me = PollSource {
            socket: socket.clone(),
            pane: pane.clone(),
            interval: setup.interval,
            signals: rx,
            entry_lines: Vec::new(),
            entry_abs: 0,
            known: Vec::new(),
            base: 0,
            last_history: 0,
            saw_output: false,
            saw_alternate: false,
            typing: None,
        };
        // Dead already: said as the stream says it (not "during the wait").
        let s = me.state().map_err(|e| match e.kind {
            Kind::PaneDied if e.message.ends_with(EXITED) => Error::new(
                Kind::PaneDied,
                format!("pane {} is dead (its program has exited)", pane.pane_id),
            ),
            _ => e,
        })?;
        if s.pid != i64::from(pane.pane_pid) {
            me.pane.pane_pid = u32::try_from(s.pid).unwrap_or(0);
        }
        me.entry_abs = s.history + s.cursor_y;
        me.base = me.entry_abs;
        me.last_history = s.history;
        me.saw_alternate = s.alternate;
        let rows = me.capture(s.cursor_y, s.height - 1, false)?;
        me.known = rows.into_iter().map(Some).collect();
        me.entry_lines = trim_rows(me.capture(0, s.height - 1, true)?);
        if let Some(ch) = &setup.ready {
            socket.run(["wait-for", "-S", "--", ch])?;
        }
        Ok(me)
    }

    /// Take over from a stream that stopped (another program took the
    /// pane's pipe, or the hub went away): poll from now on. `seen` are the
    /// rows the stream drew, its cursor row last, when it can tell: rows of
    /// the pane below them were written while nobody read, and come first,
    /// as recovered. The bool says whether that place was found for sure
    /// (false also when nothing says where the stream stood).
    pub fn resume(
        socket: &Socket,
        pane: &PaneInfo,
        interval: Duration,
        seen: Option<Vec<String>>,
        seen_row: Option<i64>,
    ) -> Result<(PollSource, Vec<Candidate>, bool)> {
        let setup = Setup {
            interval,
            ready: None,
            deadline: Instant::now() + Duration::from_secs(5),
            final_lines: false,
            cursor: None,
            mark: None,
        };
        let mut me = PollSource::open(socket, pane, &setup)?;
        let s = me.state()?;
        let start = (s.cursor_y - RECOVER_ROWS).max(-s.history);
        let rows = me.capture(start, s.cursor_y, false)?;
        // Where the stream's row is in the capture by its number, while
        // tmux trims no history (the capture's first row is `start`).
        let at = seen_row
            .filter(|_| s.history < s.history_limit)
            .and_then(|r| usize::try_from(r - (s.history + start)).ok());
        let (recovered, exact) = crate::cursor::rows_after(&rows, seen.as_deref(), at);
        if !recovered.is_empty() {
            me.saw_output = true;
        }
        let recovered = recovered
            .into_iter()
            .map(|text| Candidate {
                text,
                rendered: None,
                prompt: false,
            })
            .collect();
        Ok((me, recovered, exact))
    }

    fn state(&self) -> Result<PaneState> {
        let lines = self
            .socket
            .run([
                "display-message",
                "-p",
                "-t",
                &self.pane.pane_id,
                STATE_FORMAT,
            ])
            .map_err(|e| self.classify(e))?;
        let r = Reply::new(&lines);
        if r.text(0) != self.pane.pane_id {
            return Err(self.classify(Error::new(Kind::NoPane, "gone")));
        }
        // (tmux 3.8 clears the pid as the program exits, a moment before
        // it marks the pane dead.)
        if r.flag(2)? || r.text(1).is_empty() {
            return Err(Error::new(
                Kind::PaneDied,
                format!("pane {}{EXITED}", self.pane.pane_id),
            ));
        }
        Ok(PaneState {
            pid: r.num(1)?,
            history: r.num(3)?.max(0),
            cursor_y: r.num(4)?.max(0),
            height: r.num(5)?.max(1),
            alternate: r.flag(6)?,
            history_limit: r.num(7)?,
        })
    }

    fn classify(&self, e: Error) -> Error {
        match e.kind {
            Kind::NoServer => {
                Error::new(Kind::ServerExited, "the tmux server exited during the wait")
            }
            Kind::NoPane => Error::new(
                Kind::PaneDied,
                format!("pane {} was closed during the wait", self.pane.pane_id),
            ),
            _ => e,
        }
    }

    fn capture(&self, start: i64, end: i64, join: bool) -> Result<Vec<String>> {
        let (s, e) = (start.to_string(), end.to_string());
        let mut args = vec![
            "capture-pane",
            "-p",
            "-t",
            &self.pane.pane_id,
            "-S",
            &s,
            "-E",
            &e,
        ];
        if join {
            args.push("-J");
        }
        self.socket.run(args).map_err(|e| self.classify(e))
    }

    /// Sleep one interval, waking early for a signal.
    fn sleep(&self, deadline: Instant) -> Result<bool> {
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        match self.signals.recv_timeout(self.interval.min(deadline - now)) {
            Ok(Event::Signal(sig)) => Err(Error::new(Kind::Interrupted(sig), "interrupted")),
            Ok(_) | Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                Ok(Instant::now() < deadline)
            }
        }
    }

    fn poll(&mut self) -> Result<Vec<Candidate>> {
        let typing = self.typing.take();
        // If the shell reads its command line on both sides of the look at
        // the cursor, the row the cursor is on is what is being typed, at
        // this poll and the next. Looked at only after, a command that ran
        // and printed in between would leave its line on the cursor's row
        // as it was (a wait for that line missed it).
        let reads = || {
            crate::pane::shell::reads(self.pane.pane_pid, &self.pane.pane_tty).0
                == crate::pane::shell::Reads::Prompt
        };
        let before = reads();
        let s = self.state()?;
        let reading = before && reads();
        let cursor_abs = s.history + s.cursor_y;
        if s.pid != i64::from(self.pane.pane_pid) {
            return Err(Error::new(
                Kind::PaneRespawned,
                format!("pane {} was respawned during the wait", self.pane.pane_id),
            ));
        }
        if s.alternate {
            self.saw_alternate = true;
            return Ok(Vec::new());
        }
        let mut new = Vec::new();
        if s.history < self.last_history {
            // History was trimmed or cleared: positions no longer line up.
            // Compare the visible screen with what we last saw at the bottom.
            let rows = self.capture(0, s.height - 1, false)?;
            let old_tail: Vec<Option<&str>> = self
                .known
                .iter()
                .rev()
                .take(rows.len())
                .map(Option::as_deref)
                .collect();
            for (i, row) in rows
                .iter()
                .enumerate()
                .take(usize::try_from(s.cursor_y + 1).unwrap_or(0))
            {
                let before = old_tail.get(rows.len() - 1 - i).copied().flatten();
                if before != Some(row.as_str()) && !row.trim().is_empty() {
                    new.push((s.history + i as i64, row.clone()));
                }
            }
            self.base = s.history;
            let last = usize::try_from(s.cursor_y).unwrap_or(0);
            self.known = rows
                .into_iter()
                .enumerate()
                .map(|(i, r)| (i <= last).then_some(r))
                .collect();
        } else {
            let start = (self.base - s.history).max(-s.history);
            let rows = self.capture(start, s.height - 1, false)?;
            let skip = usize::try_from((start + s.history) - self.base).unwrap_or(0);
            let cursor_row =
                usize::try_from(s.history + s.cursor_y - (start + s.history)).unwrap_or(0);
            let (fresh, known) = compare_rows(&self.known, skip, rows, cursor_row);
            let top = start + s.history;
            new = fresh
                .into_iter()
                .map(|(i, r)| (top + i as i64, r))
                .collect();
            self.base = top;
            self.known = known;
        }
        self.last_history = s.history;
        if reading {
            self.typing = Some(cursor_abs);
        }
        let typed = |abs: i64| typing == Some(abs) || (reading && abs == cursor_abs);
        if new.iter().any(|(abs, _)| !typed(*abs)) {
            self.saw_output = true;
        }
        Ok(new
            .into_iter()
            .map(|(abs, r)| {
                if typed(abs) {
                    // The shell's prompt and what was typed at it: shown,
                    // never matched.
                    Candidate {
                        text: String::new(),
                        rendered: Some(r.trim_end().to_owned()),
                        prompt: true,
                    }
                } else {
                    Candidate {
                        text: r.trim_end().to_owned(),
                        rendered: None,
                        prompt: false,
                    }
                }
            })
            .collect())
    }
}

/// Rows captured now against the rows known from the last poll (`skip`
/// rows further down): the new ones, and what is known from now on. Rows
/// below `cursor_row` (where the cursor was when the pane's state was read,
/// just before the capture) count only if they replaced known text; one
/// that was not reported stays as it was known, because it may have been
/// written between reading the state and the capture, and is judged at the
/// next poll.
fn compare_rows(
    known: &[Option<String>],
    skip: usize,
    rows: Vec<String>,
    cursor_row: usize,
) -> (Vec<(usize, String)>, Vec<Option<String>>) {
    let mut new = Vec::new();
    let mut now_known = Vec::with_capacity(rows.len());
    for (i, row) in rows.into_iter().enumerate() {
        let before = known.get(i + skip).cloned().flatten();
        let fresh = before.as_deref() != Some(row.as_str())
            && (i <= cursor_row || before.is_some())
            && !row.trim().is_empty();
        now_known.push(if fresh || i <= cursor_row {
            Some(row.clone())
        } else {
            before
        });
        if fresh {
            new.push((i, row));
        }
    }
    (new, now_known)
}

impl PaneSource for PollSource {
    fn entry_lines(&self) -> &[String] {
        &self.entry_lines
    }

    fn next_batch(&mut self, deadline: Instant) -> Result<Option<Vec<Candidate>>> {
        loop {
            if !self.sleep(deadline)? {
                return Ok(None);
            }
            let c = self.poll()?;
            if !c.is_empty() {
                return Ok(Some(c));
            }
        }
    }

    fn saw_output(&self) -> bool {
        self.saw_output
    }

    fn saw_alternate(&self) -> bool {
        self.saw_alternate
    }

    fn finish(&mut self) -> Result<Final> {
        let s = self.state()?;
        let start = (self.entry_abs - s.history)
            .clamp(-s.history, s.height - 1)
            .max(s.cursor_y - 64);
        Ok(Final {
            tail: trim_rows(self.capture(start, s.height - 1, true)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_row_written_between_state_and_capture_is_reported_next_poll() {
        let known: Vec<Option<String>> = vec![Some("$ run".into())];
        // The state saw the cursor on row 0; the marker landed on row 1
        // before the capture.
        let (new, known) = compare_rows(&known, 0, rows(&["$ run", "MARK"]), 0);
        assert!(new.is_empty());
        // Next poll: the cursor is below it now.
        let (new, _) = compare_rows(&known, 0, rows(&["$ run", "MARK", ""]), 2);
        assert_eq!(new, [(1, "MARK".to_owned())]);
    }

    #[test]
    fn rows_below_the_cursor_count_only_when_they_replace_known_text() {
        let known: Vec<Option<String>> = vec![Some("a".into()), Some("old".into())];
        let (new, _) = compare_rows(&known, 0, rows(&["a", "old"]), 0);
        assert!(new.is_empty());
        let (new, _) = compare_rows(&known, 0, rows(&["a", "changed"]), 0);
        assert_eq!(new, [(1, "changed".to_owned())]);
        // Repeated lines count: rows are compared by position.
        let (new, _) = compare_rows(&known, 1, rows(&["old", "a"]), 1);
        assert_eq!(new, [(1, "a".to_owned())]);
    }
}
