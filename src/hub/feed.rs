//! `tmux-wait pipe-feed TOKEN`: the command a pane's pipe runs.
//!
//! tmux starts it with its standard input (and output, `-I -O`) on its end
//! of the pipe's socket. It hands that descriptor to the hub over the hub's
//! socket (`SCM_RIGHTS`), with the token the hub gave the pipe, and exits:
//! the hub reads the pane's output straight from tmux, and no process per
//! pane stays behind. If the hub is gone it just exits, tmux sees the end
//! of the socket and closes the pipe.

use crate::error::{Error, Kind, Result};
use crate::tmux::Socket;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// The longest token the hub hands out (hex).
pub const MAX_TOKEN: usize = 64;

pub fn pipe_feed(socket: &Socket, token: &str) -> Result<()> {
    if token.is_empty() || token.len() > MAX_TOKEN || !token.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(Error::usage("invalid pipe token"));
    }
    let path = super::path(socket)
        .ok_or_else(|| Error::new(Kind::Tmux, "no hub socket for this server"))?;
    let stream =
        UnixStream::connect(&path).map_err(|e| Error::io("cannot reach tmux-wait's hub", e))?;
    let line = format!("feed {token}\n");
    send_with_fd(&stream, line.as_bytes(), 0)
        .map_err(|e| Error::io("cannot hand the pipe to tmux-wait's hub", e))
}

/// Send `data` with descriptor `fd` attached, in one message.
pub fn send_with_fd(stream: &UnixStream, data: &[u8], fd: i32) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: CMSG_SPACE is a size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    // SAFETY: an all-zero msghdr is valid; its pointers are set below to
    // buffers that outlive the sendmsg call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: the control buffer holds one cmsg of one int (CMSG_SPACE).
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd);
    }
    loop {
        // SAFETY: msg points at valid buffers for the call's duration.
        let r = unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return if r as usize == data.len() {
                Ok(())
            } else {
                Err(std::io::Error::other("short write"))
            };
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receive into `buf`, taking descriptors that come along (each becomes an
/// owned fd, closed on drop). Returns the bytes read (0 at the end).
pub fn recv_with_fds(
    stream: &UnixStream,
    buf: &mut [u8],
    fds: &mut Vec<std::os::fd::OwnedFd>,
) -> std::io::Result<usize> {
    use std::os::fd::FromRawFd;
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for a few descriptors; a peer sending more gets them closed.
    // SAFETY: CMSG_SPACE is a size computation.
    let space = unsafe { libc::CMSG_SPACE((4 * std::mem::size_of::<i32>()) as u32) } as usize;
    let mut cbuf = vec![0u8; space];
    // SAFETY: as in send_with_fd.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: msg points at valid buffers; MSG_CMSG_CLOEXEC marks received
    // descriptors close-on-exec (elsewhere they are marked below).
    #[cfg(target_os = "linux")]
    let flags = libc::MSG_CMSG_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let flags = 0;
    let r = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, flags) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: walking the control messages the kernel filled in; each
    // SCM_RIGHTS payload is an array of ints.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<i32>();
                let header = libc::CMSG_LEN(0) as usize;
                let n =
                    ((*c).cmsg_len as usize).saturating_sub(header) / std::mem::size_of::<i32>();
                for i in 0..n {
                    let fd = std::ptr::read_unaligned(data.add(i));
                    if fd >= 0 {
                        #[cfg(not(target_os = "linux"))]
                        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                        fds.push(std::os::fd::OwnedFd::from_raw_fd(fd));
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(r as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_descriptor_travels_with_the_message() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut p1, p2) = UnixStream::pair().unwrap();
        send_with_fd(&a, b"feed ab12\n", p2.as_raw_fd()).unwrap();
        let mut buf = [0u8; 64];
        let mut fds = Vec::new();
        let n = recv_with_fds(&b, &mut buf, &mut fds).unwrap();
        assert_eq!(&buf[..n], b"feed ab12\n");
        assert_eq!(fds.len(), 1);
        // The received descriptor is the same socket end.
        let mut got = UnixStream::from(fds.pop().unwrap());
        p1.write_all(b"x").unwrap();
        let mut one = [0u8; 1];
        got.read_exact(&mut one).unwrap();
        assert_eq!(&one, b"x");
        drop(p2);
    }

    #[test]
    fn tokens_are_checked() {
        let s = Socket::Path("/nonexistent/x".into());
        for bad in ["", "xyz", "ab;rm", &"a".repeat(65)] {
            assert_eq!(pipe_feed(&s, bad).unwrap_err().kind, Kind::Usage, "{bad}");
        }
    }
}
