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

/// The name of the program in the pane's foreground, when it is not the
/// shell itself (None: the shell is in the foreground, or unknown).
pub fn foreground_command(pane_pid: u32) -> Option<String> {
    let fg = foreground_group(pane_pid)?;
    if fg == pane_pid {
        return None;
    }
    let comm = std::fs::read_to_string(format!("/proc/{fg}/comm")).ok()?;
    Some(comm.trim_end().to_owned())
}

/// Is the leader of the pane's foreground process group running (or
/// runnable) right now, rather than asleep? None where `/proc` cannot say.
pub fn foreground_running(pane_pid: u32) -> Option<bool> {
    let fg = foreground_group(pane_pid)?;
    let stat = std::fs::read_to_string(format!("/proc/{fg}/stat")).ok()?;
    let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
    Some(state == "R")
}

/// Is the shell itself the pane's foreground process group? None where
/// `/proc` cannot say.
pub fn shell_in_foreground(pane_pid: u32) -> Option<bool> {
    foreground_group(pane_pid).map(|fg| fg == pane_pid)
}

/// Whether `/proc` can answer questions about processes (Linux). Setting
/// `TMUX_WAIT_NO_PROC` pretends it cannot, so the fallbacks used elsewhere
/// (tmux's `#{pane_current_command}`, `ps`) are tested too.
pub fn proc_available() -> bool {
    std::env::var_os("TMUX_WAIT_NO_PROC").is_none()
        && std::path::Path::new("/proc/self/stat").exists()
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
    if !proc_available() {
        return None;
    }
    parse_tpgid(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The 8th field of `/proc/PID/stat`; the command name may hold spaces and
/// parentheses, so count from the last `)`.
fn parse_tpgid(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(5)?.parse().ok()
}

/// How long the command in the pane's foreground has been running: the age
/// of its process group leader (Linux `/proc`; None elsewhere, or when the
/// shell itself is in the foreground).
pub fn foreground_age(pane_pid: u32) -> Option<std::time::Duration> {
    let fg = foreground_group(pane_pid)?;
    if fg == pane_pid {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{fg}/stat")).ok()?;
    let start_ticks = parse_start_ticks(&stat)?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return None;
    }
    let age = uptime - start_ticks as f64 / hz as f64;
    (age >= 0.0).then(|| std::time::Duration::from_secs_f64(age))
}

/// The 22nd field of `/proc/PID/stat`: start time in clock ticks after boot.
fn parse_start_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Looks at the process reading a pane's terminal (the leader of its
/// foreground process group) as output arrives, to tell who wrote it (see
/// `vt::Hint`): the bytes it wrote (`wchar`) and read (`rchar`), from its
/// main thread's `/proc/PID/task/PID/io` (the whole process's counters
/// take in the writes of children it reaped: a background job's output
/// would count as the shell's), the call it is blocked in
/// (`/proc/PID/syscall`), the terminal's mode. Linux only; where `/proc`
/// does not answer every hint is unknown and the tracker falls back on what
/// the stream shows.
///
/// What the reader wrote is a credit the stream pays back: each chunk is
/// taken for the reader's own writing as long as the credit lasts, however
/// the chunks and the looks fall (a look may count a write whose bytes
/// arrive a chunk later). Credit the stream does not pay back soon was
/// written elsewhere (a history file) and is dropped.
pub struct ReaderProbe {
    pane_pid: u32,
    tty: String,
    /// The reader and its counters (written, read) at the last look.
    last: Option<(u32, u64, u64)>,
    /// Bytes the reader wrote that the stream has not shown yet, and since
    /// when there is credit.
    credit: u64,
    credit_since: Option<std::time::Instant>,
    /// When the reader was last seen to have read.
    last_read: Option<std::time::Instant>,
    last_look: Option<std::time::Instant>,
    /// The terminal's canonical-echo mode, and when it was read (opening
    /// the terminal costs more than the rest; it changes rarely).
    mode: Option<(bool, std::time::Instant)>,
    first: super::vt::Hint,
}

/// A reader that read from its terminal this recently is taken to be
/// echoing keys when it writes (echo follows the read of its keys, in one
/// or several writes).
const READ_RECENT: std::time::Duration = std::time::Duration::from_millis(200);
/// Credit older than this was not written to the terminal (a shell's
/// writes to files count too). Long enough for the rest of a long echo to
/// come through tmux and the hub on a loaded machine: a reader's write
/// reaches us in pieces, and a piece that came after its credit expired
/// would be taken for another writer's output.
const CREDIT_LIFE: std::time::Duration = std::time::Duration::from_millis(250);
/// How long to watch a canonical reader after a line ended, to see whether
/// it took the line (its read returned) or slept on (another writer's).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(30);
/// How long a look at the terminal's mode is taken as still true.
const MODE_FRESH: std::time::Duration = std::time::Duration::from_millis(50);

/// One look at the reader.
#[derive(Clone, Copy, Debug, Default)]
struct Look {
    /// The same reader as at the previous look.
    same: bool,
    wrote: u64,
    read: u64,
    blocked: Option<bool>,
    kernel_echo: Option<bool>,
}

impl ReaderProbe {
    /// A probe with its first look taken (see [`ReaderProbe::first`]).
    pub fn new(pane_pid: u32, tty: &str) -> ReaderProbe {
        let mut p = ReaderProbe {
            pane_pid,
            tty: tty.to_owned(),
            last: None,
            credit: 0,
            credit_since: None,
            last_read: None,
            last_look: None,
            mode: None,
            first: super::vt::Hint::default(),
        };
        let l = p.look();
        p.first = super::vt::Hint {
            kernel_echo: l.kernel_echo,
            ..Default::default()
        };
        p
    }

    /// The first look: whether a line was being read in canonical mode.
    pub fn first(&self) -> super::vt::Hint {
        self.first
    }

    /// How long since the last look (None: never).
    pub fn since_last(&self) -> Option<std::time::Duration> {
        self.last_look.map(|t| t.elapsed())
    }

    /// Who wrote `len` bytes that just arrived. With `line_end`, a line
    /// ended while a canonical reader read: watch it a moment to see
    /// whether it took the line.
    pub fn hint_for(&mut self, len: usize, line_end: bool) -> super::vt::Hint {
        use super::vt::Hint;
        let mut l = self.look();
        let mut woke = l.same.then_some(l.read > 0 || l.blocked == Some(false));
        if line_end && l.same && l.read == 0 && l.wrote == 0 {
            // Asleep or about to be: a typed line wakes the reader at once
            // (the kernel hands it the line as it echoes it), but it may
            // not have run yet; a signal may have woken it for nothing.
            let until = std::time::Instant::now() + SETTLE;
            woke = Some(false);
            // A typed line waits in the terminal's input queue until the
            // reader takes it; another writer's line goes the other way
            // and leaves the queue empty. That holds however late the
            // reader gets to run.
            if input_waiting(&self.tty) == Some(true) {
                woke = Some(true);
            }
            while woke == Some(false) && std::time::Instant::now() < until {
                if l.blocked == Some(true) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
                l = self.look();
                if !l.same || l.read > 0 || l.wrote > 0 {
                    woke = Some(true);
                    break;
                }
            }
        }
        if !l.same {
            return Hint {
                kernel_echo: l.kernel_echo,
                ..Hint::default()
            };
        }
        let now = std::time::Instant::now();
        let len = len as u64;
        let shell = self.credit > 0;
        self.credit = self.credit.saturating_sub(len);
        if self.credit == 0 {
            self.credit_since = None;
        }
        let read = self.last_read.is_some_and(|t| now - t < READ_RECENT);
        Hint {
            reader_wrote: Some(shell),
            reader_read: Some(read),
            reader_woke: woke,
            kernel_echo: l.kernel_echo,
        }
    }

    fn look(&mut self) -> Look {
        let now = std::time::Instant::now();
        self.last_look = Some(now);
        let Some(fg) = foreground_group(self.pane_pid) else {
            self.last = None;
            return Look::default();
        };
        let io = read_io(fg);
        let blocked = blocked_reading_stdin(fg);
        // A shell without a line editor in the foreground reads its next
        // line with the kernel's echo (or is about to: it may not have
        // reached its read yet); so does any program blocked in a read of
        // its terminal in canonical mode.
        let shell = fg == self.pane_pid
            && program_name(fg).is_some_and(|n| POSIX_SHELLS.contains(&n.as_str()));
        let kernel_echo = if blocked == Some(true) || shell {
            self.canonical_echo()
        } else {
            blocked
        };
        let mut look = Look {
            blocked,
            kernel_echo,
            ..Look::default()
        };
        match (self.last, io) {
            (Some((pid, w, r)), Some((w2, r2))) if pid == fg => {
                look.same = true;
                look.wrote = w2.saturating_sub(w);
                look.read = r2.saturating_sub(r);
            }
            _ => {
                self.credit = 0;
                self.credit_since = None;
                self.last_read = None;
            }
        }
        self.last = io.map(|(w, r)| (fg, w, r));
        if look.read > 0 {
            self.last_read = Some(now);
        }
        if self.credit_since.is_some_and(|t| now - t > CREDIT_LIFE) {
            self.credit = 0;
            self.credit_since = None;
        }
        if look.wrote > 0 {
            self.credit += look.wrote;
            self.credit_since.get_or_insert(now);
        }
        look
    }

    fn canonical_echo(&mut self) -> Option<bool> {
        if let Some((v, at)) = self.mode
            && at.elapsed() < MODE_FRESH
        {
            return Some(v);
        }
        let v = canonical_echo_mode(&self.tty)?;
        self.mode = Some((v, std::time::Instant::now()));
        Some(v)
    }
}

/// Is a shell without a line editor (or any program reading its terminal
/// line by line) reading a line in this pane now? The kernel echoes what
/// is typed there.
pub fn kernel_echo_read(pane_pid: u32, tty: &str) -> bool {
    ReaderProbe::new(pane_pid, tty).first().kernel_echo == Some(true)
}

/// A process's bytes written and bytes read: its main thread's own
/// (`/proc/PID/task/PID/io`), since the process's total takes in the
/// writes of children it reaped (a background job's output would count as
/// the shell's).
fn read_io(pid: u32) -> Option<(u64, u64)> {
    if !proc_available() {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/io")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((field("wchar:")?, field("rchar:")?))
}

/// Is the process blocked in `read(0, ...)` (`/proc/PID/syscall`)?
fn blocked_reading_stdin(pid: u32) -> Option<bool> {
    if !proc_available() {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/syscall")).ok()?;
    Some(parse_read_of_stdin(&text))
}

/// `/proc/PID/syscall` names `read` on descriptor 0.
fn parse_read_of_stdin(text: &str) -> bool {
    let mut f = text.split_whitespace();
    let nr = f.next().and_then(|n| n.parse::<libc::c_long>().ok());
    nr == Some(libc::SYS_read) && f.next() == Some("0x0")
}

/// The pane's terminal, opened for the moment of a call (never as our
/// controlling terminal, never blocking); None for anything but a device.
fn open_tty(tty: &str) -> Option<std::fs::File> {
    if !tty.starts_with("/dev/") {
        return None;
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty)
        .ok()
}

/// Typed input waits in the terminal for its reader (`FIONREAD`: in
/// canonical mode, the bytes of whole lines not read yet).
fn input_waiting(tty: &str) -> Option<bool> {
    use std::os::fd::AsRawFd;
    let f = open_tty(tty)?;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `n`.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::FIONREAD, &mut n) };
    (r == 0).then_some(n > 0)
}

/// The terminal reads lines (`ICANON`) and echoes what is typed (`ECHO`).
fn canonical_echo_mode(tty: &str) -> Option<bool> {
    let f = open_tty(tty)?;
    let t = tcgetattr(&f).ok()?;
    Some(
        t.local_flags
            .contains(LocalFlags::ICANON | LocalFlags::ECHO),
    )
}

/// The columns of the pane's terminal, as tmux set them (`TIOCGWINSZ`):
/// how a resize is noticed without asking tmux. The terminal is opened for
/// the moment of the call only (holding it open would keep tmux from
/// seeing the pane's program end).
pub fn tty_width(tty: &str) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let f = open_tty(tty)?;
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

fn raw_mode(tty: &str) -> Option<bool> {
    let f = open_tty(tty)?;
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

    #[test]
    fn reads_start_ticks() {
        let stat = "42 (a b) S 1 42 42 34816 42 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0";
        assert_eq!(parse_start_ticks(stat), Some(123456));
    }

    #[test]
    fn reads_the_blocking_call() {
        let read = format!("{} 0x0 0x55 0x2000 0x1 0x7", libc::SYS_read);
        assert!(parse_read_of_stdin(&read));
        let other_fd = format!("{} 0x3 0x55 0x2000", libc::SYS_read);
        assert!(!parse_read_of_stdin(&other_fd));
        assert!(!parse_read_of_stdin("running"));
        assert!(!parse_read_of_stdin("270 0x1 0x7ff 0x0"));
    }

    #[test]
    fn reads_tpgid() {
        assert_eq!(parse_tpgid("42 (a b) c) S 1 42 42 34816 42 0 0"), Some(42));
        assert_eq!(parse_tpgid("7 (cat) R 1 7 7 0 -1 4194304"), None);
        assert_eq!(raw_mode("not-a-tty"), None);
    }
}
