//! Know the moment a pane's process ends, at no cost while it runs.
//!
//! tmux sends control clients nothing when a pane's program exits under
//! `remain-on-exit` or when a pane is respawned, and asking it every second
//! costs the server a full format evaluation each time. The kernel can tell
//! us instead: a pidfd (Linux 5.3+) becomes readable when the process exits.
//! A respawn kills the old process first, so this covers both.

/// Call `exited` when process `pid` exits. Returns false where this cannot
/// be watched (not Linux, no pidfd, another pid namespace), and the caller
/// falls back to asking tmux periodically.
#[cfg(target_os = "linux")]
pub fn watch(pid: u32, exited: impl FnOnce() + Send + 'static) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // ESRCH: it has already exited; anything else: unsupported.
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            exited();
            return true;
        }
        return false;
    }
    let fd = fd as libc::c_int;
    std::thread::Builder::new()
        .name("pane-exit".into())
        .spawn(move || {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let mut exited = Some(exited);
            loop {
                // SAFETY: one valid pollfd, owned by this thread.
                let r = unsafe { libc::poll(&mut p, 1, -1) };
                if r > 0 {
                    if let Some(f) = exited.take() {
                        f();
                    }
                    break;
                }
                if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    break;
                }
            }
            // SAFETY: the fd was opened above and is closed once.
            unsafe { libc::close(fd) };
        })
        .is_ok()
}

#[cfg(not(target_os = "linux"))]
pub fn watch(_pid: u32, _exited: impl FnOnce() + Send + 'static) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn reports_exit_of_a_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.1")
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        assert!(watch(child.id(), move || {
            let _ = tx.send(());
        }));
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        child.wait().unwrap();
    }
}
