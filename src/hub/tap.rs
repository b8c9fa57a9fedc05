//! One pane's pipe, as the hub holds it (who gets its stream is the
//! router's business), and how fast the hub reads it.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// A read of at least this much means the pane is flooding.
const FLOOD_READ: usize = 4096;
/// How long a flooding pane's pipe is left alone after a read.
const PAUSE: Duration = Duration::from_millis(1);

pub(super) struct Tap {
    pub(super) token: String,
    /// Our end of the pipe's socket, once its command handed it over.
    pub(super) fd: Option<OwnedFd>,
    /// When it was asked for, then when it became live (a pipe whose
    /// command never reports ends).
    pub(super) live_since: Instant,
    /// Not read again before this (see [`Tap::read`]).
    paused_until: Option<Instant>,
}

impl Tap {
    pub(super) fn new(token: String) -> Tap {
        Tap {
            token,
            fd: None,
            live_since: Instant::now(),
            paused_until: None,
        }
    }

    /// `n` bytes were just read. After a large read the pipe is left
    /// alone a moment, so that the next read takes what tmux wrote
    /// meanwhile in one piece: each wait on the pane then wakes once for
    /// it, not once for each of tmux's writes (under a flood the waits'
    /// wake-ups cost them more than reading the bytes). Output that comes
    /// after a pause, a prompt or a marker, is read at once; what ends a
    /// flood is read at most [`PAUSE`] later. A `sync` reads the pipe
    /// whatever the pause.
    pub(super) fn read(&mut self, n: usize) {
        self.paused_until = (n >= FLOOD_READ).then(|| Instant::now() + PAUSE);
    }

    /// When the pipe may be read again, if not now.
    pub(super) fn paused(&self, now: Instant) -> Option<Instant> {
        self.paused_until.filter(|t| *t > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_large_read_pauses_the_pipe_and_only_briefly() {
        let mut t = Tap::new("tok".into());
        let now = Instant::now();
        assert!(t.paused(now).is_none());
        t.read(100);
        assert!(t.paused(Instant::now()).is_none());
        t.read(FLOOD_READ);
        let until = t
            .paused(Instant::now())
            .expect("paused after a flood's read");
        assert!(until <= Instant::now() + PAUSE);
        assert!(t.paused(until).is_none());
        t.read(0);
        assert!(t.paused(Instant::now()).is_none());
    }
}
