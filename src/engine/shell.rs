//! Is a shell's line editor reading input in this pane right now?
//!
//! Answered from the pane's terminal, not from its text: the shell is the
//! terminal's foreground process group (`tpgid` in `/proc/PID/stat`, Linux)
//! and the terminal is in raw mode (no `ICANON`, no `ECHO`), which readline,
//! zle and fish set only while editing a line. When so, text written before
//! the line is accepted is the echo of typed keys.

use nix::sys::termios::{LocalFlags, tcgetattr};
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;

pub fn line_editor_active(pane_pid: u32, tty: &str) -> bool {
    if let Some(fg) = foreground_group(pane_pid)
        && fg != pane_pid
    {
        return false;
    }
    raw_mode(tty).unwrap_or(false)
}

fn foreground_group(pid: u32) -> Option<u32> {
    parse_tpgid(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The 8th field of `/proc/PID/stat`; the command name may hold spaces and
/// parentheses, so count from the last `)`.
fn parse_tpgid(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(5)?.parse().ok()
}

fn raw_mode(tty: &str) -> Option<bool> {
    if !tty.starts_with("/dev/") {
        return None;
    }
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty)
        .ok()?;
    let t = tcgetattr(&f).ok()?;
    Some(
        !t.local_flags
            .intersects(LocalFlags::ICANON | LocalFlags::ECHO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tpgid() {
        assert_eq!(parse_tpgid("42 (a b) c) S 1 42 42 34816 42 0 0"), Some(42));
        assert_eq!(parse_tpgid("7 (cat) R 1 7 7 0 -1 4194304"), None);
        assert_eq!(raw_mode("not-a-tty"), None);
    }
}
