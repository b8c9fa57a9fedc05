//! The hub's side of a live stream: a chunk read from a pane's pipe goes
//! to each wait on the pane, whole or sieved (see `sieve`), and a wait's
//! lines after its entry (`sync N`, `wants JSON`, `whole`) are answered.

use super::super::conn::log;
use super::super::protocol::{Frame, WHOLE, Wants};
use super::super::sieve::SIEVE_AFTER;
use super::{Hub, Role, bytes_waiting};
use std::os::fd::AsRawFd;

impl Hub {
    /// `data`, the next chunk of `pane`'s stream: to every wait on it.
    /// Each wait that said which lines it can use, and has had its first
    /// `SIEVE_AFTER` bytes whole, gets it sieved when the pane's sieve
    /// finds a run none of them can use (one search for all of them).
    pub(super) fn fan_out(&mut self, pane: &str, data: &[u8]) -> usize {
        let waits = self.router.data(pane, data).to_vec();
        let Some(tap) = self.taps.get_mut(pane) else {
            return waits.len();
        };
        let sieved: Vec<u64> = waits
            .iter()
            .copied()
            .filter(|w| {
                self.conns
                    .get(w)
                    .is_some_and(|c| c.wants.is_some() && c.streamed >= SIEVE_AFTER)
            })
            .collect();
        let cut = if sieved.is_empty() {
            None
        } else {
            if tap.sieve_stale || tap.sieved != sieved {
                let wants: Vec<&Wants> = sieved
                    .iter()
                    .filter_map(|w| self.conns.get(w).and_then(|c| c.wants.as_ref()))
                    .collect();
                tap.sieve.set_wants(wants.into_iter());
                tap.sieved.clone_from(&sieved);
                tap.sieve_stale = false;
            }
            tap.sieve.cut(data)
        };
        tap.sieve.advance(data);
        if waits.is_empty() {
            return 0;
        }
        let part = cut.map(|c| Frame::Sieved(c.frame(data)));
        let whole =
            (part.is_none() || sieved.len() < waits.len()).then(|| Frame::Data(data.to_vec()));
        let mut over = Vec::new();
        for w in &waits {
            let Some(c) = self.conns.get_mut(w) else {
                continue;
            };
            match (&part, &whole) {
                (Some(p), _) if sieved.contains(w) => {
                    c.push(p);
                    if let Frame::Sieved(s) = p {
                        c.left_out += s.skipped();
                    }
                }
                (_, Some(d)) => c.push(d),
                _ => {}
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
            let mut buf = vec![0u8; 64 * 1024];
            self.read_tap(&pane, held, &mut buf);
        }
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
