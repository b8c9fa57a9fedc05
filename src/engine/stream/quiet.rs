//! A pane that wrote nothing since the entry: the entry's capture still
//! shows it, so a call that ends without output (`output` with nothing
//! new) need not capture it again. What it sets from that capture is
//! guarded by tmux's own formats (the same program, size, history and
//! cursor row), and a sync after it says whether any byte came meanwhile.

use super::*;

/// The pane as the entry's exact capture showed it (see
/// [`StreamSource::quiet_entry`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuietState {
    pub pid: u32,
    pub history_size: i64,
    pub cursor_y: i64,
    pub cursor_x: i64,
    pub height: i64,
    pub width: i64,
    /// The screen's rows, as `capture-pane -p` gives them.
    pub rows: Vec<String>,
}

impl QuietState {
    /// The format tmux expands to `1` while the pane still stands where
    /// this capture showed it: its program alive and the same, the same
    /// size, history and cursor. (No byte since, which the caller checks
    /// with a sync, and these equal: the rows are the same.)
    ///
    /// The sync proves nothing in one case: a pipe tmux has just opened
    /// reaches the hub a moment later (its command starts), and a sync
    /// before that finds nothing to read. Output in that moment that ends
    /// a line or scrolls moves the cursor row or the history, and fails
    /// this; text added to the cursor's row moves the cursor. What is left
    /// (a row rewritten after a carriage return) is after the place saved,
    /// so the next call shows it.
    pub fn guard(&self) -> String {
        format!(
            "#{{==:#{{pane_pid}}/#{{pane_dead}}/#{{history_size}}/#{{cursor_y}}/#{{cursor_x}}/#{{pane_height}}/#{{pane_width}},{}/0/{}/{}/{}/{}/{}}}",
            self.pid, self.history_size, self.cursor_y, self.cursor_x, self.height, self.width
        )
    }
}

/// Where the quiet state stands in the stream.
pub(super) struct QuietMark {
    received: u64,
    generation: u64,
    state: QuietState,
}

impl StreamSource {
    /// The entry's capture (`replies`, just taken in by `take_entry`) was
    /// taken exactly where the stream stands now (`received` bytes in):
    /// remember what it showed.
    pub(super) fn mark_quiet(&mut self, replies: &[Vec<String>]) {
        let g = self.geometry;
        self.quiet = Some(QuietMark {
            received: self.received,
            generation: self.generation,
            state: QuietState {
                pid: self.pane.pane_pid,
                history_size: g.history_size,
                cursor_y: g.cursor_y,
                cursor_x: g.cursor_x,
                height: g.height,
                width: g.width,
                rows: replies[1].clone(),
            },
        });
    }

    /// The pane as the entry's exact capture showed it, while no byte has
    /// come since (as far as this wait has taken in), on the same stream.
    pub fn quiet_entry(&self) -> Option<&QuietState> {
        let q = self.quiet.as_ref()?;
        (self.poll.is_none()
            && self.recovered.is_empty()
            && q.generation == self.generation
            && q.received == self.received)
            .then_some(&q.state)
    }

    /// After tmux acted on a [`QuietState::guard`]: has the pane written
    /// nothing since the entry, up to that command list? (Its `run-shell
    /// -d 0` turn put every byte drawn before it into the pipe.)
    pub fn still_quiet(&mut self, deadline: Instant) -> Result<bool> {
        self.sync(deadline)?;
        Ok(self.quiet_entry().is_some())
    }
}
