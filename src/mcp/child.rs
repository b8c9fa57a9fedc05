//! One tool call is one `tmux-wait` child process: the CLI, run with
//! `--json`. A crash or a runaway regex in one call cannot take the server
//! down, calls run side by side, and waits on a session share its hub
//! exactly as CLI waits do.
//!
//! Each child runs in a process group of its own (a Ctrl-C meant for the
//! server's client never reaches it; the group can be swept) and gets
//! SIGTERM when the server dies, even by SIGKILL (`PR_SET_PDEATHSIG`). To
//! end one early it is sent SIGTERM, on which the CLI cleans up and exits
//! 143; if it is still there after `GRACE`, its group gets SIGKILL.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a child has to clean up after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(2);

/// At most this much of a child's stdout is kept (one JSON object).
const MAX_STDOUT: u64 = 16 * 1024 * 1024;
/// At most this many of a child's log lines are kept.
const MAX_LOG_LINES: usize = 50;

/// A running child.
pub struct Running {
    child: tokio::process::Child,
    pid: i32,
    reaped: bool,
    out: Arc<Mutex<Vec<u8>>>,
    log: Arc<Mutex<Vec<String>>>,
    readers: Vec<JoinHandle<()>>,
    /// The last pane line named by the child's progress lines.
    pub last_line: watch::Receiver<Option<String>>,
}

/// What became of a child.
pub struct Finished {
    pub stdout: Vec<u8>,
    /// Its stderr lines other than progress lines.
    pub log: Vec<String>,
}

/// Start `exe ARGS` with the environment of the server, less `TMUX_PANE`
/// (a call without a target means tmux's current pane, not the pane the
/// server happened to be started from), plus `TMUX_WAIT_PROGRESS=1`.
pub fn spawn(exe: &Path, args: &[OsString], cwd: Option<&PathBuf>) -> std::io::Result<Running> {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(args)
        .env_remove("TMUX_PANE")
        .env(super::progress::ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: prctl and getppid are async-signal-safe; nothing else runs.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The server died before the flag was set: do not start.
                if libc::getppid() as u32 != parent {
                    return Err(std::io::Error::other("tmux-wait mcp is gone"));
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn()?;
    let pid = child.id().map(|p| p as i32).unwrap_or(0);
    let out = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::new(Mutex::new(Vec::new()));
    let (tx, last_line) = watch::channel(None);
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let out = out.clone();
        readers.push(tokio::spawn(async move {
            let mut buf = Vec::new();
            let _ = stdout.take(MAX_STDOUT).read_to_end(&mut buf).await;
            if let Ok(mut o) = out.lock() {
                *o = buf;
            }
        }));
    }
    if let Some(stderr) = child.stderr.take() {
        let log = log.clone();
        readers.push(tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(p) = super::progress::parse(&line) {
                    if p.last_line.is_some() {
                        let _ = tx.send(p.last_line);
                    }
                } else if let Ok(mut l) = log.lock()
                    && l.len() < MAX_LOG_LINES
                {
                    l.push(line);
                }
            }
        }));
    }
    Ok(Running {
        child,
        pid,
        reaped: false,
        out,
        log,
        readers,
        last_line,
    })
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Wait for the child to exit (cancellation-safe).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let st = self.child.wait().await;
        if st.is_ok() {
            self.reaped = true;
        }
        st
    }

    /// SIGTERM, then SIGKILL to its group after `GRACE`; returns once it
    /// is reaped.
    pub async fn terminate(&mut self) {
        if self.reaped || self.pid <= 0 {
            return;
        }
        // SAFETY: plain syscalls on a child we have not reaped yet (its
        // pid cannot have been reused).
        unsafe {
            libc::kill(self.pid, libc::SIGTERM);
        }
        if tokio::time::timeout(GRACE, self.child.wait())
            .await
            .is_err()
        {
            super::log(&format!(
                "child {} did not end {} s after SIGTERM: killing its process group",
                self.pid,
                GRACE.as_secs()
            ));
            unsafe {
                libc::killpg(self.pid, libc::SIGKILL);
            }
            let _ = self.child.wait().await;
        }
        self.reaped = true;
    }

    /// Its output, once it has exited (or been ended).
    pub async fn finish(mut self) -> Finished {
        // The pipes close with the child; a grandchild that kept one open
        // does not hold the reply up for long.
        for r in std::mem::take(&mut self.readers) {
            let abort = r.abort_handle();
            if tokio::time::timeout(Duration::from_secs(1), r)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        let stdout = self
            .out
            .lock()
            .map(|mut o| std::mem::take(&mut *o))
            .unwrap_or_default();
        let log = self
            .log
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        Finished { stdout, log }
    }
}

impl Drop for Running {
    /// A call dropped without ending its child (a bug): the child still
    /// gets SIGTERM, and tokio reaps it in the background.
    fn drop(&mut self) {
        if !self.reaped && self.pid > 0 {
            unsafe {
                libc::kill(self.pid, libc::SIGTERM);
            }
        }
    }
}
