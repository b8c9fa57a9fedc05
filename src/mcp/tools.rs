//! The tools: their definitions (names, parameters and result schemas, as
//! libtmux-mcp and the session `wait` tool define them), how a call's
//! arguments become a `tmux-wait ... --json` command line, and how the
//! child's JSON object and exit code become the tool's result.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::ffi::OsString;
use std::path::PathBuf;

/// `wait` (as `output`) waits at most this long, whatever is asked.
pub const MAX_WAIT_SECONDS: f64 = 1500.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    WaitForText,
    WaitForChannel,
    SignalChannel,
    RunCommand,
    Wait,
}

impl ToolKind {
    pub const ALL: [ToolKind; 5] = [
        ToolKind::WaitForText,
        ToolKind::WaitForChannel,
        ToolKind::SignalChannel,
        ToolKind::RunCommand,
        ToolKind::Wait,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ToolKind::WaitForText => "wait_for_text",
            ToolKind::WaitForChannel => "wait_for_channel",
            ToolKind::SignalChannel => "signal_channel",
            ToolKind::RunCommand => "run_command",
            ToolKind::Wait => "wait",
        }
    }

    pub fn from_name(name: &str) -> Option<ToolKind> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What a call runs: the child's arguments after the socket, and what the
/// server needs to know around it.
#[derive(Debug)]
pub struct Prepared {
    pub kind: ToolKind,
    /// `-L NAME` / `-S PATH` (or nothing: tmux's default server).
    pub socket: Vec<OsString>,
    /// The subcommand and its options.
    pub args: Vec<OsString>,
    /// The timeout the child will enforce, for progress and the watchdog.
    pub timeout: f64,
    /// The tmux target given, if any (`%3`, `=name:`...).
    pub target: Option<String>,
    /// `run` and `wait` read and move the connection's cursor.
    pub uses_cursor: bool,
    /// `wait`'s `save_to` when relative: resolved against the pane's
    /// current directory before the call.
    pub relative_save_to: Option<PathBuf>,
}

impl Prepared {
    /// The whole command line of the child.
    pub fn command_line(&self) -> Vec<OsString> {
        let mut v = self.socket.clone();
        v.extend(self.args.iter().cloned());
        v
    }
}

/// A call that fails before anything runs: a tool error result.
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    pub kind: &'static str,
    pub message: String,
}

impl CallError {
    pub fn usage(message: impl Into<String>) -> Self {
        CallError {
            kind: "usage",
            message: message.into(),
        }
    }

    pub fn into_result(self) -> CallToolResult {
        error_result(json!({"error": {"kind": self.kind, "message": self.message}}))
    }
}

/// Per-connection settings the calls share.
pub struct Context<'a> {
    /// The server's own `-L`/`-S`.
    pub socket: &'a [OsString],
    /// The connection's cursor name (`mcp-...`).
    pub cursor: &'a str,
    /// `TMUX_WAIT_MAX_SECONDS`, if set and valid.
    pub ceiling: Option<f64>,
}

// ---------------------------------------------------------------- parameters

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitForTextParams {
    #[serde(default)]
    patterns: Option<Vec<String>>,
    #[serde(default)]
    stop: Option<Vec<String>>,
    #[serde(default)]
    regex: Option<bool>,
    #[serde(default)]
    match_case: Option<bool>,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    interval: Option<f64>,
    #[serde(default)]
    pane_id: Option<String>,
    #[serde(default)]
    session_name: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    window_id: Option<String>,
    #[serde(default)]
    socket_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitForChannelParams {
    channel: String,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    socket_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalChannelParams {
    channel: String,
    #[serde(default)]
    status: Option<i32>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    socket_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunCommandParams {
    command: String,
    #[serde(default)]
    pane_id: Option<String>,
    #[serde(default)]
    session_name: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    window_id: Option<String>,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    max_lines: Option<u64>,
    /// Accepted for libtmux-mcp's callers; always in effect (the typed
    /// line starts with a space).
    #[serde(default)]
    #[allow(dead_code)]
    suppress_history: Option<bool>,
    #[serde(default)]
    socket_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitParams {
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    pane_id: Option<String>,
    #[serde(default)]
    show: Option<String>,
    #[serde(default)]
    show_after: Option<u64>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    save_to: Option<String>,
    #[serde(default)]
    max_lines: Option<u64>,
    #[serde(default)]
    last_lines: Option<u64>,
    #[serde(default)]
    timeout_s: Option<f64>,
    #[serde(default)]
    socket_name: Option<String>,
}

fn params<T: DeserializeOwned>(kind: ToolKind, args: JsonObject) -> Result<T, CallError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| CallError::usage(format!("{}: invalid arguments: {e}", kind.name())))
}

/// A positive, finite number of seconds.
fn seconds(name: &str, v: f64) -> Result<f64, CallError> {
    if !v.is_finite() || v <= 0.0 {
        return Err(CallError::usage(format!(
            "{name}: must be a number of seconds greater than zero (got {v})"
        )));
    }
    if v > 1.0e9 {
        return Err(CallError::usage(format!(
            "{name}: {v} is too long (at most 1e9 seconds)"
        )));
    }
    Ok(v)
}

/// Seconds as the CLI reads them (no exponent).
fn secs_arg(v: f64) -> String {
    let s = format!("{v}");
    if s.contains('e') {
        format!("{v:.9}")
    } else {
        s
    }
}

fn flag(name: &str, value: impl std::fmt::Display) -> OsString {
    format!("--{name}={value}").into()
}

/// Text that goes to tmux or the CLI as one argument: no control
/// characters (never a shell, but a clear error beats tmux's).
fn plain(name: &str, v: &str) -> Result<(), CallError> {
    if v.chars().any(char::is_control) {
        return Err(CallError::usage(format!(
            "{name}: control characters are not allowed"
        )));
    }
    Ok(())
}

fn socket_args(ctx: &Context, socket_name: Option<&str>) -> Result<Vec<OsString>, CallError> {
    match socket_name {
        None => Ok(ctx.socket.to_vec()),
        Some(n) => {
            if n.is_empty() || n.len() > 256 || n.starts_with('-') || n.contains('/') {
                return Err(CallError::usage(format!(
                    "socket_name: '{}' is not a tmux socket name (as tmux -L: no '/', not starting with '-')",
                    n.escape_debug()
                )));
            }
            plain("socket_name", n)?;
            Ok(vec!["-L".into(), n.into()])
        }
    }
}

/// `%12`, `$3`, `@4`: a sigil and digits.
fn id_of(name: &str, sigil: char, example: &str, v: &str) -> Result<String, CallError> {
    let ok = v
        .strip_prefix(sigil)
        .is_some_and(|d| !d.is_empty() && d.len() <= 10 && d.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(v.to_owned())
    } else {
        Err(CallError::usage(format!(
            "{name}: '{}' is not a tmux {} (e.g. '{example}')",
            v.chars().take(40).collect::<String>().escape_debug(),
            match sigil {
                '%' => "pane id",
                '$' => "session id",
                _ => "window id",
            }
        )))
    }
}

fn session_target(name: &str, v: &str) -> Result<String, CallError> {
    if v.is_empty() || v.len() > 256 || v.contains(':') || v.contains('.') {
        return Err(CallError::usage(format!(
            "{name}: '{}' is not a session name",
            v.chars().take(40).collect::<String>().escape_debug()
        )));
    }
    plain(name, v)?;
    // `=` asks tmux for this exact name (not a prefix, not a pattern);
    // the trailing `:` its current window, whose active pane is the target.
    Ok(format!("={v}:"))
}

/// libtmux-mcp's pane resolution, as a tmux target: a pane id, else a
/// window's active pane, else a session's (by id, then by name).
fn target(
    pane_id: Option<&str>,
    window_id: Option<&str>,
    session_id: Option<&str>,
    session_name: Option<&str>,
) -> Result<Option<String>, CallError> {
    if let Some(p) = pane_id {
        return id_of("pane_id", '%', "%1", p).map(Some);
    }
    if let Some(w) = window_id {
        return id_of("window_id", '@', "@1", w).map(Some);
    }
    if let Some(s) = session_id {
        return id_of("session_id", '$', "$1", s).map(|s| Some(format!("{s}:")));
    }
    session_name
        .map(|n| session_target("session_name", n))
        .transpose()
}

fn clamp(timeout: f64, ceiling: Option<f64>) -> f64 {
    match ceiling {
        Some(c) if c < timeout => c,
        _ => timeout,
    }
}

/// Check the arguments and build the child's command line.
pub fn prepare(kind: ToolKind, args: JsonObject, ctx: &Context) -> Result<Prepared, CallError> {
    let mut a: Vec<OsString> = Vec::new();
    let mut p = Prepared {
        kind,
        socket: Vec::new(),
        args: Vec::new(),
        timeout: 0.0,
        target: None,
        uses_cursor: false,
        relative_save_to: None,
    };
    match kind {
        ToolKind::WaitForText => {
            let x: WaitForTextParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            p.target = target(
                x.pane_id.as_deref(),
                x.window_id.as_deref(),
                x.session_id.as_deref(),
                x.session_name.as_deref(),
            )?;
            let timeout = seconds("timeout", x.timeout.unwrap_or(8.0))?;
            a.push("text".into());
            if let Some(t) = &p.target {
                a.extend(["-t".into(), t.into()]);
            }
            for s in x.patterns.iter().flatten() {
                a.push(flag("pattern", s));
            }
            for s in x.stop.iter().flatten() {
                a.push(flag("stop", s));
            }
            if x.regex == Some(true) {
                a.push("--regex".into());
            }
            if x.match_case == Some(true) {
                a.push("--match-case".into());
            }
            a.push(flag("timeout", secs_arg(timeout)));
            if let Some(i) = x.interval {
                a.push(flag("interval", secs_arg(seconds("interval", i)?)));
            }
            a.push("--json".into());
            p.timeout = clamp(timeout, ctx.ceiling);
        }
        ToolKind::WaitForChannel => {
            let x: WaitForChannelParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            let timeout = seconds("timeout", x.timeout.unwrap_or(30.0))?;
            a.extend([
                "channel".into(),
                flag("timeout", secs_arg(timeout)),
                "--json".into(),
                "--".into(),
                x.channel.into(),
            ]);
            p.timeout = clamp(timeout, ctx.ceiling);
        }
        ToolKind::SignalChannel => {
            let x: SignalChannelParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            a.push("signal".into());
            if let Some(s) = x.status {
                a.push(flag("status", s));
            }
            if let Some(m) = &x.message {
                a.push(flag("message", m));
            }
            a.extend(["--json".into(), "--".into(), x.channel.into()]);
            p.timeout = 5.0;
        }
        ToolKind::RunCommand => {
            let x: RunCommandParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            p.target = target(
                x.pane_id.as_deref(),
                x.window_id.as_deref(),
                x.session_id.as_deref(),
                x.session_name.as_deref(),
            )?;
            if x.command.trim().is_empty() {
                return Err(CallError::usage("command: must not be empty"));
            }
            let timeout = seconds("timeout", x.timeout.unwrap_or(30.0))?;
            a.push("run".into());
            if let Some(t) = &p.target {
                a.extend(["-t".into(), t.into()]);
            }
            a.push(flag("timeout", secs_arg(timeout)));
            if let Some(n) = x.max_lines {
                a.push(flag("max-lines", n));
            }
            a.extend([
                flag("cursor", ctx.cursor),
                "--json".into(),
                "--".into(),
                x.command.into(),
            ]);
            p.timeout = clamp(timeout, ctx.ceiling);
            p.uses_cursor = true;
        }
        ToolKind::Wait => {
            let x: WaitParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            p.target = match (&x.pane_id, &x.session) {
                (Some(pane), _) => Some(id_of("pane_id", '%', "%1", pane)?),
                (None, Some(s)) => Some(session_target("session", s)?),
                (None, None) => {
                    return Err(CallError::usage(
                        "wait: give the session (its name) or a pane_id",
                    ));
                }
            };
            let timeout = seconds("timeout_s", x.timeout_s.unwrap_or(30.0))?;
            a.push("output".into());
            if let Some(t) = &p.target {
                a.extend(["-t".into(), t.into()]);
            }
            a.push(flag("timeout", secs_arg(timeout)));
            if let Some(s) = &x.show {
                plain("show", s)?;
                a.push(flag("show", s));
            }
            if let Some(n) = x.show_after {
                if x.show.is_none() {
                    return Err(CallError::usage("show_after: needs show"));
                }
                a.push(flag("show-after", n));
            }
            if let Some(s) = &x.until {
                plain("until", s)?;
                a.push(flag("until", s));
            }
            if let Some(n) = x.max_lines {
                a.push(flag("max-lines", n));
            }
            if let Some(n) = x.last_lines {
                a.push(flag("last-lines", n));
            }
            if let Some(f) = &x.save_to {
                plain("save_to", f)?;
                if f.is_empty() {
                    return Err(CallError::usage("save_to: must not be empty"));
                }
                let path = PathBuf::from(f);
                if path.is_relative() {
                    p.relative_save_to = Some(path);
                } else {
                    a.push(flag("save-to", f));
                }
            }
            a.extend([flag("cursor", ctx.cursor), "--json".into()]);
            p.timeout = clamp(timeout.min(MAX_WAIT_SECONDS), ctx.ceiling);
            p.uses_cursor = true;
        }
    }
    if let Some(bad) = a.iter().find(|x| x.as_encoded_bytes().contains(&0)) {
        let shown = bad.to_string_lossy();
        let flag = shown.split('=').next().unwrap_or("");
        let name = flag_words(kind)
            .into_iter()
            .find(|(f, _)| *f == flag)
            .map_or("an argument", |(_, w)| w);
        return Err(CallError::usage(format!(
            "{name}: NUL characters are not allowed"
        )));
    }
    p.args = a;
    Ok(p)
}

// ------------------------------------------------------------------- results

fn ok_result(obj: Map<String, Value>) -> CallToolResult {
    CallToolResult::structured(Value::Object(obj))
}

fn error_result(v: Value) -> CallToolResult {
    CallToolResult::structured_error(v)
}

/// The object with `error` added: `{kind, message}` (for a wait whose
/// result is a full object, e.g. a timeout).
fn failed(mut obj: Map<String, Value>, kind: &str, message: String) -> CallToolResult {
    obj.insert("error".into(), json!({"kind": kind, "message": message}));
    error_result(Value::Object(obj))
}

fn num(o: &Map<String, Value>, k: &str) -> f64 {
    o.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

fn text<'a>(o: &'a Map<String, Value>, k: &str) -> &'a str {
    o.get(k).and_then(Value::as_str).unwrap_or("")
}

fn first_line(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k)
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(crate::report::sanitize)
}

/// Why a text wait did not find: one line.
fn text_failure(o: &Map<String, Value>) -> (String, String) {
    let outcome = text(o, "outcome").to_owned();
    let pane = text(o, "pane_id");
    let t = num(o, "effective_timeout");
    let msg = match outcome.as_str() {
        "stopped" => format!(
            "stopped by stop pattern #{} in {pane}: {}",
            o.get("matched_index").and_then(Value::as_u64).unwrap_or(0) + 1,
            first_line(o, "matched_lines").unwrap_or_default()
        ),
        "alternate_screen" => format!(
            "timed out after {t} s in {pane}: the pane was on the alternate screen (a pager, an editor or a full-screen program), so nothing was matched"
        ),
        _ => {
            let mut s = format!(
                "timed out after {t} s in {pane}: {}",
                if o.get("saw_new_output") == Some(&Value::Bool(true)) {
                    "new output did not match"
                } else {
                    "no new output"
                }
            );
            if o.get("matched_at_entry") == Some(&Value::Bool(true)) {
                s.push_str(" (a pattern was already on screen before the wait began)");
            }
            s
        }
    };
    (
        if outcome.is_empty() {
            "timeout".into()
        } else {
            outcome
        },
        msg,
    )
}

/// The child's last line of stdout as a JSON object.
fn json_object(stdout: &[u8]) -> Option<Map<String, Value>> {
    let s = String::from_utf8_lossy(stdout);
    let line = s.lines().rev().find(|l| !l.trim().is_empty())?;
    match serde_json::from_str(line.trim()) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// What the child said went wrong, when it printed no JSON.
fn describe(code: Option<i32>, signal: Option<i32>, log: &[String]) -> String {
    if let Some(l) = log
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("tmux-wait: error: "))
    {
        return l.to_owned();
    }
    match (code, signal) {
        (_, Some(s)) => format!("tmux-wait was killed by signal {s}"),
        (Some(c), _) => format!(
            "tmux-wait exited with status {c} without a result{}",
            log.last().map(|l| format!(": {l}")).unwrap_or_default()
        ),
        _ => "tmux-wait ended without a result".into(),
    }
}

/// The tool's result from the child's exit status, stdout and log.
pub fn result(
    kind: ToolKind,
    code: Option<i32>,
    signal: Option<i32>,
    stdout: &[u8],
    log: &[String],
) -> CallToolResult {
    let Some(obj) = json_object(stdout) else {
        return error_result(json!({"error": {
            "kind": "internal",
            "message": describe(code, signal, log),
        }}));
    };
    if obj.contains_key("error") {
        return error_result(Value::Object(in_tool_words(kind, obj)));
    }
    match kind {
        ToolKind::WaitForText if !matches!(text(&obj, "outcome"), "matched" | "any_output") => {
            let (kind, msg) = text_failure(&obj);
            failed(obj, &kind, msg)
        }
        ToolKind::WaitForChannel if text(&obj, "outcome") == "timeout" => {
            let msg = format!(
                "timed out after {} s waiting for channel {}",
                num(&obj, "effective_timeout"),
                text(&obj, "channel")
            );
            failed(obj, "timeout", msg)
        }
        ToolKind::RunCommand => {
            let note = run_note(&obj);
            let mut r = ok_result(obj);
            if let Some(n) = note {
                r.content.push(ContentBlock::text(n));
            }
            r
        }
        _ => ok_result(obj),
    }
}

/// The CLI's error messages name its flags; name the tool's parameters
/// instead (`--pattern #1 is not a valid regex` -> `patterns #1 ...`).
fn in_tool_words(kind: ToolKind, mut obj: Map<String, Value>) -> Map<String, Value> {
    let words = flag_words(kind);
    if let Some(Value::String(m)) = obj
        .get_mut("error")
        .and_then(Value::as_object_mut)
        .and_then(|e| e.get_mut("message"))
    {
        let mut out = String::with_capacity(m.len());
        let mut rest = m.as_str();
        'scan: while !rest.is_empty() {
            if rest.starts_with("--") {
                for (flag, word) in words {
                    if let Some(after) = rest.strip_prefix(flag)
                        && !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
                    {
                        out.push_str(word);
                        rest = after;
                        continue 'scan;
                    }
                }
            }
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        *m = out;
    }
    obj
}

/// The CLI's flags and the parameters they come from.
fn flag_words(kind: ToolKind) -> [(&'static str, &'static str); 12] {
    let timeout = if kind == ToolKind::Wait {
        "timeout_s"
    } else {
        "timeout"
    };
    [
        ("--pattern", "patterns"),
        ("--stop", "stop"),
        ("--interval", "interval"),
        ("--timeout", timeout),
        ("--show-after", "show_after"),
        ("--show", "show"),
        ("--until", "until"),
        ("--save-to", "save_to"),
        ("--max-lines", "max_lines"),
        ("--last-lines", "last_lines"),
        ("--status", "status"),
        ("--message", "message"),
    ]
}

/// How to go on after a run that returned before its command ended.
fn run_note(o: &Map<String, Value>) -> Option<String> {
    let pane = text(o, "pane_id");
    if o.get("timed_out") == Some(&Value::Bool(true)) {
        Some(format!(
            "The command is still running in {pane}: call wait with pane_id \"{pane}\" to get its next output (only lines not shown yet) and, once it ends, its exit status."
        ))
    } else {
        o.get("prompt").and_then(Value::as_str).map(|p| {
            format!(
                "The command stopped at an interactive prompt ({}) in {pane}; wait with pane_id \"{pane}\" follows it.",
                crate::report::sanitize(p)
            )
        })
    }
}

/// The result of a call the client cancelled or the server ended (the
/// client does not read it, but it is what the log says).
pub fn cancelled(kind: ToolKind, pane: Option<&str>) -> (CallToolResult, Option<String>) {
    let how = match (kind, pane) {
        (ToolKind::RunCommand, Some(p)) => Some(format!(
            "run_command in {p} was cancelled; the command keeps running: call wait with pane_id \"{p}\" to follow it"
        )),
        (ToolKind::RunCommand, None) => Some(
            "run_command was cancelled; the command keeps running: call wait on its pane to follow it".to_owned(),
        ),
        _ => None,
    };
    let msg = how
        .clone()
        .unwrap_or_else(|| format!("{} was cancelled", kind.name()));
    (
        error_result(json!({"error": {"kind": "cancelled", "message": msg}})),
        how,
    )
}

// --------------------------------------------------------------- definitions

fn nullable(ty: &str, description: &str) -> Value {
    json!({"anyOf": [{"type": ty}, {"type": "null"}], "default": null, "description": description})
}

fn nullable_list(description: &str) -> Value {
    json!({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
           "default": null, "description": description})
}

const SOCKET_NAME: &str =
    "tmux socket name (as tmux -L). Default: the server tmux-wait mcp was started for.";

fn error_property() -> Value {
    json!({
        "type": "object",
        "description": "Present exactly when isError is true: why the call failed. kind is one of usage, invalid_regex, invalid_channel, no_server, no_pane, pane_died, pane_respawned, server_exited, tmux_error, io_error, not_at_prompt, busy, interrupted, internal, cancelled, or for a wait that ended without what it waited for: timeout, stopped, alternate_screen (the rest of the result is then filled in as usual).",
        "properties": {
            "kind": {"type": "string"},
            "message": {"type": "string"}
        },
        "required": ["kind", "message"]
    })
}

fn output_schema(
    description: &str,
    mut properties: Map<String, Value>,
    required: &[&str],
) -> Value {
    properties.insert("error".into(), error_property());
    json!({
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
    })
}

fn props(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

fn nullable_of(ty: &str, description: &str) -> Value {
    json!({"type": [ty, "null"], "description": description})
}

fn definition(kind: ToolKind) -> Value {
    match kind {
        ToolKind::WaitForText => json!({
            "name": "wait_for_text",
            "title": "Wait for text",
            "description": "Wait for NEW output in a tmux pane, then return.\n\nReturns when one of patterns appears on a line written after this call starts, when one of stop appears (immediate failure), or at the timeout. Pass patterns=null to wait for any new output at all. Use this instead of polling a capture in a loop.\n\nPre-existing scrollback is never matched, nor stale paint below the cursor, nor the echo of text typed at a shell prompt: only output written after the call began counts. If a pattern was already on screen the result says so via matched_at_entry. tmux-wait follows the pane's output as tmux streams it (no polling): it wakes within about a millisecond and sees lines that scrolled away or were overwritten at once.\n\nFor commands you type yourself, run_command (exit status and only the command's output) or wait_for_channel are exact; reserve this for output you did not author. stop is the cheap way to fail fast: pass the failure markers you know (\"error:\", \"FAILED\", \"Traceback\").\n\nA timeout or a stop hit is a tool error (isError) whose result is still the full object below, with error.kind timeout, stopped or alternate_screen. TMUX_WAIT_MAX_SECONDS on the server caps timeout; effective_timeout reports the value enforced.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "patterns": nullable_list("Success patterns; the first one to match ends the wait.\nLiteral text unless ``regex=True``. Omit or pass ``null`` to\nwait for any new output."),
                    "stop": nullable_list("Failure patterns. A hit ends the wait immediately with\n``outcome=\"stopped\"`` and ``found=false``; ``matched_index``\nsays which entry fired."),
                    "regex": {"type": "boolean", "default": false, "description": "Interpret ``patterns`` and ``stop`` as regular expressions (Rust regex syntax, linear time).\nDefault False (literal text)."},
                    "match_case": {"type": "boolean", "default": false, "description": "Whether to match case. Default False (case-insensitive)."},
                    "timeout": {"type": "number", "default": 8, "description": "Requested seconds to wait. Default 8.0. Clamped by server\npolicy (TMUX_WAIT_MAX_SECONDS); see ``effective_timeout`` in the result."},
                    "interval": {"type": "number", "default": 0.05, "description": "Seconds between polls when tmux-wait has to poll (it normally follows the pane's output stream and does not poll). Default 0.05 (50ms). Minimum 0.01."},
                    "pane_id": nullable("string", "Pane ID (e.g. '%1')."),
                    "session_name": nullable("string", "Session name for pane resolution (its active pane)."),
                    "session_id": nullable("string", "Session ID (e.g. '$1') for pane resolution (its active pane)."),
                    "window_id": nullable("string", "Window ID (e.g. '@1') for pane resolution (its active pane)."),
                    "socket_name": nullable("string", SOCKET_NAME),
                }
            },
            "outputSchema": output_schema(
                "Result of a bounded wait for new pane output: every field is something tmux-wait observed.",
                props(json!({
                    "found": {"type": "boolean", "description": "True when a ``patterns`` entry matched new output, or, with ``patterns=null``, when any new output appeared."},
                    "outcome": {"type": "string", "enum": ["matched", "any_output", "stopped", "alternate_screen", "timeout"], "description": "How the wait ended. ``matched``: a ``patterns`` entry hit. ``any_output``: ``patterns`` was omitted and something was written (read it as 'the pane moved', never as 'the command finished'). ``stopped``: a ``stop`` failure marker hit. ``alternate_screen``: the wait timed out while the pane was under a pager, editor or full-screen program, where nothing is matched. ``timeout``: nothing matched in the budget."},
                    "matched_index": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "Zero-based index into ``patterns``, or into ``stop`` when ``outcome`` is ``stopped``. Null otherwise."},
                    "matched_lines": {"type": "array", "items": {"type": "string"}, "description": "Newly-written lines that matched (empty on timeout)."},
                    "tail": {"type": "array", "items": {"type": "string"}, "description": "Rows from the entry cursor row down at the end, wrapped rows joined (at most 20 lines, 2000 bytes). Includes stale rows excluded from matching: it shows what the pane looks like. On a timeout it usually holds the answer: read it before retrying."},
                    "saw_new_output": {"type": "boolean", "description": "True when new output (not typed echo) was written. With found=false: true means output arrived and did not match (read tail, fix the pattern); false means the pane was quiet."},
                    "matched_at_entry": {"type": "boolean", "description": "True when ``patterns`` already matched on-screen text before the wait began and nothing new matched after: the text is there, but it predates your call."},
                    "alternate_screen": {"type": "boolean", "description": "True when the pane was on the terminal's alternate screen at any point during the wait."},
                    "pane_id": {"type": "string", "description": "The pane that was watched."},
                    "elapsed_seconds": {"type": "number", "description": "Time spent waiting in seconds."},
                    "effective_timeout": {"type": "number", "description": "Seconds actually enforced (TMUX_WAIT_MAX_SECONDS caps the requested ``timeout``)."},
                })),
                &["found", "outcome", "pane_id", "elapsed_seconds", "effective_timeout"],
            ),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
        ToolKind::WaitForChannel => json!({
            "name": "wait_for_channel",
            "title": "Wait for a tmux channel",
            "description": "Block until a tmux wait-for channel is signalled.\n\nThis is the synchronisation primitive for output you AUTHORED: the channel only fires because your own shell command signals it, e.g. send `pytest; tmux wait-for -S tests_done` to a pane, then wait_for_channel(\"tests_done\", timeout=60). Shell `;` fires the signal whether the command succeeded or failed. `tmux-wait signal tests_done --status $?` (or signal_channel) also sends an exit status and a message, returned here as status and message.\n\nThe timeout is real (tmux wait-for has none); a timeout is a tool error (isError, error.kind timeout). A tmux server that shuts down during the wait is reported as an error (server_exited), never as a signal. A signal sent while nobody waits is kept by tmux once, so signalling before the wait starts works.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "channel": {"type": "string", "description": "Channel name. Must match ^[A-Za-z0-9_.:-]{1,128}$."},
                    "timeout": {"type": "number", "default": 30, "description": "Maximum seconds to wait. Defaults to 30 seconds. Capped by TMUX_WAIT_MAX_SECONDS; the result names the timeout actually enforced."},
                    "socket_name": nullable("string", SOCKET_NAME),
                },
                "required": ["channel"]
            },
            "outputSchema": output_schema(
                "The channel, the timeout actually enforced, and what the signal carried.",
                props(json!({
                    "channel": {"type": "string", "description": "The channel waited on."},
                    "outcome": {"type": "string", "enum": ["signalled", "timeout"]},
                    "elapsed_seconds": {"type": "number"},
                    "effective_timeout": {"type": "number", "description": "Seconds actually enforced."},
                    "status": nullable_of("integer", "The exit status sent with the signal (tmux-wait signal --status / signal_channel), else null."),
                    "message": nullable_of("string", "The message sent with the signal, else null."),
                    "sent": nullable_of("number", "When the signal with a status or message was sent (seconds since the epoch), else null."),
                })),
                &["channel", "outcome", "elapsed_seconds", "effective_timeout"],
            ),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
        ToolKind::SignalChannel => json!({
            "name": "signal_channel",
            "title": "Signal a tmux channel",
            "description": "Signal a tmux wait-for channel (tmux wait-for -S), optionally with an exit status and a message that wait_for_channel (and `tmux-wait channel`) return. Wakes every waiter of the channel; with nobody waiting, tmux keeps the signal for the next waiter.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "channel": {"type": "string", "description": "Channel name. Must match ^[A-Za-z0-9_.:-]{1,128}$."},
                    "status": nullable("integer", "An exit status to send with the signal (a waiting `tmux-wait channel` exits 5 when it is not 0)."),
                    "message": nullable("string", "A message to send with the signal (at most 4096 bytes; shown as text, never run)."),
                    "socket_name": nullable("string", SOCKET_NAME),
                },
                "required": ["channel"]
            },
            "outputSchema": output_schema(
                "The channel signalled and what was sent with it.",
                props(json!({
                    "channel": {"type": "string"},
                    "status": nullable_of("integer", "The status sent, else null."),
                    "message": nullable_of("string", "The message sent, else null."),
                })),
                &["channel"],
            ),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
        ToolKind::RunCommand => json!({
            "name": "run_command",
            "title": "Run a command in a pane",
            "description": "Run a shell command in a pane, wait for it to end, and return its exit status and ONLY its output.\n\nThe command is typed into the pane's shell (bash, zsh, sh, dash, ksh), which must be at its prompt; it runs in that shell, so cd and export persist as when typed by hand. output is exactly what the command wrote: no prompt, no echo of the typed line. Long output is clipped in the middle (max_lines, default 500), led by the summary lines found there (compiler errors, test results).\n\nIt returns when the command ends (exit_status), when it stops at an interactive program's prompt (python, gdb, psql: prompt says which), or at the timeout (timed_out: true). In the last two cases the command keeps running: call wait with the same pane_id to get its next output and its exit status. Cancelling the call also leaves the command running. A pane that is running something else or has unsubmitted text at its prompt is refused (error.kind not_at_prompt).",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "command": {"type": "string", "description": "Shell command to run in the target pane (one line)."},
                    "pane_id": nullable("string", "Pane ID (e.g. '%1')."),
                    "session_name": nullable("string", "Session name for pane resolution (its active pane)."),
                    "session_id": nullable("string", "Session ID (e.g. '$1') for pane resolution (its active pane)."),
                    "window_id": nullable("string", "Window ID (e.g. '@1') for pane resolution (its active pane)."),
                    "timeout": {"type": "number", "default": 30, "description": "Maximum seconds to wait for the command to end (it keeps running after). Capped by TMUX_WAIT_MAX_SECONDS; effective_timeout reports the value enforced."},
                    "max_lines": nullable("integer", "At most this many lines of output (default 500; 0 for all): longer output is clipped in the middle."),
                    "suppress_history": {"type": "boolean", "default": true, "description": "Always in effect: the typed line starts with a space, which shells with HISTCONTROL=ignorespace keep out of history."},
                    "socket_name": nullable("string", SOCKET_NAME),
                },
                "required": ["command"]
            },
            "outputSchema": output_schema(
                "A command's exit status and output.",
                props(json!({
                    "pane_id": {"type": "string"},
                    "exit_status": nullable_of("integer", "The command's exit status; null when it has not ended (timed_out, or stopped at a prompt) or the pane closed before it was known."),
                    "timed_out": {"type": "boolean", "description": "The timeout ended the call; the command keeps running (continue with wait)."},
                    "elapsed_seconds": {"type": "number"},
                    "output": {"type": "array", "items": {"type": "string"}, "description": "What the command wrote, line by line (clipped per max_lines)."},
                    "output_truncated": {"type": "boolean"},
                    "output_truncated_lines": {"type": "integer", "description": "Lines left out of output."},
                    "effective_timeout": {"type": "number"},
                    "finished": {"type": "boolean", "description": "The command ended."},
                    "exit_source": nullable_of("string", "Where the status came from: wrapper (exact), pane_dead (the command ended the shell), ..."),
                    "prompt": nullable_of("string", "The interactive program's prompt the command stopped at."),
                    "cursor": {"type": "string", "description": "The cursor moved past this output (this connection's; wait reads on from it)."},
                    "save_error": nullable_of("string", "Why saving the output stopped, if it did."),
                })),
                &["pane_id", "exit_status", "timed_out", "elapsed_seconds", "output", "effective_timeout"],
            ),
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true},
        }),
        ToolKind::Wait => json!({
            "name": "wait",
            "title": "Wait for new output",
            "description": "Block until a running session command produces new output, then return only the unseen lines. Poll repeatedly to stream fresh results and the exit status.\n\nKeep waiting for what is running in the session -- what your last run_command left running (a run that timed out or stopped at a prompt), or a command a human or another agent started -- and return only the lines not shown to you before (each connection has its own place in each pane). The interactive form of sleep 30; tail log: call it as often as needed, with timeout_s up to your patience; each reply is new output only, and the command's exit status when it ends (finished, exit_status). When unsubmitted text holds the prompt, says so (unsubmitted_input) and whether it was submitted or erased. After a run into a program (gdb, python), returns at the program's prompt. show filters the lines, until returns at a pattern, last_lines and max_lines shorten the reply, save_to keeps everything in a file. Returns at once when there are unseen lines.",
            "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "session": nullable("string", "the session's name: its active pane is read (or give pane_id)"),
                    "pane_id": nullable("string", "the pane to read (e.g. '%1'), instead of a session"),
                    "show": nullable("string", "regex: reply with only the output lines matching it, in order, plus the last few (like `| grep`, but the command runs unfiltered), e.g. \"error:|warning:|^FAIL\" for a build"),
                    "show_after": nullable("integer", "with `show`: also this many lines after each match (like `grep -A N`); a match is numbered \"N:\", a line after one \"N-\""),
                    "until": nullable("string", "regex: return as soon as output not shown to you before matches it, the command still running; one that never matches is a plain wait"),
                    "save_to": nullable("string", "a file to append the unseen output to, unfiltered, as it comes. A relative path is in the pane's current directory; the file is on the machine this server runs on."),
                    "max_lines": nullable("integer", "lines of output shown in the reply (default 500; 0 for all); longer output is clipped in the middle, led by its summary lines (test results, compiler errors, make's failure) when the middle holds them"),
                    "last_lines": nullable("integer", "reply with only the last N lines of the output (like `| tail -N`); with `show`, how many last lines follow the matches (default 3)"),
                    "timeout_s": {"type": "number", "default": 30, "maximum": MAX_WAIT_SECONDS, "description": "seconds to keep waiting when there is nothing new (the command keeps running after; `wait` again); at most 1500"},
                    "socket_name": nullable("string", SOCKET_NAME),
                }
            },
            "outputSchema": output_schema(
                "The pane's output not shown to this connection before, and how its command stands.",
                props(json!({
                    "pane_id": {"type": "string"},
                    "lines": {"type": "array", "items": {"type": "string"}, "description": "The unseen lines, clipped per the options; the last one unfinished when partial."},
                    "cursor": {"type": "string"},
                    "reason": {"type": "string", "enum": ["output", "until", "finished", "prompt", "timeout"], "description": "Why the call returned."},
                    "finished": {"type": "boolean", "description": "The followed command ended."},
                    "exit_status": nullable_of("integer", "Its exit status when known."),
                    "exit_source": nullable_of("string", "Where the status came from: wrapper (a command typed by run_command), osc133, shell (status unknown), pane_dead, pane_closed, respawned, unobserved."),
                    "timed_out": {"type": "boolean", "description": "The timeout ended the call (with nothing new when lines is empty)."},
                    "running": nullable_of("string", "The program in the pane's foreground, if not the shell."),
                    "lines_missed": {"type": "integer", "description": "Lines that scrolled out of the history before they could be shown (a lower bound unless lines_missed_exact)."},
                    "lines_missed_exact": {"type": "boolean"},
                    "history_cleared": {"type": "boolean"},
                    "respawned": {"type": "boolean"},
                    "clipped_lines": {"type": "integer", "description": "Unseen lines not in lines (show, last_lines, max_lines)."},
                    "partial": {"type": "boolean", "description": "The last line has no newline yet (a question, a progress line)."},
                    "prompt": nullable_of("string", "The interactive program's prompt the output stopped at."),
                    "unsubmitted_input": nullable_of("string", "Text typed at the shell prompt and not submitted."),
                    "input_outcome": nullable_of("string", "What became of it: submitted, erased, pending."),
                    "elapsed_seconds": {"type": "number"},
                    "effective_timeout": {"type": "number"},
                    "save_error": nullable_of("string", "Why save_to stopped, if it did."),
                })),
                &["pane_id", "lines", "reason", "finished", "exit_status", "timed_out", "elapsed_seconds"],
            ),
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
        }),
    }
}

/// The tool as listed.
pub fn tool(kind: ToolKind) -> rmcp::model::Tool {
    serde_json::from_value(definition(kind)).expect("tool definitions are valid")
}

pub fn all() -> Vec<rmcp::model::Tool> {
    ToolKind::ALL.into_iter().map(tool).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context<'static> {
        Context {
            socket: &[],
            cursor: "mcp-abc",
            ceiling: None,
        }
    }

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    fn line(kind: ToolKind, v: Value) -> Vec<String> {
        prepare(kind, obj(v), &ctx())
            .unwrap()
            .command_line()
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    #[test]
    fn every_tool_is_listed_and_parses() {
        let tools = all();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "wait_for_text",
                "wait_for_channel",
                "signal_channel",
                "run_command",
                "wait"
            ]
        );
        for t in &tools {
            assert!(t.output_schema.is_some(), "{}", t.name);
        }
    }

    /// Every property of each input schema is accepted (with a sample
    /// value), and nothing else is.
    #[test]
    fn input_schemas_match_the_parameters() {
        for kind in ToolKind::ALL {
            let def = definition(kind);
            let props = def["inputSchema"]["properties"].as_object().unwrap();
            let mut args = Map::new();
            for (k, v) in props {
                let ty = v["type"]
                    .as_str()
                    .or_else(|| v["anyOf"][0]["type"].as_str())
                    .unwrap();
                let sample = match (k.as_str(), ty) {
                    ("pane_id", _) => json!("%1"),
                    ("window_id", _) => json!("@1"),
                    ("session_id", _) => json!("$1"),
                    ("channel", _) => json!("ch"),
                    (_, "string") => json!("x"),
                    (_, "number") => json!(1.5),
                    (_, "integer") => json!(2),
                    (_, "boolean") => json!(true),
                    (_, "array") => json!(["a"]),
                    _ => panic!("{k}: {ty}"),
                };
                args.insert(k.clone(), sample);
            }
            prepare(kind, args.clone(), &ctx()).unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
            args.insert("bogus".into(), json!(1));
            let e = prepare(kind, args, &ctx()).unwrap_err();
            assert!(e.message.contains("bogus"), "{e:?}");
        }
    }

    #[test]
    fn wait_for_text_arguments() {
        assert_eq!(
            line(
                ToolKind::WaitForText,
                json!({"patterns": ["-x", "a b"], "stop": ["err"], "regex": true,
                       "pane_id": "%3", "timeout": 2.5, "socket_name": "s"})
            ),
            [
                "-L",
                "s",
                "text",
                "-t",
                "%3",
                "--pattern=-x",
                "--pattern=a b",
                "--stop=err",
                "--regex",
                "--timeout=2.5",
                "--json"
            ]
        );
        assert_eq!(
            line(
                ToolKind::WaitForText,
                json!({"session_name": "work", "patterns": null})
            ),
            ["text", "-t", "=work:", "--timeout=8", "--json"]
        );
        assert_eq!(
            line(
                ToolKind::WaitForText,
                json!({"session_id": "$2", "window_id": "@4"})
            ),
            ["text", "-t", "@4", "--timeout=8", "--json"]
        );
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        let bad = [
            (ToolKind::WaitForText, json!({"pane_id": "3"})),
            (ToolKind::WaitForText, json!({"pane_id": "%3; kill-server"})),
            (ToolKind::WaitForText, json!({"timeout": 0})),
            (ToolKind::WaitForText, json!({"timeout": -1})),
            (ToolKind::WaitForText, json!({"patterns": "x"})),
            (ToolKind::WaitForText, json!({"session_name": "a:b"})),
            (ToolKind::WaitForText, json!({"socket_name": "../x"})),
            (ToolKind::WaitForChannel, json!({})),
            (ToolKind::RunCommand, json!({"command": "  "})),
            (ToolKind::Wait, json!({})),
            (ToolKind::Wait, json!({"session": "s", "show_after": 2})),
            (ToolKind::Wait, json!({"session": "s", "max_lines": -1})),
            (ToolKind::WaitForText, json!({"patterns": ["a\u{0}b"]})),
            (ToolKind::RunCommand, json!({"command": "echo \u{0}"})),
        ];
        for (kind, args) in bad {
            let e = prepare(kind, obj(args.clone()), &ctx()).unwrap_err();
            assert_eq!(e.kind, "usage", "{args}");
        }
        let e = prepare(
            ToolKind::WaitForText,
            obj(json!({"patterns": ["\u{0}"]})),
            &ctx(),
        );
        assert_eq!(
            e.unwrap_err().message,
            "patterns: NUL characters are not allowed"
        );
    }

    #[test]
    fn channel_names_never_become_flags() {
        assert_eq!(
            line(
                ToolKind::WaitForChannel,
                json!({"channel": "-x", "timeout": 1e-3})
            ),
            ["channel", "--timeout=0.001", "--json", "--", "-x"]
        );
        assert_eq!(
            line(
                ToolKind::SignalChannel,
                json!({"channel": "c", "status": -1, "message": "--m"})
            ),
            [
                "signal",
                "--status=-1",
                "--message=--m",
                "--json",
                "--",
                "c"
            ]
        );
    }

    #[test]
    fn run_and_wait_use_the_connection_cursor() {
        assert_eq!(
            line(
                ToolKind::RunCommand,
                json!({"command": "make -j", "pane_id": "%1", "max_lines": 40})
            ),
            [
                "run",
                "-t",
                "%1",
                "--timeout=30",
                "--max-lines=40",
                "--cursor=mcp-abc",
                "--json",
                "--",
                "make -j"
            ]
        );
        assert_eq!(
            line(
                ToolKind::Wait,
                json!({"session": "s", "until": "ok$", "timeout_s": 5000, "show": "E", "show_after": 1})
            ),
            [
                "output",
                "-t",
                "=s:",
                "--timeout=5000",
                "--show=E",
                "--show-after=1",
                "--until=ok$",
                "--cursor=mcp-abc",
                "--json"
            ]
        );
        let p = prepare(
            ToolKind::Wait,
            obj(json!({"pane_id": "%2", "timeout_s": 5000})),
            &ctx(),
        )
        .unwrap();
        assert_eq!(p.timeout, MAX_WAIT_SECONDS);
        let p = prepare(
            ToolKind::Wait,
            obj(json!({"pane_id": "%2", "save_to": "log/out.txt"})),
            &ctx(),
        )
        .unwrap();
        assert_eq!(p.relative_save_to, Some(PathBuf::from("log/out.txt")));
    }

    #[test]
    fn the_ceiling_clamps_the_progress_total() {
        let c = Context {
            ceiling: Some(2.0),
            ..ctx()
        };
        let p = prepare(ToolKind::WaitForText, obj(json!({"timeout": 60})), &c).unwrap();
        assert_eq!(p.timeout, 2.0);
    }

    fn keys(v: &Value) -> Vec<String> {
        v.as_object().unwrap().keys().cloned().collect()
    }

    /// The CLI's JSON objects, key for key, are what the output schemas
    /// declare.
    #[test]
    fn output_schemas_declare_the_cli_objects() {
        use crate::report::*;
        let text = serde_json::to_value(TextResult {
            found: true,
            outcome: Outcome::Matched,
            matched_index: Some(0),
            matched_lines: vec![],
            tail: vec![],
            saw_new_output: true,
            matched_at_entry: false,
            alternate_screen: false,
            pane_id: "%1".into(),
            elapsed_seconds: 0.1,
            effective_timeout: 8.0,
        })
        .unwrap();
        let channel = serde_json::to_value(ChannelResult {
            channel: "c".into(),
            outcome: ChannelOutcome::Signalled,
            elapsed_seconds: 0.1,
            effective_timeout: 1.0,
            status: None,
            message: None,
            sent: None,
        })
        .unwrap();
        let run = serde_json::to_value(RunResult {
            pane_id: "%1".into(),
            exit_status: Some(0),
            timed_out: false,
            elapsed_seconds: 0.1,
            output: vec![],
            output_truncated: false,
            output_truncated_lines: 0,
            effective_timeout: 1.0,
            finished: true,
            exit_source: None,
            prompt: None,
            cursor: "c".into(),
            save_error: None,
        })
        .unwrap();
        let output = serde_json::to_value(OutputResult {
            pane_id: "%1".into(),
            lines: vec![],
            cursor: "c".into(),
            reason: crate::report::OutputReason::Output,
            finished: false,
            exit_status: None,
            exit_source: None,
            timed_out: false,
            running: None,
            lines_missed: 0,
            lines_missed_exact: true,
            history_cleared: false,
            respawned: false,
            clipped_lines: 0,
            partial: false,
            prompt: None,
            unsubmitted_input: None,
            input_outcome: None,
            elapsed_seconds: 0.1,
            effective_timeout: 1.0,
            save_error: None,
        })
        .unwrap();
        let signal = json!({"channel": "c", "status": null, "message": null});
        for (kind, v) in [
            (ToolKind::WaitForText, text),
            (ToolKind::WaitForChannel, channel),
            (ToolKind::SignalChannel, signal),
            (ToolKind::RunCommand, run),
            (ToolKind::Wait, output),
        ] {
            let def = definition(kind);
            let schema = &def["outputSchema"];
            let mut declared = keys(&schema["properties"]);
            declared.retain(|k| k != "error");
            let mut got = keys(&v);
            declared.sort();
            got.sort();
            assert_eq!(got, declared, "{kind:?}");
            for r in schema["required"].as_array().unwrap() {
                assert!(v.get(r.as_str().unwrap()).is_some(), "{kind:?} {r}");
            }
        }
    }

    #[test]
    fn results_from_exit_codes() {
        let timeout = br#"{"found":false,"outcome":"timeout","matched_index":null,"matched_lines":[],"tail":["$ x"],"saw_new_output":true,"matched_at_entry":false,"alternate_screen":false,"pane_id":"%1","elapsed_seconds":1.0,"effective_timeout":1.0}"#;
        let r = result(ToolKind::WaitForText, Some(1), None, timeout, &[]);
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.unwrap();
        assert_eq!(s["error"]["kind"], "timeout");
        assert_eq!(s["found"], false);
        assert!(
            s["error"]["message"]
                .as_str()
                .unwrap()
                .contains("did not match")
        );

        let bad = br#"{"error":{"kind":"invalid_regex","message":"--show: invalid regex; --show-after N --timeout --stopper"}}"#;
        let r = result(ToolKind::Wait, Some(2), None, bad, &[]);
        assert_eq!(
            r.structured_content.unwrap()["error"]["message"],
            "show: invalid regex; show_after N timeout_s --stopper"
        );

        let err = br#"{"error":{"kind":"no_pane","message":"no such pane: %9"}}"#;
        let r = result(ToolKind::WaitForText, Some(2), None, err, &[]);
        assert_eq!(r.is_error, Some(true));
        assert_eq!(r.structured_content.unwrap()["error"]["kind"], "no_pane");

        let r = result(
            ToolKind::Wait,
            None,
            Some(9),
            b"",
            &["tmux-wait: error: boom".into()],
        );
        let s = r.structured_content.unwrap();
        assert_eq!(
            (s["error"]["kind"].as_str(), s["error"]["message"].as_str()),
            (Some("internal"), Some("boom"))
        );

        let run = br#"{"pane_id":"%1","exit_status":null,"timed_out":true,"output":[]}"#;
        let r = result(ToolKind::RunCommand, Some(124), None, run, &[]);
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.content.len(), 2);

        let ch = br#"{"channel":"c","outcome":"signalled","status":3}"#;
        let r = result(ToolKind::WaitForChannel, Some(5), None, ch, &[]);
        assert_eq!(r.is_error, Some(false));
    }
}
