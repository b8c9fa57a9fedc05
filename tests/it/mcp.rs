//! `tmux-wait mcp` end to end: the SDK's own MCP client (rmcp, over the
//! server's stdin/stdout) against a private tmux server per test; raw
//! JSON-RPC lines where a real client would not send them (malformed
//! messages, closing stdin mid-call).

use crate::common::{DEADLINE, TestServer, unique};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam, Request,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Records the progress notifications it receives.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

/// `tmux-wait -S SOCKET mcp` as the test server's helpers run the CLI.
fn mcp_command(server: &TestServer, extra_env: &[(&str, &str)]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(crate::common::BIN);
    c.arg("-S").arg(&server.socket).arg("mcp");
    c.env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("TMUX_WAIT_MAX_SECONDS")
        .env_remove("XDG_RUNTIME_DIR")
        .env("TMPDIR", server.dir());
    for (k, v) in extra_env {
        c.env(k, v);
    }
    c
}

struct Mcp {
    client: RunningService<RoleClient, Recorder>,
    recorder: Recorder,
    pid: u32,
}

async fn connect(server: &TestServer) -> Mcp {
    connect_with(server, &[]).await
}

async fn connect_with(server: &TestServer, env: &[(&str, &str)]) -> Mcp {
    let transport = TokioChildProcess::new(mcp_command(server, env)).expect("spawn tmux-wait mcp");
    let pid = transport.id().expect("pid");
    let recorder = Recorder::default();
    let client = tokio::time::timeout(DEADLINE, recorder.clone().serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize");
    Mcp {
        client,
        recorder,
        pid,
    }
}

fn args(v: Value) -> rmcp::model::JsonObject {
    v.as_object().expect("object").clone()
}

impl Mcp {
    async fn call(&self, tool: &str, arguments: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments));
        tokio::time::timeout(DEADLINE, self.client.peer().call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("{tool} did not answer in time"))
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    }

    /// Close stdin and wait for the server to end.
    async fn close(self) {
        let _ = tokio::time::timeout(DEADLINE, self.client.cancel()).await;
    }
}

/// The structured result, checked against what the text content says.
fn structured(r: &CallToolResult) -> Value {
    let s = r.structured_content.clone().expect("structured content");
    let text = r.content[0].as_text().expect("text content").text.clone();
    let parsed: Value = serde_json::from_str(&text).expect("text is JSON");
    assert_eq!(parsed, s, "text and structured content differ");
    s
}

fn ok(r: &CallToolResult) -> Value {
    let s = structured(r);
    assert_eq!(r.is_error, Some(false), "{s}");
    s
}

fn err(r: &CallToolResult) -> Value {
    let s = structured(r);
    assert_eq!(r.is_error, Some(true), "{s}");
    s
}

/// Processes of this tmux server left besides the MCP server itself.
fn leftovers(server: &TestServer, mcp_pid: u32) -> Vec<String> {
    let me = format!("{mcp_pid}:");
    server
        .processes_using_socket()
        .into_iter()
        .filter(|p| !p.starts_with(&me))
        .collect()
}

/// Wait (with the deadline) until nothing of the server's is left but
/// the MCP server: no tmux-wait child, no `tmux wait-for`, no hub, and no
/// tmux client attached.
async fn wait_nothing_left(server: &TestServer, mcp_pid: u32) {
    let end = Instant::now() + DEADLINE;
    loop {
        let procs = leftovers(server, mcp_pid);
        let clients = server.tmux(&["list-clients", "-F", "#{client_name}"]);
        if procs.is_empty() && clients.trim().is_empty() {
            return;
        }
        if Instant::now() > end {
            panic!("left behind: {procs:?}; clients: {clients:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Children of `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(p) = name.parse::<u32>() else { continue };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if fields.get(1).and_then(|f| f.parse::<u32>().ok()) == Some(pid) && fields[0] != "Z" {
                out.push(p);
            }
        }
    }
    out
}

async fn wait_for_child(pid: u32, what: &str) -> u32 {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(c) = children_of(pid).first() {
            return *c;
        }
        assert!(Instant::now() < end, "{what}: no child appeared");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn cursor_options(server: &TestServer, pane: &str) -> Vec<String> {
    server
        .tmux(&["show-options", "-p", "-t", pane])
        .lines()
        .filter(|l| l.starts_with("@tmux-wait-cursor-mcp-"))
        .map(str::to_owned)
        .collect()
}

/// Print `marker` as output of the pane's shell every 100 ms (typed as
/// `echo MA''RK`, so the typed line never contains it) until `call`
/// returns. Once the wait is armed, the next one matches.
async fn print_until_done<F: std::future::Future<Output = CallToolResult>>(
    server: &TestServer,
    pane: &str,
    marker: &str,
    call: F,
) -> CallToolResult {
    let (head, tail) = marker.split_at(2);
    let typed = format!("echo {head}''{tail}");
    tokio::pin!(call);
    let end = Instant::now() + DEADLINE;
    loop {
        tokio::select! {
            r = &mut call => return r,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                assert!(Instant::now() < end, "never matched; pane shows:\n{}", server.capture(pane));
                server.type_line(pane, &typed);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_and_list_tools_with_schemas() {
    let server = TestServer::new();
    let mcp = connect(&server).await;
    let info = mcp.client.peer().peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("tmux-wait")
    );
    assert!(info.capabilities.tools.is_some());

    let tools = mcp
        .client
        .peer()
        .list_all_tools()
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "wait_for_text",
            "wait_for_channel",
            "signal_channel",
            "run_command",
            "wait",
            "wait_for_attention",
            "pane_states"
        ]
    );
    let params = |name: &str| -> Vec<String> {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        let mut v: Vec<String> = t.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        v.sort();
        v
    };
    // libtmux-mcp's parameters, name for name, and the session tool's
    // names beside them (session, timeout_s), and include_unseen.
    assert_eq!(
        params("wait_for_text"),
        [
            "include_unseen",
            "interval",
            "match_case",
            "pane_id",
            "patterns",
            "regex",
            "session",
            "session_id",
            "session_name",
            "socket_name",
            "stop",
            "timeout",
            "timeout_s",
            "window_id"
        ]
    );
    assert_eq!(
        params("wait_for_channel"),
        ["channel", "socket_name", "timeout"]
    );
    assert_eq!(
        params("signal_channel"),
        ["channel", "message", "socket_name", "status"]
    );
    assert_eq!(
        params("run_command"),
        [
            "command",
            "force",
            "max_lines",
            "pane_id",
            "session",
            "session_id",
            "session_name",
            "socket_name",
            "suppress_history",
            "timeout",
            "timeout_s",
            "window_id"
        ]
    );
    // The session `wait` tool's, plus libtmux-mcp's ways to name a pane,
    // timeout beside timeout_s, socket_name and until_finished.
    assert_eq!(
        params("wait"),
        [
            "last_lines",
            "max_lines",
            "pane_id",
            "save_to",
            "session",
            "session_id",
            "session_name",
            "show",
            "show_after",
            "socket_name",
            "timeout",
            "timeout_s",
            "until",
            "until_finished",
            "window_id"
        ]
    );
    for t in &tools {
        let out = t
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no outputSchema", t.name));
        assert_eq!(out["type"], "object");
        assert!(out["properties"]["error"].is_object(), "{}", t.name);
        assert!(t.description.as_ref().is_some_and(|d| d.len() > 50));
    }
    let text = tools.iter().find(|t| t.name == "wait_for_text").unwrap();
    assert_eq!(
        text.output_schema.as_ref().unwrap()["required"],
        json!([
            "found",
            "outcome",
            "pane_id",
            "elapsed_seconds",
            "effective_timeout"
        ])
    );
    mcp.close().await;
}

/// Many panes at once: the one that asks, the states of all, and a
/// timeout that says what each pane does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_attention_and_pane_states() {
    let server = TestServer::new();
    let other = server.split();
    server.type_line(&other, "python3 -c \"input('Ship it? ')\"");
    server.wait_until(&other, "the question", || {
        server.capture(&other).lines().any(|l| l == "Ship it?")
    });
    let mcp = connect(&server).await;
    let r = mcp
        .call(
            "wait_for_attention",
            json!({"pane_ids": [server.pane, other], "until": ["asking"], "now": true, "timeout": 10}),
        )
        .await;
    let v = ok(&r);
    assert_eq!(v["outcome"], "attention", "{v}");
    assert_eq!(v["pane_id"], json!(other), "{v}");
    assert_eq!(v["state"], "asking", "{v}");
    assert_eq!(v["question"], "Ship it?", "{v}");
    assert_eq!(
        v["pending"],
        json!([{"pane_id": server.pane, "state": "prompt"}]),
        "{v}"
    );
    let v = ok(&mcp
        .call("pane_states", json!({"session_name": "main"}))
        .await);
    let panes = v["panes"].as_array().unwrap();
    assert_eq!(panes.len(), 2, "{v}");
    assert!(
        panes
            .iter()
            .any(|p| p["pane_id"] == json!(other) && p["state"] == "asking"),
        "{v}"
    );
    let r = mcp
        .call(
            "wait_for_attention",
            json!({"pane_ids": [server.pane], "timeout": 0.5}),
        )
        .await;
    let v = err(&r);
    assert_eq!(v["error"]["kind"], "timeout", "{v}");
    assert_eq!(
        v["pending"],
        json!([{"pane_id": server.pane, "state": "prompt"}]),
        "{v}"
    );
    let v = err(&mcp
        .call("wait_for_attention", json!({"pane_ids": ["%999"]}))
        .await);
    assert_eq!(v["error"]["kind"], "no_pane", "{v}");
    server.type_line(&other, "");
    mcp.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_text_matches_new_output_and_reports_errors() {
    let server = TestServer::new();
    let mcp = connect(&server).await;
    let pane = server.pane.clone();
    let r = print_until_done(
        &server,
        &pane,
        "MARK_TEXT_1",
        mcp.call(
            "wait_for_text",
            json!({"patterns": ["nope", "mark_text_1"], "pane_id": pane, "timeout": 15}),
        ),
    )
    .await;
    let v = ok(&r);
    assert_eq!(v["found"], true);
    assert_eq!(v["outcome"], "matched");
    assert_eq!(v["matched_index"], 1);
    assert_eq!(v["matched_lines"], json!(["MARK_TEXT_1"]));
    assert_eq!(v["pane_id"], json!(pane));
    assert_eq!(v["effective_timeout"], 15.0);

    // The session's active pane, by name.
    let r = print_until_done(
        &server,
        &pane,
        "MARK_TEXT_2",
        mcp.call(
            "wait_for_text",
            json!({"patterns": ["MARK_TEXT_2"], "match_case": true, "session_name": "main"}),
        ),
    )
    .await;
    assert_eq!(ok(&r)["pane_id"], json!(pane));

    // A stop pattern is a tool error carrying the whole result.
    let r = print_until_done(
        &server,
        &pane,
        "FAILED_3",
        mcp.call(
            "wait_for_text",
            json!({"patterns": ["never"], "stop": ["failed_\\d"], "regex": true, "pane_id": pane}),
        ),
    )
    .await;
    let v = err(&r);
    assert_eq!(v["outcome"], "stopped");
    assert_eq!(v["error"]["kind"], "stopped");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("FAILED_3"),
        "{v}"
    );

    // A timeout.
    let r = mcp
        .call(
            "wait_for_text",
            json!({"patterns": ["never"], "pane_id": pane, "timeout": 0.3}),
        )
        .await;
    let v = err(&r);
    assert_eq!(
        (v["outcome"].as_str(), v["error"]["kind"].as_str()),
        (Some("timeout"), Some("timeout"))
    );
    assert_eq!(v["effective_timeout"], 0.3);

    // Errors of the CLI, kind and message.
    for (arguments, kind) in [
        (json!({"pane_id": "%999", "timeout": 1}), "no_pane"),
        (
            json!({"patterns": ["("], "regex": true, "pane_id": pane}),
            "invalid_regex",
        ),
        (json!({"session_name": "nosuchsession"}), "no_pane"),
        (json!({"pane_id": "main"}), "usage"),
        (json!({"timeout": "soon"}), "usage"),
        (json!({"pane": "%1"}), "usage"),
    ] {
        let v = err(&mcp.call("wait_for_text", arguments.clone()).await);
        assert_eq!(v["error"]["kind"], kind, "{arguments} -> {v}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty());
    }
    mcp.close().await;
    server.wait_no_helpers();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_echo_is_not_matched() {
    let server = TestServer::new();
    let mcp = Arc::new(connect(&server).await);
    let pane = server.pane.clone();
    let m = mcp.clone();
    let p = pane.clone();
    let call = tokio::spawn(async move {
        m.call(
            "wait_for_text",
            json!({"patterns": ["TYPED_ONLY_9"], "pane_id": p, "timeout": 2.5}),
        )
        .await
    });
    // The wait is armed within milliseconds; type the pattern at the
    // prompt (never Enter) again and again over most of its timeout.
    let end = Instant::now() + Duration::from_millis(1800);
    while Instant::now() < end {
        server.tmux(&["send-keys", "-t", &pane, "-l", "TYPED_ONLY_9"]);
        tokio::time::sleep(Duration::from_millis(150)).await;
        server.tmux(&["send-keys", "-t", &pane, "C-u"]);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.tmux(&["send-keys", "-t", &pane, "-l", "TYPED_ONLY_9"]);
    let r = call.await.unwrap();
    let v = err(&r);
    assert_eq!(v["outcome"], "timeout", "{v}");
    assert_eq!(v["found"], false);
    assert!(server.capture(&pane).contains("TYPED_ONLY_9"));
    server.tmux(&["send-keys", "-t", &pane, "C-u"]);
    Arc::try_unwrap(mcp).ok().unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_wait_and_signal() {
    let server = TestServer::new();
    let mcp = Arc::new(connect(&server).await);
    let ch = unique("ch").replace('-', "_");
    let m = mcp.clone();
    let c = ch.clone();
    let waiting = tokio::spawn(async move {
        m.call("wait_for_channel", json!({"channel": c, "timeout": 15}))
            .await
    });
    let r = mcp
        .call(
            "signal_channel",
            json!({"channel": ch, "status": 3, "message": "2 tests failed"}),
        )
        .await;
    assert_eq!(
        ok(&r),
        json!({"channel": ch, "status": 3, "message": "2 tests failed"})
    );
    let v = ok(&waiting.await.unwrap());
    assert_eq!(v["channel"], json!(ch));
    assert_eq!(v["outcome"], "signalled");
    assert_eq!(v["status"], 3);
    assert_eq!(v["message"], "2 tests failed");
    assert_eq!(v["effective_timeout"], 15.0);

    // A plain signal, then a timeout, then bad names.
    let r = mcp.call("signal_channel", json!({"channel": ch})).await;
    assert_eq!(ok(&r)["status"], Value::Null);
    let v = ok(&mcp
        .call("wait_for_channel", json!({"channel": ch, "timeout": 5}))
        .await);
    assert_eq!(
        (v["status"].clone(), v["message"].clone()),
        (Value::Null, Value::Null)
    );
    let v = err(&mcp
        .call("wait_for_channel", json!({"channel": ch, "timeout": 0.2}))
        .await);
    assert_eq!(v["error"]["kind"], "timeout");
    assert_eq!(v["effective_timeout"], 0.2);
    for name in ["bad name", "a/b", ""] {
        let v = err(&mcp.call("wait_for_channel", json!({"channel": name})).await);
        assert_eq!(v["error"]["kind"], "invalid_channel", "{name:?}: {v}");
        let v = err(&mcp.call("signal_channel", json!({"channel": name})).await);
        assert_eq!(v["error"]["kind"], "invalid_channel", "{name:?}: {v}");
    }
    let mcp = Arc::try_unwrap(mcp).ok().unwrap();
    wait_nothing_left(&server, mcp.pid).await;
    mcp.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_command_then_wait_for_the_rest() {
    let server = TestServer::new();
    let mcp = connect(&server).await;
    let pane = server.pane.clone();
    let v = ok(&mcp
        .call(
            "run_command",
            json!({"command": "echo hi; printf 'a\\nb\\n'; false", "pane_id": pane}),
        )
        .await);
    assert_eq!(v["exit_status"], 1);
    assert_eq!(v["output"], json!(["hi", "a", "b"]));
    assert_eq!(v["timed_out"], false);
    assert!(v["cursor"].as_str().unwrap().starts_with("mcp-"));

    // `cd` persists: the command runs in the pane's shell.
    let v = ok(&mcp
        .call(
            "run_command",
            json!({"command": "cd /tmp", "session_name": "main"}),
        )
        .await);
    assert_eq!(v["exit_status"], 0);
    let v = ok(&mcp
        .call("run_command", json!({"command": "pwd", "pane_id": pane}))
        .await);
    assert_eq!(v["output"], json!(["/tmp"]));

    // A run that outlives its timeout, continued with `wait`.
    let r = mcp
        .call(
            "run_command",
            json!({"command": "echo first; sleep 1; echo second; (exit 4)", "pane_id": pane, "timeout": 0.4}),
        )
        .await;
    let v = ok(&r);
    assert_eq!(
        (v["timed_out"].as_bool(), v["exit_status"].clone()),
        (Some(true), Value::Null)
    );
    assert_eq!(v["output"], json!(["first"]));
    let note = r.content[1].as_text().expect("a note").text.clone();
    assert!(note.contains("call wait with pane_id"), "{note}");
    let mut lines = Vec::new();
    let end = Instant::now() + DEADLINE;
    let last = loop {
        let v = ok(&mcp
            .call("wait", json!({"pane_id": pane, "timeout_s": 10}))
            .await);
        lines.extend(v["lines"].as_array().unwrap().iter().cloned());
        if v["finished"] == true {
            break v;
        }
        assert!(Instant::now() < end, "never finished: {v}");
    };
    assert_eq!(lines, vec![json!("second")]);
    assert_eq!(last["exit_status"], 4);
    assert_eq!(last["exit_source"], "wrapper");

    // Nothing new and nothing running: `wait` says so at once (idle, not
    // an error), instead of waiting out its timeout.
    let asked = Instant::now();
    let v = ok(&mcp
        .call("wait", json!({"session": "main", "timeout_s": 30}))
        .await);
    assert_eq!(
        (
            v["lines"].clone(),
            v["timed_out"].clone(),
            v["reason"].clone()
        ),
        (json!([]), json!(false), json!("idle"))
    );
    assert!(asked.elapsed() < Duration::from_secs(10), "{v}");

    // Output nobody typed, filtered; and saved to a file in the pane's
    // directory.
    server.type_line(&pane, "printf 'x1\\nerror: y\\nz\\n'");
    let mut seen = Vec::new();
    let end = Instant::now() + DEADLINE;
    while !seen
        .iter()
        .any(|l: &Value| l.as_str().is_some_and(|s| s.contains("error: y")))
    {
        let v = ok(&mcp.call("wait", json!({"pane_id": pane, "show": "^error", "save_to": "mcp-saved.txt", "timeout_s": 5})).await);
        seen.extend(v["lines"].as_array().unwrap().iter().cloned());
        assert!(Instant::now() < end, "{seen:?}");
    }
    assert!(
        seen.iter()
            .any(|l| l.as_str().unwrap().ends_with("error: y")),
        "{seen:?}"
    );
    let saved = std::fs::read_to_string("/tmp/mcp-saved.txt").unwrap_or_default();
    let _ = std::fs::remove_file("/tmp/mcp-saved.txt");
    assert!(
        saved.contains("error: y") && saved.contains("z"),
        "{saved:?}"
    );

    // A pane that is busy is refused; a missing session is an error.
    let v = err(&mcp.call("wait", json!({})).await);
    assert_eq!(v["error"]["kind"], "usage");
    let v = err(&mcp
        .call(
            "run_command",
            json!({"command": "true", "session_name": "nope"}),
        )
        .await);
    assert_eq!(v["error"]["kind"], "no_pane", "{v}");
    assert_eq!(cursor_options(&server, &pane).len(), 1);
    mcp.close().await;
    // The connection's cursor is gone with it.
    assert_eq!(cursor_options(&server, &pane), Vec::<String>::new());
    server.wait_no_helpers();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_leaves_nothing_behind() {
    let server = TestServer::new();
    let mcp = connect(&server).await;
    let peer = mcp.client.peer().clone();
    let pane = server.pane.clone();
    for (tool, arguments) in [
        (
            "wait_for_text",
            json!({"patterns": ["never"], "pane_id": pane, "timeout": 60}),
        ),
        (
            "wait_for_channel",
            json!({"channel": unique("never").replace('-', "_"), "timeout": 60}),
        ),
        (
            "wait",
            json!({"pane_id": pane, "until": "never", "timeout_s": 60}),
        ),
    ] {
        let params = CallToolRequestParams::new(tool).with_arguments(args(arguments));
        let handle = peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("send");
        let child = wait_for_child(mcp.pid, tool).await;
        // Let it settle into its wait (its tmux clients attached).
        let end = Instant::now() + DEADLINE;
        while leftovers(&server, mcp.pid).len() < 2 && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t0 = Instant::now();
        handle.cancel(Some("test".into())).await.expect("cancel");
        let end = Instant::now() + DEADLINE;
        while std::path::Path::new(&format!("/proc/{child}")).exists() && Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "{tool}: the child took {:?} to end",
            t0.elapsed()
        );
        wait_nothing_left(&server, mcp.pid).await;
    }
    // The server serves on.
    let v = ok(&mcp
        .call("signal_channel", json!({"channel": "still_here"}))
        .await);
    assert_eq!(v["channel"], "still_here");
    let _ = mcp
        .call("wait_for_channel", json!({"channel": "still_here"}))
        .await;
    mcp.close().await;
    server.wait_no_helpers();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_run_command_leaves_the_command_running() {
    let server = TestServer::new();
    let mcp = connect(&server).await;
    let pane = server.pane.clone();
    let params = CallToolRequestParams::new("run_command").with_arguments(args(
        json!({"command": "echo started; sleep 1; echo ended", "pane_id": pane}),
    ));
    let handle = mcp
        .client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send");
    server.wait_until(&pane, "the command to start", || {
        server.capture(&pane).contains("started")
    });
    handle.cancel(None).await.expect("cancel");
    let mut lines = Vec::new();
    let end = Instant::now() + DEADLINE;
    loop {
        let v = ok(&mcp
            .call("wait", json!({"pane_id": pane, "timeout_s": 10}))
            .await);
        lines.extend(
            v["lines"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|l| l.as_str().map(str::to_owned)),
        );
        if v["finished"] == true {
            break;
        }
        assert!(Instant::now() < end, "{lines:?}");
    }
    assert!(lines.iter().any(|l| l == "ended"), "{lines:?}");
    mcp.close().await;
    server.wait_no_helpers();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_for_a_long_wait() {
    let server = TestServer::new();
    let mcp = connect(&server).await;
    let t0 = Instant::now();
    let v = err(&mcp
        .call(
            "wait_for_text",
            json!({"patterns": ["never"], "pane_id": server.pane, "timeout": 3.5}),
        )
        .await);
    assert_eq!(v["outcome"], "timeout");
    let took = t0.elapsed().as_secs_f64();
    let progress = mcp.recorder.progress.lock().unwrap().clone();
    assert!(progress.len() >= 3, "{progress:?}");
    assert!(progress.len() as f64 <= took + 1.0, "{progress:?}");
    let mut last = 0.0;
    for p in &progress {
        assert!(p.progress > last, "{progress:?}");
        last = p.progress;
        assert_eq!(p.total, Some(3.5));
        let m = p.message.as_deref().unwrap();
        assert!(
            m.starts_with(&format!("waiting for text in {}", server.pane))
                && m.contains("of 3.5 s"),
            "{m}"
        );
    }
    assert!((0.9..1.5).contains(&progress[0].progress), "{progress:?}");
    mcp.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_waits() {
    let server = TestServer::new();
    let other = server.split();
    let mcp = Arc::new(connect(&server).await);
    let start = |pane: String, marker: &'static str| {
        let m = mcp.clone();
        tokio::spawn(async move {
            let r = m
                .call(
                    "wait_for_text",
                    json!({"patterns": [marker], "pane_id": pane, "timeout": 15}),
                )
                .await;
            (r, Instant::now())
        })
    };
    let a = start(server.pane.clone(), "CONC_A");
    let b = start(other.clone(), "CONC_B");
    // Both run at once: two children.
    let end = Instant::now() + DEADLINE;
    while children_of(mcp.pid).len() < 2 {
        assert!(Instant::now() < end, "the two waits did not run at once");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Print B's marker until it returns, then A's: B ends first while A
    // is still waiting.
    let end = Instant::now() + DEADLINE;
    while !b.is_finished() {
        server.type_line(&other, "echo CO''NC_B");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(Instant::now() < end);
    }
    let (rb, tb) = b.await.unwrap();
    assert_eq!(ok(&rb)["pane_id"], json!(other));
    assert!(!a.is_finished());
    let end = Instant::now() + DEADLINE;
    while !a.is_finished() {
        server.type_line(&server.pane, "echo CO''NC_A");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(Instant::now() < end);
    }
    let (ra, ta) = a.await.unwrap();
    assert_eq!(ok(&ra)["matched_lines"], json!(["CONC_A"]));
    assert!(tb < ta);
    Arc::try_unwrap(mcp).ok().unwrap().close().await;
    server.wait_no_helpers();
}

/// Two `wait` calls of one connection on one pane take turns: a line is
/// shown to one of them only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_on_one_cursor_take_turns() {
    let server = TestServer::new();
    let mcp = Arc::new(connect(&server).await);
    let pane = server.pane.clone();
    // The cursor starts here.
    let _ = mcp
        .call("wait", json!({"pane_id": pane, "timeout_s": 0.2}))
        .await;
    let start = |m: Arc<Mcp>, p: String| {
        tokio::spawn(async move {
            m.call(
                "wait",
                json!({"pane_id": p, "until": "TURN_", "timeout_s": 15}),
            )
            .await
        })
    };
    let a = start(mcp.clone(), pane.clone());
    wait_for_child(mcp.pid, "the first wait").await;
    let b = start(mcp.clone(), pane.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        children_of(mcp.pid).len(),
        1,
        "the second wait did not wait its turn"
    );
    server.type_line(&pane, "echo TU''RN_1");
    let first = ok(&a.await.unwrap());
    // Whenever the second starts, its cursor shows it what came after.
    server.type_line(&pane, "echo TU''RN_2");
    let second = ok(&b.await.unwrap());
    let lines = |v: &Value| -> Vec<String> {
        v["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect()
    };
    let (l1, l2) = (lines(&first), lines(&second));
    assert!(
        l1.contains(&"TURN_1".to_owned()) && !l1.contains(&"TURN_2".to_owned()),
        "{first}"
    );
    assert!(
        l2.contains(&"TURN_2".to_owned()) && !l2.contains(&"TURN_1".to_owned()),
        "{second}"
    );
    Arc::try_unwrap(mcp).ok().unwrap().close().await;
    server.wait_no_helpers();
}

/// MCP clients often start servers with a few variables only (the Python
/// SDK: HOME, PATH, SHELL, TERM, USER, LOGNAME): no locale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minimal_environment_without_a_locale() {
    let server = TestServer::new();
    let mut cmd = mcp_command(&server, &[]);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", server.dir())
        .env("TMPDIR", server.dir());
    let transport = TokioChildProcess::new(cmd).expect("spawn");
    let pid = transport.id().unwrap();
    let client = Recorder::default()
        .serve(transport)
        .await
        .expect("initialize");
    let mcp = Mcp {
        client,
        recorder: Recorder::default(),
        pid,
    };
    let pane = server.pane.clone();
    let r = print_until_done(
        &server,
        &pane,
        "MARK_ENV",
        mcp.call(
            "wait_for_text",
            json!({"patterns": ["MARK_ENV"], "pane_id": pane}),
        ),
    )
    .await;
    assert_eq!(ok(&r)["found"], true);
    let v = ok(&mcp
        .call("run_command", json!({"command": "echo é", "pane_id": pane}))
        .await);
    assert_eq!(v["output"], json!(["é"]));
    mcp.close().await;
    server.wait_no_helpers();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ceiling_applies() {
    let server = TestServer::new();
    let mcp = connect_with(&server, &[("TMUX_WAIT_MAX_SECONDS", "0.5")]).await;
    let t0 = Instant::now();
    let v = err(&mcp
        .call(
            "wait_for_text",
            json!({"patterns": ["never"], "pane_id": server.pane, "timeout": 60}),
        )
        .await);
    assert_eq!(v["effective_timeout"], 0.5);
    assert!(t0.elapsed() < Duration::from_secs(5));
    mcp.close().await;
}

/// A raw JSON-RPC connection to `tmux-wait mcp`.
struct Raw {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    async fn start(server: &TestServer) -> Raw {
        let mut child = mcp_command(server, &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut raw = Raw {
            child,
            stdin,
            lines,
        };
        raw.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#).await;
        let r = raw.recv().await;
        assert_eq!(r["result"]["serverInfo"]["name"], "tmux-wait", "{r}");
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        raw
    }

    async fn send(&mut self, line: &str) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
        w.flush().await.unwrap();
    }

    /// The next message (notifications skipped).
    async fn recv(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(DEADLINE, self.lines.next_line())
                .await
                .expect("an answer in time")
                .expect("read")
                .expect("not at the end");
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if v.get("method").is_none() {
                return v;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_get_json_rpc_errors_and_the_server_goes_on() {
    let server = TestServer::new();
    let mut raw = Raw::start(&server).await;
    let cases: [(&str, Value, i64); 7] = [
        ("{this is not json", Value::Null, -32700),
        ("[1, 2, 3]", Value::Null, -32600),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":"oops"}"#,
            json!(11),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#,
            json!(12),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":13,"method":"no/such/method"}"#,
            json!(13),
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s14","method":"tools/call"}"#,
            json!("s14"),
            -32602,
        ),
        (r#"{"jsonrpc":"2.0","id":15}"#, json!(15), -32600),
    ];
    for (line, id, code) in cases {
        raw.send(line).await;
        let r = raw.recv().await;
        assert_eq!(r["error"]["code"], code, "{line} -> {r}");
        assert_eq!(
            r.get("id").cloned().unwrap_or(Value::Null),
            id,
            "{line} -> {r}"
        );
    }
    // Not answered: a bad notification; a response nobody asked for.
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#).await;
    // Arguments that do not fit are a tool error the model can read.
    raw.send(r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"wait_for_text","arguments":{"patterns":5}}}"#).await;
    let r = raw.recv().await;
    assert_eq!(r["id"], 16, "{r}");
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["structuredContent"]["error"]["kind"], "usage");
    // A huge line, then still serving.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":17,"method":"ping","params":{{"x":"{}"}}}}"#,
        "y".repeat(17 * 1024 * 1024)
    );
    raw.send(&huge).await;
    let r = raw.recv().await;
    assert_eq!(
        r["error"]["code"],
        -32600,
        "{}",
        r.to_string().chars().take(200).collect::<String>()
    );
    raw.send(r#"{"jsonrpc":"2.0","id":18,"method":"tools/list"}"#)
        .await;
    let r = raw.recv().await;
    assert_eq!(r["id"], 18);
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 7);
    raw.send(r#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"signal_channel","arguments":{"channel":"ok_after_garbage"}}}"#).await;
    let r = raw.recv().await;
    assert_eq!(
        r["result"]["structuredContent"]["channel"], "ok_after_garbage",
        "{r}"
    );
    drop(raw.stdin.take());
    let st = tokio::time::timeout(DEADLINE, raw.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_ends_the_server_and_leaves_nothing() {
    let server = TestServer::new();
    let pane = server.pane.clone();
    let mut raw = Raw::start(&server).await;
    let pid = raw.child.id().unwrap();
    // A cursor on the pane, then a long wait running.
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"run_command","arguments":{{"command":"echo x","pane_id":"{pane}"}}}}}}"#)).await;
    let r = raw.recv().await;
    assert_eq!(r["result"]["structuredContent"]["exit_status"], 0, "{r}");
    assert_eq!(cursor_options(&server, &pane).len(), 1);
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"wait_for_text","arguments":{{"patterns":["never"],"pane_id":"{pane}","timeout":60}}}}}}"#)).await;
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait_for_channel","arguments":{"channel":"never_signalled","timeout":60}}}"#).await;
    let end = Instant::now() + DEADLINE;
    while children_of(pid).len() < 2 || leftovers(&server, pid).len() < 4 {
        assert!(Instant::now() < end, "{:?}", leftovers(&server, pid));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t0 = Instant::now();
    drop(raw.stdin.take());
    let st = tokio::time::timeout(DEADLINE, raw.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.code(), Some(0));
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(cursor_options(&server, &pane), Vec::<String>::new());
    server.wait_no_helpers();
    assert!(server.tmux(&["list-clients"]).trim().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_takes_its_children_along() {
    let server = TestServer::new();
    let mut raw = Raw::start(&server).await;
    let pid = raw.child.id().unwrap();
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"wait_for_text","arguments":{{"patterns":["never"],"pane_id":"{}","timeout":60}}}}}}"#, server.pane)).await;
    wait_for_child(pid, "wait_for_text").await;
    raw.child.kill().await.unwrap();
    server.wait_no_helpers();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_server_ends_its_calls_and_leaves_nothing() {
    let server = TestServer::new();
    let pane = server.pane.clone();
    let mut raw = Raw::start(&server).await;
    let pid = raw.child.id().unwrap();
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"run_command","arguments":{{"command":"true","pane_id":"{pane}"}}}}}}"#)).await;
    let _ = raw.recv().await;
    raw.send(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"wait","arguments":{{"pane_id":"{pane}","until":"never","timeout_s":60}}}}}}"#)).await;
    wait_for_child(pid, "wait").await;
    let st = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let st = tokio::time::timeout(DEADLINE, raw.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.code(), Some(143));
    assert_eq!(cursor_options(&server, &pane), Vec::<String>::new());
    server.wait_no_helpers();
}

/// `run_command` with no pane is refused and types nothing anywhere;
/// `wait_for_text` with `include_unseen` sees a line printed between the
/// agent's keys and the call; `patterns: []` is a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_needs_a_pane_and_unseen_output_counts_when_asked() {
    let server = TestServer::new();
    let mcp = connect(&server).await;
    let pane = server.pane.clone();
    let before = server.capture(&pane);
    let v = err(&mcp
        .call("run_command", json!({"command": "echo TYPED_NOWHERE"}))
        .await);
    assert_eq!(v["error"]["kind"], "usage", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("pane_id"),
        "{v}"
    );
    assert_eq!(server.capture(&pane), before, "something was typed");
    // The connection's place in the pane, then keys typed by the agent
    // (through another tool), then the wait.
    let v = ok(&mcp
        .call("wait", json!({"pane_id": pane, "timeout_s": 5}))
        .await);
    assert_eq!(v["reason"], "idle", "{v}");
    server.type_line(&pane, "echo Trace''back HERE");
    server.wait_until(&pane, "the line", || {
        server.capture(&pane).contains("Traceback HERE")
    });
    let v = ok(&mcp
        .call(
            "wait_for_text",
            json!({"pane_id": pane, "patterns": ["Traceback"], "include_unseen": true, "timeout": 10}),
        )
        .await);
    assert_eq!(v["matched_lines"], json!(["Traceback HERE"]), "{v}");
    // Without include_unseen the line before the call does not count.
    let r = mcp
        .call(
            "wait_for_text",
            json!({"pane_id": pane, "patterns": ["HERE"], "timeout": 0.3}),
        )
        .await;
    assert_eq!(err(&r)["outcome"], "timeout");
    let v = err(&mcp
        .call("wait_for_text", json!({"pane_id": pane, "patterns": []}))
        .await);
    assert_eq!(v["error"]["kind"], "usage", "{v}");
    mcp.close().await;
    server.wait_no_helpers();
}

/// A pane already dead when a call starts: each tool that reads a pane
/// says `pane_died`, as when the pane dies during the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_on_a_pane_dead_at_entry_say_pane_died() {
    let server = TestServer::with(crate::common::Options {
        extra_config: "set -g remain-on-exit on".into(),
        ..Default::default()
    });
    let pane = server
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "exit 3"])
        .trim()
        .to_owned();
    server.wait_until(&pane, "the pane to be dead", || {
        server
            .tmux(&["display-message", "-p", "-t", &pane, "#{pane_dead}"])
            .trim()
            == "1"
    });
    let mcp = connect(&server).await;
    for (tool, arguments) in [
        (
            "wait_for_text",
            json!({"patterns": ["x"], "pane_id": pane, "timeout": 5}),
        ),
        ("wait", json!({"pane_id": pane, "timeout_s": 5})),
        (
            "run_command",
            json!({"command": "echo hi", "pane_id": pane}),
        ),
    ] {
        let v = err(&mcp.call(tool, arguments).await);
        assert_eq!(v["error"]["kind"], "pane_died", "{tool}: {v}");
    }
    mcp.close().await;
    server.wait_no_helpers();
}

/// The MCP server raises its open-files limit for its calls' pipes; the
/// calls (and what they run) get the one it was started with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_get_the_limit_the_server_was_started_with() {
    let server = TestServer::new();
    let log = server.dir().join("limits.log");
    let wrapper = server.dir().join("tmux-wrapper");
    crate::common::write_exe(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$(ulimit -Sn)\" >> '{}'\nexec tmux \"$@\"\n",
            log.display()
        ),
    );
    let w = wrapper.to_string_lossy().into_owned();
    let mut cmd = mcp_command(
        &server,
        &[("TMUX_WAIT_TMUX", &w), ("TMUX_WAIT_NATIVE", "0")],
    );
    // SAFETY: getrlimit and setrlimit are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
            r.rlim_cur = 200;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            Ok(())
        });
    }
    let transport = TokioChildProcess::new(cmd).expect("spawn tmux-wait mcp");
    let pid = transport.id().expect("pid");
    let client = tokio::time::timeout(DEADLINE, Recorder::default().serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize");
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .unwrap()
        .to_owned();
    assert_ne!(soft, "200", "the server kept the low limit");
    let params = CallToolRequestParams::new("wait_for_text".to_owned())
        .with_arguments(args(json!({"pane_id": server.pane, "timeout": 0.3})));
    let r = tokio::time::timeout(DEADLINE, client.peer().call_tool(params))
        .await
        .expect("in time")
        .expect("call");
    assert_eq!(structured(&r)["outcome"], "timeout", "{r:?}");
    let _ = tokio::time::timeout(DEADLINE, client.cancel()).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.is_empty());
    for l in text.lines() {
        assert_eq!(l, "200", "a call's tmux got another limit:\n{text}");
    }
    server.wait_no_helpers();
}
