//! Agent profiles: what a full-screen coding agent shows while it works,
//! when it asks a question, and when it waits for its next instruction.
//!
//! A full-screen agent (Claude Code, Codex, aider, Gemini CLI) reads its
//! terminal key by key all the time, busy or not, so the kernel cannot
//! tell its states apart; its screen can. Profiles are data: one file the
//! project ships (`profiles/agents.json`, built in) and, optionally, one of
//! the user's (`--profiles FILE`, the plugin's `@tmux-wait-profiles`),
//! whose profiles come first and replace shipped ones of the same name.
//! Agents reword their screens from release to release, so each profile
//! names the agent and the version its wording was written against.
//!
//! The file: `{"profiles": [{"name", "agent", "version", "commands",
//! "working", "asking", "idle"}]}`. A pattern is a string (found anywhere
//! in a row, case-insensitive) or `{"regex": "..."}` (Rust regex syntax,
//! case-sensitive). `commands` are program names that make a profile be
//! tried first; every profile is tried on every such screen.

use crate::error::{Error, Kind, Result};
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use std::path::Path;

/// The profiles the project ships.
const SHIPPED: &str = include_str!("../../../profiles/agents.json");

/// Patterns are looked for in this many last non-blank rows of the
/// screen (an agent draws its status and questions at the bottom; older
/// conversation above may quote anything).
const ROWS: usize = 20;

/// What a profile's patterns said of a screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Says {
    /// The agent works (its "esc to interrupt" is shown).
    Working,
    /// It asks a question: the row that asks.
    Asking(String),
    /// It waits for its next instruction: the row that says so.
    Idle(String),
}

#[derive(Debug, Clone)]
pub struct Profile {
    pub name: String,
    pub agent: String,
    /// The agent's version the wording was written against.
    pub version: String,
    commands: Vec<String>,
    working: Vec<Regex>,
    asking: Vec<Regex>,
    idle: Vec<Regex>,
}

/// Every profile, the user's first.
#[derive(Debug, Clone, Default)]
pub struct Profiles {
    list: Vec<Profile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    profiles: Vec<ProfileDoc>,
    /// Free text for the file's readers.
    #[serde(default, rename = "_comment")]
    _comment: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileDoc {
    name: String,
    agent: String,
    version: String,
    #[serde(default)]
    commands: Vec<String>,
    #[serde(default)]
    working: Vec<PatternDoc>,
    #[serde(default)]
    asking: Vec<PatternDoc>,
    #[serde(default)]
    idle: Vec<PatternDoc>,
    #[serde(default, rename = "_comment")]
    _comment: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PatternDoc {
    Text(String),
    Regex { regex: String },
}

impl Profiles {
    /// The shipped profiles.
    pub fn shipped() -> Profiles {
        Profiles {
            list: parse(SHIPPED, "the shipped profiles").expect("the shipped profiles parse"),
        }
    }

    /// The user's file (if any), then the shipped profiles.
    pub fn load(user: Option<&Path>) -> Result<Profiles> {
        let mut p = Profiles::shipped();
        if let Some(path) = user {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::new(
                    Kind::Usage,
                    format!("cannot read the profiles in {}: {e}", path.display()),
                )
            })?;
            let mine = parse(&text, &path.display().to_string())?;
            p.list.retain(|s| !mine.iter().any(|m| m.name == s.name));
            let mut all = mine;
            all.append(&mut p.list);
            p.list = all;
        }
        Ok(p)
    }

    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(|p| p.name.as_str()).collect()
    }

    /// A profile's working text in a line the stream drew: the profile.
    pub fn busy_in(&self, line: &str) -> Option<&Profile> {
        self.list
            .iter()
            .find(|p| p.working.iter().any(|r| r.is_match(line)))
    }

    /// What the profiles say of a still screen of `command`'s: the first
    /// profile (those naming the command first) with a pattern on one of
    /// the last rows; working beats asking beats idle.
    pub fn judge(&self, command: Option<&str>, rows: &[String]) -> Option<(&Profile, Says)> {
        let rows: Vec<&str> = rows
            .iter()
            .map(|r| r.trim_end())
            .filter(|r| !r.trim().is_empty())
            .collect();
        let rows = &rows[rows.len().saturating_sub(ROWS)..];
        let named = |p: &&Profile| command.is_some_and(|c| p.commands.iter().any(|n| n == c));
        let order = self
            .list
            .iter()
            .filter(named)
            .chain(self.list.iter().filter(|p| !named(p)));
        for p in order {
            // The first pattern in the profile's order that is on a row
            // (the lowest such row): a question before its answers.
            let hit = |res: &[Regex]| {
                res.iter().find_map(|re| {
                    rows.iter()
                        .rev()
                        .find(|r| re.is_match(r))
                        .map(|r| clean_row(r))
                })
            };
            if hit(&p.working).is_some() {
                return Some((p, Says::Working));
            }
            if let Some(q) = hit(&p.asking) {
                return Some((p, Says::Asking(q)));
            }
            if let Some(q) = hit(&p.idle) {
                return Some((p, Says::Idle(q)));
            }
        }
        None
    }
}

/// A row of a box drawn around a question, as its words: the frame's
/// characters at either end and surrounding blanks removed, at most 200
/// characters.
pub fn clean_row(row: &str) -> String {
    const FRAME: &[char] = &[
        '│', '┃', '║', '╭', '╮', '╰', '╯', '─', '━', '═', '┌', '┐', '└', '┘', '├', '┤', '|',
    ];
    let s = row.trim().trim_matches(FRAME).trim();
    let mut out: String = s.chars().take(200).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

fn parse(text: &str, origin: &str) -> Result<Vec<Profile>> {
    let bad = |m: String| Error::new(Kind::Usage, format!("{origin}: {m}"));
    let doc: FileDoc =
        serde_json::from_str(text).map_err(|e| bad(format!("not a profiles file: {e}")))?;
    let mut out = Vec::new();
    for p in doc.profiles {
        if p.name.trim().is_empty() || p.agent.trim().is_empty() || p.version.trim().is_empty() {
            return Err(bad(
                "each profile needs a name, the agent it is for and the version its wording was written against".into(),
            ));
        }
        let compile = |list: &[PatternDoc], what: &str| -> Result<Vec<Regex>> {
            list.iter()
                .map(|d| {
                    let (src, insensitive) = match d {
                        PatternDoc::Text(t) if t.is_empty() => {
                            return Err(bad(format!(
                                "profile {}: an empty {what} pattern matches everything",
                                p.name
                            )));
                        }
                        PatternDoc::Text(t) => (regex::escape(t), true),
                        PatternDoc::Regex { regex } => (regex.clone(), false),
                    };
                    RegexBuilder::new(&src)
                        .case_insensitive(insensitive)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| {
                            bad(format!(
                                "profile {}: invalid {what} regex: {}",
                                p.name,
                                e.to_string().lines().last().unwrap_or("")
                            ))
                        })
                })
                .collect()
        };
        out.push(Profile {
            working: compile(&p.working, "working")?,
            asking: compile(&p.asking, "asking")?,
            idle: compile(&p.idle, "idle")?,
            name: p.name,
            agent: p.agent,
            version: p.version,
            commands: p.commands,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    #[test]
    fn the_shipped_profiles_parse_and_name_their_versions() {
        let p = Profiles::shipped();
        for name in ["claude-code", "codex", "aider", "gemini-cli"] {
            let prof = p.list.iter().find(|x| x.name == name).expect(name);
            assert!(!prof.version.is_empty() && !prof.agent.is_empty());
            assert!(!prof.working.is_empty() || name == "aider", "{name}");
        }
    }

    #[test]
    fn working_beats_asking_and_questions_are_cleaned() {
        let p = Profiles::shipped();
        let busy = rows("│ Do you want to proceed? │\n✻ Thinking… (esc to interrupt)");
        let (prof, says) = p.judge(Some("claude"), &busy).unwrap();
        assert_eq!((prof.name.as_str(), says), ("claude-code", Says::Working));
        let asking = rows(
            "╭────────────────────────╮\n│ Do you want to proceed? │\n│ ❯ 1. Yes                │\n│   2. No                 │\n╰────────────────────────╯\n",
        );
        let (_, says) = p.judge(Some("python3"), &asking).unwrap();
        assert_eq!(says, Says::Asking("Do you want to proceed?".into()));
        assert!(p.judge(None, &rows("just text\n$ ")).is_none());
        assert_eq!(
            clean_row("│ Do you want to proceed? │"),
            "Do you want to proceed?"
        );
    }

    #[test]
    fn a_user_file_comes_first_and_bad_files_are_one_line_errors() {
        let dir = tempfile_dir();
        let f = dir.join("mine.json");
        std::fs::write(
            &f,
            r#"{"profiles":[{"name":"claude-code","agent":"Claude Code","version":"9.9",
                "working":[{"regex":"^BUSY$"}],"asking":["Shall I?"]}]}"#,
        )
        .unwrap();
        let p = Profiles::load(Some(&f)).unwrap();
        assert_eq!(p.names()[0], "claude-code");
        assert_eq!(p.names().iter().filter(|n| **n == "claude-code").count(), 1);
        let (prof, says) = p.judge(None, &rows("x\nshall i?")).unwrap();
        assert_eq!(
            (prof.version.as_str(), says),
            ("9.9", Says::Asking("shall i?".into()))
        );
        for bad in [
            "{",
            r#"{"profiles":[{"name":"x","agent":"","version":"1"}]}"#,
            r#"{"profiles":[{"name":"x","agent":"a","version":"1","asking":[""]}]}"#,
            r#"{"profiles":[{"name":"x","agent":"a","version":"1","working":[{"regex":"("}]}]}"#,
            r#"{"profiles":[{"name":"x","agent":"a","version":"1","extra":1}]}"#,
        ] {
            std::fs::write(&f, bad).unwrap();
            let e = Profiles::load(Some(&f)).unwrap_err();
            assert_eq!(e.kind, Kind::Usage);
            assert!(!e.message.contains('\n'), "{}", e.message);
        }
        let e = Profiles::load(Some(&dir.join("missing.json"))).unwrap_err();
        assert!(e.message.contains("cannot read"), "{}", e.message);
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "tw-profiles-{}-{}",
            std::process::id(),
            crate::state::random_id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
