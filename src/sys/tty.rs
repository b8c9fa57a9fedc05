//! A pane's terminal, looked at from outside: its mode, the input waiting
//! in it, its size. The terminal is opened for the moment of a call only,
//! never as our controlling terminal and never blocking (holding it open
//! would keep tmux from seeing the pane's program end).

use nix::sys::termios::{LocalFlags, OutputFlags, tcgetattr};
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// How the terminal treats what is typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Lines (`ICANON`), echoed by the kernel (`ECHO`): a shell without a
    /// line editor, `read`, `cat`, `input()`, and a command that runs.
    Canonical,
    /// Lines, not echoed: a password prompt (`read -s`, `getpass`).
    Hidden,
    /// Key by key, not echoed (neither flag): a line editor or a
    /// full-screen program reads, and writes what it wants shown.
    Raw,
    /// Anything else (key by key with the kernel's echo).
    Other,
}

impl Mode {
    fn of(flags: LocalFlags) -> Mode {
        match (
            flags.contains(LocalFlags::ICANON),
            flags.contains(LocalFlags::ECHO),
        ) {
            (true, true) => Mode::Canonical,
            (true, false) => Mode::Hidden,
            (false, false) => Mode::Raw,
            (false, true) => Mode::Other,
        }
    }
}

/// The terminal, opened for the moment of a call; None for anything but a
/// device.
fn open(tty: &str) -> Option<std::fs::File> {
    if !tty.starts_with("/dev/") {
        return None;
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty)
        .ok()
}

/// The terminal's mode now.
pub fn mode(tty: &str) -> Option<Mode> {
    settings(tty).map(|s| s.mode)
}

/// What the terminal does with input and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    /// A line feed written goes out as carriage return and line feed
    /// (`OPOST` and `ONLCR`): the stream holds one byte more per line than
    /// the program wrote.
    pub onlcr: bool,
}

/// The terminal's settings now.
pub fn settings(tty: &str) -> Option<Settings> {
    let f = open(tty)?;
    let t = tcgetattr(&f).ok()?;
    Some(Settings {
        mode: Mode::of(t.local_flags),
        onlcr: t
            .output_flags
            .contains(OutputFlags::OPOST | OutputFlags::ONLCR),
    })
}

/// How many bytes the program wrote to put `stream` on the terminal: with
/// `onlcr`, the carriage return before each line feed is the terminal's.
pub fn written_len(stream: &[u8], onlcr: bool) -> usize {
    if onlcr {
        stream.len() - memchr::memchr_iter(b'\n', stream).count()
    } else {
        stream.len()
    }
}

/// How many bytes at the end of `stream` the last `written` bytes a
/// program wrote make (see [`written_len`]).
pub fn stream_tail_len(stream: &[u8], written: usize, onlcr: bool) -> usize {
    if !onlcr {
        return written.min(stream.len());
    }
    let mut left = written;
    let mut i = stream.len();
    while i > 0 && left > 0 {
        i -= 1;
        left -= 1;
        // The carriage return the terminal put before a line feed.
        if stream[i] == b'\n' && i > 0 && stream[i - 1] == b'\r' {
            i -= 1;
        }
    }
    stream.len() - i
}

/// Typed input waits in the terminal for its reader (`FIONREAD`: in
/// canonical mode, the bytes of whole lines not read yet).
pub fn input_waiting(tty: &str) -> Option<bool> {
    let f = open(tty)?;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `n`.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::FIONREAD, &mut n) };
    (r == 0).then_some(n > 0)
}

/// The columns of the terminal, as tmux set them (`TIOCGWINSZ`): how a
/// resize is noticed without asking tmux.
pub fn width(tty: &str) -> Option<usize> {
    let f = open(tty)?;
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into `ws`.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_from_flags() {
        let l = LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG;
        assert_eq!(Mode::of(l), Mode::Canonical);
        assert_eq!(Mode::of(LocalFlags::ICANON), Mode::Hidden);
        assert_eq!(Mode::of(LocalFlags::ISIG), Mode::Raw);
        assert_eq!(Mode::of(LocalFlags::ECHO), Mode::Other);
        assert_eq!(mode("not-a-tty"), None);
        assert_eq!(written_len(b"ab\r\ncd\r\n$ ", true), 8);
        assert_eq!(written_len(b"ab\r\n", false), 4);
        let s = b"OUT\r\n# ";
        assert_eq!(stream_tail_len(s, 6, true), 7);
        assert_eq!(stream_tail_len(s, 3, true), 4);
        assert_eq!(stream_tail_len(s, 2, true), 2);
        assert_eq!(stream_tail_len(s, 99, true), 7);
        assert_eq!(stream_tail_len(s, 3, false), 3);
        assert_eq!(width("/tmp"), None);
    }
}
