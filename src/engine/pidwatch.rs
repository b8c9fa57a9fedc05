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
    use crate::sys::pidfd::{Pidfd, open};
    use std::os::fd::AsRawFd;
    let fd = match open(pid) {
        Pidfd::Open(fd) => fd,
        Pidfd::Gone if pid > 0 => {
            exited();
            return true;
        }
        _ => return false,
    };
    std::thread::Builder::new()
        .name("pane-exit".into())
        .spawn(move || {
            let mut p = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            loop {
                // SAFETY: one valid pollfd, its descriptor owned by this
                // thread.
                let r = unsafe { libc::poll(&mut p, 1, -1) };
                if r > 0 {
                    exited();
                    break;
                }
                if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    break;
                }
            }
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
