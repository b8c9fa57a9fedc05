//! Agent profiles: what a full-screen coding agent is, as its processes
//! show it; what its terminal title says; and what its screen shows while
//! it works, when it asks a question, and when it waits for its next
//! instruction.
//!
//! A coding agent (Claude Code, Codex, Gemini CLI, Qwen Code, aider,
//! OpenCode, Copilot CLI, pi, Cline) reads its terminal key by key all the
//! time, busy or not, so the kernel cannot tell its states apart; its own
//! signals and its screen can. Which agent runs in a pane is told by its
//! processes (most run as `node`, so the program's name says nothing; pi
//! renames its process): a profile judges only its
//! own agent's title and screen. Profiles are data: one file the project
//! ships (`profiles/agents.json`, built in) and, optionally, one of the
//! user's (`--profiles FILE`, the plugin's `@tmux-wait-profiles`), whose
//! profiles come first and replace shipped ones of the same name. Agents
//! reword their screens from release to release, so each profile names the
//! agent and the release its wording was checked against.
//!
//! The file: `{"profiles": [{"name", "agent", "version", "processes",
//! "title", "working", "asking", "idle"}]}`. `processes` names the agent's
//! processes: a program name (`claude`, `aider`) or a piece of a command
//! line's path (`@google/gemini-cli`); `title` holds `working`, `asking`
//! and `idle` patterns for the terminal's title. A pattern is a string
//! (found anywhere in a row or title, case-insensitive) or `{"regex":
//! "..."}` (Rust regex syntax, case-sensitive).

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

/// What a profile's patterns said of a screen or a title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Says {
    /// The agent works (its "esc to interrupt" is shown).
    Working,
    /// It asks a question: the row that asks.
    Asking(String),
    /// It waits for its next instruction: the row that says so.
    Idle(String),
}

/// Patterns for each state.
#[derive(Debug, Clone, Default)]
struct States {
    working: Vec<Regex>,
    asking: Vec<Regex>,
    idle: Vec<Regex>,
}

#[derive(Debug, Clone)]
pub struct Profile {
    pub name: String,
    pub agent: String,
    /// The agent's release the wording was checked against.
    pub version: String,
    processes: Vec<String>,
    title: States,
    screen: States,
    /// It draws its conversation as a transcript (aider), not a full
    /// screen: its lowest row that a pattern names is its state.
    inline: bool,
    /// An inline agent's prompt with an instruction typed after it: the
    /// person still types it while the cursor is on it (idle); once the
    /// cursor left it, it was submitted and the agent works on it.
    submitted: Vec<Regex>,
    /// Its questions are drawn over a spinner that keeps turning and above
    /// status rows that stay (pi, Cline), and go once answered: a question
    /// on its screen beats working and idle.
    questions_win: bool,
}

/// A process of a pane, as far as profiles look at it: its program's name
/// and the first words of its command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proc {
    pub comm: String,
    pub args: Vec<String>,
    /// The path of its executable (`/proc/PID/exe`).
    pub exe: String,
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
    /// false: the shipped profiles are not used (every agent is judged by
    /// the rules for one without a profile, or by this file's).
    #[serde(default)]
    shipped: Option<bool>,
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
    /// (`commands`: the name this list had before it took command lines.)
    #[serde(default, alias = "commands")]
    processes: Vec<String>,
    #[serde(default)]
    title: Option<StatesDoc>,
    #[serde(default)]
    inline: bool,
    #[serde(default)]
    submitted: Vec<PatternDoc>,
    #[serde(default)]
    questions_win: bool,
    /// Where its release comes from, for the conformance kit's installer
    /// (`{"npm": PACKAGE, "bin": EXECUTABLE}`, or `"pypi"`): not read here.
    #[serde(default)]
    install: Option<serde_json::Value>,
    #[serde(default)]
    working: Vec<PatternDoc>,
    #[serde(default)]
    asking: Vec<PatternDoc>,
    #[serde(default)]
    idle: Vec<PatternDoc>,
    #[serde(default, rename = "_comment")]
    _comment: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StatesDoc {
    #[serde(default)]
    working: Vec<PatternDoc>,
    #[serde(default)]
    asking: Vec<PatternDoc>,
    #[serde(default)]
    idle: Vec<PatternDoc>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PatternDoc {
    Text(String),
    Regex { regex: String },
}

impl Profile {
    /// One of `procs` is this agent's.
    fn is(&self, procs: &[Proc]) -> bool {
        procs.iter().any(|p| {
            self.processes.iter().any(|want| {
                let path = want.contains('/') || want.starts_with('@');
                p.comm == *want
                    || p.args.iter().any(|a| {
                        if path {
                            a.contains(want.as_str())
                        } else {
                            a.rsplit('/').next() == Some(want.as_str())
                        }
                    })
            })
        })
    }

    /// It draws a transcript, not a full screen.
    pub fn inline(&self) -> bool {
        self.inline
    }

    /// Its questions beat its busy row and its status rows.
    pub fn questions_win(&self) -> bool {
        self.questions_win
    }

    /// Its working text in a line the stream drew.
    pub fn busy_in(&self, line: &str) -> bool {
        self.screen.working.iter().any(|r| r.is_match(line))
    }

    /// What its title says (working beats asking beats idle).
    pub fn title(&self, title: &str) -> Option<Says> {
        let t = &self.title;
        if t.working.iter().any(|r| r.is_match(title)) {
            Some(Says::Working)
        } else if t.asking.iter().any(|r| r.is_match(title)) {
            Some(Says::Asking(String::new()))
        } else if t.idle.iter().any(|r| r.is_match(title)) {
            Some(Says::Idle(String::new()))
        } else {
            None
        }
    }

    /// What its patterns say of a screen's last rows. For each state, the
    /// first of its patterns (in the profile's order) that is on a row,
    /// at the lowest such row: a question's row before its answers'.
    /// Working beats asking and idle; of a question and an idle prompt,
    /// the lower is the current one (an answered question above the next
    /// prompt is over). An inline agent's lowest named row decides. A
    /// profile whose questions win takes a question first.
    pub fn screen(&self, rows: &[String]) -> Option<Says> {
        self.screen_at(rows, "")
    }

    /// [`Profile::screen`], knowing the line under the cursor (`cursor`:
    /// its text, or empty): an inline agent's lowest row that holds its
    /// prompt and an instruction is being typed while the cursor is on it
    /// (idle), and was submitted once the cursor left it (working).
    pub fn screen_at(&self, rows: &[String], cursor: &str) -> Option<Says> {
        let rows: Vec<&str> = rows
            .iter()
            .map(|r| r.trim_end())
            .filter(|r| !r.trim().is_empty())
            .collect();
        let rows = &rows[rows.len().saturating_sub(ROWS)..];
        // (The row's index and its words.)
        let hit = |res: &[Regex]| -> Option<(usize, String)> {
            if self.inline {
                return (0..rows.len())
                    .rev()
                    .find(|&i| res.iter().any(|re| re.is_match(rows[i])))
                    .map(|i| (i, clean_row(rows[i])));
            }
            res.iter().find_map(|re| {
                (0..rows.len())
                    .rev()
                    .find(|&i| re.is_match(rows[i]))
                    .map(|i| (i, clean_row(rows[i])))
            })
        };
        let s = &self.screen;
        let (working, asking, idle) = (hit(&s.working), hit(&s.asking), hit(&s.idle));
        let at = |h: &Option<(usize, String)>| h.as_ref().map(|(i, _)| *i);
        if self.questions_win
            && let Some((_, q)) = &asking
        {
            return Some(Says::Asking(q.clone()));
        }
        if self.inline
            && let Some((i, row)) = hit(&self.submitted)
            && Some(i) > at(&working).max(at(&asking)).max(at(&idle))
        {
            let c = cursor.trim();
            let typing = i + 1 == rows.len() && !c.is_empty() && row.starts_with(c);
            // (Its prompt, without what is being typed after it.)
            let prompt = self
                .submitted
                .iter()
                .find_map(|re| re.find(&row))
                .map(|m| row[..m.end()].trim_end_matches(|ch: char| !ch.is_whitespace()))
                .map(|p| p.trim_end().to_owned())
                .unwrap_or_default();
            return Some(if typing {
                Says::Idle(prompt)
            } else {
                Says::Working
            });
        }
        if let Some(w) = at(&working)
            && (!self.inline || Some(w) >= at(&asking).max(at(&idle)))
        {
            return Some(Says::Working);
        }
        match (asking, idle) {
            (Some((a, q)), Some((i, _))) if a > i => Some(Says::Asking(q)),
            (Some(_), Some((_, row))) | (None, Some((_, row))) => Some(Says::Idle(row)),
            (Some((_, q)), None) => Some(Says::Asking(q)),
            (None, None) => None,
        }
    }
}

impl Profiles {
    /// The shipped profiles.
    pub fn shipped() -> Profiles {
        Profiles {
            list: parse(SHIPPED, "the shipped profiles")
                .expect("the shipped profiles parse")
                .0,
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
            let (mine, shipped) = parse(&text, &path.display().to_string())?;
            if !shipped {
                p.list.clear();
            }
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

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.list.iter().find(|p| p.name == name)
    }

    /// The agent whose processes these are: the first profile that names
    /// one of them.
    pub fn identify(&self, procs: &[Proc]) -> Option<&Profile> {
        self.list.iter().find(|p| p.is(procs))
    }
}

/// A row of a box drawn around a question, as its words: the frame's
/// characters at either end and surrounding blanks removed, at most 200
/// characters.
pub fn clean_row(row: &str) -> String {
    // (And a scrollbar's column at the edge: Qwen Code draws one.)
    const FRAME: &[char] = &[
        '│', '┃', '║', '╭', '╮', '╰', '╯', '─', '━', '═', '┌', '┐', '└', '┘', '├', '┤', '|', '█',
        '▐', '▌', '▕', '▏', '░', '▒', '▓',
    ];
    let s = row.trim().trim_matches(FRAME).trim();
    let mut out: String = s.chars().take(200).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// A file's profiles, and whether the shipped ones are used beside them.
fn parse(text: &str, origin: &str) -> Result<(Vec<Profile>, bool)> {
    let bad = |m: String| Error::new(Kind::Usage, format!("{origin}: {m}"));
    let doc: FileDoc =
        serde_json::from_str(text).map_err(|e| bad(format!("not a profiles file: {e}")))?;
    let mut out = Vec::new();
    let shipped = doc.shipped;
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
        let t = p.title.unwrap_or_default();
        let submitted = compile(&p.submitted, "submitted")?;
        out.push(Profile {
            title: States {
                working: compile(&t.working, "title working")?,
                asking: compile(&t.asking, "title asking")?,
                idle: compile(&t.idle, "title idle")?,
            },
            screen: States {
                working: compile(&p.working, "working")?,
                asking: compile(&p.asking, "asking")?,
                idle: compile(&p.idle, "idle")?,
            },
            name: p.name,
            agent: p.agent,
            version: p.version,
            processes: p.processes,
            inline: p.inline,
            submitted,
            questions_win: p.questions_win,
        });
        let _ = p.install;
    }
    Ok((out, shipped.unwrap_or(true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    fn proc(comm: &str, args: &[&str]) -> Proc {
        Proc {
            comm: comm.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            exe: String::new(),
        }
    }

    #[test]
    fn the_shipped_profiles_parse_and_name_their_releases() {
        let p = Profiles::shipped();
        for name in [
            "claude-code",
            "codex",
            "gemini-cli",
            "qwen-code",
            "aider",
            "opencode",
            "copilot",
            "pi",
            "cline",
        ] {
            let prof = p.get(name).expect(name);
            assert!(!prof.version.is_empty() && !prof.agent.is_empty());
            assert!(!prof.screen.asking.is_empty(), "{name}");
        }
    }

    /// Which agent runs, from its processes as the releases run them
    /// (checked 2026-12-04): four run as `node` or a binary of their own.
    #[test]
    fn an_agent_is_told_by_its_processes() {
        let p = Profiles::shipped();
        let id = |procs: &[Proc]| p.identify(procs).map(|x| x.name.as_str());
        let claude = [proc("claude", &["claude"])];
        assert_eq!(id(&claude), Some("claude-code"));
        let codex = [
            proc(
                "node",
                &["node", "/home/u/.npm/lib/node_modules/.bin/codex"],
            ),
            proc(
                "codex",
                &[
                    "/home/u/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
                ],
            ),
        ];
        assert_eq!(id(&codex), Some("codex"));
        let gemini = [proc(
            "node",
            &[
                "/usr/bin/node",
                "--max-old-space-size=12052",
                "/p/node_modules/.bin/gemini",
            ],
        )];
        assert_eq!(id(&gemini), Some("gemini-cli"));
        let qwen = [proc(
            "node",
            &[
                "/n22/bin/node",
                "--expose-gc",
                "/p/node_modules/@qwen-code/qwen-code/cli.js",
            ],
        )];
        assert_eq!(id(&qwen), Some("qwen-code"));
        let aider = [proc(
            "aider",
            &["/v/bin/python3", "/v/bin/aider", "--model"],
        )];
        assert_eq!(id(&aider), Some("aider"));
        assert_eq!(id(&[proc("node", &["node", "server.js"])]), None);
        assert_eq!(id(&[proc("vim", &["vim", "claude.txt"])]), None);
    }

    /// The releases' own screens (tmux 120x40, verbatim rows).
    #[test]
    fn each_agent_by_its_own_screen() {
        let p = Profiles::shipped();
        let says = |name: &str, screen: &str| p.get(name).unwrap().screen(&rows(screen));
        assert_eq!(
            says(
                "claude-code",
                "✻ Transfiguring… (0s · ↓ 5 tokens)\n────\n❯ \n────\n  ⏸ manual mode on · esc to interrupt"
            ),
            Some(Says::Working)
        );
        assert_eq!(
            says(
                "claude-code",
                " touch x\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow\n   4. No\n\n Esc to cancel · Tab to amend"
            ),
            Some(Says::Asking("Do you want to proceed?".into()))
        );
        assert_eq!(
            says(
                "claude-code",
                "────\n❯\u{a0} \n────\n  ⏵⏵ auto mode on (shift+tab to cycle) · ← for agents"
            ),
            Some(Says::Idle(
                "⏵⏵ auto mode on (shift+tab to cycle) · ← for agents".into()
            ))
        );
        assert_eq!(
            says(
                "gemini-cli",
                " ⠸ Thinking... (esc to cancel, 7s)      ? for shortcuts\n────\n >   Type your message or @path/to/file"
            ),
            Some(Says::Working)
        );
        assert_eq!(
            says(
                "gemini-cli",
                "│ ? Shell  touch x │\n│ Allow execution of [Shell]? │\n│ ● 1. Allow once │\n│   3. No, suggest changes (esc) │"
            ),
            Some(Says::Asking("Allow execution of [Shell]?".into()))
        );
        assert_eq!(
            says(
                "qwen-code",
                "   Allow execution of: 'touch, sleep'?\n   › 1. Yes, allow once\n  ⠏ Waiting for user confirmation..."
            ),
            Some(Says::Asking("Allow execution of: 'touch, sleep'?".into()))
        );
        assert_eq!(
            says(
                "codex",
                "◦ Working (1s • esc to interrupt)\n› Ask Codex to do anything\n  ← for agents · ? for shortcuts"
            ),
            Some(Says::Working)
        );
        // aider draws a transcript: an answered question above its next
        // prompt is over; its command running is work.
        let q = "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:";
        assert_eq!(
            says("aider", &format!("sleep 8; echo done\n{q}")),
            Some(Says::Asking(q.into()))
        );
        assert_eq!(
            says("aider", &format!("{q} y\nRunning sleep 8; echo done")),
            Some(Says::Working)
        );
        assert_eq!(
            says(
                "aider",
                &format!("{q} y\nRunning sleep 8\ndone\nAdded 2 lines\n────\ndiff> ")
            ),
            Some(Says::Idle("diff>".into()))
        );
        assert_eq!(says("aider", "────\n> "), Some(Says::Idle(">".into())));
        // Its instruction typed at its prompt: idle while the cursor is on
        // it, working once submitted (the cursor on the row below).
        let at =
            |screen: &str, cursor: &str| p.get("aider").unwrap().screen_at(&rows(screen), cursor);
        let typed = "Added 2 lines\n────\ndiff> say hello";
        assert_eq!(at(typed, "diff> say hel"), Some(Says::Idle("diff>".into())));
        assert_eq!(at(typed, "diff>"), Some(Says::Idle("diff>".into())));
        assert_eq!(at(typed, ""), Some(Says::Working));
        assert_eq!(at(&format!("{typed}\nHello!"), ""), Some(Says::Working));
        assert_eq!(
            at(&format!("{typed}\nHello!\n────\ndiff>"), "diff>"),
            Some(Says::Idle("diff>".into()))
        );
    }

    /// The agents checked 2026-12-06, by their own screens.
    #[test]
    fn opencode_copilot_pi_and_cline_by_their_screens() {
        let p = Profiles::shipped();
        let says = |name: &str, screen: &str| p.get(name).unwrap().screen(&rows(screen));
        let oc_idle =
            "  ┃  Build · Mock Model Mock\n  ╹▀▀▀▀\n   /tmp/x/proj        20  ctrl+p commands";
        assert!(matches!(says("opencode", oc_idle), Some(Says::Idle(_))));
        let oc_busy = "  ┃  Build · Mock Model Mock\n  ╹▀▀▀▀\n   ■■⬝⬝⬝⬝⬝⬝  esc interrupt     tab agents  ctrl+p commands";
        assert_eq!(says("opencode", oc_busy), Some(Says::Working));
        let oc_ask = "  ┃  △ Permission required\n  ┃    # Shell command\n  ┃  $ touch x\n  ┃   Allow once   Allow always   Reject";
        assert_eq!(
            says("opencode", oc_ask),
            Some(Says::Asking("△ Permission required".into()))
        );
        let cop = "────\n❯\n────\n ◉ Working · 12 B esc esc interrupt       mock-model";
        assert_eq!(says("copilot", cop), Some(Says::Working));
        let cop_idle =
            "────\n❯\n────\n ← open sidebar · Interactive · Manual Approval · / commands";
        assert!(matches!(says("copilot", cop_idle), Some(Says::Idle(_))));
        // pi and Cline keep a spinner turning above their questions.
        let pi = " ⠧ Working...\n────\n ⚠️ Dangerous command:\n   rm -rf x\n Allow?\n → Yes\n────\n↑20 ↓20 0.0%/128k (auto)   mock-model";
        assert_eq!(
            says("pi", pi),
            Some(Says::Asking("⚠️ Dangerous command:".into()))
        );
        let pi_busy = " ⠧ Working...\n────\n────\n↑20 ↓20 0.0%/128k (auto)   mock-model";
        assert_eq!(says("pi", pi_busy), Some(Says::Working));
        let cline = " ⠴ Thinking... (esc to cancel)\n Cline needs permission\n Approve tool call?\n  [y] Approve   [n] Deny\n mock-model (0) $0.00\n clproj\n Auto-approve all disabled (Shift+Tab)";
        assert_eq!(
            says("cline", cline),
            Some(Says::Asking("Approve tool call?".into()))
        );
        let cline_idle = " * Done.\n────\n❯ Ask anything...\n────\n mock-model (10) $0.00\n clproj\n Auto-approve all disabled (Shift+Tab)";
        assert!(matches!(says("cline", cline_idle), Some(Says::Idle(_))));
    }

    /// Titles decide at once: Codex's spinner while it works (also while
    /// it streams, with no working row on its screen), Gemini CLI's and
    /// Qwen Code's words and glyphs.
    #[test]
    fn titles_say_what_agents_do() {
        let p = Profiles::shipped();
        let t = |name: &str, title: &str| p.get(name).unwrap().title(title);
        assert_eq!(
            t("codex", "⠹ hello there | proj-codex"),
            Some(Says::Working)
        );
        assert!(matches!(
            t("codex", "[ ! ] Action Required | hello | proj"),
            Some(Says::Asking(_))
        ));
        assert_eq!(t("codex", "hello there | proj-codex"), None);
        assert_eq!(
            t("gemini-cli", "✦  Working… (proj)          "),
            Some(Says::Working)
        );
        assert!(matches!(
            t("gemini-cli", "✋  Action Required (proj)"),
            Some(Says::Asking(_))
        ));
        assert!(matches!(
            t("gemini-cli", "◇  Ready (proj)"),
            Some(Says::Idle(_))
        ));
        assert_eq!(t("qwen-code", "◐\u{fe0e} Qwen - proj"), Some(Says::Working));
        assert!(matches!(
            t("qwen-code", "✳\u{fe0e} Qwen - proj"),
            Some(Says::Asking(_))
        ));
        assert!(matches!(t("qwen-code", "Qwen - proj"), Some(Says::Idle(_))));
        assert_eq!(t("claude-code", "✳ Claude Code"), None);
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
        let prof = p.get("claude-code").unwrap();
        assert_eq!(
            (prof.version.as_str(), prof.screen(&rows("x\nshall i?"))),
            ("9.9", Some(Says::Asking("shall i?".into())))
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
