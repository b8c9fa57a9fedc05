//! The reply to a tool call: the helper's JSON put in the tool's words,
//! failures as tool errors a model can act on.

use super::*;

pub(super) fn ok_result(obj: Map<String, Value>) -> CallToolResult {
    CallToolResult::structured(Value::Object(obj))
}

pub(super) fn error_result(v: Value) -> CallToolResult {
    CallToolResult::structured_error(v)
}

/// The object with `error` added: `{kind, message}` (for a wait whose
/// result is a full object, e.g. a timeout).
pub(super) fn failed(mut obj: Map<String, Value>, kind: &str, message: String) -> CallToolResult {
    obj.insert("error".into(), json!({"kind": kind, "message": message}));
    error_result(Value::Object(obj))
}

pub(super) fn num(o: &Map<String, Value>, k: &str) -> f64 {
    o.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

pub(super) fn text<'a>(o: &'a Map<String, Value>, k: &str) -> &'a str {
    o.get(k).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn first_line(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k)
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(crate::report::sanitize)
}

/// Why a text wait did not find: one line.
pub(super) fn text_failure(o: &Map<String, Value>) -> (String, String) {
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
pub(super) fn json_object(stdout: &[u8]) -> Option<Map<String, Value>> {
    let s = String::from_utf8_lossy(stdout);
    let line = s.lines().rev().find(|l| !l.trim().is_empty())?;
    match serde_json::from_str(line.trim()) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// What the child said went wrong, when it printed no JSON.
pub(super) fn describe(code: Option<i32>, signal: Option<i32>, log: &[String]) -> String {
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
        ToolKind::WaitForAttention if text(&obj, "outcome") == "timeout" => {
            let pending = obj
                .get("pending")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let msg = format!(
                "timed out after {} s: none of the {pending} panes needed someone (pending says what each is doing)",
                num(&obj, "effective_timeout")
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
pub(super) fn in_tool_words(kind: ToolKind, mut obj: Map<String, Value>) -> Map<String, Value> {
    let words = flag_words(kind);
    if let Some(Value::String(m)) = obj
        .get_mut("error")
        .and_then(Value::as_object_mut)
        .and_then(|e| e.get_mut("message"))
    {
        // What the command line would run next, in the tools' terms.
        for (cli, tool) in PHRASES {
            *m = m.replace(cli, tool);
        }
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

/// What the command line's messages tell a person to do, and the same in
/// the tools' terms.
const PHRASES: [(&str, &str); 2] = [
    (
        "follow it with tmux-wait output",
        "follow it with wait on this pane",
    ),
    (
        "--force clears the line first",
        "force: true clears the line first",
    ),
];

/// The CLI's flags and the parameters they come from.
pub(super) fn flag_words(kind: ToolKind) -> [(&'static str, &'static str); 12] {
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
pub(super) fn run_note(o: &Map<String, Value>) -> Option<String> {
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
