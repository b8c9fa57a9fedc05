//! The servers of this user on this host: those that run now (their
//! sockets in tmux's socket directory), and those that start later, seen
//! as their sockets appear (inotify on the directory on Linux, a look
//! every two seconds elsewhere).

use crate::tmux::Socket;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// tmux's socket directory for this user (`$TMUX_TMPDIR` or /tmp,
/// `tmux-UID`).
fn socket_dir() -> PathBuf {
    Socket::Name("x".into())
        .path()
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Every server of this user with a live socket in tmux's socket
/// directory; a socket nobody listens on (a server that crashed) is left
/// out.
pub fn live_servers() -> Vec<Socket> {
    let Ok(rd) = std::fs::read_dir(socket_dir()) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for e in rd.flatten() {
        use std::os::unix::fs::FileTypeExt;
        // (Hidden names are tmux-wait's own: a hub's socket beside its
        // server's.)
        if !e.file_type().is_ok_and(|t| t.is_socket())
            || e.file_name().to_string_lossy().starts_with('.')
        {
            continue;
        }
        let p = e.path();
        if std::os::unix::net::UnixStream::connect(&p).is_ok() {
            out.push(p);
        }
    }
    out.sort();
    out.into_iter().map(Socket::Path).collect()
}

/// Call `seen` (on a thread of its own, until it returns false or
/// `deadline` passes) when a server may have started: a name that is not
/// hidden appeared in tmux's socket directory. (Once at the start too:
/// the servers were listed before the directory was watched, and one may
/// have started in between.)
pub fn on_new_sockets(deadline: Instant, mut seen: impl FnMut() -> bool + Send + 'static) {
    #[cfg(target_os = "linux")]
    let watch =
        crate::sys::inotify::Inotify::watch(&socket_dir(), libc::IN_CREATE | libc::IN_MOVED_TO);
    let _ = std::thread::Builder::new()
        .name("new-servers".into())
        .spawn(move || {
            if !seen() {
                return;
            }
            #[cfg(target_os = "linux")]
            if let Some(w) = watch {
                while let Some(made) = w.wait(Some(deadline)) {
                    if !made
                        .iter()
                        .any(|e| !e.name.is_empty() && !e.name.starts_with('.'))
                    {
                        continue;
                    }
                    // (A server binds its socket, then listens.)
                    std::thread::sleep(Duration::from_millis(50));
                    if !seen() {
                        return;
                    }
                }
                return;
            }
            while Instant::now() < deadline {
                std::thread::sleep(Duration::from_secs(2));
                if !seen() {
                    return;
                }
            }
        });
}
