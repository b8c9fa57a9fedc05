//! `tmux-wait agents install` and `remove`: tmux-wait's hook in a coding
//! agent's settings file, appended beside the user's own hooks, and
//! removed again without touching anything else. Ours are told by their
//! command (`... agent-event --agent NAME`).
//!
//! Claude Code reads `~/.claude/settings.json`, Qwen Code
//! `~/.qwen/settings.json` (the same hook names), Gemini CLI
//! `~/.gemini/settings.json` (its own names), Codex `~/.codex/hooks.json`
//! (Claude Code's shape; Codex asks the person to trust new hooks when it
//! starts). aider has no hooks: its screen says what it does.

use crate::error::{Error, Kind, Result};
use crate::tmux::protocol::sh_quote;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// One agent's settings: the file (under the home directory), the events
/// to hook, and the matcher its entries take.
pub struct Agent {
    pub name: &'static str,
    file: &'static str,
    events: &'static [&'static str],
    matcher: &'static str,
    /// Its hook entries are named (Gemini CLI shows them by name).
    named: bool,
}

const CLAUDE_EVENTS: &[&str] = &[
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Notification",
    "Stop",
];

/// The agents whose hooks tmux-wait knows.
pub const AGENTS: &[Agent] = &[
    Agent {
        name: "claude-code",
        file: ".claude/settings.json",
        events: CLAUDE_EVENTS,
        matcher: "",
        named: false,
    },
    Agent {
        name: "qwen-code",
        file: ".qwen/settings.json",
        events: CLAUDE_EVENTS,
        matcher: "",
        named: false,
    },
    Agent {
        name: "gemini-cli",
        file: ".gemini/settings.json",
        events: &[
            "BeforeAgent",
            "BeforeTool",
            "Notification",
            "AfterTool",
            "AfterAgent",
        ],
        matcher: "*",
        named: true,
    },
    Agent {
        name: "codex",
        file: ".codex/hooks.json",
        events: &[
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
        ],
        matcher: "",
        named: false,
    },
];

/// What tells our hooks from the user's.
const OURS: &str = " agent-event --agent ";

fn agent(name: &str) -> Result<&'static Agent> {
    AGENTS.iter().find(|a| a.name == name).ok_or_else(|| {
        let known: Vec<&str> = AGENTS.iter().map(|a| a.name).collect();
        Error::new(
            Kind::Usage,
            format!(
                "no hooks for agent '{}' (known: {}; aider has none)",
                name.escape_debug(),
                known.join(", ")
            ),
        )
    })
}

/// The hook command for `agent`, running this very program.
fn command(exe: &Path, agent: &str) -> String {
    format!("{}{OURS}{agent}", sh_quote(&exe.to_string_lossy()),)
}

fn is_ours(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains(OURS))
}

/// The settings file, as JSON (an empty object where there is none).
fn read(path: &Path) -> Result<Map<String, Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(Error::io(&format!("cannot read {}", path.display()), e)),
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::new(
            Kind::Usage,
            format!("{} is not a JSON object; left as it is", path.display()),
        )),
        Err(e) => Err(Error::new(
            Kind::Usage,
            format!("{} is not valid JSON ({e}); left as it is", path.display()),
        )),
    }
}

/// Write the settings back in place of the old file, at once (a new file
/// renamed over it, with the old one's permissions).
fn write(path: &Path, settings: &Map<String, Value>) -> Result<()> {
    let io = |e| Error::io(&format!("cannot write {}", path.display()), e);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut text = serde_json::to_string_pretty(settings).unwrap_or_default();
    text.push('\n');
    let tmp = path.with_extension(format!("tmux-wait-{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(io)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            Error::new(
                Kind::Usage,
                "HOME is not set: where are the agent's settings?",
            )
        })
}

/// Add our hook to `agent`'s settings (each event once); returns what was
/// done, in a line.
pub fn install(name: &str, exe: &Path) -> Result<String> {
    let a = agent(name)?;
    let path = home()?.join(a.file);
    let mut settings = read(&path)?;
    let cmd = command(exe, a.name);
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(Error::new(
            Kind::Usage,
            format!(
                "{}: \"hooks\" is not an object; left as it is",
                path.display()
            ),
        ));
    };
    let mut added = 0;
    for event in a.events {
        let list = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(list) = list.as_array_mut() else {
            return Err(Error::new(
                Kind::Usage,
                format!(
                    "{}: hooks.{event} is not a list; left as it is",
                    path.display()
                ),
            ));
        };
        let present = list.iter().any(|group| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| {
                    hs.iter()
                        .any(|h| h.get("command").and_then(Value::as_str) == Some(&cmd))
                })
        });
        if present {
            continue;
        }
        // (One of an older install, by another path: replaced.)
        strip(list);
        let mut hook = json!({"type": "command", "command": cmd});
        if a.named {
            hook["name"] = json!("tmux-wait");
        }
        list.push(json!({"matcher": a.matcher, "hooks": [hook]}));
        added += 1;
    }
    if added == 0 {
        return Ok(format!(
            "{}: tmux-wait's hooks are there already",
            path.display()
        ));
    }
    write(&path, &settings)?;
    let mut said = format!(
        "{}: tmux-wait's hook added for {added} events ({})",
        path.display(),
        a.events.join(", ")
    );
    if a.name == "codex" {
        said.push_str("; Codex asks you to trust new hooks when it starts");
    }
    Ok(said)
}

/// Remove our hook entries from one event's list; empty groups go.
fn strip(list: &mut Vec<Value>) -> usize {
    let mut removed = 0;
    for group in list.iter_mut() {
        if let Some(hs) = group.get_mut("hooks").and_then(Value::as_array_mut) {
            let before = hs.len();
            hs.retain(|h| !is_ours(h));
            removed += before - hs.len();
        }
    }
    list.retain(|g| {
        g.get("hooks")
            .and_then(Value::as_array)
            .is_none_or(|hs| !hs.is_empty())
    });
    removed
}

/// Remove our hooks from `agent`'s settings, and only ours.
pub fn remove(name: &str) -> Result<String> {
    let a = agent(name)?;
    let path = home()?.join(a.file);
    if !path.exists() {
        return Ok(format!(
            "{}: no such file; nothing to remove",
            path.display()
        ));
    }
    let mut settings = read(&path)?;
    let mut removed = 0;
    if let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) {
        for list in hooks.values_mut() {
            if let Some(list) = list.as_array_mut() {
                removed += strip(list);
            }
        }
        hooks.retain(|_, v| v.as_array().is_none_or(|l| !l.is_empty()));
        if hooks.is_empty() {
            settings.remove("hooks");
        }
    }
    if removed == 0 {
        return Ok(format!(
            "{}: no hook of tmux-wait's; nothing to remove",
            path.display()
        ));
    }
    write(&path, &settings)?;
    Ok(format!(
        "{}: tmux-wait's hook removed ({removed} entries)",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_leaves_the_users_hooks() {
        let mut list = vec![
            json!({"matcher": "", "hooks": [{"type": "command", "command": "notify-me"}]}),
            json!({"matcher": "", "hooks": [{"type": "command", "command": "'/x/tmux-wait' agent-event --agent claude-code"}]}),
            json!({"matcher": "Bash", "hooks": [
                {"type": "command", "command": "log"},
                {"type": "command", "command": "/y/tmux-wait agent-event --agent claude-code"}]}),
        ];
        assert_eq!(strip(&mut list), 2);
        assert_eq!(
            list,
            vec![
                json!({"matcher": "", "hooks": [{"type": "command", "command": "notify-me"}]}),
                json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "log"}]}),
            ]
        );
    }
}
