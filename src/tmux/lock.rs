//! Lock files beside a server's socket, shared by tmux-wait's processes on
//! that server (one hub starter at a time, one hub, one `run` typing), and
//! the sweep of those left by servers that are gone.

use super::Socket;
use std::path::{Path, PathBuf};

/// An advisory lock shared by tmux-wait processes on one server.
pub enum SocketLock {
    Held(LockFile),
    /// No lock file could be made beside the socket (a read-only place).
    Unavailable,
    /// Others held it past the deadline.
    TimedOut,
}

/// A lock file beside the socket, locked. An exclusive one is removed when
/// dropped (before it is unlocked), so servers that come and go leave no
/// lock files behind: whoever waited on the removed file finds that the
/// path no longer names it and takes the lock again on the path's new file
/// (see [`lock_beside_socket`]).
#[derive(Debug)]
pub struct LockFile {
    /// Holds the lock while open.
    _file: std::fs::File,
    /// Removed on drop (exclusive locks only: others may share a shared one).
    remove: Option<PathBuf>,
}

impl Drop for LockFile {
    fn drop(&mut self) {
        if let Some(p) = &self.remove {
            let _ = std::fs::remove_file(p);
        }
        // The lock goes with the descriptor, after the file is gone.
    }
}

/// The file `.NAME.what` beside the server's socket (tmux's own private
/// directory, or where `-S` put it).
pub fn beside_socket(socket: &Socket, what: &str) -> Option<PathBuf> {
    let sock = socket.path();
    let name = sock.file_name()?;
    Some(sock.with_file_name(format!(".{}.{what}", name.to_string_lossy())))
}

/// Take the lock file `.SOCKET.WHAT` beside the server's socket, shared or
/// exclusive, polling until `deadline`. Released when dropped or when the
/// process ends; an exclusive one's file is removed then (see
/// [`LockFile`]).
pub fn lock_beside_socket(
    socket: &Socket,
    what: &str,
    exclusive: bool,
    deadline: std::time::Instant,
) -> SocketLock {
    let Some(path) = beside_socket(socket, what) else {
        return SocketLock::Unavailable;
    };
    lock_file(&path, exclusive, deadline)
}

/// [`lock_beside_socket`] on `path`: lock the file, then check that the
/// path still names the file locked (its holder removes it before it lets
/// go); if not, take the path's new file.
fn lock_file(path: &Path, exclusive: bool, deadline: std::time::Instant) -> SocketLock {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let how = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    };
    loop {
        let Ok(f) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
        else {
            return SocketLock::Unavailable;
        };
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(f.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
                break;
            }
            if std::time::Instant::now() >= deadline {
                return SocketLock::TimedOut;
            }
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        let same = match (f.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same {
            return SocketLock::Held(LockFile {
                _file: f,
                remove: exclusive.then(|| path.to_owned()),
            });
        }
        if std::time::Instant::now() >= deadline {
            return SocketLock::TimedOut;
        }
    }
}

/// Remove the files tmux-wait keeps beside the sockets in `dir` (`.NAME.
/// tmux-wait-*`) whose server is gone: no socket `NAME` there, or one that
/// refuses connections. A lock file is removed only while locked by us (no
/// one holds it), a hub's socket only under its hub's lock (no hub serves
/// it). Left by a process that was killed while it held one, or by
/// versions that kept them.
pub fn sweep_gone_servers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<(String, String)> = Vec::new();
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = n.strip_prefix('.') else {
            continue;
        };
        if let Some(i) = rest.rfind(".tmux-wait-") {
            names.push((rest[..i].to_owned(), rest[i + 1..].to_owned()));
        }
    }
    let now = std::time::Instant::now();
    for (server, what) in names {
        let sock = dir.join(&server);
        let gone = match std::os::unix::net::UnixStream::connect(&sock) {
            Ok(_) => false,
            Err(e) => matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ECONNREFUSED)),
        };
        if !gone {
            continue;
        }
        let path = dir.join(format!(".{server}.{what}"));
        if what == "tmux-wait-hub" {
            // A socket: only under the hub's lock, and only if dead.
            let lock = dir.join(format!(".{server}.tmux-wait-hub.lock"));
            if let SocketLock::Held(_held) = lock_file(&lock, true, now)
                && std::os::unix::net::UnixStream::connect(&path).is_err()
            {
                let _ = std::fs::remove_file(&path);
            }
        } else if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            // Taking it and letting go removes it.
            drop(lock_file(&path, true, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn held(p: &Path, within: Duration) -> Option<LockFile> {
        match lock_file(p, true, Instant::now() + within) {
            SocketLock::Held(l) => Some(l),
            _ => None,
        }
    }

    #[test]
    fn a_lock_file_goes_with_its_lock() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".s.tmux-wait-x");
        let l = held(&p, Duration::ZERO).unwrap();
        assert!(p.exists());
        assert!(held(&p, Duration::from_millis(20)).is_none(), "taken twice");
        drop(l);
        assert!(!p.exists());
    }

    #[test]
    fn one_holder_at_a_time_while_files_come_and_go() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".s.tmux-wait-x");
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (p, inside) = (p.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let l = held(&p, Duration::from_secs(20)).expect("the lock");
                        use std::sync::atomic::Ordering::SeqCst;
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "two holders");
                        std::thread::yield_now();
                        inside.fetch_sub(1, SeqCst);
                        drop(l);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(!p.exists());
    }

    #[test]
    fn the_files_of_gone_servers_are_swept() {
        let d = tempfile::tempdir().unwrap();
        let f = |n: &str| d.path().join(n);
        // A live server "live", a gone one "gone" (no socket) and one whose
        // socket is left but refuses ("dead").
        let _live = std::os::unix::net::UnixListener::bind(f("live")).unwrap();
        drop(std::os::unix::net::UnixListener::bind(f("dead")).unwrap());
        for s in ["live", "gone", "dead"] {
            for w in [
                "tmux-wait-hub-start",
                "tmux-wait-run-lock",
                "tmux-wait-hub.lock",
            ] {
                std::fs::write(f(&format!(".{s}.{w}")), "").unwrap();
            }
            drop(
                std::os::unix::net::UnixListener::bind(f(&format!(".{s}.tmux-wait-hub"))).unwrap(),
            );
        }
        // Held by someone: stays.
        let busy = held(&f(".gone.tmux-wait-run-lock"), Duration::ZERO).unwrap();
        sweep_gone_servers(d.path());
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".gone.tmux-wait-run-lock",
                ".live.tmux-wait-hub",
                ".live.tmux-wait-hub-start",
                ".live.tmux-wait-hub.lock",
                ".live.tmux-wait-run-lock",
                "dead",
                "live",
            ]
        );
        drop(busy);
        assert!(!f(".gone.tmux-wait-run-lock").exists());
    }
}
