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

mod remote;
mod reply;
mod schema;

pub use remote::qualify_output;
pub use reply::{cancelled, result};
use reply::{error_result, flag_words};
pub use schema::all;
#[cfg(test)]
use schema::*;

/// `wait` (as `output`) waits at most this long, whatever is asked.
pub const MAX_WAIT_SECONDS: f64 = 1500.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    WaitForText,
    WaitForChannel,
    SignalChannel,
    RunCommand,
    Wait,
    WaitForAttention,
    PaneStates,
}

impl ToolKind {
    pub const ALL: [ToolKind; 7] = [
        ToolKind::WaitForText,
        ToolKind::WaitForChannel,
        ToolKind::SignalChannel,
        ToolKind::RunCommand,
        ToolKind::Wait,
        ToolKind::WaitForAttention,
        ToolKind::PaneStates,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ToolKind::WaitForText => "wait_for_text",
            ToolKind::WaitForChannel => "wait_for_channel",
            ToolKind::SignalChannel => "signal_channel",
            ToolKind::RunCommand => "run_command",
            ToolKind::Wait => "wait",
            ToolKind::WaitForAttention => "wait_for_attention",
            ToolKind::PaneStates => "pane_states",
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
    /// The host of a pane there (`HOST/%N`): the call runs there.
    pub host: Option<String>,
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

/// Where a call looks or types: libtmux-mcp's names, and the session
/// tool's `session` beside `session_name`.
#[derive(Debug, Default, Deserialize)]
struct Where {
    #[serde(default)]
    pane_id: Option<String>,
    #[serde(default, alias = "session")]
    session_name: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    window_id: Option<String>,
}

impl Where {
    fn target(&self) -> Result<Option<String>, CallError> {
        let remote = remote::host_of(self.pane_id.as_deref())?.map(|(_, p)| p);
        target(
            remote.as_deref().or(self.pane_id.as_deref()),
            self.window_id.as_deref(),
            self.session_id.as_deref(),
            self.session_name.as_deref(),
        )
    }
}

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
    #[serde(default, alias = "timeout_s")]
    timeout: Option<f64>,
    #[serde(default)]
    interval: Option<f64>,
    #[serde(default)]
    include_unseen: Option<bool>,
    #[serde(flatten)]
    place: Where,
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
    #[serde(flatten)]
    place: Where,
    #[serde(default, alias = "timeout_s")]
    timeout: Option<f64>,
    #[serde(default)]
    max_lines: Option<u64>,
    /// Type the line with a leading space (default), which keeps it out
    /// of history where the shell leaves such lines out.
    #[serde(default)]
    suppress_history: Option<bool>,
    #[serde(default)]
    force: Option<bool>,
    #[serde(default)]
    socket_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitParams {
    #[serde(flatten)]
    place: Where,
    #[serde(default)]
    until_finished: Option<bool>,
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
    #[serde(default, alias = "timeout")]
    timeout_s: Option<f64>,
    #[serde(default)]
    socket_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitForAttentionParams {
    #[serde(default)]
    pane_ids: Option<Vec<String>>,
    #[serde(default, alias = "session")]
    session_name: Option<String>,
    #[serde(default)]
    until: Option<Vec<String>>,
    #[serde(default)]
    all: Option<bool>,
    #[serde(default)]
    now: Option<bool>,
    #[serde(default, alias = "timeout_s")]
    timeout: Option<f64>,
    #[serde(default)]
    hosts: Option<Vec<String>>,
    #[serde(default)]
    servers: Option<Vec<String>>,
    #[serde(default)]
    socket_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PaneStatesParams {
    #[serde(default)]
    pane_ids: Option<Vec<String>>,
    #[serde(default, alias = "session")]
    session_name: Option<String>,
    #[serde(default)]
    hosts: Option<Vec<String>>,
    #[serde(default)]
    servers: Option<Vec<String>>,
    #[serde(default)]
    socket_name: Option<String>,
}

/// `-t` for each pane, or the session (by its exact name): what
/// `wait_for_attention` and `pane_states` cover. Neither: the session the
/// server runs in (or the one tmux picks).
fn attention_targets(
    pane_ids: Option<&[String]>,
    session: Option<&str>,
) -> Result<(Vec<OsString>, Option<String>), CallError> {
    let mut a: Vec<OsString> = Vec::new();
    let mut first = None;
    // (As for the other tools: the panes first, then the session.)
    match (pane_ids, session) {
        (Some([]), _) => {
            return Err(CallError::usage(
                "pane_ids: an empty list names no pane; give at least one, or a session_name",
            ));
        }
        (Some(ids), _) => {
            for id in ids {
                let id = id_of("pane_ids", '%', "%1", id)?;
                first.get_or_insert_with(|| id.clone());
                a.extend(["-t".into(), id.into()]);
            }
        }
        (None, Some(name)) => {
            let t = session_target("session_name", name)?;
            let t = t.trim_end_matches(':').to_owned();
            first = Some(t.clone());
            a.extend(["-t".into(), t.into()]);
        }
        (None, None) => {}
    }
    Ok((a, first))
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
        host: None,
    };
    // A pane on another host (`HOST/%N`), and the call's socket_name.
    let mut elsewhere: Option<(crate::remote::Host, String, Option<String>)> = None;
    match kind {
        ToolKind::WaitForText => {
            let x: WaitForTextParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            p.target = x.place.target()?;
            elsewhere = remote::host_of(x.place.pane_id.as_deref())?
                .map(|(h, pane)| (h, pane, x.socket_name.clone()));
            if x.patterns.as_ref().is_some_and(Vec::is_empty) {
                return Err(CallError::usage(
                    "patterns: an empty list matches nothing; give at least one pattern, or omit patterns (or pass null) to wait for any new output",
                ));
            }
            let timeout = seconds("timeout", x.timeout.unwrap_or(8.0))?;
            a.push("text".into());
            if let Some(t) = &p.target {
                a.extend(["-t".into(), t.into()]);
            }
            if x.include_unseen == Some(true) {
                if p.target.is_none() {
                    return Err(CallError::usage(
                        "include_unseen: needs the pane (pane_id, window_id, session_id or session_name): what this connection has not seen is kept per pane",
                    ));
                }
                a.push(flag("cursor", ctx.cursor));
                p.uses_cursor = true;
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
            p.target = x.place.target()?;
            elsewhere = remote::host_of(x.place.pane_id.as_deref())?
                .map(|(h, pane)| (h, pane, x.socket_name.clone()));
            if p.target.is_none() {
                return Err(CallError::usage(
                    "run_command: say which pane to type into: pane_id, or window_id, session_id or session_name (its active pane); with none, the command could land in any pane, your own included",
                ));
            }
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
            if x.force == Some(true) {
                a.push("--force".into());
            }
            if x.suppress_history == Some(false) {
                a.push("--history".into());
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
            p.target = x.place.target()?;
            elsewhere = remote::host_of(x.place.pane_id.as_deref())?
                .map(|(h, pane)| (h, pane, x.socket_name.clone()));
            if p.target.is_none() {
                return Err(CallError::usage(
                    "wait: say which pane to read: pane_id, or window_id, session_id or session (its name; its active pane)",
                ));
            }
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
            if x.until_finished == Some(true) {
                a.push("--until-finished".into());
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
        ToolKind::WaitForAttention => {
            let x: WaitForAttentionParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            let (targets, first) =
                attention_targets(x.pane_ids.as_deref(), x.session_name.as_deref())?;
            p.target = first;
            let timeout = seconds("timeout", x.timeout.unwrap_or(30.0))?;
            a.push("any".into());
            a.extend(targets);
            let many = (x.hosts.as_deref(), x.servers.as_deref());
            remote::sources(ctx, &mut p, many, x.socket_name.as_deref(), &mut a)?;
            if let Some(u) = &x.until {
                if u.is_empty() {
                    return Err(CallError::usage(
                        "until: an empty list waits for nothing; omit it for prompt, asking, exited, bell",
                    ));
                }
                for w in u {
                    plain("until", w)?;
                }
                a.push(flag("until", u.join(",")));
            }
            if x.all == Some(true) {
                a.push("--all".into());
            }
            if x.now == Some(true) {
                a.push("--now".into());
            }
            a.extend([flag("timeout", secs_arg(timeout)), "--json".into()]);
            p.timeout = clamp(timeout, ctx.ceiling);
        }
        ToolKind::PaneStates => {
            let x: PaneStatesParams = params(kind, args)?;
            p.socket = socket_args(ctx, x.socket_name.as_deref())?;
            let (targets, first) =
                attention_targets(x.pane_ids.as_deref(), x.session_name.as_deref())?;
            p.target = first;
            a.push("panes".into());
            a.extend(targets);
            let many = (x.hosts.as_deref(), x.servers.as_deref());
            if remote::sources(ctx, &mut p, many, x.socket_name.as_deref(), &mut a)? {
                p.timeout = 30.0;
            }
            a.push("--json".into());
            p.timeout = 10.0;
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
    if let Some((host, pane, socket_name)) = elsewhere {
        remote::route(&mut p, &mut a, host, &pane, socket_name.as_deref())?;
    }
    p.args = a;
    Ok(p)
}

// ------------------------------------------------------------------- results

// --------------------------------------------------------------- definitions

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
                "wait",
                "wait_for_attention",
                "pane_states"
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
                // (Another name of a parameter listed too: not both. The
                // hosts and servers go without pane_ids: their own test.)
                if v["description"]
                    .as_str()
                    .is_some_and(|d| d.starts_with("Same as"))
                    || matches!(k.as_str(), "hosts" | "servers")
                {
                    continue;
                }
                let ty = v["type"]
                    .as_str()
                    .or_else(|| v["anyOf"][0]["type"].as_str())
                    .unwrap();
                let sample = match (k.as_str(), ty) {
                    ("pane_id", _) => json!("%1"),
                    ("pane_ids", _) => json!(["%1", "%2"]),
                    ("until", "array") => json!(["asking", "bell"]),
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
    fn attention_arguments() {
        assert_eq!(
            line(
                ToolKind::WaitForAttention,
                json!({"pane_ids": ["%1", "%4"], "until": ["asking", "exited"], "all": true, "timeout": 60})
            ),
            [
                "any",
                "-t",
                "%1",
                "-t",
                "%4",
                "--until=asking,exited",
                "--all",
                "--timeout=60",
                "--json"
            ]
        );
        assert_eq!(
            line(
                ToolKind::WaitForAttention,
                json!({"session_name": "agents"})
            ),
            ["any", "-t", "=agents", "--timeout=30", "--json"]
        );
        assert_eq!(
            line(ToolKind::PaneStates, json!({"session": "w"})),
            ["panes", "-t", "=w", "--json"]
        );
        assert_eq!(line(ToolKind::PaneStates, json!({})), ["panes", "--json"]);
        for bad in [
            json!({"pane_ids": []}),
            json!({"pane_ids": ["3"]}),
            json!({"until": []}),
            json!({"session_name": "a:b"}),
            json!({"timeout": 0}),
        ] {
            let e = prepare(ToolKind::WaitForAttention, obj(bad.clone()), &ctx()).unwrap_err();
            assert_eq!(e.kind, "usage", "{bad}");
        }
    }

    #[test]
    fn hosts_servers_and_remote_panes() {
        assert_eq!(
            line(
                ToolKind::WaitForAttention,
                json!({"hosts": ["gpu", "me@build:api"], "servers": ["work", "/tmp/s", "*"], "timeout": 5})
            ),
            [
                "-L",
                "work",
                "-S",
                "/tmp/s",
                "any",
                "--all-servers",
                "--host=gpu",
                "--host=me@build:api",
                "--timeout=5",
                "--json"
            ]
        );
        assert_eq!(
            line(ToolKind::PaneStates, json!({"hosts": ["gpu"]})),
            ["panes", "--host=gpu", "--json"]
        );
        let p = prepare(
            ToolKind::RunCommand,
            obj(json!({"command": "make", "pane_id": "me@gpu:api/%3"})),
            &ctx(),
        )
        .unwrap();
        let words: Vec<String> = p
            .command_line()
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert_eq!(
            words[..6],
            ["remote", "exec", "me@gpu:api", "--", "run", "-t"]
        );
        assert_eq!(words[6], "%3");
        assert_eq!(p.host.as_deref(), Some("me@gpu:api"));
        assert_eq!(p.target.as_deref(), Some("me@gpu:api/%3"));
        for (kind, bad) in [
            (
                ToolKind::WaitForAttention,
                json!({"hosts": ["-oProxyCommand=x"]}),
            ),
            (ToolKind::WaitForAttention, json!({"hosts": ["a;b"]})),
            (
                ToolKind::WaitForAttention,
                json!({"hosts": ["gpu"], "pane_ids": ["%1"]}),
            ),
            (ToolKind::WaitForAttention, json!({"servers": []})),
            (ToolKind::PaneStates, json!({"servers": ["-x"]})),
            (
                ToolKind::PaneStates,
                json!({"servers": ["a"], "socket_name": "b"}),
            ),
            (
                ToolKind::RunCommand,
                json!({"command": "ls", "pane_id": "a b/%3"}),
            ),
            (
                ToolKind::Wait,
                json!({"pane_id": "gpu/%3", "save_to": "rel.txt"}),
            ),
            (
                ToolKind::Wait,
                json!({"pane_id": "gpu/%3", "socket_name": "x"}),
            ),
        ] {
            let e = prepare(kind, obj(bad.clone()), &ctx()).unwrap_err();
            assert_eq!(e.kind, "usage", "{bad}");
        }
        let out = qualify_output("{\"pane_id\":\"%3\",\"x\":1}\n", "gpu");
        assert_eq!(out, "{\"pane_id\":\"gpu/%3\",\"x\":1}\n");
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
    fn the_names_of_both_tool_sets_and_the_new_switches() {
        // session / session_name, timeout / timeout_s, window_id in wait.
        assert_eq!(
            line(
                ToolKind::RunCommand,
                json!({"command": "ls", "session": "w", "timeout_s": 5, "force": true, "suppress_history": false})
            ),
            [
                "run",
                "-t",
                "=w:",
                "--timeout=5",
                "--force",
                "--history",
                "--cursor=mcp-abc",
                "--json",
                "--",
                "ls"
            ]
        );
        assert_eq!(
            line(
                ToolKind::Wait,
                json!({"session_name": "w", "timeout": 3, "until_finished": true})
            ),
            [
                "output",
                "-t",
                "=w:",
                "--timeout=3",
                "--until-finished",
                "--cursor=mcp-abc",
                "--json"
            ]
        );
        assert_eq!(
            line(ToolKind::Wait, json!({"window_id": "@4"}))[..3],
            ["output", "-t", "@4"]
        );
        let p = prepare(
            ToolKind::WaitForText,
            obj(json!({"pane_id": "%2", "patterns": ["x"], "include_unseen": true})),
            &ctx(),
        )
        .unwrap();
        assert!(p.uses_cursor);
        assert!(p.args.contains(&"--cursor=mcp-abc".into()), "{:?}", p.args);
        // Both names of one parameter at once: refused.
        let e = prepare(
            ToolKind::Wait,
            obj(json!({"session": "a", "session_name": "b"})),
            &ctx(),
        )
        .unwrap_err();
        assert_eq!(e.kind, "usage");
    }

    #[test]
    fn a_command_needs_a_pane_and_patterns_must_not_be_empty() {
        let e = prepare(ToolKind::RunCommand, obj(json!({"command": "ls"})), &ctx()).unwrap_err();
        assert_eq!(e.kind, "usage");
        assert!(e.message.contains("pane_id"), "{e:?}");
        let e = prepare(ToolKind::WaitForText, obj(json!({"patterns": []})), &ctx()).unwrap_err();
        assert!(e.message.starts_with("patterns: an empty list"), "{e:?}");
        // Absent or null: any new output.
        for args in [json!({}), json!({"patterns": null})] {
            assert!(prepare(ToolKind::WaitForText, obj(args), &ctx()).is_ok());
        }
        let e = prepare(
            ToolKind::WaitForText,
            obj(json!({"include_unseen": true})),
            &ctx(),
        )
        .unwrap_err();
        assert!(e.message.starts_with("include_unseen"), "{e:?}");
    }

    #[test]
    fn messages_name_the_tools_not_the_command_line() {
        let obj = |m: &str| {
            let Value::Object(o) = json!({"error": {"kind": "not_at_prompt", "message": m}}) else {
                unreachable!()
            };
            o
        };
        let m = |o: Map<String, Value>| o["error"]["message"].as_str().unwrap().to_owned();
        let running = reply::in_tool_words(
            ToolKind::RunCommand,
            obj(
                "pane %1 is not at a shell prompt: sleep is running (follow it with tmux-wait output)",
            ),
        );
        assert!(m(running).ends_with("(follow it with wait on this pane)"));
        let typed = reply::in_tool_words(
            ToolKind::RunCommand,
            obj(
                "pane %1 has unsubmitted text at its prompt (\"ls\"); not typing over it (--force clears the line first)",
            ),
        );
        let t = m(typed);
        assert!(
            t.ends_with("(force: true clears the line first)") && !t.contains("--"),
            "{t}"
        );
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
            fallback: None,
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
            follow_error: None,
            fallback: None,
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
            fallback: None,
        })
        .unwrap();
        let signal = json!({"channel": "c", "status": null, "message": null});
        let status = crate::waits::attention::Status {
            state: crate::waits::attention::State::Asking,
            reason: "reads_line",
            question: Some("ok?".into()),
            command: None,
            exit_status: None,
            agent: None,
            source: "kernel",
            since: 1.0,
        };
        let mut pane = crate::waits::attention::PaneReport::of_status("%1", "s", 0, &status);
        let problem = crate::waits::attention::Problem {
            event: "host_unreachable",
            server: None,
            host: Some("gpu".into()),
            message: "gpu: ssh: connect to host gpu port 22: Connection refused".into(),
        };
        let panes = serde_json::to_value(crate::waits::attention::many::ManyPanes {
            panes: vec![pane.clone()],
            problems: vec![problem.clone()],
        })
        .unwrap();
        pane.tail = Some(vec![]);
        let one = crate::waits::attention::AnyResult {
            outcome: "attention",
            pane: Some(pane.clone()),
            panes: None,
            pending: vec![],
            elapsed_seconds: 0.1,
            effective_timeout: 1.0,
            problems: vec![],
        };
        let all = crate::waits::attention::AnyResult {
            outcome: "all",
            pane: None,
            panes: Some(vec![pane]),
            problems: vec![problem],
            ..one.clone()
        };
        // (Each outcome has its keys: the schema has them all.)
        let mut attention = serde_json::to_value(one).unwrap();
        for (k, v) in serde_json::to_value(all).unwrap().as_object().unwrap() {
            attention[k] = v.clone();
        }
        for (kind, v) in [
            (ToolKind::WaitForText, text),
            (ToolKind::WaitForChannel, channel),
            (ToolKind::SignalChannel, signal),
            (ToolKind::RunCommand, run),
            (ToolKind::Wait, output),
            (ToolKind::WaitForAttention, attention),
            (ToolKind::PaneStates, panes),
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
