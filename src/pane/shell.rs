//! Is a shell's line editor reading input in this pane right now?
//!
//! Answered from the pane's terminal, not from its text: the shell is the
//! terminal's foreground process group (`tpgid` in `/proc/PID/stat`, Linux)
//! and the terminal is in raw mode (no `ICANON`, no `ECHO`), which readline,
//! zle and fish set only while editing a line. When so, text written before
//! the line is accepted is the echo of typed keys.

use crate::sys::procfs;
use crate::sys::tty::{self, Mode};
use crate::sys::waiting::{self, Wait};

pub use crate::sys::procfs::available as proc_available;
pub use crate::sys::tty::width as tty_width;

/// A shell's line editor reads in the pane: the pane's program is a shell
/// (or a terminal to another machine's: its echo comes as a shell's), it
/// is the foreground, and the terminal is raw. A REPL or an editor that
/// owns its pane reads raw in the foreground too, and is none.
pub fn line_editor_active(pane_pid: u32, tty: &str) -> bool {
    if let Some(fg) = foreground_group(pane_pid)
        && fg != pane_pid
    {
        return false;
    }
    let own = program_name(pane_pid);
    if own.is_some_and(|n| !is_shell(&n) && !REMOTE.contains(&n.as_str())) {
        return false;
    }
    tty::mode(tty) == Some(Mode::Raw)
}

/// Shells, by program name. A shell is a shell by what it is, not by
/// being a pane's first process.
pub const SHELLS: [&str; 14] = [
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "busybox", "fish", "tcsh", "csh",
    "nu", "xonsh",
];

/// Programs that are a terminal to another machine's shell: there the
/// stream's prompt marks (bracketed paste on) are that shell's prompt.
pub const REMOTE: [&str; 7] = [
    "ssh",
    "mosh-client",
    "telnet",
    "et",
    "docker",
    "podman",
    "kubectl",
];

pub fn is_shell(name: &str) -> bool {
    SHELLS.contains(&name)
}

/// What the pane's terminal waits for, now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// The pane's shell reads its next command line: its prompt.
    Prompt,
    /// A program, or the shell's `read` builtin, waits for a line typed at
    /// the terminal; `hidden`: without echo (a password).
    Line { hidden: bool },
    /// A program other than the shell reads key by key (a REPL's line
    /// editor, a full-screen program) and is asleep. `timed`: its wait
    /// ends on its own (a poll with a timeout, or one whose timeout cannot
    /// be seen): it may be a live display that redraws on a timer (top).
    Keys { timed: bool },
    /// Nobody reads: a command runs.
    Nothing,
    /// `/proc` cannot say.
    Unknown,
}

/// Shells that read their command line in canonical mode (no line
/// editor): there a line read by the shell is a command line unless it is
/// read byte by byte (the `read` builtin).
const PLAIN_SHELLS: [&str; 4] = ["sh", "dash", "ash", "busybox"];

/// What the pane's terminal waits for, from the kernel: who is in the
/// foreground, the terminal's mode, and whether one of the foreground
/// group's processes is asleep in a read of it. The reading process is
/// returned too (for what it is called).
pub fn reads(pane_pid: u32, tty: &str) -> (Reads, Option<u32>) {
    // The mode and the reader are asked one after the other: when the
    // mode changed in between (`less` starting up goes raw, draws and
    // reads keys), what was found mixes two moments, so ask again.
    let mut mode = tty::settings(tty).map(|s| s.mode);
    for _ in 0..3 {
        let Some(m) = mode else {
            return (Reads::Unknown, None);
        };
        let found = reads_in(pane_pid, tty, m);
        let after = tty::settings(tty).map(|s| s.mode);
        if after == mode {
            return found;
        }
        mode = after;
    }
    (Reads::Unknown, None)
}

/// [`reads`] with the terminal in `mode`.
fn reads_in(pane_pid: u32, tty: &str, mode: Mode) -> (Reads, Option<u32>) {
    let Some(fg) = foreground_group(pane_pid) else {
        return (Reads::Unknown, None);
    };
    let own_shell = || program_name(pane_pid).is_some_and(|n| is_shell(&n));
    match mode {
        Mode::Raw if fg == pane_pid && own_shell() => (Reads::Prompt, Some(fg)),
        Mode::Raw => {
            // The group's leader may be gone while the rest runs on: in
            // `seq 100 | less` the leader is seq, the reader less (last).
            let live: Vec<(u32, char)> = foreground_members(pane_pid, fg)
                .into_iter()
                .filter_map(|p| procfs::stat(p).map(|s| (p, s.state)))
                .filter(|(_, st)| *st != 'Z' && *st != 'X')
                .collect();
            if live.is_empty() {
                return (Reads::Unknown, None);
            }
            if live.iter().any(|(_, st)| *st == 'R' || *st == 'D') {
                return (Reads::Nothing, None);
            }
            key_reader(&live, fg, tty)
        }
        Mode::Canonical | Mode::Hidden | Mode::Other => {
            let hidden = mode == Mode::Hidden;
            let mut unknown = false;
            let members = foreground_members(pane_pid, fg);
            for &pid in &members {
                match procfs::reading_tty(pid, tty) {
                    Some(Some(read)) => {
                        let r = if pid == pane_pid
                            && mode == Mode::Canonical
                            && shell_command_line(pid, read)
                        {
                            Reads::Prompt
                        } else {
                            Reads::Line { hidden }
                        };
                        return (r, Some(pid));
                    }
                    Some(None) => {}
                    None => unknown = true,
                }
            }
            // Echo off while lines are read, the foreground asleep, and the
            // reader out of sight: a password asked by a program whose
            // calls the kernel does not show us (sudo to its own user) or
            // that reads from outside the pane's processes (gpg's
            // pinentry, started by its agent). No program was seen to turn
            // echo off for anything else.
            if hidden && all_asleep(&members) {
                return (Reads::Line { hidden: true }, Some(fg));
            }
            (
                if unknown {
                    Reads::Unknown
                } else {
                    Reads::Nothing
                },
                None,
            )
        }
    }
}

/// Every process of the foreground is asleep (none running, none gone).
fn all_asleep(members: &[u32]) -> bool {
    !members.is_empty()
        && members
            .iter()
            .all(|&p| procfs::stat(p).is_some_and(|s| s.state == 'S'))
}

/// A raw terminal and the foreground group asleep (`live`, its leader
/// `fg`): who waits for a key, and whether its wait ends on a timer. A
/// group none of whose processes reads or polls the terminal waits for no
/// key (watch and `less +F` sleep between redraws): a command runs.
fn key_reader(live: &[(u32, char)], fg: u32, tty: &str) -> (Reads, Option<u32>) {
    let mut best: Option<(Wait, u32)> = None;
    let mut unknown = false;
    for &(pid, _) in live {
        match waiting::waits(pid, tty) {
            Some(w) => {
                // The leader first among equals (the program, as its own
                // execs left it), else the last (a pipeline's reader).
                if best.is_none_or(|(b, p)| w > b || (w == b && p != fg)) {
                    best = Some((w, pid));
                }
            }
            None => unknown = true,
        }
    }
    match best {
        Some((Wait::ReadsTty | Wait::PollsForever, pid)) => {
            (Reads::Keys { timed: false }, Some(pid))
        }
        Some((Wait::PollsTimed, pid)) => (Reads::Keys { timed: true }, Some(pid)),
        // Unseen: as before the kernel could say, a key reader that may
        // redraw.
        _ if unknown => {
            let leader = live.iter().find(|(p, _)| *p == fg).or(live.last());
            (Reads::Keys { timed: true }, leader.map(|(p, _)| *p))
        }
        _ => (Reads::Nothing, None),
    }
}

/// The foreground group's processes among the pane's: its leader first.
fn foreground_members(pane_pid: u32, fg: u32) -> Vec<u32> {
    let mut out = vec![fg];
    for pid in procfs::tree(pane_pid, 64) {
        if pid != fg && procfs::stat(pid).is_some_and(|s| s.pgrp == fg) {
            out.push(pid);
        }
    }
    out
}

/// The pane's shell reads a line in canonical mode: its command line, or
/// its `read` builtin? A shell with a line editor (bash, zsh, fish) reads
/// its command line key by key, so a line read is `read`; a plain shell
/// (dash) reads both by line, its `read` one byte at a time (so as not to
/// read past the line), its command line into a buffer.
pub(super) fn shell_command_line(pid: u32, read: procfs::TtyRead) -> bool {
    plain_shell(pid) && read.count.is_none_or(|n| n > 1)
}

/// The process is a shell without a line editor (dash): it reads its
/// command lines in canonical mode, echoed by the kernel.
pub(super) fn plain_shell(pid: u32) -> bool {
    program_name(pid).is_some_and(|n| PLAIN_SHELLS.contains(&n.as_str()))
}

/// The shell has no child process left (no job in the background, nothing
/// running): false where `/proc` cannot say.
pub fn has_no_jobs(pane_pid: u32) -> bool {
    proc_available() && procfs::stat(pane_pid).is_some() && procfs::children(pane_pid).is_empty()
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

/// Interactive programs' prompts, matched against the unfinished last line
/// (trailing spaces removed).
pub const DEFAULT_PROMPTS: &str = r"^(>>>|\.\.\.|\(gdb\)|\(Pdb\)|\(lldb\)|\(dlv\)|In \[\d+\]:|irb\([^)]*\):\d+:\d+[>*]|sqlite>|mysql>|MariaDB \[[^\]]*\]>|[\w-]+[=-][#>]|>|\?)$";

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
