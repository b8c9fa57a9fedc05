//! Waiting on many descriptors when few of them are ready: the hub holds a
//! pipe for every pane attention watches (hundreds) and most are quiet.
//! `poll` asks the kernel about each of them at every turn, which cost the
//! hub most of its time with 200 panes; on Linux an epoll set is kept
//! instead, told only what changed, and each turn costs what is ready.
//! Elsewhere this is `poll` over the descriptors wanted.
//!
//! Each turn names every descriptor it wants and for what
//! ([`Poller::want`]), then waits ([`Poller::wait`]); a descriptor not named
//! in a turn is not waited on. A key names the owner of a descriptor: a
//! descriptor closed and its number used again by another owner in the
//! same turn must come with another key.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::time::Duration;

/// A descriptor that is ready: its key and what it is ready for, as
/// `poll` says it (`POLLIN`, `POLLOUT`, `POLLHUP`, `POLLERR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    pub key: u64,
    pub revents: libc::c_short,
}

struct Wanted {
    key: u64,
    events: libc::c_short,
    /// The turn that last named it.
    turn: u64,
}

pub struct Poller {
    #[cfg(target_os = "linux")]
    epoll: std::os::fd::OwnedFd,
    /// What the kernel was told: by descriptor.
    told: HashMap<RawFd, Wanted>,
    /// The descriptor each key names now.
    owners: HashMap<u64, RawFd>,
    turn: u64,
    ready: Vec<Ready>,
    #[cfg(target_os = "linux")]
    events: Vec<libc::epoll_event>,
}

impl Poller {
    pub fn new() -> std::io::Result<Poller> {
        Ok(Poller {
            #[cfg(target_os = "linux")]
            epoll: {
                use std::os::fd::FromRawFd;
                // SAFETY: no pointer arguments; the descriptor is checked.
                let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // SAFETY: a new descriptor nobody else owns.
                unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
            },
            told: HashMap::new(),
            owners: HashMap::new(),
            turn: 1,
            ready: Vec::new(),
            #[cfg(target_os = "linux")]
            events: Vec::new(),
        })
    }

    /// Wait on `fd` this turn for `events` (`POLLIN`, `POLLOUT`; 0: only
    /// for a hang-up or an error), `key` naming it in [`Ready`].
    pub fn want(&mut self, fd: RawFd, key: u64, events: libc::c_short) {
        let turn = self.turn;
        match self.told.get_mut(&fd) {
            Some(w) if w.key == key && w.events == events => w.turn = turn,
            Some(w) => {
                let again = w.key == key;
                if !again && self.owners.get(&w.key) == Some(&fd) {
                    self.owners.remove(&w.key);
                }
                *w = Wanted { key, events, turn };
                self.owners.insert(key, fd);
                self.tell(fd, key, events, again);
            }
            None => {
                self.told.insert(fd, Wanted { key, events, turn });
                self.owners.insert(key, fd);
                self.tell(fd, key, events, false);
            }
        }
    }

    /// Wait at most `timeout` (`None`: until something is ready) on what
    /// this turn wanted; the descriptors ready, and a new turn begins.
    pub fn wait(&mut self, timeout: Option<Duration>) -> &[Ready] {
        self.wait_with(timeout, false)
    }

    /// [`Poller::wait`] to the microsecond where the system can (a
    /// debounce of a millisecond does not become two).
    pub fn wait_fine(&mut self, timeout: Duration) -> &[Ready] {
        self.wait_with(Some(timeout), true)
    }

    fn wait_with(&mut self, timeout: Option<Duration>, fine: bool) -> &[Ready] {
        let turn = self.turn;
        let gone: Vec<RawFd> = self
            .told
            .iter()
            .filter(|(_, w)| w.turn != turn)
            .map(|(fd, _)| *fd)
            .collect();
        for fd in gone {
            if let Some(w) = self.told.remove(&fd)
                && self.owners.get(&w.key) == Some(&fd)
            {
                self.owners.remove(&w.key);
            }
            self.forget(fd);
        }
        self.turn += 1;
        self.ready.clear();
        self.wait_ready(timeout, fine);
        &self.ready
    }

    #[cfg(target_os = "linux")]
    fn tell(&mut self, fd: RawFd, key: u64, events: libc::c_short, same_owner: bool) {
        use std::os::fd::AsRawFd;
        let mut ev = libc::epoll_event {
            events: epoll_events(events),
            u64: key,
        };
        let ep = self.epoll.as_raw_fd();
        // SAFETY: `ev` is a valid epoll_event; the descriptors are ints.
        let ctl = |op, ev: &mut libc::epoll_event| unsafe { libc::epoll_ctl(ep, op, fd, ev) };
        if same_owner && ctl(libc::EPOLL_CTL_MOD, &mut ev) == 0 {
            return;
        }
        // Another owner (or the kernel forgot it, closed): told afresh.
        let _ = ctl(libc::EPOLL_CTL_DEL, &mut ev);
        let _ = ctl(libc::EPOLL_CTL_ADD, &mut ev);
    }

    #[cfg(target_os = "linux")]
    fn forget(&mut self, fd: RawFd) {
        use std::os::fd::AsRawFd;
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `tell` (a closed descriptor only fails).
        unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    #[cfg(target_os = "linux")]
    fn wait_ready(&mut self, timeout: Option<Duration>, fine: bool) {
        use std::os::fd::AsRawFd;
        let mut timeout = timeout;
        if fine && let Some(t) = timeout {
            // The epoll set is itself readable when one of its own is
            // ready: waited on to the microsecond, then asked at once.
            let mut one = [super::pollfd(self.epoll.as_raw_fd(), libc::POLLIN)];
            super::poll_fine(&mut one, t);
            if one[0].revents == 0 {
                return;
            }
            timeout = Some(Duration::ZERO);
        }
        let n = self.told.len().clamp(1, 1024);
        self.events
            .resize(n, libc::epoll_event { events: 0, u64: 0 });
        let ms = match timeout {
            Some(Duration::ZERO) => 0,
            t => super::poll_millis(t),
        };
        // SAFETY: `events` holds `n` events.
        let got = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                self.events.as_mut_ptr(),
                n as libc::c_int,
                ms,
            )
        };
        for ev in self.events.iter().take(usize::try_from(got).unwrap_or(0)) {
            let (key, bits) = (ev.u64, ev.events);
            // (Only what this turn names: a key the kernel kept for a
            // descriptor closed meanwhile is nobody's.)
            if self.owners.contains_key(&key) {
                self.ready.push(Ready {
                    key,
                    revents: poll_events(bits),
                });
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn tell(&mut self, _fd: RawFd, _key: u64, _events: libc::c_short, _same_owner: bool) {}

    #[cfg(not(target_os = "linux"))]
    fn forget(&mut self, _fd: RawFd) {}

    #[cfg(not(target_os = "linux"))]
    fn wait_ready(&mut self, timeout: Option<Duration>, fine: bool) {
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(self.told.len());
        let mut keys = Vec::with_capacity(self.told.len());
        for (fd, w) in &self.told {
            fds.push(super::pollfd(*fd, w.events));
            keys.push(w.key);
        }
        match timeout {
            Some(t) if fine => super::poll_fine(&mut fds, t),
            t => super::poll(&mut fds, t),
        }
        for (p, key) in fds.iter().zip(keys) {
            if p.revents != 0 {
                self.ready.push(Ready {
                    key,
                    revents: p.revents,
                });
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn epoll_events(events: libc::c_short) -> u32 {
    let mut e = 0;
    if events & libc::POLLIN != 0 {
        e |= libc::EPOLLIN as u32;
    }
    if events & libc::POLLOUT != 0 {
        e |= libc::EPOLLOUT as u32;
    }
    e
}

#[cfg(target_os = "linux")]
fn poll_events(bits: u32) -> libc::c_short {
    let mut r = 0;
    for (e, p) in [
        (libc::EPOLLIN, libc::POLLIN),
        (libc::EPOLLOUT, libc::POLLOUT),
        (libc::EPOLLHUP, libc::POLLHUP),
        (libc::EPOLLERR, libc::POLLERR),
    ] {
        if bits & e as u32 != 0 {
            r |= p;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    fn keys(p: &mut Poller, t: Duration) -> Vec<(u64, libc::c_short)> {
        let mut v: Vec<_> = p.wait(Some(t)).iter().map(|r| (r.key, r.revents)).collect();
        v.sort();
        v
    }

    #[test]
    fn says_what_is_ready_and_only_what_the_turn_wanted() {
        let mut p = Poller::new().unwrap();
        let (a, mut a2) = UnixStream::pair().unwrap();
        let (b, mut b2) = UnixStream::pair().unwrap();
        let short = Duration::from_millis(5);
        p.want(a.as_raw_fd(), 1, libc::POLLIN);
        p.want(b.as_raw_fd(), 2, libc::POLLIN);
        assert_eq!(keys(&mut p, short), vec![]);
        a2.write_all(b"x").unwrap();
        b2.write_all(b"y").unwrap();
        p.want(a.as_raw_fd(), 1, libc::POLLIN);
        p.want(b.as_raw_fd(), 2, libc::POLLIN);
        assert_eq!(
            keys(&mut p, short),
            vec![(1, libc::POLLIN), (2, libc::POLLIN)]
        );
        // Left out of a turn: not waited on, though readable.
        p.want(a.as_raw_fd(), 1, libc::POLLIN);
        assert_eq!(keys(&mut p, short), vec![(1, libc::POLLIN)]);
        // For writing too.
        p.want(a.as_raw_fd(), 1, libc::POLLIN | libc::POLLOUT);
        assert_eq!(keys(&mut p, short), vec![(1, libc::POLLIN | libc::POLLOUT)]);
        // Wanted again: ready again (level, not edge).
        p.want(b.as_raw_fd(), 2, libc::POLLIN);
        assert_eq!(keys(&mut p, short), vec![(2, libc::POLLIN)]);
        // The other end closed: a hang-up, even wanting nothing.
        drop(b2);
        p.want(b.as_raw_fd(), 2, 0);
        let got = keys(&mut p, short);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, 2);
        assert_ne!(got[0].1 & libc::POLLHUP, 0, "{got:?}");
    }

    #[test]
    fn a_number_used_again_by_another_owner_is_waited_on() {
        let mut p = Poller::new().unwrap();
        let (a, _a2) = UnixStream::pair().unwrap();
        let fd = a.as_raw_fd();
        p.want(fd, 7, libc::POLLIN);
        assert_eq!(keys(&mut p, Duration::from_millis(1)), vec![]);
        drop(a);
        // The next socket most likely gets the same number.
        let (c, mut c2) = UnixStream::pair().unwrap();
        c2.write_all(b"z").unwrap();
        p.want(c.as_raw_fd(), 8, libc::POLLIN);
        assert_eq!(
            keys(&mut p, Duration::from_millis(50)),
            vec![(8, libc::POLLIN)]
        );
        // To the microsecond: a 2 ms wait is not 3.
        let t = std::time::Instant::now();
        assert_eq!(
            p.wait_fine(Duration::from_micros(2500))
                .iter()
                .map(|r| r.key)
                .collect::<Vec<_>>(),
            Vec::<u64>::new()
        );
        assert!(t.elapsed() >= Duration::from_micros(2500));
        // A timeout with nothing wanted ends.
        let t = std::time::Instant::now();
        assert_eq!(keys(&mut p, Duration::from_millis(20)), vec![]);
        assert!(t.elapsed() >= Duration::from_millis(15));
    }
}
