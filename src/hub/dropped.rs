//! Waits the hub dropped for falling too far behind (stopped with Ctrl-Z
//! while their pane flooded). The hub stays while such a wait's process
//! lives, for a while: resumed, the wait finds its connection closed by a
//! hub that is still there, and ends with the error, where a hub gone by
//! then would look like one that was killed (and the wait would go on
//! through a new one).

use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// How long the hub stays for a dropped wait that has not resumed.
const PATIENCE: Duration = Duration::from_secs(30);
/// How often the hub looks whether they are gone, while it has nothing
/// else.
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(100);

#[derive(Default)]
pub(super) struct Dropped {
    /// Each dropped wait's process, its start (so a reused pid is not it),
    /// and when it was dropped.
    peers: Vec<(u32, Option<u64>, Instant)>,
}

impl Dropped {
    /// The wait on `stream` is being dropped.
    pub(super) fn note(&mut self, stream: &UnixStream) {
        if let Some(pid) = crate::sys::peer_pid(stream) {
            self.peers.push((pid, start_of(pid), Instant::now()));
        }
    }

    /// Some dropped wait may still come back (see [`Dropped::pending`]).
    pub(super) fn any(&self) -> bool {
        !self.peers.is_empty()
    }

    /// Some dropped wait's process still lives (within the patience).
    pub(super) fn pending(&mut self) -> bool {
        self.peers.retain(|(pid, start, at)| {
            at.elapsed() < PATIENCE && crate::sys::alive(*pid) && start_of(*pid) == *start
        });
        !self.peers.is_empty()
    }
}

fn start_of(pid: u32) -> Option<u64> {
    crate::sys::procfs::stat(pid).map(|s| s.start_ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_wait_is_waited_for_while_it_lives() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut d = Dropped::default();
        d.note(&a);
        // The peer of a pair is this very process, which lives.
        assert_eq!(d.pending(), crate::sys::peer_pid(&a).is_some());
        for p in &mut d.peers {
            p.2 = p.2.checked_sub(PATIENCE).unwrap_or(p.2);
        }
        assert!(!d.pending() || d.peers[0].2.elapsed() < PATIENCE);
    }
}
