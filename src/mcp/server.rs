//! The MCP server: the rmcp handler, each call's life (child, progress,
//! cancellation), and the server's own end (stdin closed or a signal):
//! every running call's child is ended, then this connection's cursors are
//! removed from the panes, so nothing is left behind.

use super::child;
use super::progress;
use super::tools::{self, CallError, Context, Prepared, ToolKind};
use crate::tmux::Socket;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A tmux server (its `-L`/`-S`) and a target on it.
type TurnKey = (Vec<OsString>, String);

/// What every call of this connection shares.
struct Shared {
    exe: PathBuf,
    /// The server's `-L`/`-S`.
    socket: Vec<OsString>,
    /// This connection's cursor: `mcp-` and 16 random hex digits.
    cursor: String,
    ceiling: Option<f64>,
    /// Set once the server is ending: running calls end their children.
    shutdown: watch::Sender<bool>,
    /// Calls running now.
    active: watch::Sender<usize>,
    /// The servers (their `-L`/`-S`) where a call used the cursor.
    cursor_sockets: Mutex<BTreeSet<Vec<OsString>>>,
    /// One turn at a time per server and target for the cursor's users.
    turns: Mutex<HashMap<TurnKey, Arc<tokio::sync::Mutex<()>>>>,
}

impl Shared {
    fn end(&self) {
        self.shutdown.send_replace(true);
    }

    fn ending(&self) -> bool {
        *self.shutdown.borrow()
    }

    fn turn(&self, p: &Prepared) -> Arc<tokio::sync::Mutex<()>> {
        let key = (p.socket.clone(), p.target.clone().unwrap_or_default());
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        // Forget the turns nobody holds or waits for.
        turns.retain(|_, m| Arc::strong_count(m) > 1);
        turns.entry(key).or_default().clone()
    }
}

/// Counts a call as running while it lives (also when it unwinds).
struct Active(Arc<Shared>);

impl Active {
    fn new(s: &Arc<Shared>) -> Self {
        s.active.send_modify(|n| *n += 1);
        Active(s.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[derive(Clone)]
struct Server {
    shared: Arc<Shared>,
}

const INSTRUCTIONS: &str = "tmux-wait: exact waits on tmux panes. wait_for_text wakes within about a millisecond of new output matching (never on old scrollback or typed echo); wait_for_channel / signal_channel synchronise on tmux wait-for channels; run_command types a command into a pane's shell and returns its exit status and only its output; wait returns only the output this connection has not seen yet, then the exit status. Send a progress token to get progress notifications every second.";

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tmux-wait", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::all()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(kind) = ToolKind::from_name(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}' (tools: wait_for_text, wait_for_channel, signal_channel, run_command, wait)",
                    request.name.escape_debug()
                ),
                None,
            ));
        };
        let args = request.arguments.unwrap_or_default();
        let _active = Active::new(&self.shared);
        Ok(self.call(kind, args, context).await.into())
    }
}

impl Server {
    async fn call(
        &self,
        kind: ToolKind,
        args: rmcp::model::JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let s = &self.shared;
        if s.ending() {
            return CallError {
                kind: "cancelled",
                message: "tmux-wait mcp is ending (its input closed, or a signal)".into(),
            }
            .into_result();
        }
        let prepared = match tools::prepare(
            kind,
            args,
            &Context {
                socket: &s.socket,
                cursor: &s.cursor,
                ceiling: s.ceiling,
            },
        ) {
            Ok(p) => p,
            Err(e) => return e.into_result(),
        };
        let mut command_line = prepared.command_line();
        if let Some(rel) = &prepared.relative_save_to {
            match pane_directory(&prepared).await {
                Ok(dir) => {
                    command_line.push(format!("--save-to={}", dir.join(rel).display()).into())
                }
                Err(e) => return e.into_result(),
            }
        }
        // (A pane on another host keeps its cursor there.)
        if prepared.uses_cursor
            && prepared.host.is_none()
            && let Ok(mut set) = s.cursor_sockets.lock()
        {
            set.insert(prepared.socket.clone());
        }
        // Calls that read and move the connection's cursor on one pane
        // take turns: two at once would both show the same lines.
        let _turn = if prepared.uses_cursor {
            let lock = s.turn(&prepared);
            let ended = ended(s.shutdown.subscribe());
            tokio::select! {
                g = lock.lock_owned() => Some(g),
                _ = ctx.ct.cancelled() => return tools::cancelled(kind, None).0,
                _ = ended => return tools::cancelled(kind, None).0,
            }
        } else {
            None
        };
        let mut running = match child::spawn(&s.exe, &command_line, None) {
            Ok(r) => r,
            Err(e) => {
                return CallError {
                    kind: "io_error",
                    message: format!("cannot start tmux-wait: {e}"),
                }
                .into_result();
            }
        };

        let start = Instant::now();
        let token = ctx.meta.get_progress_token();
        let mut tick = tokio::time::interval_at(
            tokio::time::Instant::now() + Duration::from_secs(1),
            Duration::from_secs(1),
        );
        // A child that outlives its own timeout by a minute is a bug.
        let watchdog = tokio::time::sleep(Duration::from_secs_f64(prepared.timeout + 60.0));
        tokio::pin!(watchdog);
        let shutdown = ended(s.shutdown.subscribe());
        tokio::pin!(shutdown);
        let what = describe(&prepared);

        enum End {
            Printed,
            Exited(Option<std::process::ExitStatus>),
            Cancelled,
            Watchdog,
        }
        let printed = running.result_printed();
        tokio::pin!(printed);
        let end = loop {
            tokio::select! {
                biased;
                _ = &mut printed => break End::Printed,
                st = running.wait() => break End::Exited(st.ok()),
                _ = ctx.ct.cancelled() => break End::Cancelled,
                _ = &mut shutdown => break End::Cancelled,
                _ = &mut watchdog => break End::Watchdog,
                _ = tick.tick(), if token.is_some() => {
                    let elapsed = (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
                    let last = running.last_line.borrow().clone();
                    let total = (prepared.timeout > 0.0).then_some(prepared.timeout);
                    let mut p = ProgressNotificationParam::new(token.clone().expect("token"), elapsed)
                        .with_message(progress::message(&what, elapsed, total, last.as_deref()));
                    if let Some(t) = total {
                        p = p.with_total(t);
                    }
                    let _ = ctx.peer.notify_progress(p).await;
                }
            }
        };
        match end {
            End::Printed => {
                // Answer now; the child only has to exit, which a task of
                // its own sees to (counted as running, so the server's
                // end waits for it).
                let mut fin = running.output_so_far();
                qualify(&prepared, &mut fin);
                let active = Active::new(s);
                tokio::spawn(async move {
                    let _active = active;
                    if tokio::time::timeout(child::GRACE, running.wait())
                        .await
                        .is_err()
                    {
                        super::log(&format!(
                            "child {} printed its result but did not exit: ending it",
                            running.pid()
                        ));
                        running.terminate().await;
                    }
                    let _ = running.finish().await;
                });
                // A result is a whole JSON object; the exit code adds
                // nothing to it.
                tools::result(kind, None, None, &fin.stdout, &fin.log)
            }
            End::Exited(status) => {
                use std::os::unix::process::ExitStatusExt;
                let code = status.and_then(|s| s.code());
                let signal = status.and_then(|s| s.signal());
                let mut fin = running.finish().await;
                qualify(&prepared, &mut fin);
                tools::result(kind, code, signal, &fin.stdout, &fin.log)
            }
            End::Cancelled => {
                let pid = running.pid();
                running.terminate().await;
                let _ = running.finish().await;
                let pane = prepared.target.as_deref().filter(|t| t.starts_with('%'));
                let (result, note) = tools::cancelled(kind, pane);
                super::log(&format!(
                    "{} cancelled after {:.3} s (child {pid} ended){}",
                    kind.name(),
                    start.elapsed().as_secs_f64(),
                    note.map(|n| format!(": {n}")).unwrap_or_default()
                ));
                result
            }
            End::Watchdog => {
                running.terminate().await;
                let fin = running.finish().await;
                super::log(&format!("{} did not end by itself: ended", kind.name()));
                CallError {
                    kind: "internal",
                    message: format!(
                        "tmux-wait did not end {} s after its timeout and was stopped{}",
                        60,
                        fin.log
                            .last()
                            .map(|l| format!(" ({l})"))
                            .unwrap_or_default()
                    ),
                }
                .into_result()
            }
        }
    }
}

/// A call on another host's pane: its result names the pane as the
/// tools do (`HOST/%N`).
fn qualify(p: &Prepared, fin: &mut child::Finished) {
    if let Some(h) = &p.host {
        fin.stdout = tools::qualify_output(&String::from_utf8_lossy(&fin.stdout), h).into_bytes();
    }
}

/// Returns once the server is ending.
async fn ended(mut rx: watch::Receiver<bool>) {
    loop {
        let done = *rx.borrow_and_update();
        if done {
            return;
        }
        if rx.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// What a call waits for, for progress messages.
fn describe(p: &Prepared) -> String {
    let target = match p.target.as_deref() {
        None => "the current pane".to_owned(),
        Some(t) if t.starts_with('=') => {
            format!(
                "session {}",
                t.trim_start_matches('=').trim_end_matches(':')
            )
        }
        Some(t) if t.starts_with('$') => format!("session {}", t.trim_end_matches(':')),
        Some(t) if t.starts_with('@') => format!("window {t}"),
        Some(t) => t.to_owned(),
    };
    match p.kind {
        ToolKind::WaitForText => format!("waiting for text in {target}"),
        ToolKind::WaitForChannel => "waiting for the channel".into(),
        ToolKind::SignalChannel => "signalling".into(),
        ToolKind::RunCommand => format!("running in {target}"),
        ToolKind::Wait => format!("waiting for output in {target}"),
        ToolKind::WaitForAttention => match p.target.as_deref() {
            Some(_) if p.target.as_deref().is_some_and(|t| t.starts_with('%')) => {
                "waiting for a pane that needs someone".into()
            }
            Some(_) => format!("waiting for a pane of {target} that needs someone"),
            None => "waiting for a pane that needs someone".into(),
        },
        ToolKind::PaneStates => "looking at the panes".into(),
    }
}

/// Run `tmux ARGS` on a server, bounded; its stdout.
async fn tmux(socket: &[OsString], args: &[&str]) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new(crate::tmux::tmux_binary());
    cmd.args(socket)
        .args(args)
        .env_remove("TMUX_PANE")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(hook) = crate::sys::fds::restore_hook() {
        // SAFETY: the hook makes one async-signal-safe call (setrlimit).
        unsafe {
            cmd.pre_exec(hook);
        }
    }
    let out = match tokio::time::timeout(Duration::from_secs(5), cmd.output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return Err(format!("cannot run tmux: {e}")),
        Err(_) => return Err("tmux did not answer within 5 s".into()),
    };
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The current directory of a call's pane (for a relative `save_to`).
async fn pane_directory(p: &Prepared) -> Result<PathBuf, CallError> {
    let mut args = vec!["display-message", "-p"];
    if let Some(t) = &p.target {
        args.extend(["-t", t.as_str()]);
    }
    args.push("#{pane_current_path}");
    match tmux(&p.socket, &args).await {
        Ok(d) if d.trim().starts_with('/') => Ok(PathBuf::from(d.trim_end_matches('\n'))),
        Ok(_) => Err(CallError {
            kind: "tmux_error",
            message:
                "save_to: tmux does not know the pane's current directory: give an absolute path"
                    .into(),
        }),
        Err(e) => Err(CallError {
            kind: "no_pane",
            message: format!("save_to: cannot find the pane's current directory: {e}"),
        }),
    }
}

/// Remove this connection's cursor option from every pane of the servers
/// it was used on.
async fn remove_cursors(shared: &Shared) {
    let sockets: Vec<Vec<OsString>> = shared
        .cursor_sockets
        .lock()
        .map(|s| s.iter().cloned().collect())
        .unwrap_or_default();
    let option = crate::cursor::option_name(&shared.cursor);
    for socket in sockets {
        let Ok(panes) = tmux(&socket, &["list-panes", "-a", "-F", "#{pane_id}"]).await else {
            continue; // the server is gone, and its panes with it
        };
        let panes: Vec<&str> = panes.lines().filter(|l| l.starts_with('%')).collect();
        for chunk in panes.chunks(100) {
            let mut args: Vec<&str> = Vec::new();
            for p in chunk {
                if !args.is_empty() {
                    args.push(";");
                }
                args.extend(["set-option", "-pqu", "-t", p, &option]);
            }
            if let Err(e) = tmux(&socket, &args).await {
                super::log(&format!("cannot remove cursor {option}: {e}"));
            }
        }
    }
}

async fn signalled() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => libc::SIGTERM,
        _ = int.recv() => libc::SIGINT,
        _ = hup.recv() => libc::SIGHUP,
    }
}

/// Serve until stdin closes (exit 0) or a signal (128 + it).
pub async fn serve(socket: Socket) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            super::log(&format!("cannot find tmux-wait itself: {e}"));
            return crate::error::exit::ERROR;
        }
    };
    let ceiling = match crate::config::ceiling_from_env() {
        Ok(c) => c.map(|d| d.as_secs_f64()),
        Err(e) => {
            super::log(&e.message);
            return crate::error::exit::ERROR;
        }
    };
    let (shutdown, _) = watch::channel(false);
    let (active, _) = watch::channel(0usize);
    let shared = Arc::new(Shared {
        exe,
        socket: socket.args(),
        cursor: format!("mcp-{}", crate::state::random_id()),
        ceiling,
        shutdown,
        active,
        cursor_sockets: Mutex::new(BTreeSet::new()),
        turns: Mutex::new(HashMap::new()),
    });
    let eof = shared.clone();
    let (stdin, stdout) = super::transport::stdio();
    let transport = super::transport::LineTransport::new(stdin, stdout, move || eof.end());
    let server = Server {
        shared: shared.clone(),
    };
    let signal = signalled();
    tokio::pin!(signal);
    let code = tokio::select! {
        r = server.serve(transport) => match r {
            Ok(running) => {
                let ct = running.cancellation_token();
                tokio::select! {
                    _ = running.waiting() => 0,
                    sig = &mut signal => {
                        shared.end();
                        ct.cancel();
                        128 + sig
                    }
                }
            }
            // stdin closed before a session began, or a client that does
            // not speak MCP: nothing to clean up.
            Err(e) => {
                super::log(&format!("no session: {e}"));
                0
            }
        },
        sig = &mut signal => 128 + sig,
    };
    shared.end();
    // Every call ends its child (SIGTERM, then SIGKILL after the grace).
    let mut active = shared.active.subscribe();
    let bound = child::GRACE + Duration::from_secs(3);
    if tokio::time::timeout(bound, active.wait_for(|n| *n == 0))
        .await
        .is_err()
    {
        super::log("calls still running at exit");
    }
    remove_cursors(&shared).await;
    code
}
