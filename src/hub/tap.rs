//! One pane's pipe, as the hub holds it (who gets its stream is the
//! router's business), and how fast the hub reads it.

use super::sieve::Sieve;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// A read of at least this much means the pane is flooding.
const FLOOD_READ: usize = 4096;
/// How long a flooding pane's pipe is left alone after a read, for each
/// wait on it up to four, then once more for every six waits past four,
/// up to [`MOST_PAUSES`] times: all the waits on a flooding pane together
/// wake about once a millisecond, and fifty of them (sieved, so cheap to
/// wake: see `sieve`) once each 10 ms.
const PAUSE: Duration = Duration::from_millis(1);
const MOST_PAUSES: u32 = 10;
/// The longest a flooding pane's pipe is left alone: a wait on it sees a
/// gap this long between two pieces of a flood that goes on.
pub const LONGEST_PAUSE: Duration = PAUSE.saturating_mul(MOST_PAUSES);

pub(super) struct Tap {
    pub(super) token: String,
    /// Our end of the pipe's socket, once its command handed it over.
    pub(super) fd: Option<OwnedFd>,
    /// Names `fd` to the hub's poller (unique in the hub's life).
    pub(super) poll_key: u64,
    /// When it was asked for, then when it became live (a pipe whose
    /// command never reports ends).
    pub(super) live_since: Instant,
    /// Not read again before this (see [`Tap::read`]).
    paused_until: Option<Instant>,
    /// Runs of lines the waits sieved for cannot use (see `sieve`).
    pub(super) sieve: Sieve,
    /// The waits the sieve was set for, and whether one of them changed
    /// its wants since.
    pub(super) sieved: Vec<u64>,
    pub(super) sieve_stale: bool,
}

impl Tap {
    pub(super) fn new(token: String) -> Tap {
        Tap {
            token,
            fd: None,
            poll_key: 0,
            live_since: Instant::now(),
            paused_until: None,
            sieve: Sieve::default(),
            sieved: Vec::new(),
            sieve_stale: false,
        }
    }

    /// `n` bytes were just read for `waits` waits. After a large read the
    /// pipe is left alone a moment, so that the next read takes what tmux
    /// wrote meanwhile in one piece: each wait on the pane then wakes once
    /// for it, not once for each of tmux's writes (under a flood the
    /// waits' wake-ups cost them more than reading the bytes). The moment
    /// grows with the waits, each of which wakes for every read. Output
    /// that comes after a pause, a prompt or a marker, is read at once;
    /// what ends a flood is read at most [`MOST_PAUSES`] times [`PAUSE`]
    /// later. A `sync` reads the pipe whatever the pause.
    pub(super) fn read(&mut self, n: usize, waits: usize) {
        let waits = u32::try_from(waits).unwrap_or(u32::MAX);
        let times = if waits <= 4 {
            waits.max(1)
        } else {
            (4 + (waits - 4) / 6).min(MOST_PAUSES)
        };
        self.paused_until = (n >= FLOOD_READ).then(|| Instant::now() + PAUSE * times);
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
        t.read(100, 1);
        assert!(t.paused(Instant::now()).is_none());
        t.read(FLOOD_READ, 1);
        let until = t
            .paused(Instant::now())
            .expect("paused after a flood's read");
        assert!(until <= Instant::now() + PAUSE);
        assert!(t.paused(until).is_none());
        t.read(0, 1);
        assert!(t.paused(Instant::now()).is_none());
    }

    #[test]
    fn the_pause_grows_with_the_waits_up_to_a_bound() {
        let mut t = Tap::new("tok".into());
        for (waits, times) in [
            (0, 1),
            (1, 1),
            (3, 3),
            (4, 4),
            (10, 5),
            (50, 10),
            (usize::MAX, 10),
        ] {
            let before = Instant::now();
            t.read(FLOOD_READ, waits);
            let until = t.paused(before).expect("paused");
            assert!(until >= before + PAUSE * times, "{waits} waits");
            assert!(until <= Instant::now() + PAUSE * times, "{waits} waits");
        }
    }
}
