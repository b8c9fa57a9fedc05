//! inotify (Linux): names made in a directory, as they are made.

use std::path::Path;
use std::time::{Duration, Instant};

/// An inotify descriptor watching one path.
pub struct Inotify(libc::c_int);

/// One event: its mask and the name it is about (empty: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub mask: u32,
    pub name: String,
}

impl Drop for Inotify {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

impl Inotify {
    /// Watch `path` for `mask` (IN_CREATE ...); None where it cannot be.
    pub fn watch(path: &Path, mask: u32) -> Option<Inotify> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: plain system calls; the path is NUL-terminated.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK);
            if fd < 0 {
                return None;
            }
            let me = Inotify(fd);
            (libc::inotify_add_watch(fd, path.as_ptr(), mask) >= 0).then_some(me)
        }
    }

    /// The next events, once there are some; None at `deadline` (never,
    /// without one) or on an error.
    pub fn wait(&self, deadline: Option<Instant>) -> Option<Vec<Event>> {
        loop {
            let left = match deadline {
                Some(d) => Some(d.checked_duration_since(Instant::now())?),
                None => None,
            };
            let mut p = super::pollfd(self.0, libc::POLLIN);
            super::poll(std::slice::from_mut(&mut p), left);
            if p.revents & libc::POLLIN == 0 {
                continue;
            }
            match self.read() {
                Ok(ev) if ev.is_empty() => {}
                Ok(ev) => return Some(ev),
                Err(()) => return None,
            }
        }
    }

    /// The events that come within `grace` (those of one act come
    /// together: a pane's terminal, a server's socket).
    pub fn more(&self, grace: Duration) -> Vec<Event> {
        let mut out = Vec::new();
        loop {
            let mut p = super::pollfd(self.0, libc::POLLIN);
            super::poll(std::slice::from_mut(&mut p), Some(grace));
            if p.revents & libc::POLLIN == 0 {
                return out;
            }
            match self.read() {
                Ok(ev) => out.extend(ev),
                Err(()) => return out,
            }
        }
    }

    /// What one read gives (none: interrupted, or nothing yet).
    fn read(&self) -> Result<Vec<Event>, ()> {
        let mut buf = [0u8; 4096];
        // SAFETY: reading into a buffer we own.
        let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINTR | libc::EAGAIN) => Ok(Vec::new()),
                _ => Err(()),
            };
        }
        Ok(events(&buf[..n as usize]))
    }
}

/// The events in a buffer the kernel filled: `struct inotify_event` (wd,
/// mask, cookie, len) then `len` bytes of name padded with NULs.
fn events(buf: &[u8]) -> Vec<Event> {
    const HEAD: usize = 16;
    let word = |at: usize| u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or([0; 4]));
    let mut out = Vec::new();
    let mut at = 0;
    while at + HEAD <= buf.len() {
        let len = word(at + 12) as usize;
        let end = (at + HEAD + len).min(buf.len());
        let name = &buf[at + HEAD..end];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        out.push(Event {
            mask: word(at + 4),
            name: String::from_utf8_lossy(name).into_owned(),
        });
        at += HEAD + len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(mask: u32, name: &[u8], len: usize) -> Vec<u8> {
        let mut e = vec![0u8; 16 + len];
        e[4..8].copy_from_slice(&mask.to_ne_bytes());
        e[12..16].copy_from_slice(&(len as u32).to_ne_bytes());
        e[16..16 + name.len()].copy_from_slice(name);
        e
    }

    #[test]
    fn events_as_the_kernel_writes_them() {
        let mut buf = event(libc::IN_CREATE, b"7", 16);
        buf.extend(event(libc::IN_IGNORED, b"", 0));
        buf.extend(event(libc::IN_MOVED_TO, b"work", 16));
        let ev = events(&buf);
        let got: Vec<(u32, &str)> = ev.iter().map(|e| (e.mask, e.name.as_str())).collect();
        assert_eq!(
            got,
            [
                (libc::IN_CREATE, "7"),
                (libc::IN_IGNORED, ""),
                (libc::IN_MOVED_TO, "work")
            ]
        );
    }

    #[test]
    fn a_name_made_in_a_watched_directory_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let w = Inotify::watch(dir.path(), libc::IN_CREATE).unwrap();
        assert!(w.more(Duration::from_millis(1)).is_empty());
        std::fs::write(dir.path().join("made"), "").unwrap();
        let ev = w
            .wait(Some(Instant::now() + Duration::from_secs(5)))
            .unwrap();
        assert_eq!(ev[0].name, "made");
        assert_eq!(ev[0].mask & libc::IN_CREATE, libc::IN_CREATE);
        assert!(w.wait(Some(Instant::now())).is_none());
    }
}
