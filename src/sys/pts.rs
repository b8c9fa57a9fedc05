//! New terminals on the machine (`/dev/pts`), and whether a tmux server
//! made them.

use std::time::Duration;

/// Call `seen` (on a thread of its own, until it returns false) when a
/// terminal device appears that `server` (a tmux server's pid) may have
/// made for a pane: inotify on `/dev/pts` (Linux); elsewhere every two
/// seconds. A terminal whose master the server does not hold is another
/// program's (an ssh login, a terminal window, another server's pane):
/// not said, so that terminals made all day elsewhere cost nothing.
pub fn on_new_terminals(server: Option<u32>, mut seen: impl FnMut() -> bool + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("new-panes".into())
        .spawn(move || {
            #[cfg(target_os = "linux")]
            if let Some(fd) = inotify_pts() {
                let mut buf = [0u8; 4096];
                let mut made = Vec::new();
                loop {
                    // SAFETY: reading into a buffer we own.
                    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                    if n <= 0 {
                        let e = std::io::Error::last_os_error();
                        if e.raw_os_error() == Some(libc::EINTR) {
                            continue;
                        }
                        break;
                    }
                    made.clear();
                    terminals_named(&buf[..n as usize], &mut made);
                    // Events of one creation come together: let tmux
                    // finish making the pane, then look once.
                    std::thread::sleep(Duration::from_millis(20));
                    drain(fd, &mut buf, &mut made);
                    if !server_made(server, &made) {
                        continue;
                    }
                    if !seen() {
                        return;
                    }
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = server;
            loop {
                std::thread::sleep(Duration::from_secs(2));
                if !seen() {
                    return;
                }
            }
        });
}

/// Whether the server may have made one of the terminals `made` (N of
/// `/dev/pts/N`; a name that is not a number counts as maybe): yes unless
/// `/proc` shows the server's masters and none is one of them.
#[cfg(target_os = "linux")]
fn server_made(server: Option<u32>, made: &[Option<u32>]) -> bool {
    let Some(masters) = server.and_then(super::procfs::pty_masters) else {
        return true;
    };
    made.iter().any(|m| m.is_none_or(|n| masters.contains(&n)))
}

/// The names in a buffer of inotify events, as terminal numbers (None: a
/// name that is not one, or an event without a name).
#[cfg(target_os = "linux")]
fn terminals_named(buf: &[u8], out: &mut Vec<Option<u32>>) {
    // struct inotify_event: wd (i32), mask, cookie, len (u32), then len
    // bytes of name padded with NULs.
    const HEAD: usize = 16;
    let mut at = 0;
    while at + HEAD <= buf.len() {
        let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap_or([0; 4])) as usize;
        let end = (at + HEAD + len).min(buf.len());
        let name = &buf[at + HEAD..end];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        out.push(std::str::from_utf8(name).ok().and_then(|n| n.parse().ok()));
        at += HEAD + len;
    }
}

#[cfg(target_os = "linux")]
fn inotify_pts() -> Option<libc::c_int> {
    // SAFETY: plain system calls; the path is a NUL-terminated literal.
    unsafe {
        let fd = libc::inotify_init1(libc::IN_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let wd = libc::inotify_add_watch(fd, c"/dev/pts".as_ptr(), libc::IN_CREATE);
        if wd < 0 {
            libc::close(fd);
            return None;
        }
        Some(fd)
    }
}

#[cfg(target_os = "linux")]
fn drain(fd: libc::c_int, buf: &mut [u8], made: &mut Vec<Option<u32>>) {
    loop {
        let mut p = super::pollfd(fd, libc::POLLIN);
        super::poll(std::slice::from_mut(&mut p), Some(Duration::from_millis(1)));
        if p.revents & libc::POLLIN == 0 {
            return;
        }
        // SAFETY: reading into a buffer we own.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return;
        }
        terminals_named(&buf[..n as usize], made);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn event(name: &[u8], len: usize) -> Vec<u8> {
        let mut e = vec![0u8; 16 + len];
        e[12..16].copy_from_slice(&(len as u32).to_ne_bytes());
        e[16..16 + name.len()].copy_from_slice(name);
        e
    }

    #[test]
    fn names_of_events_as_terminal_numbers() {
        let mut buf = event(b"7", 16);
        buf.extend(event(b"ptmx", 16));
        buf.extend(event(b"", 0));
        buf.extend(event(b"12", 16));
        let mut out = Vec::new();
        terminals_named(&buf, &mut out);
        assert_eq!(out, [Some(7), None, None, Some(12)]);
    }

    #[test]
    fn a_terminal_of_another_program_is_not_the_servers() {
        let me = std::process::id();
        let ptmx = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/ptmx")
            .unwrap();
        let mine = super::super::procfs::pty_masters(me).unwrap();
        assert!(server_made(Some(me), &[Some(mine[0])]));
        assert!(!server_made(Some(me), &[Some(u32::MAX)]));
        // Unknown: maybe.
        assert!(server_made(Some(me), &[None]));
        assert!(server_made(None, &[Some(u32::MAX)]));
        drop(ptmx);
    }
}
