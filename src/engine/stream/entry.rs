//! The entry: the pane's state where the stream starts, and the tracker
//! started from it.

use super::*;

impl StreamSource {
    /// Take the entry state from the replies to [`hub::entry_queries`]
    /// and, with `from`, the history capture after them: the tracker starts
    /// from them, and the stream counts from here.
    pub(super) fn take_entry(&mut self, replies: &[Vec<String>], from: Option<&str>) -> Result<()> {
        let st = self.take_state(replies, from)?;
        self.entry_above = rows_above(&replies[1], st.cursor_y as usize);
        self.tracker_row = (st.history_size < st.history_limit)
            .then(|| i64::try_from(st.history_size).unwrap_or(0) + i64::from(st.cursor_y));
        self.probe = ReaderProbe::new(self.pane.pane_pid, &self.pane.pane_tty);
        let row = replies[1]
            .get(st.cursor_y as usize)
            .map(|r| r.trim_end().to_owned())
            .unwrap_or_default();
        self.tracker = LineTracker::new(&Entry {
            width: st.width as usize,
            row,
            cursor_x: st.cursor_x as usize,
            alternate_on: st.alternate_on,
            at_prompt: line_editor_active(self.pane.pane_pid, &self.pane.pane_tty),
            kernel_echo: self.probe.first().kernel_echo == Some(true),
            raw_reader: raw_reader(&self.pane),
        });
        if !flows_from_cursor(&replies[1], &replies[2], &st) {
            self.tracker.lose_flow();
        }
        self.tracker.set_final_only(self.final_lines);
        self.streaming = true;
        self.unconsumed = false;
        Ok(())
    }

    /// The pane's state, geometry, entry lines and history from the
    /// replies to [`hub::entry_queries`] (and the history capture after
    /// them, with `from`).
    pub(super) fn take_state(
        &mut self,
        replies: &[Vec<String>],
        from: Option<&str>,
    ) -> Result<PaneState> {
        let st = PaneState::parse(&replies[0])?;
        if st.pane_id != self.pane.pane_id {
            return Err(self.closed());
        }
        if st.dead {
            return Err(Error::new(
                Kind::PaneDied,
                format!(
                    "pane {} is dead (its program has exited)",
                    self.pane.pane_id
                ),
            ));
        }
        self.pane.pane_pid = st.pane_pid;
        if !st.tty.is_empty() {
            self.pane.pane_tty = st.tty.clone();
        }
        let history = i64::try_from(st.history_size).unwrap_or(0);
        self.entry_abs = history + i64::from(st.cursor_y);
        self.geometry = Geometry {
            history_size: history,
            history_limit: i64::try_from(st.history_limit).unwrap_or(0),
            height: i64::from(st.height),
            width: i64::from(st.width),
            cursor_x: i64::from(st.cursor_x),
            cursor_y: i64::from(st.cursor_y),
        };
        self.history_from = match from {
            Some("-") | None => 0,
            Some(n) => n.parse::<i64>().map(|n| (history + n).max(0)).unwrap_or(0),
        };
        self.history = match from {
            Some(_) => replies.get(hub::ENTRY_QUERIES).cloned().unwrap_or_default(),
            None => Vec::new(),
        };
        self.entry_lines = trim_rows(replies[2].clone());
        Ok(st)
    }
}

/// A program other than the shell reads the pane's terminal key by key
/// (a REPL's line editor): what it writes after reading keys is echo.
pub(super) fn raw_reader(pane: &PaneInfo) -> bool {
    shell::reads(pane.pane_pid, &pane.pane_tty).0 == Reads::Keys
}

/// The screen below the cursor's row is blank and that row starts a line
/// (it does not continue one wrapped from above): output from here on is a
/// line-by-line flow the stream alone can draw (see
/// [`LineTracker::screen_tail`]).
pub(super) fn flows_from_cursor(rows: &[String], joined: &[String], st: &PaneState) -> bool {
    let y = st.cursor_y as usize;
    if rows.iter().skip(y + 1).any(|r| !r.trim_end().is_empty()) {
        return false;
    }
    let width = (st.width as usize).max(1);
    let mut row = 0;
    for line in joined {
        let n = crate::cursor::split_rows(line.trim_end(), width)
            .len()
            .max(1);
        if row + n > y {
            return row == y;
        }
        row += n;
    }
    true
}

/// The few rows above the cursor's (`cy`) in a capture of the screen.
pub(super) fn rows_above(rows: &[String], cy: usize) -> Vec<String> {
    let end = cy.min(rows.len());
    rows[end.saturating_sub(ENTRY_CONTEXT)..end].to_vec()
}

/// How many rows above the cursor's are kept from the entry.
const ENTRY_CONTEXT: usize = 8;
