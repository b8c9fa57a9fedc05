//! `tmux-wait agents install` and `remove`: tmux-wait's hook in a coding
//! agent's settings file, appended beside the user's own hooks, and
//! removed again without touching anything else. Ours are told by their
//! command (`... agent-event --agent NAME`).
//!
//! Claude Code reads `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR`),
//! Qwen Code `~/.qwen/settings.json` (`$QWEN_HOME`; the same hook names),
//! Gemini CLI `~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini`; its
//! own names), Codex `~/.codex/hooks.json` (`$CODEX_HOME`; Claude Code's
//! shape; Codex asks the person to trust new hooks when it starts). aider
//! has no hooks: its screen says what it does.
//!
//! The file is edited as text (`edit`, `jsonc`) and written as people
//! keep it (`file`): through its symlinks, with its mode and owner.
//! Gemini CLI and Qwen Code read their settings through
//! strip-json-comments, so comments there are kept; Claude Code and Codex
//! read strict JSON (Claude Code 2.1.332 says "Invalid or malformed
//! JSON" and loads none of the file; Codex 0.171 "failed to parse hooks
//! config"), so a file with comments is refused for them.

use super::edit::{self, Hooks, Refused};
use super::file;
use super::jsonc::{Dialect, ParseError};
use crate::error::{Error, Kind, Result};
use crate::tmux::protocol::quote;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where an agent keeps its settings, and what overrides it.
#[derive(Clone, Copy)]
enum Home {
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    Claude,
    /// `$QWEN_HOME` (`~` expanded; also set in `~/.qwen/.env` or
    /// `~/.env`, as Qwen Code reads it there), else `~/.qwen`.
    Qwen,
    /// `$GEMINI_CLI_HOME/.gemini` (it stands for the home), else
    /// `~/.gemini`.
    Gemini,
    /// `$CODEX_HOME` (a directory that must exist), else `~/.codex`.
    Codex,
}

/// One agent's settings: where, the events to hook, and the matcher its
/// entries take.
pub struct Agent {
    pub name: &'static str,
    label: &'static str,
    home: Home,
    file: &'static str,
    events: &'static [&'static str],
    matcher: &'static str,
    /// Its hook entries are named (Gemini CLI shows them by name).
    named: bool,
    dialect: Dialect,
}

const CLAUDE_EVENTS: &[&str] = &[
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Notification",
    "Stop",
];

const STRICT: Dialect = Dialect {
    comments: false,
    bom: false,
};

/// The agents whose hooks tmux-wait knows.
pub const AGENTS: &[Agent] = &[
    Agent {
        name: "claude-code",
        label: "Claude Code",
        home: Home::Claude,
        file: "settings.json",
        events: CLAUDE_EVENTS,
        matcher: "",
        named: false,
        // Strict JSON ("Invalid or malformed JSON" for a comment), but a
        // byte order mark is read (2.1.332).
        dialect: Dialect {
            comments: false,
            bom: true,
        },
    },
    Agent {
        name: "qwen-code",
        label: "Qwen Code",
        home: Home::Qwen,
        file: "settings.json",
        events: CLAUDE_EVENTS,
        matcher: "",
        named: false,
        // JSON.parse(stripJsonComments(stripUtf8Bom(content))), 0.24.4.
        dialect: Dialect {
            comments: true,
            bom: true,
        },
    },
    Agent {
        name: "gemini-cli",
        label: "Gemini CLI",
        home: Home::Gemini,
        file: "settings.json",
        events: &[
            "BeforeAgent",
            "BeforeTool",
            "Notification",
            "AfterTool",
            "AfterAgent",
        ],
        matcher: "*",
        named: true,
        // JSON.parse(stripJsonComments(content)), 0.61.0: no byte order
        // mark.
        dialect: Dialect {
            comments: true,
            bom: false,
        },
    },
    Agent {
        name: "codex",
        label: "Codex",
        home: Home::Codex,
        file: "hooks.json",
        events: &[
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
        ],
        matcher: "",
        named: false,
        // serde_json::from_str, 0.171: neither comments nor a byte order
        // mark ("failed to parse hooks config").
        dialect: STRICT,
    },
];

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
    format!("{}{}{agent}", quote(&exe.to_string_lossy()), edit::OURS)
}

fn var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

fn home() -> Result<PathBuf> {
    var("HOME").map(PathBuf::from).ok_or_else(|| {
        Error::new(
            Kind::Usage,
            "HOME is not set: where are the agent's settings?",
        )
    })
}

/// `~` and `~/...` from the home directory, as Qwen Code expands them.
fn expand(dir: &str, home: &Path) -> PathBuf {
    match dir {
        "~" => home.to_path_buf(),
        d => match d.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(d),
        },
    }
}

/// `QWEN_HOME` as a dotenv file sets it (`QWEN_HOME=...`, `export`,
/// quotes, a comment after an unquoted value; Qwen Code also takes
/// `QWEN_HOME: ...`).
fn dotenv_qwen_home(text: &str) -> Option<String> {
    let mut found = None;
    for line in text.lines() {
        let line = line.trim_start_matches('\u{feff}').trim();
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some(rest) = line.strip_prefix("QWEN_HOME") else {
            continue;
        };
        let Some(value) = rest
            .trim_start()
            .strip_prefix('=')
            .or_else(|| rest.strip_prefix(':'))
        else {
            continue;
        };
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'' | '`')) => value[1..].split(q).next().unwrap_or(""),
            _ => value.split(" #").next().unwrap_or("").trim(),
        };
        found = Some(value.to_owned()).filter(|v| !v.is_empty());
    }
    found
}

/// The agent's settings file, as the agent finds it.
fn settings_path(a: &Agent) -> Result<PathBuf> {
    let dir = match a.home {
        Home::Claude => match var("CLAUDE_CONFIG_DIR") {
            Some(d) => PathBuf::from(d),
            None => home()?.join(".claude"),
        },
        Home::Gemini => match var("GEMINI_CLI_HOME") {
            Some(d) => PathBuf::from(d).join(".gemini"),
            None => home()?.join(".gemini"),
        },
        Home::Qwen => {
            let home = home()?;
            let set = var("QWEN_HOME").map(|v| v.to_string_lossy().into_owned());
            let set = set.or_else(|| {
                [home.join(".qwen/.env"), home.join(".env")]
                    .iter()
                    .find_map(|f| dotenv_qwen_home(&std::fs::read_to_string(f).ok()?))
            });
            match set {
                Some(d) => expand(&d, &home),
                None => home.join(".qwen"),
            }
        }
        Home::Codex => match var("CODEX_HOME") {
            Some(d) if Path::new(&d).is_dir() => PathBuf::from(d),
            Some(d) => {
                return Err(Error::new(
                    Kind::Usage,
                    format!(
                        "CODEX_HOME is {}, which is not a directory (Codex does not start so); make it, or unset CODEX_HOME",
                        Path::new(&d).display()
                    ),
                ));
            }
            None => home()?.join(".codex"),
        },
    };
    Ok(dir.join(a.file))
}

/// The settings file as named, and the file at the end of its links.
struct Place {
    path: PathBuf,
    target: PathBuf,
}

impl Place {
    fn of(a: &Agent) -> Result<Place> {
        let path = settings_path(a)?;
        let target = file::resolve(&path)?;
        Ok(Place { path, target })
    }

    /// How messages name it: `PATH`, or `PATH (a link to TARGET)`.
    fn shown(&self) -> String {
        if !self.path.is_symlink() {
            self.path.display().to_string()
        } else {
            format!(
                "{} (a link to {})",
                self.path.display(),
                self.target.display()
            )
        }
    }
}

fn refused(a: &Agent, shown: &str, r: Refused) -> Error {
    let msg = match r {
        Refused::Parse(ParseError::Invalid(e)) => {
            format!("{shown} is not valid JSON ({e}); left as it is")
        }
        Refused::Parse(ParseError::Comments) => format!(
            "{shown} has comments, which {} does not accept (it reads strict JSON, and loads none of a file with them): remove them first; left as it is",
            a.label
        ),
        Refused::Parse(ParseError::Bom) => format!(
            "{shown} starts with a byte order mark, which {} does not read: remove it first; left as it is",
            a.label
        ),
        Refused::NotObject => format!("{shown} is not a JSON object; left as it is"),
        Refused::HooksNotObject => format!("{shown}: \"hooks\" is not an object; left as it is"),
        Refused::NotList(event) => {
            format!("{shown}: hooks.{event} is not a list; left as it is")
        }
        Refused::Mismatch => format!(
            "{shown}: tmux-wait could not change only its own entries there (a fault of tmux-wait's); left as it is"
        ),
    };
    Error::new(Kind::Usage, msg)
}

/// Refused where the file may not be written: what to do by hand.
fn check_writable(place: &Place, shown: &str, by_hand: impl FnOnce() -> String) -> Result<()> {
    match file::read_only(&place.target) {
        Some(why) => Err(Error::new(
            Kind::ReadOnly,
            format!(
                "{shown} is read-only ({why}); nothing written: {}",
                by_hand()
            ),
        )),
        None => Ok(()),
    }
}

/// Add our hook to `agent`'s settings (each event once); returns what was
/// done, in a line.
pub fn install(name: &str, exe: &Path) -> Result<String> {
    let a = agent(name)?;
    let place = Place::of(a)?;
    let shown = place.shown();
    let cmd = command(exe, a.name);
    let hooks = Hooks {
        events: a.events,
        matcher: a.matcher,
        named: a.named,
        command: &cmd,
    };
    let text = file::read(&place.target)?;
    let plan =
        edit::install(text.as_deref(), a.dialect, &hooks).map_err(|r| refused(a, &shown, r))?;
    if plan.changed == 0 {
        return Ok(format!("{shown}: tmux-wait's hooks are there already"));
    }
    check_writable(&place, &shown, || {
        let entries = edit::entries(&hooks);
        let entries = serde_json::to_string(&entries["hooks"]).unwrap_or_default();
        format!("add to its \"hooks\" by hand (or where it is made from): {entries}")
    })?;
    // The record names the file by its directory's canonical path, which
    // exists from here on.
    if let Some(dir) = place.target.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(&format!("cannot make {}", dir.display()), e))?;
    }
    let place = Place::of(a)?;
    // What was there goes first: a run killed between the two leaves a
    // record of nothing changed, never a change without a record.
    let noted = file::record(&place.target, Some(&plan.before));
    file::write(&place.target, &plan.text, 0o666)?;
    let mut said = format!(
        "{}: tmux-wait's hook added for {} events ({})",
        place.shown(),
        plan.changed,
        a.events.join(", ")
    );
    if let Err(e) = noted {
        said.push_str(&format!(
            "; what was there could not be noted ({e}): remove may take away an empty list of yours"
        ));
    }
    if a.name == "codex" {
        said.push_str("; Codex asks you to trust new hooks when it starts");
    }
    Ok(said)
}

/// Remove our hooks from `agent`'s settings, and only ours.
pub fn remove(name: &str) -> Result<String> {
    let a = agent(name)?;
    let place = Place::of(a)?;
    let shown = place.shown();
    let Some(text) = file::read(&place.target)? else {
        return Ok(format!("{shown}: no such file; nothing to remove"));
    };
    let before = file::recorded(&place.target);
    let plan = edit::remove(&text, a.dialect, &before).map_err(|r| refused(a, &shown, r))?;
    if plan.changed == 0 {
        return Ok(format!(
            "{shown}: no hook of tmux-wait's; nothing to remove"
        ));
    }
    check_writable(&place, &shown, || {
        format!(
            "remove by hand the {} hooks whose command ends in \"agent-event --agent {}\"",
            plan.changed, a.name
        )
    })?;
    file::write(&place.target, &plan.text, 0o666)?;
    let _ = file::record(&place.target, None);
    Ok(format!(
        "{shown}: tmux-wait's hook removed ({} entries)",
        plan.changed
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen_home_as_a_dotenv_file_sets_it() {
        for (text, want) in [
            ("QWEN_HOME=/a/b\n", Some("/a/b")),
            ("export QWEN_HOME=\"~/q h\" # mine\n", Some("~/q h")),
            ("QWEN_HOME='/x' \nOTHER=1", Some("/x")),
            ("QWEN_HOME: /yaml/like\n", Some("/yaml/like")),
            ("QWEN_HOME=/p # note\n", Some("/p")),
            ("# QWEN_HOME=/no\nQWEN_HOMES=/no\n", None),
            ("QWEN_HOME=\n", None),
        ] {
            assert_eq!(dotenv_qwen_home(text).as_deref(), want, "{text:?}");
        }
        let home = Path::new("/h");
        assert_eq!(expand("~", home), PathBuf::from("/h"));
        assert_eq!(expand("~/q", home), PathBuf::from("/h/q"));
        assert_eq!(expand("/abs", home), PathBuf::from("/abs"));
    }
}
