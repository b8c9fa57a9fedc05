//! System helpers below everything else: starting this program again,
//! detached.

use crate::error::{Error, Result};
use std::ffi::OsString;

/// Start `tmux-wait ARGS...` in its own session, detached from us, its
/// standard streams closed: it outlives this process and ends by itself.
/// Returns its pid; `what` names it in the error.
pub fn spawn_self_detached(args: &[OsString], what: &str) -> Result<u32> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find tmux-wait itself", e))?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and takes no arguments.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn()
        .map(|c| c.id())
        .map_err(|e| Error::io(&format!("cannot start {what}"), e))
}
