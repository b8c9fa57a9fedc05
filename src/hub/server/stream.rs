//! The hub's side of a live stream: what is read from a pane's pipe (held
//! a moment under a flood with many waits, see `Tap::hold`) goes to each
//! wait on the pane, whole or sieved (see `sieve`), and a wait's lines
//! after its entry (`sync N`, `wants JSON`, `whole`) are answered.

use super::super::conn::log;
use super::super::protocol::{EndReason, Frame};
use super::super::sieve::SIEVE_AFTER;
use super::super::tap::Tap;
use super::{Hub, READ_PER_TURN, Role, bytes_waiting};
use crate::pane::skip::{WHOLE, Wants};
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::time::Instant;

/// The largest piece of a turn's (or a hold's) read sieved as one: as
/// much as a hold keeps. Each piece's last lines go whole to every sieved
/// wait (64 of them for a text wait), and each wait parses them: fifty
/// waits on a flood woke 1.7 times as often and spent 1.3 to 1.9 times
/// the CPU with pieces of a megabyte, and more with 64 KiB. The cost: the sieve leaves out runs in
/// turn only up to a point it cannot go past (a line being read, a title
/// left open), and the rest of the piece goes whole. The pieces go out
/// together: a wait wakes once for all of them.
const PIECE: usize = 4 << 20;

impl Hub {
    /// Read what the pane's pipe holds (up to `limit` bytes) and pass it
    /// on together (in pieces, see `pass_on`): under a flood tmux refills
    /// the pipe while it is read, and each wait on the pane wakes once for
    /// all a turn read, not once for each read. What was read before the
    /// pipe ended goes on before its end.
    pub(super) fn read_tap(&mut self, pane: &str, limit: usize) {
        const READ: usize = 64 * 1024;
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        let mut ended = false;
        while let Some(fd) = self
            .taps
            .get(pane)
            .and_then(|t| t.fd.as_ref())
            .map(AsRawFd::as_raw_fd)
        {
            if chunk.len() >= limit {
                break;
            }
            let want = (limit - chunk.len()).min(READ);
            chunk.reserve(want);
            let spare = chunk.spare_capacity_mut();
            // SAFETY: reading at most `want` bytes into spare capacity we
            // own (reserved above) from a descriptor we own.
            let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), want) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    ErrorKind::WouldBlock => break,
                    ErrorKind::Interrupted => continue,
                    _ => {
                        ended = true;
                        break;
                    }
                }
            }
            if n == 0 {
                ended = true;
                break;
            }
            // SAFETY: the read initialised `n` more bytes.
            unsafe { chunk.set_len(chunk.len() + n as usize) };
        }
        let read = chunk.len();
        let now = Instant::now();
        // (The sieve knows a wait that came or said its wants since the
        // last read before it holds anything for it.)
        let waits = self.router.waiters(pane).to_vec();
        self.sieve_for(pane, &waits);
        let held = self
            .taps
            .get_mut(pane)
            .filter(|_| !ended)
            .and_then(|t| t.hold(&chunk, now).then(|| t.waits()));
        let readers = match held {
            Some(waits) => waits,
            None => self.pass_held_and(pane, &chunk),
        };
        // (Kept, with its room, for the next turn.)
        if chunk.capacity() <= 2 * READ_PER_TURN {
            self.chunk = chunk;
        }
        if ended {
            return self.end_tap(pane, EndReason::Closed);
        }
        if let Some(t) = self.taps.get_mut(pane) {
            t.read(read, readers);
        }
    }

    /// Pass on what was held of the pane's flood (see `Tap::hold`):
    /// before anything else of it, before a wait joins it, a sync is
    /// answered or it ends.
    pub(super) fn pass_held(&mut self, pane: &str) {
        self.pass_held_and(pane, &[]);
    }

    /// What was held, then `data`, passed on as one: each wait gets its
    /// last lines once for both. The waits they went to.
    fn pass_held_and(&mut self, pane: &str, data: &[u8]) -> usize {
        if self.taps.get(pane).is_some_and(Tap::trickles) {
            log(format_args!("{pane}: plain lines held, passed on"));
        }
        let Some(mut held) = self.taps.get_mut(pane).and_then(Tap::take_held) else {
            return if data.is_empty() {
                0
            } else {
                self.pass_on(pane, data)
            };
        };
        held.extend_from_slice(data);
        let waits = self.pass_on(pane, &held);
        if let Some(t) = self.taps.get_mut(pane) {
            t.held_back(held);
        }
        waits
    }

    /// Pass on what panes held once their pause is over and the pipe has
    /// nothing more: the flood stopped.
    pub(super) fn pass_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .taps
            .iter()
            .filter(|(_, t)| {
                t.held_due(now)
                    && t.fd
                        .as_ref()
                        .is_none_or(|fd| bytes_waiting(fd.as_raw_fd()) == 0)
            })
            .map(|(p, _)| p.clone())
            .collect();
        for p in due {
            self.pass_held(&p);
        }
    }

    /// `data`, what was read of `pane`'s stream: to every wait on it, in
    /// pieces of at most [`PIECE`] (see [`Hub::fan_out`]), a piece ending
    /// where a wait that takes sieved chunks has had its first
    /// [`SIEVE_AFTER`] bytes whole: the rest is sieved for it too (a flood
    /// read in one piece of 400 KB as the waits began went whole to each).
    pub(super) fn pass_on(&mut self, pane: &str, data: &[u8]) -> usize {
        let mut waits = 0;
        let mut at = 0;
        while at < data.len() {
            let n = self.whole_for(pane).min(PIECE).min(data.len() - at);
            waits = self.fan_out(pane, &data[at..at + n]);
            at += n;
        }
        waits
    }

    /// The bytes of `pane`'s stream after which one of its waits that
    /// said its wants will have had [`SIEVE_AFTER`] whole (none: MAX).
    fn whole_for(&self, pane: &str) -> usize {
        self.conns
            .values()
            .filter(|c| {
                c.wants.is_some()
                    && c.streamed < SIEVE_AFTER
                    && matches!(&c.role, Role::Waiter { pane: p, entered: true } if p == pane)
            })
            .map(|c| usize::try_from(SIEVE_AFTER - c.streamed).unwrap_or(usize::MAX))
            .min()
            .unwrap_or(usize::MAX)
    }

    /// `data`, the next chunk of `pane`'s stream: to every wait on it.
    /// Each wait that said which lines it can use, and has had its first
    /// `SIEVE_AFTER` bytes whole, gets it sieved when the pane's sieve
    /// finds a run none of them can use (one search for all of them).
    fn fan_out(&mut self, pane: &str, data: &[u8]) -> usize {
        let waits = self.router.data(pane, data).to_vec();
        let sieved = self.sieve_for(pane, &waits);
        let Some(tap) = self.taps.get_mut(pane) else {
            return waits.len();
        };
        let mut parts = Vec::new();
        if !sieved.is_empty() {
            // Each run none of them can use, left out, up to the chunk's
            // last lines: a frame for each, then what is left whole.
            let mut at = 0;
            while let Some(c) = tap.sieve.cut(&data[at..]) {
                let s = c.frame(&data[at..at + c.to]);
                tap.sieve.advance(&data[at..at + c.to]);
                at += c.to;
                parts.push(Frame::Sieved(s));
            }
            if !parts.is_empty() && at < data.len() {
                parts.push(Frame::Data(data[at..].to_vec()));
            }
            tap.sieve.advance(&data[at..]);
        } else {
            tap.sieve.advance(data);
        }
        if waits.is_empty() {
            return 0;
        }
        let whole =
            (parts.is_empty() || sieved.len() < waits.len()).then(|| Frame::Data(data.to_vec()));
        let mut over = Vec::new();
        for w in &waits {
            let Some(c) = self.conns.get_mut(w) else {
                continue;
            };
            match &whole {
                _ if !parts.is_empty() && sieved.contains(w) => {
                    for p in &parts {
                        c.push(p);
                        if let Frame::Sieved(s) = p {
                            c.left_out += s.skipped();
                        }
                    }
                }
                Some(d) => c.push(d),
                None => {}
            }
            c.streamed = c.streamed.saturating_add(data.len() as u64);
            if c.pending() > self.queue_limit {
                over.push(*w);
            }
        }
        // A wait that stopped reading is dropped: no other waits for it.
        for w in over {
            if let Some(c) = self.conns.get(&w) {
                self.dropped.note(&c.stream);
            }
            self.drop_conn(w);
        }
        waits.len()
    }

    /// The pane's sieve searches for every one of `waits` that said its
    /// wants, those still having their first bytes whole too (so that the
    /// tap may hold plain lines for all of them: see `Tap::hold`). Those
    /// past them, which are sent its cuts.
    fn sieve_for(&mut self, pane: &str, waits: &[u64]) -> Vec<u64> {
        let wanting: Vec<u64> = waits
            .iter()
            .copied()
            .filter(|w| self.conns.get(w).is_some_and(|c| c.wants.is_some()))
            .collect();
        let Some(tap) = self.taps.get_mut(pane) else {
            return Vec::new();
        };
        if wanting.is_empty() {
            tap.sieved.clear();
        } else if tap.sieve_stale || tap.sieved != wanting {
            let wants: Vec<&Wants> = wanting
                .iter()
                .filter_map(|w| self.conns.get(w).and_then(|c| c.wants.as_ref()))
                .collect();
            tap.sieve.set_wants(wants.into_iter());
            tap.sieved.clone_from(&wanting);
            tap.sieve_stale = false;
        }
        wanting
            .into_iter()
            .filter(|w| self.conns.get(w).is_some_and(|c| c.streamed >= SIEVE_AFTER))
            .collect()
    }

    /// A wait's line after its request: `sync N` (answered once what the
    /// pipe holds now was passed on), `wants JSON` or `whole`. Anything
    /// else drops the wait.
    pub(super) fn on_wait_line(&mut self, id: u64, text: &str) {
        let pane = match self.conns.get(&id).map(|c| &c.role) {
            Some(Role::Waiter {
                pane,
                entered: true,
            }) => pane.clone(),
            _ => return self.drop_conn(id),
        };
        if let Some(json) = text.strip_prefix("wants ") {
            let Ok(wants) = serde_json::from_str::<Wants>(json) else {
                return self.drop_conn(id);
            };
            return self.set_wants(id, &pane, Some(wants));
        }
        if text.trim().as_bytes() == WHOLE.trim_ascii_end() {
            return self.set_wants(id, &pane, None);
        }
        let Some(n) = text
            .strip_prefix("sync ")
            .and_then(|n| n.trim().parse::<u64>().ok())
        else {
            return self.drop_conn(id);
        };
        log(format_args!("sync {id} {n}"));
        // What the pipe holds now goes first (only that: under a flood the
        // pipe is never empty).
        let held = self
            .taps
            .get(&pane)
            .and_then(|t| t.fd.as_ref())
            .map(|fd| bytes_waiting(fd.as_raw_fd()))
            .unwrap_or(0);
        if held > 0 {
            self.read_tap(&pane, held);
        }
        self.pass_held(&pane);
        if let Some(c) = self.conns.get_mut(&id) {
            c.push(&Frame::Synced(n));
        }
    }

    fn set_wants(&mut self, id: u64, pane: &str, wants: Option<Wants>) {
        log(format_args!("wants {id} {wants:?}"));
        if let Some(c) = self.conns.get_mut(&id) {
            c.wants = wants;
        }
        if let Some(t) = self.taps.get_mut(pane) {
            t.sieve_stale = true;
        }
    }
}
