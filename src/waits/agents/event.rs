//! `tmux-wait agent-event`: run by a coding agent's hook, with the event
//! as JSON on its standard input. It finds the agent's pane (its terminal:
//! the one its ancestors hold, else the one the event's folder says) and
//! writes a mark there saying what the agent does now: `working`,
//! `asking` (with the agent's words: the tool and its command, or its
//! notification's message) or `idle`. It never fails the agent: whatever
//! happens it exits 0 and prints nothing (an agent reads a hook's output).

use crate::pane::vt::{RUN_OSC, RUN_TAG};
use crate::sys::procfs;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;

/// What an agent's event says it does now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Working,
    Asking(String),
    Idle(String),
}

/// The most of the event read from standard input.
const MAX_EVENT: u64 = 1 << 20;
/// The most of the agent's words put in the mark.
const MAX_WORDS: usize = 200;

/// What an event says, by the hook names Claude Code, Qwen Code, Gemini
/// CLI and Codex use (None: nothing about whether it needs someone).
pub fn kind_of(ev: &Value) -> Option<Kind> {
    if ev.get("hook_event_name").is_none() {
        return opencode_kind(ev);
    }
    let name = ev.get("hook_event_name")?.as_str()?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    match name {
        "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PostToolUseFailure"
        | "BeforeAgent" | "BeforeTool" | "AfterTool" => Some(Kind::Working),
        "PermissionRequest" => {
            let input = ev.get("tool_input");
            let what = ["command", "file_path", "description"]
                .iter()
                .find_map(|k| input.and_then(|i| i.get(*k)).and_then(Value::as_str))
                .unwrap_or("");
            let tool = text(ev.get("tool_name"));
            Some(Kind::Asking(match (tool.is_empty(), what.is_empty()) {
                (false, false) => format!("{tool}: {what}"),
                (false, true) => tool,
                _ => what.to_owned(),
            }))
        }
        "Notification" => match ev.get("notification_type").and_then(Value::as_str) {
            Some("idle_prompt") => Some(Kind::Idle(text(ev.get("message")))),
            // (Gemini CLI's names the tool and its command in `details`.)
            Some("ToolPermission") => {
                let d = ev.get("details");
                let (title, cmd) = (
                    text(d.and_then(|d| d.get("title"))),
                    text(d.and_then(|d| d.get("command"))),
                );
                Some(Kind::Asking(if title.is_empty() || cmd.is_empty() {
                    text(ev.get("message"))
                } else {
                    format!("{title}: {cmd}")
                }))
            }
            Some(
                "permission_prompt"
                | "elicitation_dialog"
                | "agent_needs_input"
                | "worker_permission_prompt",
            ) => Some(Kind::Asking(text(ev.get("message")))),
            _ => None,
        },
        "Stop" | "AfterAgent" => Some(Kind::Idle(String::new())),
        _ => None,
    }
}

/// What an OpenCode event says (its plugin's events, as tmux-wait's
/// plugin passes them on: `{"type": ..., "properties": {...}}`).
fn opencode_kind(ev: &Value) -> Option<Kind> {
    let props = ev.get("properties");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    match ev.get("type")?.as_str()? {
        "session.status" => match props?.get("status")?.get("type")?.as_str()? {
            "busy" | "retry" => Some(Kind::Working),
            "idle" => Some(Kind::Idle(String::new())),
            _ => None,
        },
        "session.idle" => Some(Kind::Idle(String::new())),
        "permission.replied" => Some(Kind::Working),
        "permission.asked" => {
            let what = text(props.and_then(|p| p.get("permission")));
            let cmd = text(
                props
                    .and_then(|p| p.get("metadata"))
                    .and_then(|m| m.get("command")),
            );
            Some(Kind::Asking(match (what.is_empty(), cmd.is_empty()) {
                (false, false) => format!("{what}: {cmd}"),
                (false, true) => what,
                _ => cmd,
            }))
        }
        _ => None,
    }
}

/// The mark that says `kind`, as the pane's stream carries it: the
/// agent's words without control characters or `;`, shortened.
pub fn mark(kind: &Kind) -> Vec<u8> {
    let (word, words) = match kind {
        Kind::Working => ("working", ""),
        Kind::Asking(w) => ("asking", w.as_str()),
        Kind::Idle(w) => ("idle", w.as_str()),
    };
    let words: String = words
        .chars()
        .map(|c| if c == ';' { ',' } else { c })
        .filter(|c| !c.is_control())
        .take(MAX_WORDS)
        .collect();
    format!("\x1b]{RUN_OSC};{RUN_TAG};agent;{word};{words}\x07").into_bytes()
}

/// Run as the hook: read the event, say it in the agent's pane.
pub fn event(agent: &str) {
    let mut text = String::new();
    let _ = std::io::stdin().take(MAX_EVENT).read_to_string(&mut text);
    let Ok(ev) = serde_json::from_str::<Value>(&text) else {
        return;
    };
    let Some(kind) = kind_of(&ev) else {
        return;
    };
    // Only inside tmux: elsewhere the terminal is the person's own.
    if std::env::var_os("TMUX").is_none_or(|t| t.is_empty()) {
        return;
    }
    let cwd = ev.get("cwd").and_then(Value::as_str).map(PathBuf::from);
    if let Some(tty) = pane_terminal(agent, cwd.as_deref())
        && let Ok(mut f) = open_terminal(&tty)
    {
        let _ = f.write_all(&mark(&kind));
    }
}

fn open_terminal(tty: &str) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty)
}

/// A terminal's path among a process's first descriptors.
fn terminal_of(pid: u32) -> Option<String> {
    (0..3).find_map(|fd| {
        let p = procfs::fd_target(pid, fd)?;
        let s = p.to_str()?;
        (s.starts_with("/dev/pts/") || s.starts_with("/dev/tty") && s != "/dev/tty")
            .then(|| s.to_owned())
    })
}

/// The agent's pane, as its terminal: the first of this process's
/// ancestors that holds one (Claude Code, Gemini CLI, Qwen Code run their
/// hooks as their children); else, for an agent whose hooks a daemon of
/// its own runs (Codex's app-server, with no terminal, and with the
/// environment of the first pane that started it), the one terminal its
/// user interface holds in the event's folder.
fn pane_terminal(agent: &str, cwd: Option<&std::path::Path>) -> Option<String> {
    let mut pid = std::process::id();
    for _ in 0..16 {
        if let Some(t) = terminal_of(pid) {
            return Some(t);
        }
        pid = procfs::stat(pid)?.ppid;
        if pid <= 1 {
            break;
        }
    }
    let cwd = cwd?;
    let program = agent.split('-').next().unwrap_or(agent);
    let mut found: Option<String> = None;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if procfs::comm(p).as_deref() != Some(program)
            || std::fs::read_link(format!("/proc/{p}/cwd")).ok().as_deref() != Some(cwd)
        {
            continue;
        }
        if let Some(t) = terminal_of(p) {
            match &found {
                Some(f) if *f != t => return None, // two panes: which is not known
                _ => found = Some(t),
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The events as the releases send them (checked 2026-12-04).
    #[test]
    fn what_each_agents_events_say() {
        let claude_perm = json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
            "tool_input": {"command": "touch x", "description": "d"}});
        assert_eq!(
            kind_of(&claude_perm),
            Some(Kind::Asking("Bash: touch x".into()))
        );
        let note = json!({"hook_event_name": "Notification", "message": "Claude needs your permission",
            "notification_type": "permission_prompt"});
        assert_eq!(
            kind_of(&note),
            Some(Kind::Asking("Claude needs your permission".into()))
        );
        let idle = json!({"hook_event_name": "Notification", "message": "Claude is waiting for your input",
            "notification_type": "idle_prompt"});
        assert!(matches!(kind_of(&idle), Some(Kind::Idle(_))));
        let gemini = json!({"hook_event_name": "Notification", "notification_type": "ToolPermission",
            "message": "Tool Confirm Shell Command requires execution",
            "details": {"type": "exec", "title": "Confirm Shell Command", "command": "touch x"}});
        assert_eq!(
            kind_of(&gemini),
            Some(Kind::Asking("Confirm Shell Command: touch x".into()))
        );
        for working in [
            "UserPromptSubmit",
            "PostToolUse",
            "BeforeAgent",
            "AfterTool",
        ] {
            assert_eq!(
                kind_of(&json!({"hook_event_name": working})),
                Some(Kind::Working)
            );
        }
        for idle in ["Stop", "AfterAgent"] {
            assert!(matches!(
                kind_of(&json!({"hook_event_name": idle})),
                Some(Kind::Idle(_))
            ));
        }
        assert_eq!(kind_of(&json!({"hook_event_name": "SessionStart"})), None);
        // OpenCode's plugin events (1.18.33), as tmux-wait's plugin passes
        // them on.
        let busy = json!({"type": "session.status", "properties": {"sessionID": "s", "status": {"type": "busy"}}});
        assert_eq!(kind_of(&busy), Some(Kind::Working));
        let asked = json!({"type": "permission.asked", "properties": {"permission": "bash",
            "patterns": ["touch x"], "metadata": {"command": "touch x && sleep 4"}}});
        assert_eq!(
            kind_of(&asked),
            Some(Kind::Asking("bash: touch x && sleep 4".into()))
        );
        let idle = json!({"type": "session.idle", "properties": {"sessionID": "s"}});
        assert!(matches!(kind_of(&idle), Some(Kind::Idle(_))));
        assert_eq!(kind_of(&json!({"type": "message.part.delta"})), None);
        assert_eq!(kind_of(&json!({"nothing": 1})), None);
    }

    /// The agent's words are data: no escape, no BEL, no `;` that would
    /// end the mark early.
    #[test]
    fn a_mark_carries_words_safely() {
        let m = mark(&Kind::Asking("rm -rf /; echo \x1b]0;x\x07 done".into()));
        let s = String::from_utf8(m).unwrap();
        assert!(s.starts_with("\x1b]7731;tmux-wait;agent;asking;rm -rf /, echo ]0,x done"));
        assert_eq!(s.matches('\x07').count(), 1);
        assert_eq!(s.matches('\x1b').count(), 1);
    }
}
