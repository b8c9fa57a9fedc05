//! What wakes a stream wait up. The hub's frames are read by the wait's
//! own thread when it asks for its next event: one wake-up for each chunk
//! of a flooding pane, where a reader thread handing chunks over cost two
//! and a futex. Other threads (signals, the pane's process watch) post
//! their events and write a byte that wakes the wait.

use super::Event;
use crate::hub::{Decoder, Frame};
use crate::sys::wake::{Post, Wake};
use crate::sys::{poll_fine, pollfd};
use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{Receiver, channel};
use std::time::Instant;

/// The most bytes read from the hub at once.
const READ_MAX: usize = 256 * 1024;

/// Where threads other than the wait's own post their events.
pub(super) type Poster = Post<Event>;

pub(super) struct Inbox {
    /// The hub's connection (a clone of the one syncs are written to)
    /// and its frames so far; None once it broke.
    hub: Option<(UnixStream, Decoder)>,
    /// Events decoded and not taken yet, in the hub's order.
    queue: VecDeque<Event>,
    posted: Receiver<Event>,
    wake: Wake,
    poster: Poster,
    buf: Vec<u8>,
    /// The last read filled `buf`: more may be waiting.
    full: bool,
    /// The hub takes `wants` lines (see `hub::sieve`).
    sieves: bool,
}

impl Inbox {
    pub(super) fn new() -> std::io::Result<Inbox> {
        let wake = Wake::new()?;
        let (tx, posted) = channel();
        Ok(Inbox {
            hub: None,
            queue: VecDeque::new(),
            posted,
            poster: Post::new(tx, wake.waker()),
            wake,
            buf: vec![0; READ_MAX],
            full: false,
            sieves: false,
        })
    }

    /// Where another thread posts to this wait.
    pub(super) fn poster(&self) -> Poster {
        self.poster.clone()
    }

    /// Read frames from `stream` from now on (a new hub's, after the
    /// entry `dec` holds the rest of); what the last one sent and nobody
    /// took is dropped with it. Reads never block, so a read timeout left
    /// on `stream` from the entry does not matter.
    pub(super) fn set_hub(&mut self, stream: UnixStream, dec: Decoder) {
        self.sieves = dec.sieves();
        self.queue.clear();
        self.hub = Some((stream, dec));
        self.decode();
    }

    /// Send `line` to the hub (lost with a hub that is gone: its
    /// connection's end is read as `HubLost`).
    pub(super) fn send(&self, line: &[u8]) {
        if let Some((stream, _)) = &self.hub {
            let _ = (&*stream).write_all(line);
        }
    }

    /// The hub takes `wants` lines (see `hub::sieve`).
    pub(super) fn sieves(&self) -> bool {
        self.sieves
    }

    /// The end of this wait's connection, for the hub to see.
    pub(super) fn shutdown(&self) {
        if let Some((stream, _)) = &self.hub {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// The next event, or None once `deadline` passed. Posted events come
    /// first: a signal is not kept behind a flood.
    pub(super) fn next(&mut self, deadline: Instant) -> Option<Event> {
        loop {
            if let Some(ev) = self.ready() {
                return Some(ev);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let hub = self.hub.as_ref().map_or(-1, |(s, _)| s.as_raw_fd());
            let mut fds = [
                pollfd(self.wake.as_raw_fd(), libc::POLLIN),
                pollfd(hub, libc::POLLIN),
            ];
            poll_fine(&mut fds, left);
            if fds[0].revents != 0 {
                self.wake.drain();
            }
            if fds[1].revents != 0 {
                self.read_hub();
            } else if left.is_zero() && fds[0].revents == 0 {
                return self.ready();
            }
        }
    }

    /// The next event that is there without waiting: those read already,
    /// and more only where the last read could not take all there was
    /// (a look for what came since costs a call each time, for nothing
    /// most of the time; `next` finds it).
    pub(super) fn try_next(&mut self) -> Option<Event> {
        if let Some(ev) = self.ready() {
            return Some(ev);
        }
        if self.full {
            self.read_hub();
        }
        self.ready()
    }

    /// Read what the hub has sent by now, without waiting: for a caller
    /// that takes in what arrived (`try_next` alone reads more only where
    /// the last read could not take all there was).
    pub(super) fn read_now(&mut self) {
        if self.hub.is_some() {
            self.read_hub();
        }
    }

    fn ready(&mut self) -> Option<Event> {
        if let Ok(ev) = self.posted.try_recv() {
            return Some(ev);
        }
        self.queue.pop_front()
    }

    /// Read what the hub sent (without waiting) and decode it; a broken
    /// connection is one `HubLost`.
    fn read_hub(&mut self) {
        let Some((stream, dec)) = &mut self.hub else {
            return;
        };
        self.full = false;
        loop {
            // SAFETY: reading into a buffer we own from a socket we own;
            // MSG_DONTWAIT leaves the shared descriptor's mode alone.
            let n = unsafe {
                libc::recv(
                    stream.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n > 0 {
                dec.push(&self.buf[..n as usize]);
                self.full = n as usize == self.buf.len();
                break;
            }
            let e = std::io::Error::last_os_error();
            match (n, e.kind()) {
                (0, _) => {}
                (_, std::io::ErrorKind::Interrupted) => continue,
                (_, std::io::ErrorKind::WouldBlock) => return,
                _ => {}
            }
            self.hub = None;
            self.queue.push_back(Event::HubLost);
            return;
        }
        self.decode();
    }

    fn decode(&mut self) {
        let Some((_, dec)) = &mut self.hub else {
            return;
        };
        let ev = loop {
            let ev = match dec.next_frame() {
                Ok(Some(Frame::Data(d))) => Event::Data(d, Instant::now()),
                Ok(Some(Frame::Sieved(s))) => Event::Sieved(s, Instant::now()),
                Ok(Some(Frame::Synced(n))) => Event::Synced(n),
                Ok(Some(Frame::Mark(m))) => Event::Mark(m),
                Ok(Some(Frame::End(r))) => Event::End(r),
                Ok(None) => return,
                // An entry in the stream, or frames that do not parse.
                Ok(Some(Frame::Entry(_))) | Err(_) => break Event::HubLost,
            };
            self.queue.push_back(ev);
        };
        self.hub = None;
        self.queue.push_back(ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::EndReason;
    use std::time::Duration;

    fn inbox_with_hub() -> (Inbox, UnixStream) {
        let (ours, hub) = UnixStream::pair().unwrap();
        let mut inbox = Inbox::new().unwrap();
        inbox.set_hub(ours, Decoder::default());
        (inbox, hub)
    }

    fn send(hub: &mut UnixStream, frames: &[Frame]) {
        let mut out = Vec::new();
        for f in frames {
            f.encode_into(&mut out);
        }
        hub.write_all(&out).unwrap();
    }

    /// Requests go out on the connection frames come in on; a hub found
    /// gone takes none, and the wait's end is the connection's.
    #[test]
    fn requests_go_out_on_the_one_connection() {
        use std::io::Read;
        let (mut inbox, mut hub) = inbox_with_hub();
        inbox.send(b"sync 1\n");
        let mut got = [0u8; 7];
        hub.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"sync 1\n");
        inbox.shutdown();
        assert_eq!(hub.read(&mut got).unwrap(), 0, "the hub sees the end");
        drop(hub);
        let soon = Instant::now() + Duration::from_secs(5);
        assert!(matches!(inbox.next(soon), Some(Event::HubLost)));
        inbox.send(b"sync 2\n");
        inbox.shutdown();
    }

    #[test]
    fn frames_come_in_order_and_posted_events_first() {
        let (mut inbox, mut hub) = inbox_with_hub();
        send(
            &mut hub,
            &[
                Frame::Data(b"one".to_vec()),
                Frame::Synced(1),
                Frame::Data(b"two".to_vec()),
            ],
        );
        inbox.poster().post(Event::PaneExited);
        let soon = Instant::now() + Duration::from_secs(5);
        assert!(matches!(inbox.next(soon), Some(Event::PaneExited)));
        assert!(matches!(inbox.next(soon), Some(Event::Data(d, _)) if d == b"one"));
        assert!(matches!(inbox.try_next(), Some(Event::Synced(1))));
        assert!(matches!(inbox.try_next(), Some(Event::Data(d, _)) if d == b"two"));
        assert!(inbox.try_next().is_none());
        // Nothing more: the deadline ends the wait.
        assert!(
            inbox
                .next(Instant::now() + Duration::from_millis(20))
                .is_none()
        );
    }

    #[test]
    fn a_frame_split_across_reads_is_whole_and_a_closed_hub_is_lost_once() {
        let (mut inbox, mut hub) = inbox_with_hub();
        let mut out = Vec::new();
        Frame::End(EndReason::Closed).encode_into(&mut out);
        let (a, b) = out.split_at(out.len() / 2);
        hub.write_all(a).unwrap();
        let soon = Instant::now() + Duration::from_millis(50);
        assert!(inbox.next(soon).is_none());
        hub.write_all(b).unwrap();
        drop(hub);
        let soon = Instant::now() + Duration::from_secs(5);
        assert!(matches!(
            inbox.next(soon),
            Some(Event::End(EndReason::Closed))
        ));
        assert!(matches!(inbox.next(soon), Some(Event::HubLost)));
        assert!(
            inbox
                .next(Instant::now() + Duration::from_millis(20))
                .is_none()
        );
    }

    #[test]
    fn what_arrived_is_taken_in_when_asked_for() {
        let (mut inbox, mut hub) = inbox_with_hub();
        send(&mut hub, &[Frame::Data(b"late".to_vec())]);
        inbox.read_now();
        assert!(matches!(inbox.try_next(), Some(Event::Data(d, _)) if d == b"late"));
        assert!(inbox.try_next().is_none());
    }

    #[test]
    fn a_post_from_another_thread_wakes_a_waiting_inbox() {
        let (mut inbox, _hub) = inbox_with_hub();
        let poster = inbox.poster();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            poster.post(Event::Signal(15));
        });
        let got = inbox.next(Instant::now() + Duration::from_secs(10));
        assert!(matches!(got, Some(Event::Signal(15))));
        t.join().unwrap();
    }
}
