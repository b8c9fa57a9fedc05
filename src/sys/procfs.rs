//! What Linux's `/proc` says about a process: its state and terminal, its
//! children, the bytes it wrote and read, the call it is blocked in. Every
//! reader returns None where `/proc` does not answer (not Linux, the
//! process is gone, or access is refused), and callers fall back on what
//! the stream shows.

use std::path::PathBuf;

/// Whether `/proc` can answer questions about processes (Linux). Setting
/// `TMUX_WAIT_NO_PROC` pretends it cannot, so the fallbacks used elsewhere
/// (tmux's `#{pane_current_command}`, `ps`) are tested too.
pub fn available() -> bool {
    // Asked before every read of a look at the pane's processes: once is
    // enough, neither answer changes while tmux-wait runs.
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::env::var_os("TMUX_WAIT_NO_PROC").is_none()
            && std::path::Path::new("/proc/self/stat").exists()
    })
}

/// A small file of `/proc`, read whole: one `read` for what fits a page.
/// (`read_to_string` also asks the file's size and position, which `/proc`
/// gives as 0, and reads again to see the end: three calls more for each
/// file, and a look at a pane's processes reads several.) `/proc` gives a
/// file this small in one read, so a read that leaves room is all of it.
///
/// A file of a process is kept open and read again from its start (the
/// kernel makes it anew for each read from 0): a look at a pane reads the
/// same few files each time, and opening and closing them was half of its
/// cost (a perf of fifty waits on a pane printing a line each 10 ms). The
/// open file stays the process's: once that process is gone and reaped,
/// reading it fails (its pid taken again or not), and the file is opened
/// again by name, as the first time.
fn read(path: impl AsRef<std::path::Path>) -> std::io::Result<String> {
    let path = path.as_ref();
    let mut buf = Vec::new();
    let kept = OPEN.with_borrow_mut(|open| {
        let f = open.get(path)?;
        match read_from_start(f, &mut buf) {
            Ok(n) if n > 0 => Some(()),
            _ => {
                open.remove(path);
                None
            }
        }
    });
    if kept.is_none() {
        let f = std::fs::File::open(path)?;
        read_from_start(&f, &mut buf)?;
        OPEN.with_borrow_mut(|open| open.insert(path, f));
    }
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The most files of `/proc` kept open (per thread). When one more is
/// opened (past the first `SWEEP_FROM`), those of processes that have
/// ended go, then, at the cap, the one read longest ago: what stays open
/// follows the processes alive and looked at lately, and their number
/// stays flat over a day of panes.
const KEEP_OPEN: usize = 48;
const SWEEP_FROM: usize = 8;

/// The files of `/proc` kept open, with when each was last read.
#[derive(Default)]
struct Kept {
    files: std::collections::HashMap<PathBuf, (std::fs::File, u64)>,
    clock: u64,
}

impl Kept {
    fn get(&mut self, path: &std::path::Path) -> Option<&std::fs::File> {
        self.clock += 1;
        let now = self.clock;
        self.files.get_mut(path).map(|(f, used)| {
            *used = now;
            &*f
        })
    }

    fn remove(&mut self, path: &std::path::Path) {
        self.files.remove(path);
    }

    fn insert(&mut self, path: &std::path::Path, f: std::fs::File) {
        if self.files.len() >= SWEEP_FROM {
            self.files.retain(|p, _| process_of(p).is_none_or(exists));
        }
        if self.files.len() >= KEEP_OPEN
            && let Some(oldest) = self
                .files
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(p, _)| p.clone())
        {
            self.files.remove(&oldest);
        }
        self.clock += 1;
        self.files.insert(path.to_owned(), (f, self.clock));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.files.len()
    }
}

/// The process a path of `/proc` is of (`/proc/PID/...`).
fn process_of(path: &std::path::Path) -> Option<u32> {
    path.strip_prefix("/proc")
        .ok()?
        .components()
        .next()?
        .as_os_str()
        .to_str()?
        .parse()
        .ok()
}

thread_local! {
    static OPEN: std::cell::RefCell<Kept> = std::cell::RefCell::default();
}

/// All of `f`, read from its start into `buf`; how many bytes.
fn read_from_start(f: &std::fs::File, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    const PAGE: usize = 4096;
    buf.clear();
    loop {
        let at = buf.len();
        buf.resize(at + PAGE, 0);
        let n = f.read_at(&mut buf[at..], at as u64)?;
        buf.truncate(at + n);
        if n < PAGE {
            return Ok(buf.len());
        }
    }
}

/// The fields of `/proc/PID/stat` tmux-wait reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// `R` running, `S` asleep, `D` in the kernel, `Z` a zombie, `T` stopped.
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
    pub session: u32,
    /// The process's controlling terminal, as a device number (0: none).
    pub tty_nr: u64,
    /// The foreground process group of the process's terminal (0 or below:
    /// none).
    pub tpgid: i64,
    /// The kernel's flags of the process (`PF_*`).
    pub flags: u32,
    /// Start time, in clock ticks after boot.
    pub start_ticks: u64,
}

/// The kernel's `PF_EXITING`: set when a process begins to exit, before
/// it closes its files (so a peer that sees its socket close finds it set,
/// where the state may not be `Z` yet).
const PF_EXITING: u32 = 0x4;

impl Stat {
    /// The process is exiting or has exited.
    pub fn exiting(&self) -> bool {
        self.state == 'Z' || self.state == 'X' || self.flags & PF_EXITING != 0
    }
}

/// `/proc/PID/stat`.
pub fn stat(pid: u32) -> Option<Stat> {
    if !available() {
        return None;
    }
    parse_stat(&read(format!("/proc/{pid}/stat")).ok()?)
}

/// The fields after the command name, which may hold spaces and
/// parentheses (so count from the last `)`).
pub fn parse_stat(text: &str) -> Option<Stat> {
    let mut f = text[text.rfind(')')? + 1..].split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    let session = f.next()?.parse().ok()?;
    let tty_nr = f.next()?.parse::<i64>().ok()?;
    let tpgid = f.next()?.parse().ok()?;
    let flags = f.next()?.parse().ok()?;
    let start_ticks = f.nth(12)?.parse().ok()?;
    Some(Stat {
        state,
        ppid,
        pgrp,
        session,
        tty_nr: u64::try_from(tty_nr).unwrap_or(0),
        tpgid,
        flags,
        start_ticks,
    })
}

/// How a process that has exited and not been reaped yet (a zombie)
/// ended, as a shell says it: its exit status, or 128 and the signal that
/// killed it. From the last field of `/proc/PID/stat` (Linux 3.5+); None
/// for a process that has not exited.
pub fn exit_status(pid: u32) -> Option<i32> {
    if !available() {
        return None;
    }
    let text = read(format!("/proc/{pid}/stat")).ok()?;
    let st = parse_stat(&text)?;
    if st.state != 'Z' {
        return None;
    }
    let code: i32 = text.split_whitespace().last()?.parse().ok()?;
    Some(wait_status(code))
}

/// A `waitpid` status as a shell says it.
fn wait_status(code: i32) -> i32 {
    match code & 0x7f {
        0 => (code >> 8) & 0xff,
        sig => 128 + sig,
    }
}

/// The foreground process group of the terminal `pid` is attached to (its
/// leader's pid), when there is one.
pub fn foreground_group(pid: u32) -> Option<u32> {
    u32::try_from(stat(pid)?.tpgid).ok().filter(|&g| g > 0)
}

/// The process's program name (`/proc/PID/comm`).
pub fn comm(pid: u32) -> Option<String> {
    if !available() {
        return None;
    }
    let c = read(format!("/proc/{pid}/comm")).ok()?;
    Some(c.trim_end().to_owned())
}

/// The first `n` words of a process's command line (`/proc/PID/cmdline`).
pub fn cmdline(pid: u32, n: usize) -> Vec<String> {
    if !available() {
        return Vec::new();
    }
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|w| !w.is_empty())
                .take(n)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// What a process read and wrote, as `/proc/PID/io` counts it (files,
/// pipes and terminals alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Io {
    /// Bytes written (`wchar`).
    pub wrote: u64,
    /// Bytes read (`rchar`).
    pub read: u64,
    /// Read calls made (`syscr`).
    pub reads: u64,
}

/// What a process read and wrote. `whole`: the process's own threads and
/// every child it reaped (`/proc/PID/io`); otherwise its main thread alone
/// (`/proc/PID/task/PID/io`).
pub fn io(pid: u32, whole: bool) -> Option<Io> {
    if !available() {
        return None;
    }
    let path = if whole {
        format!("/proc/{pid}/io")
    } else {
        format!("/proc/{pid}/task/{pid}/io")
    };
    parse_io(&read(path).ok()?)
}

pub fn parse_io(text: &str) -> Option<Io> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some(Io {
        wrote: field("wchar:")?,
        read: field("rchar:")?,
        reads: field("syscr:")?,
    })
}

/// The children of every thread of `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let Ok(text) = read(t.path().join("children")) else {
            continue;
        };
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    out
}

/// `pid` and its descendants, breadth first, at most `cap` of them.
pub fn tree(pid: u32, cap: usize) -> Vec<u32> {
    family(pid, cap).into_iter().map(|(p, _)| p).collect()
}

/// [`tree`], each process with its parent (0 for `pid` itself).
pub fn family(pid: u32, cap: usize) -> Vec<(u32, u32)> {
    if !available() {
        return Vec::new();
    }
    let mut out = vec![(pid, 0)];
    let mut i = 0;
    while i < out.len() && out.len() < cap {
        let parent = out[i].0;
        for c in children(parent) {
            if out.len() >= cap {
                break;
            }
            if !out.iter().any(|(p, _)| *p == c) {
                out.push((c, parent));
            }
        }
        i += 1;
    }
    out
}

/// Whether process `pid` exists, a zombie included (once reaped it does
/// not).
pub fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The call a process is blocked in (`/proc/PID/syscall`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syscall {
    pub nr: i64,
    /// Its arguments (for `read`: the descriptor, the buffer and how many
    /// bytes it asked for); those the line does not show are None.
    pub args: [Option<u64>; 6],
}

impl Syscall {
    pub fn arg(&self, i: usize) -> Option<u64> {
        self.args.get(i).copied().flatten()
    }
}

/// The call a process is blocked in. None where `/proc/PID/syscall`
/// cannot be read: it needs the right to attach to the process, which
/// Yama's `ptrace_scope=1` (Ubuntu's default) refuses for processes that
/// are not our descendants.
pub fn syscall(pid: u32) -> Option<Syscall> {
    if !available() {
        return None;
    }
    parse_syscall(&read(format!("/proc/{pid}/syscall")).ok()?)
}

/// `NR ARG0 ARG1 ...` (hex arguments); None for `running` or a malformed
/// line.
pub fn parse_syscall(text: &str) -> Option<Syscall> {
    let hex = |a: &str| u64::from_str_radix(a.strip_prefix("0x").unwrap_or(a), 16).ok();
    let mut f = text.split_whitespace();
    let nr = f.next()?.parse::<i64>().ok()?;
    let mut args = [None; 6];
    for a in &mut args {
        *a = f.next().and_then(hex);
    }
    args[0]?;
    Some(Syscall { nr, args })
}

/// The number of `read` in `/proc/PID/syscall` (Linux only: elsewhere no
/// call matches).
#[cfg(target_os = "linux")]
const SYS_READ: i64 = libc::SYS_read;
#[cfg(not(target_os = "linux"))]
const SYS_READ: i64 = -1;

/// A process asleep in a read of its terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtyRead {
    /// How many bytes it asked for, where the kernel shows it: a shell's
    /// `read` builtin asks for one at a time (it must not read past the
    /// line), its command line for a buffer.
    pub count: Option<u64>,
}

/// Where the process sleeps in the kernel (`/proc/PID/wchan`): readable
/// with plain read rights, unlike `syscall`.
pub fn wchan(pid: u32) -> Option<String> {
    if !available() {
        return None;
    }
    let w = read(format!("/proc/{pid}/wchan")).ok()?;
    Some(w.trim().to_owned())
}

/// What descriptor `fd` of the process names.
pub fn fd_target(pid: u32, fd: u64) -> Option<PathBuf> {
    if !available() {
        return None;
    }
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()
}

/// Is the process asleep in a read of the terminal `tty`? From its call
/// where the kernel shows it (a `read` of a descriptor naming `tty`), else
/// from where it sleeps: the terminal's line discipline sleeps in
/// `wait_woken`, with its standard input the terminal. None: cannot tell.
pub fn reading_tty(pid: u32, tty: &str) -> Option<Option<TtyRead>> {
    tty_read_state(pid, tty).map(|s| match s {
        ReadState::Reading(r) => Some(r),
        ReadState::Running | ReadState::Elsewhere => None,
    })
}

/// Where a process stands with respect to reading its terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadState {
    /// Asleep in a read of the terminal.
    Reading(TtyRead),
    /// Running (or waiting for a processor): on its way into a call, or
    /// back from one (a line reader wakes for each key typed).
    Running,
    /// Asleep in something else, stopped, or gone.
    Elsewhere,
}

/// Like [`reading_tty`], telling a running process from one asleep
/// elsewhere. The call decides where the kernel shows it: a process
/// between two looks at `/proc` may have woken or slept again.
pub fn tty_read_state(pid: u32, tty: &str) -> Option<ReadState> {
    let st = stat(pid)?;
    if !matches!(st.state, 'S' | 'R') {
        return Some(ReadState::Elsewhere);
    }
    if available()
        && let Ok(text) = read(format!("/proc/{pid}/syscall"))
    {
        return Some(match parse_syscall(&text) {
            Some(sc)
                if sc.nr == SYS_READ && sc.arg(0).is_some_and(|fd| names_tty(pid, fd, tty)) =>
            {
                ReadState::Reading(TtyRead { count: sc.arg(2) })
            }
            Some(_) => ReadState::Elsewhere,
            None if text.starts_with("running") => ReadState::Running,
            None => return None,
        });
    }
    if st.state == 'R' {
        return Some(ReadState::Running);
    }
    // (Asleep, and the kernel shows `0` for where: it refuses to say, as
    // it does for a setuid program such as sudo run by its own user.)
    let w = wchan(pid)?;
    Some(if w == "wait_woken" && names_tty(pid, 0, tty) {
        ReadState::Reading(TtyRead { count: None })
    } else if w == "0" {
        return None;
    } else {
        ReadState::Elsewhere
    })
}

/// Descriptor `fd` of the process is the terminal `tty`: opened by its
/// name, or as `/dev/tty` (the process's controlling terminal, which
/// getpass, git, ssh, sudo and gpg open to ask for a password) when that
/// terminal is `tty`.
pub fn names_tty(pid: u32, fd: u64, tty: &str) -> bool {
    match fd_target(pid, fd) {
        Some(p) if p.as_os_str() == tty => true,
        Some(p) if p.as_os_str() == "/dev/tty" => {
            stat(pid).is_some_and(|s| s.tty_nr != 0 && Some(s.tty_nr) == device_number(tty))
        }
        _ => false,
    }
}

/// The device number of a terminal (as `/proc/PID/stat` gives a
/// process's controlling terminal).
pub fn device_number(tty: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(stat_dev(std::fs::metadata(tty).ok()?.rdev()))
}

/// A `st_rdev` as `/proc/PID/stat` writes a device number.
fn stat_dev(rdev: u64) -> u64 {
    // The kernel's encoding in `stat`: minor's low 8 bits, major, then the
    // minor's high bits (new_encode_dev).
    // (glibc's dev_t: major in bits 8-19 and 32-43, minor in 0-7 and
    // 20-31.)
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// How long ago the process started (None where `/proc` cannot say).
pub fn age(pid: u32) -> Option<std::time::Duration> {
    let start = stat(pid)?.start_ticks;
    let uptime: f64 = read("/proc/uptime")
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
    let age = uptime - start as f64 / hz as f64;
    (age >= 0.0).then(|| std::time::Duration::from_secs_f64(age))
}

/// The terminals whose master side the process holds: N of each
/// `/dev/pts/N` it has a `/dev/ptmx` descriptor of (the index
/// `/proc/PID/fdinfo` gives, Linux 4.14 on). A tmux server holds one for
/// each of its panes. None where `/proc` cannot say (not ours, an older
/// kernel).
pub fn pty_masters(pid: u32) -> Option<Vec<u32>> {
    if !available() {
        return None;
    }
    let mut found = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        let is_ptmx = std::fs::read_link(e.path())
            .is_ok_and(|t| t.as_os_str() == "/dev/ptmx" || t.as_os_str() == "/dev/pts/ptmx");
        if !is_ptmx {
            continue;
        }
        let info = read(format!(
            "/proc/{pid}/fdinfo/{}",
            e.file_name().to_string_lossy()
        ));
        match info {
            Ok(info) => found.push(
                info.lines()
                    .find_map(|l| l.strip_prefix("tty-index:"))?
                    .trim()
                    .parse()
                    .ok()?,
            ),
            // (Closed since the listing.)
            Err(_) => continue,
        }
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stat_past_a_name_with_parentheses() {
        let s = parse_stat("42 (a b) c) S 1 42 40 34816 77 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0")
            .unwrap();
        assert_eq!(
            s,
            Stat {
                state: 'S',
                ppid: 1,
                pgrp: 42,
                session: 40,
                tty_nr: 34816,
                tpgid: 77,
                flags: 0,
                start_ticks: 123456
            }
        );
        let none = parse_stat("7 (cat) R 1 7 7 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 9 0").unwrap();
        assert_eq!(none.tpgid, -1);
        assert_eq!(none.flags, 4194304);
        assert!(!none.exiting());
        let dying =
            parse_stat("7 (hub) R 1 7 7 0 -1 4194308 0 0 0 0 0 0 0 0 20 0 1 0 9 0").unwrap();
        assert!(dying.exiting());
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn reads_io_and_syscall() {
        let io = "rchar: 12\nwchar: 34\nsyscr: 1\nsyscw: 2\n";
        assert_eq!(
            parse_io(io),
            Some(Io {
                wrote: 34,
                read: 12,
                reads: 1
            })
        );
        assert_eq!(parse_io("rchar: 1\n"), None);
        let read = format!("{} 0x0 0x55 0x2000 0x1 0x7", SYS_READ);
        let sc = parse_syscall(&read).unwrap();
        assert_eq!(
            (sc.nr, sc.arg(0), sc.arg(2), sc.arg(4)),
            (SYS_READ, Some(0), Some(0x2000), Some(7))
        );
        let sc = parse_syscall("270 0xa 0x7ff").unwrap();
        assert_eq!((sc.nr, sc.arg(0), sc.arg(2)), (270, Some(10), None));
        assert_eq!(parse_syscall("running"), None);
    }

    /// Poll `done` every 5 ms for up to 10 s.
    fn until(mut done: impl FnMut() -> bool) {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !done() && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The files of a process kept open between reads (see `read`).
    #[test]
    fn a_process_gone_is_not_read_through_its_kept_file() {
        if !available() {
            return;
        }
        // A shell with a child: its files read (and kept open), then read
        // again and again while it lives, the same as opened anew.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = sh.id();
        until(|| !children(pid).is_empty());
        let kids = children(pid);
        assert_eq!(kids.len(), 1, "sleep started");
        for _ in 0..3 {
            assert_eq!(stat(pid).map(|s| s.ppid), Some(std::process::id()));
            assert!(io(pid, true).is_some());
            assert_eq!(children(pid), kids);
        }
        // Its child killed and reaped: no child, read through the kept file.
        let _ = std::process::Command::new("kill")
            .arg(kids[0].to_string())
            .status();
        until(|| children(pid).is_empty());
        assert!(children(pid).is_empty());
        // Gone and reaped: nothing, as for a pid never seen.
        let _ = sh.wait();
        assert_eq!(stat(pid), None);
        assert_eq!(io(pid, true), None);
        assert!(children(pid).is_empty());
    }

    /// The files kept open stay at most [`KEEP_OPEN`]: those of ended
    /// processes go first, then the one read longest ago.
    #[test]
    fn the_files_kept_open_follow_the_processes_alive() {
        if !available() {
            return;
        }
        let kept = || OPEN.with_borrow(|o| o.len());
        // (A thread of its own: its kept files are its own.)
        std::thread::spawn(move || {
            let spawn = || {
                std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .unwrap()
            };
            let mut first: Vec<_> = (0..KEEP_OPEN).map(|_| spawn()).collect();
            for c in &first {
                assert!(stat(c.id()).is_some());
            }
            assert_eq!(kept(), KEEP_OPEN);
            // Half of them end: the next file opened closes theirs.
            for c in &mut first[..KEEP_OPEN / 2] {
                let _ = c.kill();
                let _ = c.wait();
            }
            let mut more = vec![spawn()];
            assert!(stat(more[0].id()).is_some());
            assert_eq!(kept(), KEEP_OPEN / 2 + 1);
            // Past the cap with live ones: the one read longest ago goes.
            let kept_first = first[KEEP_OPEN / 2].id();
            for _ in 0..KEEP_OPEN {
                more.push(spawn());
                assert!(stat(more.last().unwrap().id()).is_some());
                assert!(stat(kept_first).is_some());
            }
            assert_eq!(kept(), KEEP_OPEN);
            OPEN.with_borrow(|o| {
                assert!(
                    o.files
                        .contains_key(&PathBuf::from(format!("/proc/{kept_first}/stat")))
                );
            });
            for c in first.iter_mut().chain(more.iter_mut()) {
                let _ = c.kill();
                let _ = c.wait();
            }
        })
        .join()
        .unwrap();
    }

    /// A child that exited and was not reaped: its status, from the
    /// kernel, as tmux would have had it.
    #[test]
    fn a_zombies_exit_status() {
        if !available() {
            return;
        }
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        let pid = child.id();
        until(|| exit_status(pid).is_some());
        assert_eq!(exit_status(pid), Some(3));
        let _ = child.wait();
        assert_eq!(exit_status(std::process::id()), None, "alive");
    }

    #[test]
    fn wait_statuses_as_a_shell_says_them() {
        assert_eq!(wait_status(4 << 8), 4);
        assert_eq!(wait_status(9), 137);
        assert_eq!(wait_status(0), 0);
    }

    #[test]
    fn a_terminals_device_number_as_stat_gives_it() {
        // /dev/pts/0 and /dev/pts/300 (major 136).
        assert_eq!(stat_dev(136 << 8), 34816);
        assert_eq!(
            stat_dev((136 << 8) | (300 & 0xff) | ((300 & !0xff) << 12)),
            34816 + 44 + (256 << 12)
        );
    }

    #[test]
    fn sees_this_process() {
        if !available() {
            return;
        }
        let me = std::process::id();
        let s = stat(me).unwrap();
        assert!(s.state == 'R' || s.state == 'S');
        assert!(io(me, false).is_some() && io(me, true).is_some());
        assert!(tree(me, 16).starts_with(&[me]));
    }
    #[cfg(target_os = "linux")]
    #[test]
    fn a_terminal_opened_here_is_one_of_our_masters() {
        use std::os::fd::AsRawFd;
        let ptmx = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/ptmx")
            .unwrap();
        let mut name = [0 as libc::c_char; 64];
        // SAFETY: the buffer is ours and its length is given.
        assert_eq!(
            unsafe { libc::ptsname_r(ptmx.as_raw_fd(), name.as_mut_ptr(), name.len()) },
            0
        );
        // SAFETY: ptsname_r wrote a NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
        let n: u32 = name.strip_prefix("/dev/pts/").unwrap().parse().unwrap();
        let me = std::process::id();
        assert!(pty_masters(me).unwrap().contains(&n), "{name}");
        drop(ptmx);
        assert!(!pty_masters(me).unwrap().contains(&n), "{name}");
    }
}
