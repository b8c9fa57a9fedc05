//! A descriptor that becomes readable when a process ends (Linux 5.3+
//! `pidfd_open`): the kernel's word, at no cost while the process runs.

use std::os::fd::OwnedFd;

/// What `pidfd_open` gave.
pub enum Pidfd {
    Open(OwnedFd),
    /// The process has already ended (or was never there).
    Gone,
    /// Not Linux, a kernel before 5.3, or another pid namespace.
    Unsupported,
}

impl Pidfd {
    /// The descriptor, if one was had.
    pub fn fd(self) -> Option<OwnedFd> {
        match self {
            Pidfd::Open(fd) => Some(fd),
            _ => None,
        }
    }
}

/// A pidfd for `pid`.
pub fn open(pid: u32) -> Pidfd {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::{FromRawFd, RawFd};
        let Some(pid) = libc::pid_t::try_from(pid).ok().filter(|p| *p > 0) else {
            return Pidfd::Gone;
        };
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ESRCH) => Pidfd::Gone,
                _ => Pidfd::Unsupported,
            };
        }
        // SAFETY: the descriptor was just opened and is owned here alone.
        Pidfd::Open(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        Pidfd::Unsupported
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn readable_once_the_process_ends() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .unwrap();
        let Pidfd::Open(fd) = open(child.id()) else {
            panic!("no pidfd for a running child")
        };
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        assert_eq!(unsafe { libc::poll(&mut p, 1, 10_000) }, 1);
        child.wait().unwrap();
        assert!(matches!(open(child.id()), Pidfd::Gone));
    }
}
