//! A wait's side: connect to the hub (starting one when none answers),
//! send the request, read the entry.

use super::protocol::{Decoder, Entry, Frame, Request, bad};
use crate::error::{Error, Kind, Result};
use crate::tmux::{Socket, SocketLock};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The hub's socket for this server, or None where a Unix socket path
/// cannot hold it.
pub fn path(socket: &Socket) -> Option<PathBuf> {
    let p = crate::tmux::beside_socket(socket, "tmux-wait-hub")?;
    // sun_path holds 108 bytes with its terminating NUL.
    (p.as_os_str().len() < 104).then_some(p)
}

/// A connection to the server's hub with `req` sent, starting a hub when
/// none answers.
pub fn connect(socket: &Socket, req: &Request, deadline: Instant) -> Result<UnixStream> {
    let path = path(socket).ok_or_else(|| {
        Error::new(
            Kind::Tmux,
            "the tmux socket's path is too long for tmux-wait's hub socket beside it",
        )
    })?;
    let mut line = serde_json::to_vec(req).map_err(|e| Error::new(Kind::Io, e.to_string()))?;
    line.push(b'\n');
    let until = deadline.min(Instant::now() + Duration::from_secs(3));
    // Who starts a hub: the wait holding this lock (one file per server),
    // until it is connected or gives up on that hub; the others only try
    // to connect meanwhile. Waits started all at once start one hub.
    let mut starting: Option<(crate::tmux::LockFile, Instant)> = None;
    loop {
        match UnixStream::connect(&path) {
            Ok(mut s) => {
                if s.write_all(&line).is_ok() {
                    return Ok(s);
                }
                // A hub out of descriptors answers and closes before it
                // reads: its answer is the entry.
                if crate::sys::bytes_waiting(s.as_raw_fd()) > 0 {
                    return Ok(s);
                }
            }
            // Out of descriptors here: no hub could help.
            Err(e) if crate::error::is_out_of_descriptors(&e) => {
                return Err(Error::io("cannot connect to tmux-wait's hub", e));
            }
            Err(_) => {}
        }
        let now = Instant::now();
        if now >= until {
            return Err(Error::new(
                Kind::Tmux,
                "tmux-wait's hub did not start (see docs/design.md, the hub)",
            ));
        }
        // A hub that does not answer in 500 ms is started again (by
        // whoever gets the lock).
        if starting
            .as_ref()
            .is_some_and(|(_, t)| now - *t > Duration::from_millis(500))
        {
            starting = None;
        }
        if starting.is_none()
            && let SocketLock::Held(lock) =
                crate::tmux::lock_beside_socket(socket, "tmux-wait-hub-start", true, now)
        {
            socket
                .absolute()
                .spawn_helper(&["hub"], "the tmux-wait hub")?;
            starting = Some((lock, now));
        }
        // A hub starting takes a few milliseconds: look often.
        std::thread::sleep(Duration::from_micros(250));
    }
}

/// Read frames from `stream` until the first one, which must be the entry.
pub fn read_entry(stream: &mut UnixStream, dec: &mut Decoder, deadline: Instant) -> Result<Entry> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Some(f) = dec.next_frame()? {
            return match f {
                Frame::Entry(e) => Ok(e),
                _ => Err(bad("data before the entry")),
            };
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::new(
                Kind::Tmux,
                "tmux-wait's hub did not answer in time",
            ));
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|e| Error::io("cannot read from tmux-wait's hub", e))?;
        match stream.read(&mut buf) {
            Ok(0) => {
                return Err(Error::new(
                    Kind::Tmux,
                    "tmux-wait's hub closed the connection",
                ));
            }
            Ok(n) => dec.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(Error::io("cannot read from tmux-wait's hub", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_path() {
        let s = Socket::Path("/tmp/x/sock".into());
        assert_eq!(
            path(&s).unwrap(),
            PathBuf::from("/tmp/x/.sock.tmux-wait-hub")
        );
        let long = Socket::Path(PathBuf::from(format!("/tmp/{}/s", "d".repeat(120))));
        assert!(path(&long).is_none());
    }
}
