//! A connection to the hub: what it is, what it still has to send; and
//! the hub's debug log.

use super::protocol::Frame;
use std::io::{ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::time::Instant;

/// What a connection is.
pub(super) enum Role {
    /// Accepted; its first message says whether it is a wait or a feed.
    New,
    /// A wait on `pane`; `entered` once its entry was sent (data frames
    /// follow only then).
    Waiter { pane: String, entered: bool },
}

pub(super) struct Conn {
    pub(super) stream: UnixStream,
    pub(super) inbuf: Vec<u8>,
    pub(super) out: Vec<u8>,
    /// How much of `out` was written.
    pub(super) sent: usize,
    pub(super) role: Role,
    pub(super) since: Instant,
    /// The lines the wait can use (see `sieve`), if it said.
    pub(super) wants: Option<crate::pane::skip::Wants>,
    /// Bytes of its pane's stream sent so far, and of them left out.
    pub(super) streamed: u64,
    pub(super) left_out: u64,
}

impl Conn {
    pub(super) fn pending(&self) -> usize {
        self.out.len() - self.sent
    }

    pub(super) fn push(&mut self, f: &Frame) {
        f.encode_into(&mut self.out);
    }

    /// Write what can be written now; false when the peer is gone.
    pub(super) fn flush(&mut self) -> bool {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return false,
                Ok(k) => self.sent += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        } else if self.sent > (1 << 20) && self.sent * 2 > self.out.len() {
            self.out.drain(..self.sent);
            self.sent = 0;
        }
        true
    }
}

/// `TMUX_WAIT_HUB_LOG=FILE`: what the hub does, one line per event, for
/// debugging (appended; off unless set).
pub(super) fn log(what: std::fmt::Arguments) {
    use std::sync::OnceLock;
    static FILE: OnceLock<Option<std::sync::Mutex<std::fs::File>>> = OnceLock::new();
    let f = FILE.get_or_init(|| {
        let p = std::env::var_os("TMUX_WAIT_HUB_LOG")?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
            .map(std::sync::Mutex::new)
    });
    if let Some(m) = f
        && let Ok(mut f) = m.lock()
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let _ = writeln!(f, "{t:.6} {what}");
    }
}
