//! The open-files limit (`RLIMIT_NOFILE`): raised where one process holds
//! descriptors for many waits (the hub, the MCP server), as Go's runtime
//! does for every program, and given back as it was to every program
//! tmux-wait starts, so none of them inherits ours.
//!
//! Why raise the soft limit only to the hard one: the soft limit is the
//! user's default for programs that use `select(2)` (which breaks past
//! 1024), the hard one what they allow at all. tmux-wait uses `poll(2)`,
//! so for it the soft limit is only a trap: 600 waits need 1200
//! descriptors in the hub, and the usual soft limit on Linux is 1024.

use std::process::Command;
use std::sync::OnceLock;

/// The limit this process started with, once it raised its own.
static ORIGINAL: OnceLock<libc::rlimit> = OnceLock::new();

fn get() -> Option<libc::rlimit> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0).then_some(r)
}

/// Raise this process's soft open-files limit as far as the hard limit
/// allows, remembering the old one for the programs it starts. Returns
/// the soft limit now in force.
pub fn raise() -> u64 {
    let Some(old) = get() else {
        return crate::error::open_files_limit();
    };
    // macOS refuses more than OPEN_MAX (10240) whatever the hard limit says
    // (setrlimit(2)); Go's runtime caps it the same way.
    let want = if cfg!(target_os = "macos") {
        old.rlim_max.min(10240)
    } else {
        old.rlim_max
    };
    if want > old.rlim_cur {
        let new = libc::rlimit {
            rlim_cur: want,
            rlim_max: old.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            let _ = ORIGINAL.set(old);
        }
    }
    crate::error::open_files_limit()
}

/// Give a child the limit this process started with (a no-op unless
/// [`raise`] raised it): set between fork and exec.
pub fn restore_in_child(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    if let Some(hook) = restore_hook() {
        // SAFETY: the hook makes one async-signal-safe call (setrlimit).
        unsafe {
            cmd.pre_exec(hook);
        }
    }
}

/// The `pre_exec` hook that gives a child the limit this process started
/// with, for command builders other than std's (tokio's); None when this
/// process never raised it.
pub fn restore_hook() -> Option<impl FnMut() -> std::io::Result<()> + Send + Sync + 'static> {
    let old = *ORIGINAL.get()?;
    Some(move || {
        // SAFETY: setrlimit is async-signal-safe and reads one rlimit.
        // A failure leaves the child our limit, which is only higher.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
        Ok(())
    })
}

/// How many descriptors this process has open (below `upto`): for the
/// hub's count of what it holds at the start. Read from `/proc/self/fd`
/// where there is one (one directory read, where asking for each of 4096
/// descriptors took milliseconds of the hub's start), else counted by
/// asking for each.
pub fn count_open(upto: i32) -> usize {
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        let fds: Vec<i32> = dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        // The directory's own descriptor is listed too, and is closed now.
        let open = fds.iter().filter(|&&fd| fd < upto && is_open(fd)).count();
        if !fds.is_empty() {
            return open;
        }
    }
    (0..upto).filter(|&fd| is_open(fd)).count()
}

fn is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_gets_the_limit_back() {
        // The test process may have any limit; lower our soft one first so
        // that raising it shows, then check a child sees the lowered one.
        let before = get().unwrap();
        if before.rlim_max < 512 || before.rlim_max == libc::RLIM_INFINITY {
            return;
        }
        let low = libc::rlimit {
            rlim_cur: 300,
            rlim_max: before.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) }, 0);
        let now = raise();
        assert!(now > 300, "{now}");
        let mut sh = Command::new("sh");
        sh.args(["-c", "ulimit -Sn"]);
        restore_in_child(&mut sh);
        let out = sh.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "300");
        // SAFETY: as above, putting the test process's limit back.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &before) };
    }
}
