//! Is a shell's line editor reading input in this pane right now?
//!
//! Answered from the pane's terminal, not from its text: the shell is the
//! terminal's foreground process group (`tpgid` in `/proc/PID/stat`, Linux)
//! and the terminal is in raw mode (no `ICANON`, no `ECHO`), which readline,
//! zle and fish set only while editing a line. When so, text written before
//! the line is accepted is the echo of typed keys.

use crate::sys::procfs;
use crate::sys::tty::{self, Mode};

pub use crate::sys::procfs::available as proc_available;
pub use crate::sys::tty::width as tty_width;

pub fn line_editor_active(pane_pid: u32, tty: &str) -> bool {
    if let Some(fg) = foreground_group(pane_pid)
        && fg != pane_pid
    {
        return false;
    }
    tty::mode(tty) == Some(Mode::Raw)
}

/// The name of the program in the pane's foreground, when it is not the
/// shell itself (None: the shell is in the foreground, or unknown).
pub fn foreground_command(pane_pid: u32) -> Option<String> {
    let fg = foreground_group(pane_pid)?;
    if fg == pane_pid {
        return None;
    }
    procfs::comm(fg)
}

/// Is the leader of the pane's foreground process group running (or
/// runnable) right now, rather than asleep? None where `/proc` cannot say.
pub fn foreground_running(pane_pid: u32) -> Option<bool> {
    let fg = foreground_group(pane_pid)?;
    Some(procfs::stat(fg)?.state == 'R')
}

/// Is the shell itself the pane's foreground process group? None where
/// `/proc` cannot say.
pub fn shell_in_foreground(pane_pid: u32) -> Option<bool> {
    foreground_group(pane_pid).map(|fg| fg == pane_pid)
}

/// A process's program name: `/proc/PID/comm`, else `ps -o comm=`.
pub fn program_name(pid: u32) -> Option<String> {
    let comm = if proc_available() {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?
    } else {
        let out = std::process::Command::new("ps")
            .args(["-o", "comm=", "-p", &pid.to_string()])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let name = comm.trim().trim_start_matches('-');
    let name = name.rsplit('/').next().unwrap_or(name);
    (!name.is_empty()).then(|| name.to_owned())
}

/// Shells whose syntax `run`'s wrapper is written in.
pub const POSIX_SHELLS: [&str; 9] = [
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "busybox",
];

/// Characters prompts usually end with (before a space).
const PROMPT_ENDS: [char; 11] = [
    '$', '#', '%', '>', '\u{276f}', '\u{279c}', '\u{bb}', '\u{203a}', '\u{3bb}', ']', ')',
];

/// Text a person typed at a shell prompt and has not submitted, judged from
/// the cursor's line split at the cursor: text right after the cursor (it
/// was moved back into typed text), or a line that does not end the way
/// prompts do. A prompt with an unusual ending reads as typed text: `run
/// --force` is the way past that.
pub fn unsubmitted_text(before: &str, after: &str) -> Option<String> {
    let after_trim = after.trim_end();
    // A right prompt (zsh RPROMPT) sits far from the cursor.
    let typed_after = !after_trim.is_empty() && !after.starts_with("  ");
    let b = before.trim_end();
    let ends_like_prompt = b.is_empty() || b.ends_with(PROMPT_ENDS);
    if ends_like_prompt && !typed_after {
        return None;
    }
    let line = if typed_after {
        format!("{before}{after_trim}")
    } else {
        before.to_owned()
    };
    Some(line.trim().to_owned())
}

fn foreground_group(pid: u32) -> Option<u32> {
    procfs::foreground_group(pid)
}

/// How long the command in the pane's foreground has been running: the age
/// of its process group leader (Linux `/proc`; None elsewhere, or when the
/// shell itself is in the foreground).
pub fn foreground_age(pane_pid: u32) -> Option<std::time::Duration> {
    let fg = foreground_group(pane_pid)?;
    if fg == pane_pid {
        return None;
    }
    procfs::age(fg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_a_bare_prompt_from_typed_text() {
        for (before, after) in [
            ("$ ", ""),
            ("user@host:~/src$ ", ""),
            ("root# ", ""),
            ("% ", ""),
            ("\u{276f} ", ""),
            ("[me@box dir]$ ", ""),
            ("$ ", "                                   12:00:01"),
            ("", ""),
        ] {
            assert_eq!(
                unsubmitted_text(before, after),
                None,
                "{before:?} {after:?}"
            );
        }
        assert_eq!(unsubmitted_text("$ ls -la", ""), Some("$ ls -la".into()));
        assert_eq!(unsubmitted_text("$ ", "ls"), Some("$ ls".into()));
        assert_eq!(
            unsubmitted_text("$ make te", "st"),
            Some("$ make test".into())
        );
    }
}
