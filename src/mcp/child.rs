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
    /// Set once the child has printed a whole JSON object on stdout.
    result: watch::Receiver<bool>,
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
    if !utf8_locale() {
        // MCP clients often start servers with a minimal environment (no
        // LANG). tmux then writes every control character of its output
        // as `_`, and the CLI cannot read the tab-separated answers it
        // asks for; tmux decides from these variables alone.
        cmd.env("LC_ALL", "C.UTF-8");
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
    // The open-files limit the server started with, not the one it raised.
    if let Some(hook) = crate::sys::fds::restore_hook() {
        // SAFETY: the hook makes one async-signal-safe call (setrlimit).
        unsafe {
            cmd.pre_exec(hook);
        }
    }
    let mut child = cmd.spawn()?;
    let pid = child.id().map(|p| p as i32).unwrap_or(0);
    let out = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::new(Mutex::new(Vec::new()));
    let (tx, last_line) = watch::channel(None);
    let (result_tx, result) = watch::channel(false);
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let out = out.clone();
        readers.push(tokio::spawn(async move {
            let mut stdout = stdout.take(MAX_STDOUT);
            let mut chunk = vec![0u8; 64 * 1024];
            let mut told = false;
            while let Ok(n) = stdout.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let Ok(mut o) = out.lock() else { break };
                o.extend_from_slice(&chunk[..n]);
                // The CLI prints its one JSON object once its work is
                // done (its clients ended), then exits: the answer need
                // not wait for the exit.
                if !told && o.ends_with(b"\n") && is_object(&o) {
                    told = true;
                    let _ = result_tx.send(true);
                }
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
        result,
    })
}

fn is_object(out: &[u8]) -> bool {
    let s = String::from_utf8_lossy(out);
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| matches!(serde_json::from_str(l), Ok(serde_json::Value::Object(_))))
}

/// Whether tmux, started with this environment, takes its client for a
/// UTF-8 one (tmux's own test: the first of LC_ALL, LC_CTYPE, LANG that
/// is set names UTF-8).
fn utf8_locale() -> bool {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    var("LC_ALL")
        .or_else(|| var("LC_CTYPE"))
        .or_else(|| var("LANG"))
        .is_some_and(|v| {
            let v = v.to_ascii_uppercase();
            v.contains("UTF-8") || v.contains("UTF8")
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

    /// A future that returns once the child has printed its JSON object
    /// (never, if it does not: then its exit ends the call).
    pub fn result_printed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.result.clone();
        async move {
            loop {
                let printed = *rx.borrow_and_update();
                if printed {
                    return;
                }
                if rx.changed().await.is_err() {
                    return std::future::pending().await;
                }
            }
        }
    }

    /// What the child printed and logged so far.
    pub fn output_so_far(&self) -> Finished {
        Finished {
            stdout: self.out.lock().map(|o| o.clone()).unwrap_or_default(),
            log: self.log.lock().map(|l| l.clone()).unwrap_or_default(),
        }
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
