//! What the hub may open: its open-files limit, raised to the hard one at
//! the start, and a count of what it holds against it.
//!
//! Each wait costs the hub one descriptor (its connection), each pane it
//! reads one more (the pipe's socket); starting a pipe costs a few for a
//! moment (a tmux client, see `PER_START`), and so does the pipe's command
//! handing its socket over. The hub counts these and refuses a new wait
//! that would not fit, with a one-line error naming the limit, so the
//! waits it already serves never meet `EMFILE` halfway (a pipe whose
//! socket cannot be received is lost). Should the count be wrong, or the
//! limit be lowered from outside (`prlimit`), `accept` failing with
//! `EMFILE` is answered the same way: a descriptor kept in reserve is
//! closed, the connection taken and refused, the reserve opened again
//! (without it the listening socket stays readable and the loop spins).

use super::protocol::{Entry, Frame};
use crate::error::Error;
use std::fs::File;
use std::io::Write;
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

/// Descriptors one pipe start holds while it runs: a tmux client's socket
/// (or, where a `tmux` process runs it, /dev/null, two pipes and std's
/// exec-error pipe) and /dev/urandom for its nonce.
pub(super) const PER_START: usize = 8;
/// Pipe starts run at once at most (each is one tmux command; tmux runs
/// them one after the other anyway).
pub(super) const MAX_STARTS: usize = 16;
/// Kept free past what the waits hold: room for one pipe start at least,
/// the debug log, a connection being refused, a wait's connection
/// accepted before its request is read.
const SPARE: usize = 2 * PER_START;
/// How long accepting pauses when not even the reserve helped.
const PAUSE: Duration = Duration::from_millis(50);

/// What the hub holds, as [`Budget::fits`] counts it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Held {
    /// Connections: waits, pipe commands handing over, new ones.
    pub(super) conns: usize,
    /// Panes being read or started (each has or will get a pipe socket).
    pub(super) taps: usize,
    /// Of those, the ones whose pipe command has not handed over yet (each
    /// will connect once more).
    pub(super) unfed: usize,
    /// Pipe starts running.
    pub(super) starting: usize,
}

pub(super) struct Budget {
    /// The soft limit in force (raised); None: read it each time (it may
    /// be changed from outside, `prlimit`).
    limit: Option<usize>,
    /// Open before any wait: standard streams, the listener, the wake
    /// pair, the lock, the reserve.
    base: usize,
    reserve: Option<File>,
    paused_until: Option<Instant>,
}

impl Budget {
    /// Raise the limit and count what is open already (call once the
    /// listener and the hub's own descriptors are open).
    pub(super) fn new() -> Budget {
        let limit = crate::sys::fds::raise();
        let reserve = File::open("/dev/null").ok();
        let base = crate::sys::fds::count_open(4096);
        super::conn::log(format_args!("limit {limit} base {base}"));
        Budget {
            limit: None,
            base,
            reserve,
            paused_until: None,
        }
    }

    fn limit(&self) -> usize {
        self.limit.unwrap_or_else(|| {
            usize::try_from(crate::error::open_files_limit()).unwrap_or(usize::MAX)
        })
    }

    /// What stays held while the waits run (starts aside).
    fn steady(&self, h: Held) -> usize {
        self.base + h.conns + h.taps + h.unfed
    }

    /// Whether a new wait fits: one that needs a pipe of its own (`fresh`)
    /// needs room for the pipe's socket and for its command's connection
    /// handing it over; one that joins a pane read already holds all it
    /// needs (its connection, counted in `h`). Starts are not counted: they
    /// wait their turn ([`Budget::may_start`]), and `SPARE` leaves room for
    /// one at least.
    pub(super) fn fits(&self, h: Held, fresh: bool) -> bool {
        let more = if fresh { 2 } else { 0 };
        self.steady(h) + more + SPARE <= self.limit()
    }

    /// Whether one more connection may be accepted now. A connection is
    /// only known for a wait or a pipe's command handing its socket over
    /// once it is read, and the slots kept for those hand-overs (`unfed`)
    /// must not go to a burst of waits: past this, the hub accepts one
    /// connection at a time, and the next once it knows what the last one
    /// was (see `Hub::may_accept`).
    pub(super) fn may_accept(&self, h: Held) -> bool {
        self.steady(h) + 1 + h.starting * PER_START + SPARE / 2 <= self.limit()
    }

    /// Whether one more pipe start may run now.
    pub(super) fn may_start(&self, h: Held) -> bool {
        h.starting < MAX_STARTS
            && self.steady(h) + (h.starting + 1) * PER_START + SPARE / 2 <= self.limit()
    }

    /// The answer to a wait that does not fit.
    pub(super) fn refusal() -> Entry {
        let e = Error::too_many_open_files("tmux-wait's hub");
        Entry::Failed {
            kind: e.kind.as_str().to_owned(),
            message: e.message,
        }
    }

    /// Listening is paused (not even the reserve got a connection in).
    pub(super) fn paused(&self) -> Option<Instant> {
        self.paused_until.filter(|t| Instant::now() < *t)
    }

    /// `accept` failed for want of descriptors: take one connection with
    /// the reserve's and refuse it. False when nothing could be taken
    /// (accepting then pauses briefly).
    pub(super) fn refuse_one(&mut self, listener: &UnixListener) -> bool {
        drop(self.reserve.take());
        let taken = match listener.accept() {
            Ok((mut s, _)) => {
                super::conn::log(format_args!("refused: out of descriptors"));
                let _ = s.set_nonblocking(true);
                // Its request, if here, is read first.
                crate::sys::drain(&s);
                let mut out = Vec::new();
                Frame::Entry(Self::refusal()).encode_into(&mut out);
                let _ = s.write(&out);
                true
            }
            Err(_) => false,
        };
        self.reserve = File::open("/dev/null").ok();
        if !taken || self.reserve.is_none() {
            self.paused_until = Some(Instant::now() + PAUSE);
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limit of 100 with 10 open before any wait.
    fn hundred() -> Budget {
        Budget {
            limit: Some(100),
            base: 10,
            reserve: None,
            paused_until: None,
        }
    }

    #[test]
    fn a_fresh_wait_needs_room_for_its_pipe_and_starts_wait_their_turn() {
        let b = hundred();
        let mut h = Held {
            conns: 36,
            taps: 36,
            ..Held::default()
        };
        // 10 + 36 + 36 + 2 + 16 = 100.
        assert!(b.fits(h, true));
        assert!(b.fits(h, false));
        h.conns = 37;
        assert!(!b.fits(h, true));
        assert!(b.fits(h, false));
        h.conns = 39;
        assert!(!b.fits(h, false));
        // Up to the steady limit, one start can always run.
        h.conns = 37;
        h.taps = 37;
        h.unfed = 0;
        assert!(b.may_start(h));
        h.starting = 1;
        assert!(!b.may_start(h));
        h = Held {
            conns: 10,
            taps: 10,
            ..Held::default()
        };
        h.starting = MAX_STARTS - 1;
        assert!(!b.may_start(h), "15 starts hold 120");
        h.starting = 5;
        assert!(b.may_start(h));
    }

    /// Waits admitted leave room for their pipes' hand-overs: past what
    /// they hold, a burst of connections stops being accepted before the
    /// limit, and is accepted again once the starts end.
    #[test]
    fn a_burst_of_connections_leaves_room_for_the_hand_overs() {
        let b = hundred();
        // 20 waits admitted, their 20 pipes not handed over yet.
        let mut h = Held {
            conns: 20,
            taps: 20,
            unfed: 20,
            starting: 0,
        };
        assert!(b.fits(h, true));
        // They hold 70; new connections are accepted while 70 + 1 + 8
        // stays within 100: 21 more.
        h.conns = 20 + 21;
        assert!(b.may_accept(h));
        h.conns += 1;
        assert!(!b.may_accept(h), "the hand-overs' slots are kept");
        // A start running holds its own room.
        h.conns = 20;
        h.starting = 2;
        assert!(b.may_accept(h));
        h.starting = 3;
        assert!(!b.may_accept(h));
        // Whatever the waits admitted hold, there is room to accept once
        // no start runs: a hand-over is never shut out for good.
        let mut h = Held::default();
        loop {
            let asking = Held {
                conns: h.conns + 1,
                ..h
            };
            if !b.fits(asking, true) {
                break;
            }
            h = Held {
                taps: h.taps + 1,
                unfed: h.unfed + 1,
                ..asking
            };
        }
        assert_eq!(h.conns, 24);
        assert!(b.may_accept(h));
    }

    #[test]
    fn the_refusal_names_the_limit() {
        let Entry::Failed { kind, message } = Budget::refusal() else {
            panic!()
        };
        assert_eq!(kind, "too_many_open_files");
        assert!(
            message.starts_with("tmux-wait's hub is out of file descriptors (limit "),
            "{message}"
        );
        assert!(message.ends_with("open files); raise it with ulimit -n, or end some waits"));
    }
}
