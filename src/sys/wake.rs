//! A loop's wake-up from other threads (the self-pipe): the loop polls
//! one end of a socket pair, and any thread writes a byte to the other.
//! A full socket already wakes the loop, so a write never blocks.

use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::mpsc::Sender;

/// The end a loop polls (readable: woken).
pub struct Wake {
    end: UnixStream,
    waker: Waker,
}

/// What wakes it, from any thread.
#[derive(Clone)]
pub struct Waker(Arc<UnixStream>);

impl Wake {
    pub fn new() -> std::io::Result<Wake> {
        let (end, other) = UnixStream::pair()?;
        end.set_nonblocking(true)?;
        other.set_nonblocking(true)?;
        Ok(Wake {
            end,
            waker: Waker(Arc::new(other)),
        })
    }

    pub fn waker(&self) -> Waker {
        self.waker.clone()
    }

    /// Take every wake-up written so far (after the poll said readable).
    pub fn drain(&self) {
        super::drain(&self.end);
    }
}

impl AsRawFd for Wake {
    fn as_raw_fd(&self) -> RawFd {
        self.end.as_raw_fd()
    }
}

impl Waker {
    pub fn wake(&self) {
        let _ = (&*self.0).write(&[1]);
    }
}

/// Where other threads post to a loop: a channel, and the wake-up that
/// tells the loop to read it.
pub struct Post<T> {
    tx: Sender<T>,
    waker: Waker,
}

impl<T> Clone for Post<T> {
    fn clone(&self) -> Self {
        Post {
            tx: self.tx.clone(),
            waker: self.waker.clone(),
        }
    }
}

impl<T> Post<T> {
    pub fn new(tx: Sender<T>, waker: Waker) -> Post<T> {
        Post { tx, waker }
    }

    /// Send `m` and wake the loop; false once the loop is gone.
    pub fn post(&self, m: T) -> bool {
        let sent = self.tx.send(m).is_ok();
        if sent {
            self.waker.wake();
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{poll_fine, pollfd};
    use std::time::Duration;

    fn readable(w: &Wake) -> bool {
        let mut fds = [pollfd(w.as_raw_fd(), libc::POLLIN)];
        poll_fine(&mut fds, Duration::ZERO);
        fds[0].revents != 0
    }

    #[test]
    fn a_post_wakes_the_loop_until_drained() {
        let w = Wake::new().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let post = Post::new(tx, w.waker());
        assert!(!readable(&w));
        let p = post.clone();
        std::thread::spawn(move || {
            // More than a socket's buffer: a full socket does not block.
            for i in 0..300_000 {
                p.post(i);
            }
        })
        .join()
        .unwrap();
        assert!(readable(&w));
        w.drain();
        assert!(!readable(&w));
        assert_eq!(rx.try_iter().count(), 300_000);
        drop(rx);
        assert!(!post.post(1));
    }
}
