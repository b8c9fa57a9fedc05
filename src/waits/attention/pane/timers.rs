//! A pane's timers: when to look at it next, and why.

use super::*;

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
}

impl Timers {
    pub(super) fn new() -> Timers {
        Timers {
            probe: None,
            step: 0,
            last_data: Instant::now(),
            burst: None,
            quiet: None,
            mark: None,
        }
    }

    /// Output came; `open`: it left a short line open (a question, a
    /// prompt), so its writer is likely reading already: look at once.
    pub(super) fn data(&mut self, now: Instant, open: bool) {
        self.last_data = now;
        let burst = *self.burst.get_or_insert(now);
        let debounce = if open { Duration::ZERO } else { DEBOUNCE };
        self.probe = Some((now + debounce).min(burst + FLOOD_EVERY));
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
