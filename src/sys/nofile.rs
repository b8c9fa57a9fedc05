//! The open-file limit of a process that watches many panes at once.
//!
//! Each pane watched costs a few descriptors (its stream's connection to
//! the hub, a pidfd); the usual soft limit is 1024 (macOS: 256) while the
//! hard limit is often far higher. A process that needs more raises its
//! own soft limit to the hard one, as Go's runtime does at start, and
//! gives every child it starts the limit it had (a program run from a
//! hook, a tmux client, the hub) by restoring it between fork and exec.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The soft limit before [`raise`], plus one (0: never raised).
static ORIGINAL: AtomicU64 = AtomicU64::new(0);

/// The soft and hard limits now.
#[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
pub fn limits() -> Option<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0)
        .then_some((r.rlim_cur as u64, r.rlim_max as u64))
}

/// Raise the soft limit to the hard one (at most 1 << 20; macOS refuses
/// more than `OPEN_MAX`, and then the limit stays). Returns the soft limit
/// in force afterwards.
pub fn raise() -> Option<u64> {
    let (soft, hard) = limits()?;
    let want = hard.min(1 << 20);
    if want <= soft {
        return Some(soft);
    }
    let r = libc::rlimit {
        rlim_cur: want as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads one rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
        return Some(soft);
    }
    let _ = ORIGINAL.compare_exchange(0, soft + 1, Ordering::SeqCst, Ordering::SeqCst);
    Some(want)
}

/// Start `cmd` with the soft limit this process had before [`raise`] (no
/// change when it never raised it).
pub fn original_for_child(cmd: &mut Command) {
    let original = ORIGINAL.load(Ordering::SeqCst);
    if original == 0 {
        return;
    }
    let soft = original - 1;
    use std::os::unix::process::CommandExt;
    // SAFETY: getrlimit and setrlimit are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 {
                r.rlim_cur = soft as libc::rlim_t;
                libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_gets_the_limit_from_before_the_raise() {
        let (soft, hard) = limits().unwrap();
        let after = raise().unwrap();
        assert!(after >= soft && after <= hard.max(soft));
        let mut c = Command::new("sh");
        c.args(["-c", "ulimit -n"]);
        original_for_child(&mut c);
        let out = c.output().unwrap();
        let child: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(child, soft);
    }
}
