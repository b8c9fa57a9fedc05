//! System helpers below everything else: starting this program again,
//! detached, the few descriptor calls the hub's event loop makes, the
//! open-files limit (`fds`), and what the kernel says about processes
//! (`procfs`) and terminals (`tty`), and a loop's wake-up from other
//! threads (`wake`).

pub mod clock;
pub mod fds;
#[cfg(target_os = "linux")]
pub mod inotify;
pub mod pidfd;
pub mod poller;
pub mod procfs;
pub mod pts;
pub mod trace;
pub mod tty;
pub mod waiting;
pub mod wake;

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Start `tmux-wait ARGS...` in its own session, detached from us, its
/// standard streams closed: it outlives this process and ends by itself.
/// It gets the open-files limit this process started with, and is reaped
/// when it ends. Returns its pid; `what` names it in the error.
pub fn spawn_self_detached(args: &[OsString], what: &str) -> Result<u32> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find tmux-wait itself", e))?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and takes no arguments.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    fds::restore_in_child(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(&format!("cannot start {what}"), e))?;
    let pid = child.id();
    // Reaped when it ends, by a thread that waits for nothing else: a
    // long-lived process (attention's watch starts a hub whenever the
    // last one went) would otherwise keep a zombie for each. If this
    // process ends first, the child is reparented and reaped there.
    let reaped = std::thread::Builder::new()
        .name("reap".into())
        .spawn(move || {
            let _ = child.wait();
        });
    drop(reaped);
    Ok(pid)
}

/// The credentials of the process at the other end of a Unix socket
/// (`SO_PEERCRED`).
#[cfg(target_os = "linux")]
fn peer_cred(stream: &std::os::unix::net::UnixStream) -> Option<libc::ucred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred)
}

/// The process at the other end of a Unix socket (Linux: `SO_PEERCRED`;
/// None elsewhere).
#[cfg(target_os = "linux")]
pub fn peer_pid(stream: &std::os::unix::net::UnixStream) -> Option<u32> {
    peer_cred(stream)
        .filter(|c| c.pid > 0)
        .map(|c| c.pid as u32)
}

#[cfg(not(target_os = "linux"))]
pub fn peer_pid(_stream: &std::os::unix::net::UnixStream) -> Option<u32> {
    None
}

/// The process `pid` still runs (not gone, not a zombie, not exiting).
pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = i32::try_from(pid).is_ok_and(|p| unsafe { libc::kill(p, 0) } == 0);
    // (A process of ours whose `/proc` entry cannot be read, though it
    // still takes signals, is at the end of its exit: a killed hub was
    // seen so, 6 ms after it closed its sockets.)
    exists
        && match procfs::stat(pid) {
            Some(s) => !s.exiting(),
            None => !procfs::available(),
        }
}

/// The process `pid`, and the one in the foreground of its terminal, run
/// as our effective user (their `/proc` entries are ours) and see the
/// files we see (our mount namespace and our root: not a shell in a
/// container or a chroot); false where that cannot be told.
pub fn reads_our_files(pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let link = |p: &str| std::fs::read_link(p).ok();
    let ours = |pid: u32| {
        std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == me)
            && link(&format!("/proc/{pid}/ns/mnt")).is_some()
            && link(&format!("/proc/{pid}/ns/mnt")) == link("/proc/self/ns/mnt")
            && link(&format!("/proc/{pid}/root")).is_some_and(|r| r == std::path::Path::new("/"))
    };
    procfs::available()
        && ours(pid)
        && procfs::foreground_group(pid).is_none_or(|g| g == pid || ours(g))
}

/// The peer of a Unix socket runs as our effective user.
#[cfg(not(target_os = "linux"))]
pub fn same_user(stream: &std::os::unix::net::UnixStream) -> bool {
    let (mut uid, mut gid) = (libc::uid_t::MAX, libc::gid_t::MAX);
    // SAFETY: getpeereid writes the two ids.
    let r = unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) };
    // SAFETY: geteuid has no preconditions.
    r == 0 && uid == unsafe { libc::geteuid() }
}

/// The peer of a Unix socket runs as our effective user.
#[cfg(target_os = "linux")]
pub fn same_user(stream: &std::os::unix::net::UnixStream) -> bool {
    // SAFETY: geteuid has no preconditions.
    peer_cred(stream).is_some_and(|c| c.uid == unsafe { libc::geteuid() })
}

/// Put `fd` in non-blocking mode.
pub fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Bytes waiting to be read on a socket (FIONREAD).
pub fn bytes_waiting(fd: RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    if r == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

/// Read a non-blocking socket until nothing is left: wake-up bytes, or a
/// request about to be refused (closing a socket with unread data resets
/// the peer's connection, which would lose the answer).
pub fn drain(mut stream: &std::os::unix::net::UnixStream) {
    use std::io::Read;
    let mut sink = [0u8; 4096];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
}

/// A `pollfd` for `fd` and `events`.
pub fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// A timeout in whole milliseconds, rounded up (a wake-up just before the
/// moment would only loop); `None` is -1, no timeout.
fn poll_millis(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        Some(t) => {
            libc::c_int::try_from(t.as_micros().div_ceil(1000).max(1)).unwrap_or(libc::c_int::MAX)
        }
        None => -1,
    }
}

/// Wait for events on `fds`, at most `timeout`, to the microsecond where
/// the system can (Linux: `ppoll`), so that a debounce of a millisecond
/// does not become two; elsewhere [`poll`]'s milliseconds, rounded up.
pub fn poll_fine(fds: &mut [libc::pollfd], timeout: Duration) {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            // (Not named: libc deprecates `time_t` on musl.)
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as _,
            tv_nsec: timeout.subsec_nanos() as _,
        };
        // SAFETY: `fds` is a valid slice of pollfd; no signal mask is changed.
        unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    poll(fds, Some(timeout));
}

/// Wait for events on `fds`, at most `timeout` (None: as long as it takes).
pub fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) {
    let ms = poll_millis(timeout);
    // SAFETY: `fds` is a valid slice of pollfd for its length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}
