//! A pane's timers: when to look at it next, and why.

use super::*;
use crate::waits::attention::judge::DISPLAY_QUIET;

#[derive(Debug)]
pub(super) struct Timers {
    pub(super) probe: Option<Instant>,
    pub(super) step: usize,
    pub(super) last_data: Instant,
    pub(super) burst: Option<Instant>,
    pub(super) quiet: Option<Instant>,
    /// Until when a prompt the kernel sees waits for its mark to come
    /// through the stream (see [`MARK_PATIENCE`]).
    pub(super) mark: Option<Instant>,
    /// When the last bursts of output that changed the screen began (a
    /// title set alone changes nothing), the newest last; and when such
    /// output last came.
    bursts: Vec<Instant>,
    last_visible: Option<Instant>,
}

/// Output that changes the screen after this long without begins a new
/// burst: a redraw.
const BURST_GAP: Duration = Duration::from_millis(300);
/// Redraws in a row, each within [`DISPLAY_QUIET`] of the one before, that
/// make a live display of a program whatever its wait.
const REDRAWS: usize = 3;

impl Timers {
    pub(super) fn new() -> Timers {
        Timers {
            probe: None,
            step: 0,
            last_data: Instant::now(),
            burst: None,
            quiet: None,
            mark: None,
            bursts: Vec::new(),
            last_visible: None,
        }
    }

    /// Output that changed the screen came now.
    pub(super) fn visible(&mut self, now: Instant) {
        if self.last_visible.is_none_or(|t| now - t >= BURST_GAP) {
            if self.bursts.len() == REDRAWS {
                self.bursts.remove(0);
            }
            self.bursts.push(now);
        }
        self.last_visible = Some(now);
    }

    /// The pane redraws on its own: its last bursts came each within
    /// [`DISPLAY_QUIET`] of the one before, the last of them lately.
    pub(super) fn redrawing(&self, now: Instant) -> bool {
        self.bursts.len() == REDRAWS
            && self.bursts.windows(2).all(|w| w[1] - w[0] <= DISPLAY_QUIET)
            && self.last_visible.is_some_and(|t| now - t < DISPLAY_QUIET)
    }

    /// What redraws were seen no longer count (another program came).
    pub(super) fn forget_redraws(&mut self) {
        self.bursts.clear();
    }

    /// Output came; `open`: it left a short line open (a question, a
    /// prompt), so its writer is likely reading already: look at once.
    /// Output that flows on (see [`FLOW_GAP`]) is looked at once it stops.
    pub(super) fn data(&mut self, now: Instant, open: bool) {
        let flowing = now.saturating_duration_since(self.last_data) < FLOW_GAP;
        self.last_data = now;
        let burst = *self.burst.get_or_insert(now);
        let debounce = if open {
            Duration::ZERO
        } else if flowing {
            FLOW_GAP
        } else {
            DEBOUNCE
        };
        self.probe = Some((now + debounce).min(burst + FLOW_LOOK_EVERY));
        self.step = 0;
        self.quiet = None;
    }
}

pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

impl PaneWatch {
    /// The next look, from what this one found (`first`: the look the
    /// watch starts from, after no output: nothing to look again for but
    /// the quiet time).
    pub(super) fn after_look(&mut self, ctx: &Ctx, reads: Option<Reads>, first: bool) {
        let Some(m) = &self.machine else { return };
        if self.timers.probe.is_some_and(|p| p > Instant::now()) {
            return; // a look that waits for stillness set it
        }
        let last = self.timers.last_data;
        self.timers.probe = None;
        // The stream says the line editor took a command line, the kernel
        // still sees it at its prompt: looked at again as a command is.
        let taken = matches!(&self.source, Source::Stream(f)
            if f.tracker().editor_marks() && !f.tracker().line_editor_reading());
        match m.status.state {
            s @ (State::Working | State::Prompt) if s == State::Working || taken => {
                let now = Instant::now();
                // The next of the times after the last output still ahead.
                while BACKOFF
                    .get(self.timers.step)
                    .is_some_and(|d| last + *d <= now)
                {
                    self.timers.step += 1;
                }
                self.timers.probe = BACKOFF
                    .get(self.timers.step)
                    .filter(|_| !first)
                    .map(|d| last + *d);
                if s == State::Working && self.timers.quiet.is_none() {
                    self.timers.quiet = Some(last + ctx.quiet_after);
                }
            }
            State::Asking if matches!(reads, Some(Reads::Line { hidden: true })) => {
                self.timers.probe = Some(Instant::now() + HIDDEN_EVERY);
            }
            _ => {}
        }
    }
}
