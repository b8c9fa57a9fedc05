//! One pane's pipe, as the hub holds it (who gets its stream is the
//! router's business), and how fast the hub reads it.

use super::sieve::Sieve;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// A read of at least this much means the pane is flooding.
const FLOOD_READ: usize = 4096;
/// A read at least this large found the pipe about as full as tmux fills
/// it between two reads (at most 64 KiB, measured): more is likely
/// waiting in tmux, and a long pause would slow the stream down. After
/// such a read the pause is the shortest, [`PAUSE`]: a pause that grew
/// with the waits made the wait for a flood's last line late by 0.5 to
/// 0.9 s with ten waits on a redrawn screen (tmux's output to the pipe
/// held back at 64 KiB per pause), and by 0.1 s on a flood of plain lines.
const FULL_READ: usize = 48 << 10;
// (How long a flooding pane's pipe is left alone after a read, and the
// longest a flood is held: `pane::rhythm`, where the looks at the kernel
// that must outlast them read them too.)
use crate::pane::rhythm::{LONGEST_HOLD, LONGEST_TRICKLE, MOST_PAUSES, PAUSE};
/// With this many waits on a flooding pane, what its pipe gives is held
/// and passed on at most every [`HOLD`] (or once the flood stops): each
/// wait wakes a few dozen times a second, not hundreds, and the pipe is
/// still read as fast as tmux fills it (a pause that long would make tmux
/// buffer the pipe, and the stream fall behind). With ten waits on a flood
/// of plain lines the producer's slowdown was +18 % without holding and
/// +10 % with it, one run each (runs move by about 10 points).
const HOLD_FROM: usize = 6;
const HOLD: Duration = Duration::from_millis(25);
// When every wait on the pane said which lines it can use (`wants`) and
// the flood read since the hold began hits none of their patterns, the
// hold is `HOLD` once more for every ten waits past ten, up to
// `LONGEST_HOLD` (see `pane::rhythm`). A read that a pattern may hit ends
// the hold at `HOLD`.
/// The end of the flood's last line read is kept this long (bytes) to
/// look for a pattern across two reads.
const LAST_LINE: usize = 1024;
/// Held past this much, it is passed on whatever the time.
const HOLD_MOST: usize = 4 << 20;
// A pane that prints a line every few milliseconds (a build's log, an
// agent's) is no flood, but each of its reads woke every wait on it: with
// fifty text waits on a pane printing a line each 10 ms, the waits spent
// 11 % of a core together, each about 22 µs a read. So with
// [`HOLD_FROM`] waits or more, all of them sieved, a small read of whole
// plain lines none of their patterns may hit is held too: [`LONGEST_HOLD`]
// for every five waits, up to [`LONGEST_TRICKLE`], so that all the waits
// together wake about as often as one does (held 25 ms, each piece came to
// the waits as a new flow, and each read /proc for it; held 100 ms, fifty
// waits still spent nine times one wait's CPU). The first read that is
// not such lines (a line a pattern may hit, a prompt, a question, an
// escape, keys' echo without its line end) goes on at once, after what was
// held.

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
    /// The waits the sieve was set for (every wait on the pane that said
    /// its wants, sent cuts or not yet), and whether one of them changed
    /// its wants since.
    pub(super) sieved: Vec<u64>,
    pub(super) sieve_stale: bool,
    /// The waits the last read went to.
    waits: usize,
    /// Flood output read and not passed on yet (see [`Tap::hold`]), since
    /// when, and until when it may be held.
    held: Vec<u8>,
    held_since: Option<Instant>,
    hold_until: Option<Instant>,
    /// The end of the last line read (at most [`LAST_LINE`] bytes).
    last_line: Vec<u8>,
    /// The last read found the pipe full ([`FULL_READ`]).
    full: bool,
    /// All that is held is small reads of plain lines no pattern may hit
    /// (see the note at [`HOLD_MOST`]).
    trickle: bool,
}

impl Tap {
    pub(super) fn new(token: String, framer: Option<super::sieve::Framer>) -> Tap {
        Tap {
            token,
            fd: None,
            poll_key: 0,
            live_since: Instant::now(),
            paused_until: None,
            sieve: Sieve::new(framer),
            sieved: Vec::new(),
            sieve_stale: false,
            waits: 0,
            held: Vec::new(),
            held_since: None,
            hold_until: None,
            last_line: Vec::new(),
            full: false,
            trickle: false,
        }
    }

    /// A read of `data` in a flood, with many waits on the pane: kept to
    /// pass on with what comes next, while the hold is young (true).
    /// Otherwise (false) it is to be passed on now, after what was held
    /// ([`Tap::take_held`]).
    pub(super) fn hold(&mut self, data: &[u8], now: Instant) -> bool {
        let flood = data.len() >= FLOOD_READ
            && self.waits >= HOLD_FROM
            && self.held.len() + data.len() <= HOLD_MOST;
        if !flood {
            let trickle = (self.held.is_empty() || self.trickle)
                && self.waits >= HOLD_FROM
                && self.all_sieved()
                && self.held.len() + data.len() <= HOLD_MOST
                && self.sieve.plain_lines_here(data);
            self.keep_last_line(data);
            if !trickle {
                return false;
            }
            let since = *self.held_since.get_or_insert(now);
            let until = *self.hold_until.get_or_insert(since + self.trickle_hold());
            if now >= until {
                return false;
            }
            self.trickle = true;
            self.held.extend_from_slice(data);
            return true;
        }
        self.trickle = false;
        let since = *self.held_since.get_or_insert(now);
        let longest = since + self.longest_hold();
        let until = *self.hold_until.get_or_insert(longest);
        // (Searched only while the hold may last past the usual.)
        if until > since + HOLD && self.may_hit(data) {
            self.hold_until = Some(since + HOLD);
        }
        self.keep_last_line(data);
        if self.hold_until.is_some_and(|u| now >= u) {
            return false;
        }
        self.held.extend_from_slice(data);
        true
    }

    /// How long a hold may last with no pattern hit: see [`LONGEST_HOLD`].
    fn longest_hold(&self) -> Duration {
        if !self.all_sieved() {
            return HOLD;
        }
        let times = u32::try_from(self.waits / 10).unwrap_or(u32::MAX).max(1);
        HOLD.saturating_mul(times).min(LONGEST_HOLD)
    }

    /// How long small reads of plain lines may be held (see the note at
    /// [`HOLD_MOST`]).
    fn trickle_hold(&self) -> Duration {
        let times = u32::try_from(self.waits / 5).unwrap_or(u32::MAX).max(1);
        LONGEST_HOLD.saturating_mul(times).min(LONGEST_TRICKLE)
    }

    /// Every wait the last read went to is sieved, for the wants the
    /// sieve has.
    fn all_sieved(&self) -> bool {
        self.waits > 0 && self.sieved.len() >= self.waits && !self.sieve_stale
    }

    /// `data`, the stream's next read, may hold a line a sieved wait's
    /// pattern hits (its bytes as read, with the end of the line the last
    /// read ended in: a hit split by colours is not seen here, and is
    /// passed on when the hold ends).
    fn may_hit(&self, data: &[u8]) -> bool {
        let first = memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1);
        if self.last_line.is_empty() {
            return self.sieve.may_hit(data);
        }
        let mut joined = self.last_line.clone();
        joined.extend_from_slice(&data[..first]);
        self.sieve.may_hit(&joined) || self.sieve.may_hit(&data[first..])
    }

    fn keep_last_line(&mut self, data: &[u8]) {
        let start = memchr::memrchr(b'\n', data).map_or(0, |i| i + 1);
        if start > 0 {
            self.last_line.clear();
        }
        let rest = &data[start..];
        let rest = &rest[rest.len().saturating_sub(LAST_LINE)..];
        let room = LAST_LINE.saturating_sub(rest.len());
        let drop = self.last_line.len().saturating_sub(room);
        self.last_line.drain(..drop);
        self.last_line.extend_from_slice(rest);
    }

    /// What is held is small reads of plain lines (see the note at
    /// [`HOLD_MOST`]).
    pub(super) fn trickles(&self) -> bool {
        self.trickle && !self.held.is_empty()
    }

    /// What was held, to pass on before anything else of the pane (and
    /// to give back, [`Tap::held_back`], for the next hold to fill).
    pub(super) fn take_held(&mut self) -> Option<Vec<u8>> {
        (self.held_since, self.hold_until) = (None, None);
        self.trickle = false;
        (!self.held.is_empty()).then(|| std::mem::take(&mut self.held))
    }

    /// The buffer [`Tap::take_held`] gave, passed on: kept, emptied, so
    /// a flood does not allocate (and fault in) a new one every hold.
    pub(super) fn held_back(&mut self, mut buf: Vec<u8>) {
        if self.held.is_empty() && buf.capacity() <= HOLD_MOST {
            buf.clear();
            self.held = buf;
        }
    }

    /// Something is held, and the pause is over at `now` (with nothing
    /// more to read, it is passed on then); after a read that found the
    /// pipe full the flood goes on, and what is held waits for the hold's
    /// time too ([`Tap::held_until`]).
    pub(super) fn held_due(&self, now: Instant) -> bool {
        !self.held.is_empty()
            && self.paused(now).is_none()
            && self.held_until().is_none_or(|t| now >= t)
    }

    /// When what is held is passed on whatever comes, if the flood went on
    /// at the last read, or the hold is of small reads.
    pub(super) fn held_until(&self) -> Option<Instant> {
        self.hold_until
            .filter(|_| (self.full || self.trickle) && !self.held.is_empty())
    }

    /// The waits the last read went to.
    pub(super) fn waits(&self) -> usize {
        self.waits
    }

    /// `n` bytes were just read for `waits` waits. After a large read the
    /// pipe is left alone a moment, so that the next read takes what tmux
    /// wrote meanwhile in one piece: each wait on the pane then wakes once
    /// for it, not once for each of tmux's writes (under a flood the
    /// waits' wake-ups cost them more than reading the bytes). The moment
    /// grows with the waits, each of which wakes for every read. Output
    /// that comes after a pause, a prompt or a marker, is read at once;
    /// what ends a flood is read at most [`MOST_PAUSES`] times [`PAUSE`]
    /// later. A read that found the pipe full ([`FULL_READ`]) is followed
    /// by the shortest pause. A `sync` reads the pipe whatever the pause.
    pub(super) fn read(&mut self, n: usize, waits: usize) {
        self.waits = waits;
        let waits = u32::try_from(waits).unwrap_or(u32::MAX);
        let times = if waits <= 4 {
            waits.max(1)
        } else {
            (4 + (waits - 4) / 6).min(MOST_PAUSES)
        };
        self.full = n >= FULL_READ;
        let times = if self.full { 1 } else { times };
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
    use crate::pane::rhythm::LONGEST_PAUSE;

    #[test]
    fn only_a_large_read_pauses_the_pipe_and_only_briefly() {
        let mut t = Tap::new("tok".into(), None);
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
        // A read that found the pipe full: tmux holds more, read it soon.
        let before = Instant::now();
        t.read(FULL_READ, 50);
        let until = t.paused(before).expect("paused");
        assert!(until <= Instant::now() + PAUSE);
    }

    #[test]
    fn a_flood_with_many_waits_is_held_a_moment_then_passed_on() {
        let mut t = Tap::new("tok".into(), None);
        let big = vec![b'x'; FLOOD_READ];
        let now = Instant::now();
        // Few waits: never held.
        t.read(FLOOD_READ, HOLD_FROM - 1);
        assert!(!t.hold(&big, now));
        t.read(FLOOD_READ, 50);
        assert!(t.hold(&big, now));
        assert!(t.hold(&big, now + HOLD / 2));
        // A small read (the flood stopped) is not held, nor one past the
        // hold's time; what was held goes first, once.
        assert!(!t.hold(b"$ ", now + HOLD / 2));
        assert!(!t.hold(&big, now + HOLD));
        assert_eq!(t.take_held().map(|h| h.len()), Some(2 * FLOOD_READ));
        assert_eq!(t.take_held(), None);
        // Held, then due once the pause is over.
        assert!(t.hold(&big, now));
        t.read(FLOOD_READ, 50);
        assert!(!t.held_due(Instant::now()));
        assert!(t.held_due(Instant::now() + LONGEST_PAUSE));
        assert_eq!(t.take_held().map(|h| h.len()), Some(FLOOD_READ));
        // After a read that found the pipe full the flood goes on: due at
        // the hold's time, not once the (short) pause is over.
        let now = Instant::now();
        assert!(t.hold(&big, now));
        t.read(FULL_READ, 50);
        assert!(!t.held_due(now + LONGEST_PAUSE));
        assert_eq!(t.held_until(), Some(now + HOLD));
        assert!(t.held_due(now + HOLD));
    }

    /// A tap read for `waits` waits, all of them sieved for `pattern`.
    fn sieved_tap(waits: usize, pattern: &str) -> Tap {
        let mut t = Tap::new("tok".into(), None);
        let w = crate::hub::Wants {
            pattern: pattern.into(),
            match_case: true,
            keep: 0,
            width: None,
        };
        t.sieve.set_wants(std::iter::repeat_n(&w, waits));
        t.sieved = (0..waits as u64).collect();
        t.read(FULL_READ, waits);
        // (A line's end passed on: the stream stands at a line's start.)
        t.sieve.advance(b"\r\n");
        t
    }

    #[test]
    fn with_many_sieved_waits_small_reads_of_plain_lines_are_held_too() {
        let now = Instant::now();
        let line = b"compiling crate 7 of 90\r\n";
        // Six waits: held up to the longest hold, then due; the hold's
        // time is when the hub wakes for it.
        let mut t = sieved_tap(HOLD_FROM, "^DONE$");
        assert!(t.hold(line, now));
        assert!(t.hold(line, now + HOLD));
        assert_eq!(t.held_until(), Some(now + LONGEST_HOLD));
        assert!(!t.held_due(now + HOLD));
        assert!(t.held_due(now + LONGEST_HOLD));
        assert!(!t.hold(line, now + LONGEST_HOLD));
        assert_eq!(t.take_held().map(|h| h.len()), Some(2 * line.len()));
        // Longer with more waits, so that all of them together wake about
        // as often as one: twice with ten, at most a second.
        for (waits, held) in [
            (10, 2 * LONGEST_HOLD),
            (50, LONGEST_TRICKLE),
            (500, LONGEST_TRICKLE),
        ] {
            let mut t = sieved_tap(waits, "^DONE$");
            assert!(t.hold(line, now));
            assert_eq!(t.held_until(), Some(now + held), "{waits} waits");
        }
        // What goes on at once, after what was held: a line a pattern may
        // hit, a line not ended, an escape, a piece that is not ASCII.
        for other in [
            &b"DONE\r\n"[..],
            b"$ ",
            b"\x1b[1mbold\x1b[m\r\n",
            "caf\u{e9}\r\n".as_bytes(),
            b"a\nb\r\n",
        ] {
            let mut t = sieved_tap(50, "^DONE$");
            assert!(t.hold(line, now));
            assert!(!t.hold(other, now + Duration::from_millis(1)), "{other:?}");
            assert_eq!(t.take_held().map(|h| h.len()), Some(line.len()));
        }
        // Fewer waits, or one not sieved: never held.
        let mut t = sieved_tap(HOLD_FROM - 1, "^DONE$");
        assert!(!t.hold(line, now));
        let mut t = sieved_tap(10, "^DONE$");
        t.read(line.len(), 11);
        assert!(!t.hold(line, now));
        // Nor while a shell reads a line (bracketed paste on).
        let mut t = sieved_tap(10, "^DONE$");
        t.sieve.advance(b"$ \x1b[?2004h");
        assert!(!t.hold(line, now));
    }

    #[test]
    fn with_many_sieved_waits_a_flood_no_pattern_hits_is_held_longer() {
        let lines = b"1\r\n2\r\n3\r\n".repeat(FLOOD_READ / 6 + 1);
        let now = Instant::now();
        // Fifty waits, nothing hit: held up to the longest hold.
        let mut t = sieved_tap(50, "^DONE$");
        assert!(t.hold(&lines, now));
        assert!(t.hold(&lines, now + HOLD));
        assert_eq!(t.held_until(), Some(now + LONGEST_HOLD));
        assert!(!t.hold(&lines, now + LONGEST_HOLD));
        assert!(t.take_held().is_some());
        // Twenty: twice the hold.
        let mut t = sieved_tap(20, "^DONE$");
        assert!(t.hold(&lines, now));
        assert_eq!(t.held_until(), Some(now + 2 * HOLD));
        // A read a pattern hits ends the hold at the usual time, a hit
        // split between two reads too.
        for (first, second) in [(&b"DONE\r\n"[..], &b""[..]), (b"DO", b"NE\r\n")] {
            let mut t = sieved_tap(50, "^DONE$");
            assert!(t.hold(&lines, now));
            let mut a = lines.clone();
            a.extend_from_slice(first);
            assert!(t.hold(&a, now + HOLD / 2));
            let mut b = second.to_vec();
            b.extend_from_slice(&lines);
            assert!(t.hold(&b, now + HOLD / 2));
            assert_eq!(t.held_until(), Some(now + HOLD));
            assert!(!t.hold(&lines, now + HOLD));
        }
        // A wait on the pane that is not sieved: the usual hold.
        let mut t = sieved_tap(50, "^DONE$");
        t.sieved.pop();
        assert!(t.hold(&lines, now));
        assert_eq!(t.held_until(), Some(now + HOLD));
    }

    #[test]
    fn the_pause_grows_with_the_waits_up_to_a_bound() {
        let mut t = Tap::new("tok".into(), None);
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
