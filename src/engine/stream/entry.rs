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
        let screen = screen_start(&st, &replies[1]);
        let (pid, tty) = (self.pane.pane_pid, &self.pane.pane_tty);
        self.tracker = LineTracker::new(&with_reader(screen, pid, tty, &self.probe));
        if !flows_from_cursor(&replies[1], &replies[2], &st) {
            self.tracker.lose_flow();
        }
        self.tracker_wants();
        self.streaming = true;
        self.unconsumed = false;
        Ok(())
    }

    /// A joined entry that was not exact: the capture shows the pane after
    /// some of `window`, the bytes that came between its two syncs, not
    /// knowing which. The stream draws the rest: from the line the
    /// capture's cursor is on, where the lines of the window tell which
    /// that is (see [`window_split`]), else all of it (a line then may come
    /// twice, never not at all).
    pub(super) fn take_window(&mut self, replies: &[Vec<String>], window: &[u8]) -> Result<()> {
        let st = PaneState::parse(&replies[0])?;
        let cy = st.cursor_y as usize;
        let row = replies[1]
            .get(cy)
            .map(|r| r.trim_end().to_owned())
            .unwrap_or_default();
        let above = rows_above(&replies[1], cy);
        let from = match window_split(window, st.width as usize, &above, &row) {
            Some(b) => {
                // The stream draws the cursor's line again, from its start:
                // the capture's copy of it is not the history's.
                let flows = self.tracker.screen_tail().is_some();
                self.tracker = LineTracker::new(&TrackerStart {
                    alternate_on: st.alternate_on,
                    ..TrackerStart::blank(st.width as usize)
                });
                self.tracker_wants();
                if !flows {
                    self.tracker.lose_flow();
                }
                while self.history.last().is_some_and(|l| l.trim_end().is_empty()) {
                    self.history.pop();
                }
                if !row.is_empty()
                    && self.history.last().map(|l| l.trim_end()) == Some(row.as_str())
                {
                    self.history.pop();
                }
                b
            }
            None => 0,
        };
        if from < window.len() {
            self.handle(Event::Data(window[from..].to_vec(), Instant::now()))?;
        }
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

/// Where a line tracker starts on the screen `rows` of a pane in state
/// `st`: on the cursor's row (trimmed), where the cursor stands in it.
pub fn screen_start(st: &PaneState, rows: &[String]) -> TrackerStart {
    TrackerStart {
        row: rows
            .get(st.cursor_y as usize)
            .map(|r| r.trim_end().to_owned())
            .unwrap_or_default(),
        cursor_x: st.cursor_x as usize,
        alternate_on: st.alternate_on,
        ..TrackerStart::blank(st.width as usize)
    }
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

/// Where in `window` (bytes a pane wrote) a capture of the pane stands:
/// the earliest line end after which the rows the window drew are the
/// captured rows above the cursor (`above`, up to three compared; screen
/// rows of `width`) and the next line starts with the captured cursor's
/// row (`row`, written up to there). Returns the offset of that line's
/// first byte; None when no line end agrees (the capture came before the
/// window, or nothing can tell).
pub(super) fn window_split(
    window: &[u8],
    width: usize,
    above: &[String],
    row: &str,
) -> Option<usize> {
    // Each line the window ends, as drawn, and where the next begins.
    let mut ends = Vec::new();
    let mut texts = Vec::new();
    let mut start = 0;
    for (i, b) in window.iter().enumerate() {
        if *b == b'\n' {
            texts.push(drawn_text(&window[start..=i]));
            ends.push(i + 1);
            start = i + 1;
        }
    }
    let tail = drawn_text(&window[start..]);
    let width = width.max(1);
    let row = row.trim_end();
    for k in 0..ends.len() {
        let next = texts.get(k + 1).unwrap_or(&tail);
        if !next.starts_with(row) {
            continue;
        }
        // The rows the window drew up to this line end, the last three.
        let mut drawn: Vec<String> = Vec::new();
        for t in texts[..=k].iter().rev() {
            let mut rows = crate::cursor::split_rows(t, width);
            rows.reverse();
            drawn.extend(rows);
            if drawn.len() >= 3 {
                break;
            }
        }
        let m = 3.min(above.len()).min(drawn.len());
        if m == 0 {
            continue;
        }
        let agree = (0..m).all(|j| {
            let a = above[above.len() - 1 - j].trim_end();
            let d = drawn[j].trim_end();
            // (The window's first line may go on a row begun before it.)
            a == d || (k == 0 && j == m - 1 && a.ends_with(d))
        });
        if agree {
            return Some(ends[k]);
        }
    }
    None
}

/// The text a piece of output draws on a fresh row (escape sequences
/// applied, trailing blanks trimmed).
fn drawn_text(bytes: &[u8]) -> String {
    let mut t = LineTracker::new(&TrackerStart::blank(10_000));
    t.feed(bytes, Instant::now());
    let line = t.take_items(true).into_iter().find_map(|i| match i {
        Item::Line(c) => Some(c.line().to_owned()),
        Item::Mark(_) => None,
    });
    line.unwrap_or_else(|| t.current_line())
        .trim_end()
        .to_owned()
}

/// The few rows above the cursor's (`cy`) in a capture of the screen.
pub(super) fn rows_above(rows: &[String], cy: usize) -> Vec<String> {
    let end = cy.min(rows.len());
    rows[end.saturating_sub(ENTRY_CONTEXT)..end].to_vec()
}

/// How many rows above the cursor's are kept from the entry.
const ENTRY_CONTEXT: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Lines of a loop came between the two syncs of an entry; the capture
    /// shows the pane after some of them. The split is where the capture
    /// stands, so each line is drawn once.
    #[test]
    fn a_window_is_split_where_the_capture_stands() {
        let w = b"L52\r\nL53\r\nL54\r\n";
        let above = rows(&["L49", "L50", "L51"]);
        // The capture came before the window: all of it is new.
        assert_eq!(window_split(w, 80, &above, ""), None);
        // After L52 and L53: L54 is new.
        let above = rows(&["L51", "L52", "L53"]);
        assert_eq!(window_split(w, 80, &above, ""), Some(10));
        // After L52, with L53 half drawn on the cursor's row: L53 again.
        let above = rows(&["L50", "L51", "L52"]);
        assert_eq!(window_split(w, 80, &above, "L5"), Some(5));
        // After all of it: nothing is new.
        let above = rows(&["L52", "L53", "L54"]);
        assert_eq!(window_split(w, 80, &above, ""), Some(15));
        // Colours and a prompt after: the rows as drawn.
        let w = b"\x1b[31mred\x1b[0m\r\n$ ";
        assert_eq!(
            window_split(w, 80, &rows(&["x", "red"]), "$"),
            Some(w.len() - 2)
        );
        // A cursor row the next line does not start with: not there.
        let w = b"a\r\nb\r\n";
        assert_eq!(window_split(w, 80, &rows(&["a"]), "zz"), None);
    }
}
