//! What an asleep process waits for, as far as the kernel shows it: a key
//! at its terminal (a read of it, or a poll that may be on it), a timer
//! (a sleep, or a poll that ends on its own), or something else (a child,
//! a pipe, a lock). This tells a program waiting for a key (less at a
//! page, a menu, a REPL) from a live display that redraws on a timer (top
//! polls its terminal for a second at a time, watch and `less +F` sleep),
//! before any output says so.
//!
//! Every thread of the process counts (a program's keyboard may be read
//! by a thread other than its first). The call each sleeps in comes from
//! `/proc/PID/task/TID/syscall`; where that is refused (Yama's
//! `ptrace_scope=1`, a setuid program), from where it sleeps (`wchan`),
//! which cannot tell a poll's timeout.

use super::procfs;

/// What a process waits for (the strongest of its threads').
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wait {
    /// Nothing at the terminal: a sleep, a child, a pipe, a lock.
    Elsewhere,
    /// A sleep that ends on its own (`nanosleep`): a timer.
    Sleeps,
    /// A poll (`poll`, `select`, `epoll_wait` and kin) that ends on its
    /// own after a while, or whose timeout cannot be seen: it may be on
    /// the terminal, and its program may redraw when it ends.
    PollsTimed,
    /// A poll with no timeout: it ends only when a descriptor is ready (a
    /// key, when it is the terminal).
    PollsForever,
    /// A read of the terminal.
    ReadsTty,
}

/// The most threads of one process looked at.
const THREADS_CAP: usize = 64;

/// What process `pid` waits for, with `tty` its pane's terminal; None
/// where the kernel does not say.
pub fn waits(pid: u32, tty: &str) -> Option<Wait> {
    let mut best: Option<Wait> = None;
    let tasks: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .take(THREADS_CAP)
        .collect();
    let mut refused = false;
    for tid in tasks {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")) else {
            refused = true;
            continue;
        };
        let Some(sc) = procfs::parse_syscall(&text) else {
            continue; // running, between two calls
        };
        let w = of_call(sc, |fd| procfs::names_tty(pid, fd, tty));
        best = best.max(Some(w));
        if best == Some(Wait::ReadsTty) {
            break;
        }
    }
    if best.is_none() && refused {
        return from_wchan(pid, tty);
    }
    best
}

/// From where the process sleeps, when its calls cannot be seen: the
/// terminal's read sleeps in `wait_woken` (so does a socket's: only with a
/// descriptor on the terminal does it count), a poll in
/// `poll_schedule_timeout`, `do_select` or `ep_poll` (with no timeout to
/// see), a sleep in `hrtimer_nanosleep` or `do_nanosleep`.
fn from_wchan(pid: u32, tty: &str) -> Option<Wait> {
    let w = procfs::wchan(pid)?;
    Some(match w.as_str() {
        // The kernel refuses to say where.
        "0" | "" => return None,
        "wait_woken" if (0..3).any(|fd| procfs::names_tty(pid, fd, tty)) => Wait::ReadsTty,
        "poll_schedule_timeout" | "do_select" | "core_sys_select" | "ep_poll" | "do_epoll_wait" => {
            Wait::PollsTimed
        }
        "hrtimer_nanosleep" | "do_nanosleep" => Wait::Sleeps,
        _ => Wait::Elsewhere,
    })
}

/// What one blocked call waits for; `on_tty(fd)`: descriptor `fd` is the
/// terminal.
fn of_call(sc: procfs::Syscall, on_tty: impl Fn(u64) -> bool) -> Wait {
    let forever_if = |none: bool| {
        if none {
            Wait::PollsForever
        } else {
            Wait::PollsTimed
        }
    };
    // A timeout given as a number of milliseconds: -1 (any negative) is
    // none.
    let ms_none = |i: usize| sc.arg(i).is_some_and(|t| (t as i32) < 0);
    // A timeout given as a pointer: none when it is null.
    let ptr_none = |i: usize| sc.arg(i) == Some(0);
    match Call::of(sc.nr) {
        Call::Read if sc.arg(0).is_some_and(on_tty) => Wait::ReadsTty,
        Call::Read => Wait::Elsewhere,
        Call::Poll => forever_if(ms_none(2)),
        Call::PPoll => forever_if(ptr_none(2)),
        Call::Select => forever_if(ptr_none(4)),
        Call::EpollWait => forever_if(ms_none(3)),
        Call::EpollWait2 => forever_if(ptr_none(3)),
        Call::Sleep => Wait::Sleeps,
        Call::Other => Wait::Elsewhere,
    }
}

/// The calls that matter here, by number (the numbers differ between
/// architectures; arm64 has only the newer calls). Elsewhere than Linux
/// every call is `Other`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Call {
    Read,
    Poll,
    PPoll,
    Select,
    EpollWait,
    EpollWait2,
    Sleep,
    Other,
}

impl Call {
    #[cfg(target_os = "linux")]
    fn of(nr: i64) -> Call {
        #[cfg(target_arch = "x86_64")]
        {
            match nr {
                libc::SYS_poll => return Call::Poll,
                libc::SYS_select => return Call::Select,
                libc::SYS_epoll_wait => return Call::EpollWait,
                libc::SYS_nanosleep => return Call::Sleep,
                _ => {}
            }
        }
        match nr {
            libc::SYS_read | libc::SYS_readv => Call::Read,
            libc::SYS_ppoll => Call::PPoll,
            libc::SYS_pselect6 => Call::Select,
            libc::SYS_epoll_pwait => Call::EpollWait,
            libc::SYS_epoll_pwait2 => Call::EpollWait2,
            libc::SYS_clock_nanosleep => Call::Sleep,
            _ => Call::Other,
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn of(_nr: i64) -> Call {
        Call::Other
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn call(line: &str) -> Wait {
        of_call(procfs::parse_syscall(line).unwrap(), |fd| fd == 3)
    }

    #[test]
    fn a_key_a_timer_or_something_else() {
        let r = libc::SYS_read;
        assert_eq!(call(&format!("{r} 0x3 0x7f 0x1")), Wait::ReadsTty);
        assert_eq!(call(&format!("{r} 0x5 0x7f 0x1")), Wait::Elsewhere);
        let ps = libc::SYS_pselect6;
        // A REPL's readline: no timeout. top: a second.
        assert_eq!(
            call(&format!("{ps} 0x1 0x7ffd 0x0 0x0 0x0 0x7ffe")),
            Wait::PollsForever
        );
        assert_eq!(
            call(&format!("{ps} 0x1 0x7ffd 0x0 0x0 0x7ffc 0x7ffe")),
            Wait::PollsTimed
        );
        let pp = libc::SYS_ppoll;
        assert_eq!(
            call(&format!("{pp} 0x7ffd 0x1 0x0 0x0")),
            Wait::PollsForever
        );
        let ew = libc::SYS_epoll_pwait;
        assert_eq!(
            call(&format!("{ew} 0x4 0x7ffd 0x400 0xffffffff 0x0")),
            Wait::PollsForever
        );
        assert_eq!(
            call(&format!("{ew} 0x4 0x7ffd 0x400 0x5dc 0x0")),
            Wait::PollsTimed
        );
        let sl = libc::SYS_clock_nanosleep;
        assert_eq!(call(&format!("{sl} 0x1 0x0 0x7ffd 0x7ffd")), Wait::Sleeps);
        assert_eq!(
            call("61 0xffffffffffffffff 0x7ffd 0x0 0x0"),
            Wait::Elsewhere
        );
        assert!(Wait::ReadsTty > Wait::PollsForever && Wait::PollsTimed > Wait::Sleeps);
    }
}
