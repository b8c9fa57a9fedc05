//! The coding-agents kit: the real releases of Claude Code, Codex, Gemini
//! CLI, Qwen Code, aider, OpenCode, Copilot CLI, pi and Cline (each
//! profile's `version` in profiles/agents.json), each typed at a bash
//! prompt in a real pane and
//! driven with send-keys against the mock model server
//! (tests/agents/mock_model.py), while `panes` and `any` say what the pane
//! waits for at each step: every first-run screen, idle, working (a slow
//! "thinking" turn, then a streamed answer), a shell command's approval,
//! the command's work, idle again, an MCP round trip through `tmux-wait
//! mcp` (the agents whose scene asks for it), and the exit back to the
//! shell. Then the same again with tmux-wait's hooks installed in the
//! agent's settings, or its plugin (`tmux-wait agents install NAME`).
//! An agent is one scene ([`Agent`]) and one `#[test]` here.
//!
//! The agents come from `scripts/agents-install`, whose cache directory
//! `TW_AGENTS` names (`TW_AGENTS=target/agents/pinned scripts/test agents`);
//! without it each test says "skipped: TW_AGENTS is not set" and passes,
//! and so does an agent not installed there. `TW_AGENTS_PROFILES=off`
//! judges with no profile at all (see [`bare`]).
//! One agent runs at a time, alone on the machine. Each test prints a
//! table (step, expected, observed, ms from the screen being drawn to `any`
//! returning) and fails if any check did not hold; with
//! `TW_AGENTS_REPORT=DIR` it also writes the rows to `DIR/AGENT.tsv`
//! (scripts/agents-newest compares two runs), and keeps the requests each
//! agent made. The markers below are each pinned release's own wording.
//!
//! Codex offers MCP tools in a namespace (`mcp__tmux_wait`, tool
//! `pane_states`) and runs a call only when it names the namespace, which
//! the mock's function calls do not: its MCP check fails until the mock
//! sends one.

use crate::common::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a step's screen may take to show (agents start slowly).
const SHOW: Duration = Duration::from_secs(40);
/// How long after a screen shows `panes` and `any` may take to say so.
const JUDGE: Duration = Duration::from_secs(3);
/// How long a working state is sampled, and after how long it must hold.
const HOLD: Duration = Duration::from_millis(2500);
const SETTLE: Duration = Duration::from_secs(1);
/// The streamed answer of the slow turn: its first and last words.
const BEGIN: &str = "Slow answer begins";
const END: &str = "slow answer ends here";

/// A screen the agent shows that someone must answer.
struct Screen {
    label: &'static str,
    /// Text on the screen that says it is this one.
    marker: &'static str,
    /// The question `panes` and `any` should give: the row, or its start
    /// when it ends in "…".
    question: &'static str,
    /// The keys that answer it: tmux key names, or `=text` typed as is.
    keys: &'static [&'static str],
}

/// One agent's scene: how it is pointed at the mock and started, what its
/// screens show at each step, and how it is answered. Strings may name
/// `{base}` (the mock's URL), `{port}`, `{home}` (the private HOME),
/// `{sock}` (the tmux server's socket), `{bin}` (tmux-wait) and `{pkg}`
/// (the agent's installed npm package).
struct Agent {
    name: &'static str,
    /// Its prefix in versions.env.
    key: &'static str,
    /// Its environment, in the pane's shell.
    env: &'static [(&'static str, &'static str)],
    /// Files written into the private HOME before it starts: (path, text).
    files: &'static [(&'static str, &'static str)],
    /// Commands run (in the project, with the private HOME) before it
    /// starts, such as a log-in to the mock.
    setup: &'static [&'static str],
    /// The command line typed at the prompt.
    command: &'static str,
    /// The command the mock has it run (it must ask before running it).
    shell: &'static str,
    /// `tmux-wait agents install NAME` adds its hooks: the run is done
    /// again with them.
    hooks: bool,
    first_run: &'static [Screen],
    /// Shown (all of them) while it waits for its next instruction; `$X`:
    /// its last non-blank row is X.
    idle: &'static [&'static str],
    /// Shown while it works.
    working: &'static str,
    /// Shown while its approved command runs.
    running: &'static str,
    approval: Screen,
    /// A question after the command ran (aider's "Add command output").
    after_command: Option<Screen>,
    /// Shown once the turn that ran the command ended.
    after_command_text: &'static str,
    exit: &'static str,
    mcp: bool,
    /// Its output stays on the main screen (old questions stay visible).
    inline: bool,
    /// The approval is answered as the plugin's menu answers it: `answer
    /// -t PANE --question-id ID --pid PID CHOICE` with what `answer -t
    /// PANE` offered (this choice must be among them), not with `keys`.
    answer: Option<&'static str>,
}

const ENTER: &[&str] = &["Enter"];

/// The command the mock has most agents run: it writes a file, works for
/// a few seconds, and prints.
const TOUCH: &str = "touch mock-file.txt && sleep 4 && echo mock-done";

const CLAUDE: Agent = Agent {
    name: "claude-code",
    key: "CLAUDE_CODE",
    env: &[
        ("ANTHROPIC_BASE_URL", "{base}"),
        ("ANTHROPIC_AUTH_TOKEN", "dummy"),
        ("DISABLE_TELEMETRY", "1"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ],
    // Manual mode ("default"): it asks before a command that writes; the
    // MCP server's tools are allowed.
    files: &[
        (
            ".claude/settings.json",
            r#"{"permissions": {"defaultMode": "default", "allow": ["mcp__tmux-wait"]}}"#,
        ),
        (
            "kit-mcp.json",
            r#"{"mcpServers": {"tmux-wait": {"command": "{bin}", "args": ["-S", "{sock}", "mcp"]}}}"#,
        ),
    ],
    setup: &[],
    command: "claude --mcp-config {home}/kit-mcp.json",
    shell: TOUCH,
    hooks: true,
    first_run: &[
        Screen {
            label: "first run: theme",
            marker: "Choose the text style that looks best with your terminal",
            question: "Choose the text style that looks best with your terminal",
            keys: ENTER,
        },
        Screen {
            label: "first run: security notes",
            marker: "Security notes:",
            question: "Press Enter to continue",
            keys: ENTER,
        },
        Screen {
            label: "first run: trust the folder",
            marker: "Quick safety check",
            question: "Quick safety check: Is this a project you created or one you trust?…",
            keys: &["Down", "Enter"],
        },
        Screen {
            label: "first run: auto mode offer",
            marker: "Make auto mode your default permission mode?",
            question: "Make auto mode your default permission mode?",
            keys: &["Down", "Enter"],
        },
    ],
    idle: &["? for shortcuts"],
    working: "esc to interrupt",
    running: "esc to interrupt",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Do you want to proceed?",
        question: "Do you want to proceed?",
        keys: ENTER,
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/exit",
    mcp: true,
    inline: false,
    answer: Some("1"),
};

const CODEX: Agent = Agent {
    name: "codex",
    key: "CODEX",
    env: &[("MOCK_API_KEY", "dummy")],
    // The default approval policy (on-request) asks for a command that
    // asks to leave the sandbox, as the mock's do.
    files: &[(
        ".codex/config.toml",
        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n\
         [model_providers.mock]\nname = \"Mock\"\n\
         base_url = \"{base}/v1\"\nwire_api = \"responses\"\n\
         env_key = \"MOCK_API_KEY\"\n\n\
         [mcp_servers.tmux-wait]\ncommand = \"{bin}\"\nargs = [\"-S\", \"{sock}\", \"mcp\"]\n",
    )],
    setup: &[],
    command: "codex",
    shell: TOUCH,
    hooks: true,
    first_run: &[
        Screen {
            label: "first run: trust the folder",
            marker: "Trust this folder?",
            question: "Trust this folder?…",
            keys: ENTER,
        },
        Screen {
            label: "first run: hooks need review",
            marker: "Hooks need review",
            question: "Hooks need review",
            keys: &["Down", "Enter"],
        },
    ],
    // (Its composer shows for seconds before the trust question; the
    // model's row only once the session is ready.)
    idle: &["Ask Codex to do anything", "mock-model default"],
    working: "esc to interrupt",
    running: "esc to interrupt",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Would you like to run the following command?",
        question: "Would you like to run the following command?",
        keys: ENTER,
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/quit",
    mcp: true,
    inline: false,
    answer: Some("1"),
};

const GEMINI: Agent = Agent {
    name: "gemini-cli",
    key: "GEMINI_CLI",
    env: &[
        ("GOOGLE_GEMINI_BASE_URL", "{base}"),
        ("GEMINI_API_KEY", "dummy"),
    ],
    files: &[(
        ".gemini/settings.json",
        r#"{"mcpServers": {"tmux-wait": {"command": "{bin}", "args": ["-S", "{sock}", "mcp"], "trust": true}}}"#,
    )],
    setup: &[],
    command: "gemini",
    shell: TOUCH,
    hooks: true,
    first_run: &[
        Screen {
            label: "first run: trust the folder",
            marker: "Do you trust the files in this folder?",
            question: "Do you trust the files in this folder?",
            keys: ENTER,
        },
        Screen {
            label: "first run: authentication",
            marker: "How would you like to authenticate for this project?",
            question: "How would you like to authenticate for this project?",
            keys: ENTER,
        },
        Screen {
            label: "first run: API key",
            marker: "Enter Gemini API Key",
            question: "Enter Gemini API Key",
            keys: ENTER,
        },
    ],
    idle: &["Type your message or @path/to/file"],
    working: "esc to cancel",
    running: "esc to cancel",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Allow execution of [Shell]?",
        question: "Allow execution of [Shell]?",
        keys: ENTER,
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/quit",
    mcp: true,
    inline: false,
    answer: None,
};

const QWEN: Agent = Agent {
    name: "qwen-code",
    key: "QWEN_CODE",
    env: &[
        ("OPENAI_BASE_URL", "{base}/v1"),
        ("OPENAI_API_KEY", "dummy"),
        ("OPENAI_MODEL", "mock-model"),
    ],
    files: &[(
        ".qwen/settings.json",
        r#"{"mcpServers": {"tmux-wait": {"command": "{bin}", "args": ["-S", "{sock}", "mcp"], "trust": true}}}"#,
    )],
    setup: &[],
    command: "qwen --approval-mode default",
    shell: TOUCH,
    hooks: true,
    first_run: &[],
    idle: &["Type your message or @path/to/file"],
    working: "esc to cancel",
    running: "esc to cancel",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Allow execution of: 'touch, sleep'?",
        question: "Allow execution of: 'touch, sleep'?",
        keys: ENTER,
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/quit",
    mcp: true,
    inline: false,
    answer: None,
};

const AIDER: Agent = Agent {
    name: "aider",
    key: "AIDER",
    env: &[
        ("OPENAI_API_BASE", "{base}/v1"),
        ("OPENAI_API_KEY", "dummy"),
    ],
    files: &[],
    setup: &[],
    command: "aider --model openai/mock-model --edit-format diff --no-check-update",
    shell: TOUCH,
    // (It has no hooks: its screen is all there is.)
    hooks: false,
    first_run: &[
        Screen {
            label: "first run: analytics",
            marker: "Allow collection of anonymous analytics",
            question: "Allow collection of anonymous analytics to help improve aider? (Y)es/(N)o [Yes]:",
            keys: &["=n", "Enter"],
        },
        Screen {
            label: "first run: no git repo",
            marker: "No git repo found",
            question: "No git repo found, create one to track aider's changes (recommended)? (Y)es/(N)o [Yes]:",
            keys: &["=y", "Enter"],
        },
        Screen {
            label: "first run: .gitignore",
            marker: "Add .aider* to .gitignore",
            question: "Add .aider* to .gitignore (recommended)? (Y)es/(N)o [Yes]:",
            keys: &["=y", "Enter"],
        },
        Screen {
            label: "first run: model warning",
            marker: "Open documentation url for more info?",
            question: "Open documentation url for more info? (Y)es/(N)o/(D)on't ask again [Yes]:",
            keys: &["=n", "Enter"],
        },
        Screen {
            label: "first run: release notes",
            marker: "Would you like to see what's new in this version?",
            question: "Would you like to see what's new in this version? (Y)es/(N)o [Yes]:",
            keys: &["=n", "Enter"],
        },
    ],
    idle: &["$diff>"],
    working: "Waiting for openai/mock-model",
    running: "Running touch",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Run shell command?",
        question: "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
        keys: ENTER,
    },
    after_command: Some(Screen {
        label: "question: add the command's output",
        marker: "Add command output to the chat?",
        question: "Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:",
        keys: ENTER,
    }),
    after_command_text: "Added ",
    exit: "/exit",
    mcp: false,
    inline: true,
    answer: None,
};

const OPENCODE: Agent = Agent {
    name: "opencode",
    key: "OPENCODE",
    env: &[],
    // A provider for the mock (chat completions), and a permission that
    // asks before a shell command.
    files: &[(
        ".config/opencode/opencode.json",
        r#"{"provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
             "options": {"baseURL": "{base}/v1", "apiKey": "dummy"},
             "models": {"mock-model": {"name": "Mock Model"}}}},
            "model": "mock/mock-model", "permission": {"bash": "ask"},
            "autoupdate": false, "share": "disabled"}"#,
    )],
    setup: &[],
    command: "opencode",
    shell: TOUCH,
    // (Its plugin: `tmux-wait agents install opencode`.)
    hooks: true,
    // (A fresh HOME shows a tip, not a question.)
    first_run: &[],
    idle: &["ctrl+p commands"],
    working: "esc interrupt",
    running: "esc interrupt",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Permission required",
        question: "△ Permission required",
        keys: ENTER,
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/exit",
    mcp: false,
    inline: false,
    answer: None,
};

const COPILOT: Agent = Agent {
    name: "copilot",
    key: "COPILOT",
    // No sign-in: a provider of its own, offline.
    env: &[
        ("COPILOT_OFFLINE", "true"),
        ("COPILOT_PROVIDER_BASE_URL", "{base}/v1"),
        ("COPILOT_PROVIDER_API_KEY", "dummy"),
        ("COPILOT_MODEL", "mock-model"),
        ("COPILOT_AUTO_UPDATE", "false"),
    ],
    files: &[],
    setup: &[],
    command: "copilot",
    shell: TOUCH,
    hooks: false,
    first_run: &[Screen {
        label: "first run: trust the folder",
        marker: "Do you trust the files in this folder?",
        question: "Do you trust the files in this folder?",
        keys: ENTER,
    }],
    idle: &["open sidebar"],
    working: "Working",
    running: "Working",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Do you want to run this command?",
        question: "Do you want to run this command?",
        keys: ENTER,
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/exit",
    mcp: false,
    inline: false,
    answer: None,
};

const PI: Agent = Agent {
    name: "pi",
    key: "PI",
    env: &[],
    files: &[(
        ".pi/agent/models.json",
        r#"{"providers": {"mock": {"baseUrl": "{base}/v1", "api": "openai-completions",
             "apiKey": "dummy", "models": [{"id": "mock-model"}]}}}"#,
    )],
    setup: &[],
    // pi itself never asks: its shipped permission-gate extension asks
    // before a dangerous command; its notify extension sends OSC 777 when
    // it is done.
    command: "pi --offline --provider mock --model mock-model \
              -e {pkg}/examples/extensions/permission-gate.ts \
              -e {pkg}/examples/extensions/notify.ts",
    shell: "mkdir -p mock-dir && rm -rf mock-dir && touch mock-file.txt && sleep 4 && echo mock-done",
    hooks: false,
    first_run: &[],
    idle: &["%/128k (auto)"],
    working: "Working...",
    running: "Working...",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Dangerous command:",
        question: "⚠️ Dangerous command:",
        keys: ENTER,
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/quit",
    mcp: false,
    inline: false,
    answer: None,
};

const CLINE: Agent = Agent {
    name: "cline",
    key: "CLINE",
    env: &[],
    files: &[],
    setup: &["cline auth -p openai -k dummy -m mock-model -b {base}/v1"],
    command: "cline -i --auto-approve false",
    shell: TOUCH,
    hooks: false,
    first_run: &[Screen {
        label: "first run: a plan offered",
        marker: "Press Enter to open, any other key to close",
        question: "Press Enter to open, any other key to close",
        keys: &["Escape"],
    }],
    idle: &["Auto-approve all disabled"],
    working: "esc to cancel",
    running: "run_commands(",
    approval: Screen {
        label: "approval: run a shell command",
        marker: "Approve tool call?",
        question: "Approve tool call?",
        keys: &["=y"],
    },
    after_command: None,
    after_command_text: "The command finished",
    exit: "/exit",
    mcp: false,
    inline: false,
    answer: None,
};

#[test]
fn claude_code() {
    kit_run(&CLAUDE);
}

#[test]
fn codex() {
    kit_run(&CODEX);
}

#[test]
fn gemini_cli() {
    kit_run(&GEMINI);
}

#[test]
fn qwen_code() {
    kit_run(&QWEN);
}

#[test]
fn aider() {
    kit_run(&AIDER);
}

#[test]
fn opencode() {
    kit_run(&OPENCODE);
}

#[test]
fn copilot() {
    kit_run(&COPILOT);
}

#[test]
fn pi() {
    kit_run(&PI);
}

#[test]
fn cline() {
    kit_run(&CLINE);
}

/// What scripts/agents-install wrote: `versions.env` of `TW_AGENTS`.
struct Cache {
    vars: BTreeMap<String, String>,
}

impl Cache {
    fn get(&self, key: &str) -> String {
        self.vars.get(key).cloned().unwrap_or_else(|| {
            panic!("{key} is not in $TW_AGENTS/versions.env: run scripts/agents-install again")
        })
    }
}

fn cache() -> Option<Cache> {
    let dir = std::env::var_os("TW_AGENTS").filter(|d| !d.is_empty());
    let Some(dir) = dir else {
        println!("skipped: TW_AGENTS is not set");
        return None;
    };
    let file = PathBuf::from(dir).join("versions.env");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "TW_AGENTS: cannot read {} ({e}): run scripts/agents-install",
            file.display()
        )
    });
    let vars = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Some(Cache { vars })
}

/// `TW_AGENTS_PROFILES=off`: the agents are judged with no profile at all
/// (`--profiles` with `"shipped": false`), by the rules for an agent that
/// has none; a check then holds when its state does (the reason, the
/// agent's name, the question and the source are shown, not required).
fn bare() -> bool {
    std::env::var_os("TW_AGENTS_PROFILES").is_some_and(|v| v == "off")
}

fn kit_run(a: &'static Agent) {
    let Some(cache) = cache() else { return };
    if !cache.vars.contains_key(&format!("{}_VERSION", a.key)) {
        println!("skipped: {} is not installed in TW_AGENTS", a.name);
        return;
    }
    // One agent at a time, and nothing else beside it: the agents are
    // heavy, and each step's timing is part of what is checked.
    let _alone = alone();
    let s = TestServer::with(Options {
        width: 120,
        height: 40,
        history_limit: 5000,
        extra_config: "set -g default-terminal tmux-256color\nset -s escape-time 10\n".into(),
        ..Options::default()
    });
    let mut run = Run::new(&s, a, &cache);
    run.phase = "1";
    let _ = run.start()
        && run.slow_turn()
        && (!a.inline || run.quick_turn())
        && run.command_turn()
        && (!a.mcp || run.mcp_turn())
        && run.exit();
    run.phase = "2 hooks";
    // (Without profiles the agents' hooks are not read: no phase 2.)
    if a.hooks && !bare() && run.recover() {
        run.install_hooks();
        let _ = run.start() && run.command_turn() && run.exit();
    }
    let failed: Vec<String> = run
        .report
        .rows
        .iter()
        .filter(|r| !r.ok)
        .map(|r| format!("[{}] {}", r.phase, r.step))
        .collect();
    drop(run); // prints the table
    assert!(
        failed.is_empty(),
        "{}: {} check(s) did not hold: {}",
        a.name,
        failed.len(),
        failed.join("; ")
    );
}

/// What `panes --json` or `any --json` said of the pane.
#[derive(Clone, Default)]
struct Obs {
    state: String,
    reason: String,
    agent: Option<String>,
    question: Option<String>,
    source: Option<String>,
}

impl Obs {
    fn of(v: &Value) -> Obs {
        let s = |k: &str| v[k].as_str().map(str::to_owned);
        Obs {
            state: s("state").unwrap_or_default(),
            reason: s("reason").unwrap_or_default(),
            agent: s("agent"),
            question: s("question"),
            source: s("source"),
        }
    }

    fn show(&self) -> String {
        let q = |o: &Option<String>| o.as_ref().map_or("null".into(), |s| format!("{s:?}"));
        format!(
            "{}/{} agent={} q={} src={}",
            self.state,
            self.reason,
            self.agent.as_deref().unwrap_or("null"),
            q(&self.question),
            self.source.as_deref().unwrap_or("null"),
        )
    }
}

/// What a step expects of the pane.
#[derive(Clone)]
struct Want {
    state: &'static str,
    reason: Option<&'static str>,
    /// The agent's name; `None`: null (the agent exited).
    agent: Option<&'static str>,
    question: Option<String>,
    /// `source` is one of hook, title, screen.
    source: bool,
}

impl Want {
    fn question(agent: &'static str, q: &str) -> Want {
        Want {
            state: "asking",
            reason: Some("agent_question"),
            agent: Some(agent),
            question: Some(q.to_owned()),
            source: true,
        }
    }

    fn idle(agent: &'static str) -> Want {
        Want {
            state: "asking",
            reason: Some("agent_idle"),
            agent: Some(agent),
            question: None,
            source: true,
        }
    }

    fn working(agent: &'static str) -> Want {
        Want {
            state: "working",
            reason: Some("agent_working"),
            agent: Some(agent),
            question: None,
            source: true,
        }
    }

    fn prompt() -> Want {
        Want {
            state: "prompt",
            reason: None,
            agent: None,
            question: None,
            source: false,
        }
    }

    /// The fields of `o` that differ from what is wanted.
    fn misses(&self, o: &Obs) -> Vec<&'static str> {
        let mut m = Vec::new();
        if o.state != self.state {
            m.push("state");
        }
        if bare() {
            return m;
        }
        if self.reason.is_some_and(|r| r != o.reason) {
            m.push("reason");
        }
        if o.agent.as_deref() != self.agent {
            m.push("agent");
        }
        if let Some(q) = &self.question {
            let got = o.question.as_deref().unwrap_or("").trim();
            let fits = match q.strip_suffix('…') {
                Some(start) => got.starts_with(start),
                None => got == q,
            };
            // A hook's question is the agent's own words for it (the tool
            // and its command, or its notification's message).
            let hooks_words = o.source.as_deref() == Some("hook") && !got.is_empty();
            if !fits && !hooks_words {
                m.push("question");
            }
        }
        // (An agent nobody reads the terminal of, saying nothing, works:
        // the kernel's word, with the agent named.)
        let own = matches!(o.source.as_deref(), Some("hook" | "title" | "screen"))
            || (o.source.as_deref() == Some("kernel") && o.reason == "agent_working");
        if self.source && !own {
            m.push("source");
        }
        m
    }

    fn show(&self) -> String {
        let mut s = format!("{}/{}", self.state, self.reason.unwrap_or("*"));
        s += &format!(" agent={}", self.agent.unwrap_or("null"));
        if let Some(q) = &self.question {
            s += &format!(" q={q:?}");
        }
        if self.source {
            s += " src=hook|title|screen|kernel";
        }
        s
    }
}

struct Row {
    phase: &'static str,
    step: String,
    expected: String,
    observed: String,
    any: String,
    ms: String,
    ok: bool,
    note: String,
}

/// The rows of a run, printed as a table when it is dropped (also when the
/// test fails half-way).
struct Report {
    title: String,
    name: &'static str,
    rows: Vec<Row>,
    started: Instant,
}

impl Drop for Report {
    fn drop(&mut self) {
        let mut out = format!(
            "\n== agents kit: {} ({:.0} s)\n",
            self.title,
            self.started.elapsed().as_secs_f64()
        );
        out += "ok | phase | step | expected | observed (panes) | any | ms drawn->any | note\n";
        for r in &self.rows {
            out += &format!(
                "{} | {} | {} | {} | {} | {} | {} | {}\n",
                if r.ok { "ok" } else { "MISMATCH" },
                r.phase,
                r.step,
                r.expected,
                r.observed,
                r.any,
                r.ms,
                r.note
            );
        }
        println!("{out}");
        // One line straight to stderr (not captured by the test harness):
        // CI's log says how long each agent took, passing or not.
        let bad = self.rows.iter().filter(|r| !r.ok).count();
        let _ = writeln!(
            std::io::stderr(),
            "agents kit: {} took {:.0} s: {} checks, {bad} mismatched",
            self.title,
            self.started.elapsed().as_secs_f64(),
            self.rows.len()
        );
        if let Some(dir) = std::env::var_os("TW_AGENTS_REPORT") {
            let dir = PathBuf::from(dir);
            let _ = std::fs::create_dir_all(&dir);
            let clean = |s: &str| s.replace(['\t', '\n'], " ");
            let tsv: String = self
                .rows
                .iter()
                .map(|r| {
                    [
                        if r.ok { "ok" } else { "MISMATCH" },
                        r.phase,
                        &r.step,
                        &r.expected,
                        &r.observed,
                        &r.any,
                        &r.ms,
                        &r.note,
                    ]
                    .map(clean)
                    .join("\t")
                        + "\n"
                })
                .collect();
            let _ = std::fs::write(
                dir.join(format!("{}.tsv", self.name)),
                format!("# {}\n{tsv}", self.title),
            );
        }
    }
}

/// The mock model server, ended on drop.
struct Mock {
    child: Child,
    port: u16,
    bodies: PathBuf,
    name: &'static str,
}

impl Mock {
    fn start(dir: &Path, scene: &Path, name: &'static str) -> Mock {
        let bodies = dir.join("bodies");
        let log = std::fs::File::create(dir.join("mock.log")).expect("mock log");
        let mut child = Command::new("python3")
            .arg(root().join("tests/agents/mock_model.py"))
            .args(["--port", "0", "--script"])
            .arg(scene)
            .arg("--log-bodies")
            .arg(&bodies)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start the mock model server");
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the mock model server printed no port ({line:?}); see its log")
        });
        Mock {
            child,
            port,
            bodies,
            name,
        }
    }

    /// The request bodies it logged, oldest first.
    fn bodies(&self) -> Vec<PathBuf> {
        let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&self.bodies)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let n = name.split('-').nth(1)?.parse().ok()?;
                        Some((n, e.path()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files.into_iter().map(|(_, p)| p).collect()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // With TW_AGENTS_REPORT: the requests the agent made, and the
        // mock's log, kept beside the table.
        if let Some(dir) = std::env::var_os("TW_AGENTS_REPORT") {
            let to = PathBuf::from(dir).join(format!("{}-requests", self.name));
            let _ = std::fs::remove_dir_all(&to);
            let _ = std::fs::create_dir_all(&to);
            for f in self.bodies() {
                let _ = std::fs::copy(&f, to.join(f.file_name().unwrap()));
            }
            let _ = std::fs::copy(self.bodies.with_file_name("mock.log"), to.join("mock.log"));
        }
    }
}

/// Ends every process started with the private HOME: the agent, its
/// daemons (Codex's app-server outlives the TUI), MCP servers, hooks.
struct Reaper {
    home: PathBuf,
}

impl Reaper {
    fn pids(&self, except: &[u32]) -> Vec<(u32, String)> {
        let want = format!("HOME={}", self.home.display());
        let me = std::process::id();
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if pid == me || except.contains(&pid) {
                continue;
            }
            let Ok(env) = std::fs::read(e.path().join("environ")) else {
                continue;
            };
            if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
                let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                found.push((pid, cmd.trim().chars().take(120).collect()));
            }
        }
        found
    }

    /// End them (TERM, then KILL after 3 s); what was running.
    fn end(&self, except: &[u32]) -> Vec<String> {
        let found = self.pids(except);
        for (pid, _) in &found {
            unsafe { libc::kill(*pid as i32, libc::SIGTERM) };
        }
        let end = Instant::now() + Duration::from_secs(3);
        while Instant::now() < end && !self.pids(except).is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
        for (pid, _) in self.pids(except) {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        found.into_iter().map(|(p, c)| format!("{p} {c}")).collect()
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.end(&[]);
    }
}

/// Whether process `pid` (our child) has ended (a zombie, or gone).
fn ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

/// How a step is judged.
#[derive(Clone, Copy, Default)]
struct How {
    /// A state that lasts (working): sample it for `HOLD`, and judge the
    /// last sample.
    hold: bool,
    /// The screen must show the same thing this long before it counts.
    stable: Duration,
    /// Press Enter again if nothing showed after 6 s (a slash command's
    /// popup may take the first).
    nudge: bool,
}

/// One agent's run: its pane, private home, project and mock server.
struct Run<'a> {
    // Dropped in this order: the table is printed, then the mock and the
    // agent's processes end (the tmux server ends with the test).
    report: Report,
    mock: Mock,
    reaper: Reaper,
    s: &'a TestServer,
    a: &'static Agent,
    cache: &'a Cache,
    pane: String,
    pane_pid: u32,
    home: PathBuf,
    proj: PathBuf,
    scene: PathBuf,
    phase: &'static str,
}

/// Which step a screen shows: (a tag, its label, what it expects).
type Seen = Option<(usize, String, Want)>;
const IDLE_TAG: usize = usize::MAX;

impl<'a> Run<'a> {
    fn new(s: &'a TestServer, a: &'static Agent, cache: &'a Cache) -> Run<'a> {
        let home = s.dir().join("home");
        let proj = s.dir().join("proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&proj).unwrap();
        let _ = Command::new("git")
            .args(["init", "-q"])
            .arg(&proj)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let scene = s.dir().join("scene.json");
        write_scene(&scene, a, None);
        let mock = Mock::start(s.dir(), &scene, a.name);
        let version = cache.get(&format!("{}_VERSION", a.key));
        let report = Report {
            title: format!(
                "{} {version}{}",
                a.name,
                if bare() { " (no profiles)" } else { "" }
            ),
            name: a.name,
            rows: Vec::new(),
            started: Instant::now(),
        };
        let mut run = Run {
            report,
            mock,
            reaper: Reaper { home: home.clone() },
            s,
            a,
            cache,
            pane: String::new(),
            pane_pid: 0,
            home,
            proj,
            scene,
            phase: "1",
        };
        run.configure();
        run.open_pane();
        run
    }

    /// A scene's string with its placeholders filled in.
    fn fill(&self, text: &str) -> String {
        let base = format!("http://127.0.0.1:{}", self.mock.port);
        text.replace("{base}", &base)
            .replace("{port}", &self.mock.port.to_string())
            .replace("{home}", &self.home.display().to_string())
            .replace("{sock}", &self.s.socket.display().to_string())
            .replace("{bin}", BIN)
            .replace("{pkg}", &self.package_dir())
    }

    /// Where the agent's npm package is installed (its `{pkg}`).
    fn package_dir(&self) -> String {
        let Some(path) = self.cache.vars.get(&format!("{}_PATH", self.a.key)) else {
            return String::new();
        };
        let bin = Path::new(path.split(':').next().unwrap_or(""));
        let package = self.cache.get(&format!("{}_PACKAGE", self.a.key));
        bin.parent()
            .map(|modules| modules.join(package).display().to_string())
            .unwrap_or_default()
    }

    /// The agent's settings in the private home (its scene's files:
    /// pointed at the mock, a permission mode that asks before a shell
    /// command, `tmux-wait mcp`), and its set-up commands.
    fn configure(&self) {
        for (rel, text) in self.a.files {
            let p = self.home.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, self.fill(text)).unwrap();
        }
        let path = format!(
            "{}:/usr/local/bin:/usr/bin:/bin",
            self.cache.get(&format!("{}_PATH", self.a.key))
        );
        for cmd in self.a.setup {
            let out = Command::new("bash")
                .args(["-c", &self.fill(cmd)])
                .env_clear()
                .env("HOME", &self.home)
                .env("PATH", &path)
                .env("LANG", "C.UTF-8")
                .current_dir(&self.proj)
                .stdin(Stdio::null())
                .output()
                .expect("run the set-up command");
            assert!(
                out.status.success(),
                "{}: set-up `{cmd}` failed: {}",
                self.a.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// The environment and the command line typed at the prompt.
    fn agent_env(&self) -> (Vec<(String, String)>, String) {
        let env = self
            .a
            .env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), self.fill(v)))
            .collect();
        (env, self.fill(self.a.command))
    }

    /// A window whose bash has only the environment the agent needs (none
    /// of the caller's keys or proxies), at a `$ ` prompt in the project.
    fn open_pane(&mut self) {
        let (vars, _) = self.agent_env();
        let path = format!(
            "{}:{}:{}:/usr/local/bin:/usr/bin:/bin",
            self.cache.get(&format!("{}_PATH", self.a.key)),
            Path::new(BIN).parent().unwrap().display(),
            tmux_dir().display()
        );
        let mut rc = String::from("PS1='$ '\nunset PROMPT_COMMAND\nHISTFILE=/dev/null\n");
        for (k, v) in vars.iter().chain([("PATH".to_owned(), path)].iter()) {
            rc += &format!("export {k}='{v}'\n");
        }
        rc += &format!("cd '{}'\n", self.proj.display());
        let rcfile = self.s.dir().join("agent-bashrc");
        std::fs::write(&rcfile, rc).unwrap();
        let command = format!(
            "exec env -i HOME='{}' TERM=\"$TERM\" TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" \
             LANG=C.UTF-8 TMPDIR=\"$TMPDIR\" USER=\"${{USER:-$(id -un)}}\" \
             PATH=/usr/bin:/bin bash --noprofile --rcfile '{}'",
            self.home.display(),
            rcfile.display()
        );
        let out = self
            .s
            .tmux_cmd()
            .args(["new-window", "-d", "-c"])
            .arg(&self.proj)
            .args(["-P", "-F", "#{pane_id} #{pane_pid}", &command])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let o = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let (pane, pid) = o.split_once(' ').unwrap();
        self.pane = pane.to_owned();
        self.pane_pid = pid.parse().unwrap();
        self.s.wait_for_prompt(&self.pane);
    }

    // ---------------------------------------------------------------- keys

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            match k.strip_prefix('=') {
                Some(text) => self.s.tmux(&["send-keys", "-t", &self.pane, "-l", text]),
                None => self.s.tmux(&["send-keys", "-t", &self.pane, k]),
            };
        }
    }

    /// Type `text` (no Enter) and wait until the pane shows it and has
    /// stayed the same for 400 ms: Enter right behind a burst of typed
    /// keys is a newline to some (Gemini CLI takes the burst for a paste).
    fn type_text(&self, text: &str) -> bool {
        self.keys(&[&format!("={text}")]);
        let (mut last, mut since) = (String::new(), Instant::now());
        self.poll(Duration::from_secs(15), |screen| {
            if screen != last {
                (last, since) = (screen.to_owned(), Instant::now());
            }
            screen.contains(text) && since.elapsed() >= Duration::from_millis(400)
        })
    }

    fn poll(&self, limit: Duration, mut cond: impl FnMut(&str) -> bool) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if cond(&self.s.capture(&self.pane)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        false
    }

    // ------------------------------------------------------------ screens

    fn shows(&self, screen: &str, marker: &str) -> bool {
        match marker.strip_prefix('$') {
            Some(last) => {
                screen
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::trim)
                    == Some(last)
            }
            None => screen.contains(marker),
        }
    }

    /// Idle: its idle marks, and no busy line, in its last rows (the
    /// text above may quote anything: a tool's result, an answer).
    fn idle_now(&self, screen: &str) -> bool {
        let bottom = bottom(screen);
        self.a.idle.iter().all(|m| self.shows(&bottom, m)) && !bottom.contains(self.a.working)
    }

    /// Working: its busy line in its last rows.
    fn busy(&self, screen: &str) -> bool {
        bottom(screen).contains(self.a.working)
    }

    fn at_prompt(&self) -> bool {
        let p = &self.pane;
        let x = self
            .s
            .tmux(&["display-message", "-p", "-t", p, "#{cursor_x} #{cursor_y}"]);
        let mut it = x.split_whitespace();
        let (Some(x), Some(y)) = (it.next(), it.next()) else {
            return false;
        };
        x == "2"
            && self
                .s
                .tmux(&["capture-pane", "-p", "-t", p, "-S", y, "-E", y])
                .trim_end()
                == "$"
    }

    /// Answer the pane's question with `choice` as the plugin's menu
    /// does: what `answer -t PANE --json` offers, then `answer` with the
    /// question's id and its reader. Whether it was offered, typed and the
    /// agent moved on, and what was seen. (Not offered: the scene's keys,
    /// so that the run goes on.)
    fn answer(&self, choice: &str) -> (bool, String) {
        let mut c = self.s.tw();
        c.args(["answer", "-t", &self.pane, "--json"]);
        let f = run_bounded(c);
        let v = f.json();
        let offered: Vec<String> = v["offers"]
            .as_array()
            .map(|o| {
                o.iter()
                    .filter_map(|x| x["choice"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let (Some(id), true) = (
            v["question_id"].as_str(),
            offered.iter().any(|o| o == choice),
        ) else {
            self.keys(self.a.approval.keys);
            return (
                false,
                format!(
                    "not offered: {offered:?} for {} ({})",
                    v["question"],
                    f.stderr.trim()
                ),
            );
        };
        let mut c = self.s.tw();
        c.args(["answer", "-t", &self.pane, "--question-id", id]);
        if let Some(pid) = v["pid"].as_u64() {
            c.args(["--pid", &pid.to_string()]);
        }
        c.args(["--json", "--", choice]);
        let f = run_bounded(c);
        let r = f.json();
        let ok = f.code == Some(0) && r["outcome"] == "moved_on";
        (
            ok,
            format!(
                "offered {offered:?}; exit {:?}, {} with keys {}{}",
                f.code,
                r["outcome"],
                r["keys"],
                r["error"]["message"]
                    .as_str()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
        )
    }

    fn panes(&self) -> Obs {
        let mut c = self.s.tw();
        c.args(["panes", "-t", &self.pane, "--json"]);
        if let Some(f) = self.profiles_off() {
            c.arg("--profiles").arg(f);
        }
        let f = run_bounded(c);
        if f.code != Some(0) {
            return Obs {
                state: format!("error(exit {:?}: {})", f.code, f.stderr.trim()),
                ..Obs::default()
            };
        }
        Obs::of(&f.json()["panes"][0])
    }

    /// `any -t PANE --json --timeout 20`, armed.
    fn arm(&self) -> Waiter {
        let mut args = vec!["any", "-t", &self.pane, "--json", "--timeout", "20"];
        let off = self.profiles_off();
        if let Some(f) = &off {
            args.extend(["--profiles", f.as_str()]);
        }
        self.s.start_wait(&args)
    }

    /// With `TW_AGENTS_PROFILES=off`: a profiles file that switches the
    /// shipped ones off.
    fn profiles_off(&self) -> Option<String> {
        if !bare() {
            return None;
        }
        let f = self.s.dir().join("no-profiles.json");
        if !f.exists() {
            std::fs::write(&f, r#"{"shipped": false, "profiles": []}"#).unwrap();
        }
        Some(f.display().to_string())
    }

    fn row(&mut self, step: &str, expected: String, observed: String, ok: bool, note: String) {
        self.report.rows.push(Row {
            phase: self.phase,
            step: step.to_owned(),
            expected,
            observed,
            any: String::new(),
            ms: String::new(),
            ok,
            note,
        });
    }

    /// One step: do `act`, wait until `seen` says the screen shows a step
    /// (which, and what is expected then), then judge what `panes` says
    /// and, with `any` (armed before), what it returned, and how long
    /// after the screen was drawn. The step's tag, or None if no screen
    /// showed in time (the pane is printed).
    fn step(
        &mut self,
        any: Option<Waiter>,
        act: &dyn Fn(&Run),
        seen: &dyn Fn(&Run, &str) -> Seen,
        how: How,
    ) -> Option<usize> {
        let wpid = any.as_ref().map(Waiter::pid);
        let any_ended = |at: &mut Option<Instant>| {
            if at.is_none() && wpid.is_some_and(ended) {
                *at = Some(Instant::now());
            }
        };
        act(self);
        let t0 = Instant::now();
        let mut any_at = None;
        let mut nudged = false;
        let mut streak: Option<(usize, Instant)> = None;
        let mut looks = 0;
        let mut at_once = false;
        let (tag, label, want, drawn) = loop {
            any_ended(&mut any_at);
            let screen = self.s.capture(&self.pane);
            looks += 1;
            match seen(self, &screen) {
                Some((tag, label, want)) => {
                    at_once |= looks == 1;
                    let since = match streak {
                        Some((t, since)) if t == tag => since,
                        _ => Instant::now(),
                    };
                    streak = Some((tag, since));
                    if since.elapsed() >= how.stable {
                        break (tag, label, want, since);
                    }
                }
                None => streak = None,
            }
            if how.nudge && !nudged && t0.elapsed() > Duration::from_secs(6) {
                nudged = true;
                self.keys(ENTER);
            }
            if t0.elapsed() > SHOW {
                let shown = self.s.capture(&self.pane);
                println!(
                    "{}: no step's screen showed in {SHOW:?}; pane shows:\n{shown}",
                    self.a.name
                );
                self.row(
                    "(next screen)",
                    "a known screen".into(),
                    format!("none in {} s", SHOW.as_secs()),
                    false,
                    last_rows(&shown, 3),
                );
                return None;
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        // What `panes` says while the screen shows it. A lasting state
        // (working) must hold in every sample taken while it still shows,
        // once SETTLE has passed since it showed (a flicker is a miss).
        let (mut samples, mut hits, mut first_hit) = (0, 0, None);
        let mut last = None;
        let mut settled: Vec<Obs> = Vec::new();
        loop {
            any_ended(&mut any_at);
            let o = self.panes();
            any_ended(&mut any_at);
            let gone =
                how.hold && seen(self, &self.s.capture(&self.pane)).is_none_or(|(t, ..)| t != tag);
            if gone && last.is_some() {
                break;
            }
            samples += 1;
            if want.misses(&o).is_empty() {
                hits += 1;
                first_hit.get_or_insert_with(|| o.clone());
            }
            if drawn.elapsed() >= SETTLE {
                settled.push(o.clone());
            }
            last = Some(o);
            let judged = if how.hold {
                gone || drawn.elapsed() >= HOLD
            } else {
                first_hit.is_some() && (wpid.is_none() || any_at.is_some())
            };
            if judged || drawn.elapsed() > JUDGE {
                break;
            }
            std::thread::sleep(Duration::from_millis(40));
        }
        let last = last.unwrap_or_default();
        let observed = if how.hold {
            // The first settled sample that misses, else the last one (a
            // state shorter than SETTLE: its last sample).
            settled
                .iter()
                .find(|o| !want.misses(o).is_empty())
                .cloned()
                .unwrap_or(last.clone())
        } else {
            first_hit.clone().unwrap_or(last.clone())
        };
        let mut ok = want.misses(&observed).is_empty();
        let mut row = Row {
            phase: self.phase,
            step: label,
            expected: want.show(),
            observed: observed.show(),
            any: String::new(),
            ms: String::new(),
            ok,
            note: format!("panes: {hits}/{samples} samples as expected"),
        };
        if at_once && wpid.is_some() {
            row.note += "; on screen at the first look (drawn before `any` was armed?)";
        }
        if let Some(w) = any {
            if let Some(at) = any_at {
                let f = w.finish(self.s);
                let v: Value = serde_json::from_str(f.stdout.trim()).unwrap_or(Value::Null);
                if v["outcome"] == "attention" {
                    let o = Obs::of(&v);
                    // Codex draws its input box for seconds while its
                    // daemon starts, before a first run's question: an
                    // idle agent then is what the screen showed.
                    let early_idle = self.a.name == "codex"
                        && at < drawn
                        && o.reason == "agent_idle"
                        && o.agent.as_deref() == Some("codex");
                    if early_idle {
                        row.note += "; any: Codex's input box, shown while its daemon starts";
                    }
                    // The desktop notification the agent sends as it
                    // stops (pi's notify extension: OSC 777) says it
                    // needs someone, as its screen does.
                    let notified = want.state == "asking"
                        && o.state == "bell"
                        && o.source.as_deref() == Some("notification");
                    if notified {
                        row.note += "; any: the agent's notification";
                    }
                    ok &= early_idle || notified || want.misses(&o).is_empty();
                    row.any = o.show();
                } else {
                    ok = false;
                    row.any = format!("exit {:?}: {}", f.code, first_line(&f.stdout, &f.stderr));
                }
                row.ms = if at >= drawn {
                    format!("{}", (at - drawn).as_millis())
                } else {
                    format!("-{}", (drawn - at).as_millis())
                };
            } else {
                ok = false;
                row.any = format!("no answer {} s after the screen", JUDGE.as_secs());
                drop(w);
            }
        }
        row.ok = ok;
        self.report.rows.push(row);
        Some(tag)
    }

    /// A step that waits for one marker condition.
    fn simple(
        &mut self,
        label: &str,
        want: Want,
        any: Option<Waiter>,
        act: &dyn Fn(&Run),
        cond: &dyn Fn(&Run, &str) -> bool,
        how: How,
    ) -> bool {
        let label = label.to_owned();
        self.step(
            any,
            act,
            &|r, screen| cond(r, screen).then(|| (0, label.clone(), want.clone())),
            how,
        )
        .is_some()
    }

    // -------------------------------------------------------------- flows

    /// Start the agent at the prompt, answer each first-run screen it
    /// shows, until it is idle.
    fn start(&mut self) -> bool {
        let (_, command) = self.agent_env();
        let a = self.a;
        let mut answered = BTreeSet::new();
        let mut keys: &[&str] = &[];
        let mut first = true;
        for _ in 0..10 {
            let any = self.arm();
            let act = |r: &Run| {
                if first {
                    r.s.type_line(&r.pane, &command);
                } else {
                    r.keys(keys);
                }
            };
            let done = answered.clone();
            let seen = |r: &Run, screen: &str| -> Seen {
                let open = a
                    .first_run
                    .iter()
                    .enumerate()
                    .find(|(i, sc)| !done.contains(i) && screen.contains(sc.marker));
                if let Some((i, sc)) = open {
                    return Some((i, sc.label.to_owned(), Want::question(a.name, sc.question)));
                }
                r.idle_now(screen)
                    .then(|| (IDLE_TAG, "idle (started)".to_owned(), Want::idle(a.name)))
            };
            let how = How {
                stable: Duration::from_millis(if first { 1000 } else { 600 }),
                ..How::default()
            };
            let Some(tag) = self.step(Some(any), &act, &seen, how) else {
                return false;
            };
            first = false;
            if tag == IDLE_TAG {
                return true;
            }
            answered.insert(tag);
            keys = a.first_run[tag].keys;
        }
        false
    }

    /// The slow turn: thinking (working), the answer streaming (working),
    /// then idle.
    fn slow_turn(&mut self) -> bool {
        let a = self.a;
        if !self.type_text("kit slow turn") {
            return self.lost("the typed prompt never showed");
        }
        let thinking = |r: &Run, s: &str| r.busy(s) && !s.contains(BEGIN);
        let hold = How {
            hold: true,
            ..How::default()
        };
        if !self.simple(
            "working: thinking",
            Want::working(a.name),
            None,
            &|r| r.keys(ENTER),
            &thinking,
            hold,
        ) {
            return false;
        }
        let any = self.arm();
        let streaming = |_: &Run, s: &str| s.contains(BEGIN) && !s.contains(END);
        if !self.simple(
            "working: streaming the answer",
            Want::working(a.name),
            None,
            &|_| {},
            &streaming,
            hold,
        ) {
            return false;
        }
        let idle = |r: &Run, s: &str| s.contains(END) && r.idle_now(s);
        self.simple(
            "idle after the answer",
            Want::idle(a.name),
            Some(any),
            &|_| {},
            &idle,
            How::default(),
        )
    }

    /// A turn too quick to be seen working, `any` armed at the idle
    /// prompt before it (aider: the instruction just typed was once taken
    /// for its question, and its return to `diff>` went untold).
    fn quick_turn(&mut self) -> bool {
        let a = self.a;
        const TYPED: &str = "kit quick turn";
        if !self.type_text(TYPED) {
            return self.lost("the typed prompt never showed");
        }
        let any = self.arm();
        // The mock's default answer ("OK.") below the instruction, and the
        // prompt back.
        let answered = |r: &Run, s: &str| {
            let rows: Vec<&str> = s.lines().collect();
            let typed = rows.iter().rposition(|l| l.contains(TYPED));
            typed.is_some_and(|i| rows[i..].iter().any(|l| l.trim() == "OK.")) && r.idle_now(s)
        };
        self.simple(
            "idle after a quick turn (any armed at idle)",
            Want::idle(a.name),
            Some(any),
            &|r| r.keys(ENTER),
            &answered,
            How::default(),
        )
    }

    /// A turn whose command asks first: working, the question, approved,
    /// the command's work, (aider: a second question), idle.
    fn command_turn(&mut self) -> bool {
        let a = self.a;
        if !self.type_text("kit write a file") {
            return self.lost("the typed prompt never showed");
        }
        let hold = How {
            hold: true,
            ..How::default()
        };
        let thinking = |r: &Run, s: &str| r.busy(s) && !s.contains(a.approval.marker);
        if !self.simple(
            "working: before the question",
            Want::working(a.name),
            None,
            &|r| r.keys(ENTER),
            &thinking,
            hold,
        ) {
            return false;
        }
        let any = self.arm();
        let asks = |_: &Run, s: &str| s.contains(a.approval.marker);
        let want = Want::question(a.name, a.approval.question);
        if !self.simple(
            a.approval.label,
            want,
            Some(any),
            &|_| {},
            &asks,
            How::default(),
        ) {
            return false;
        }
        let any = self.arm();
        let runs = |_: &Run, s: &str| {
            bottom(s).contains(a.running) && (a.inline || !s.contains(a.approval.marker))
        };
        let answered = std::cell::RefCell::new(None);
        let approve = |r: &Run| match a.answer {
            Some(choice) => *answered.borrow_mut() = Some(r.answer(choice)),
            None => r.keys(a.approval.keys),
        };
        let ok = self.simple(
            "approved: the command's work",
            Want::working(a.name),
            None,
            &approve,
            &runs,
            hold,
        );
        if let (Some(choice), Some((good, observed))) = (a.answer, answered.take()) {
            self.row(
                "approval: answered as the menu does",
                format!("{choice} offered, typed, and the agent moved on"),
                observed,
                good,
                String::new(),
            );
        }
        if !ok {
            return false;
        }
        let mut any = Some(any);
        let mut act: &dyn Fn(&Run) = &|_| {};
        let answer = |r: &Run| r.keys(a.after_command.as_ref().map_or(ENTER, |q| q.keys));
        if let Some(q) = &a.after_command {
            let asks = |_: &Run, s: &str| s.contains(q.marker);
            let want = Want::question(a.name, q.question);
            if !self.simple(q.label, want, any.take(), &|_| {}, &asks, How::default()) {
                return false;
            }
            any = Some(self.arm());
            act = &answer;
        }
        let idle = |r: &Run, s: &str| s.contains(a.after_command_text) && r.idle_now(s);
        self.simple(
            "idle after the command",
            Want::idle(a.name),
            any,
            act,
            &idle,
            How::default(),
        )
    }

    /// The model calls tmux-wait's `pane_states` through the agent's MCP
    /// client; its result must reach the mock in the next request.
    fn mcp_turn(&mut self) -> bool {
        let a = self.a;
        let step = "mcp: pane_states result reaches the model";
        let expected = "the tool's result (this pane's state) in the next request".to_owned();
        let Some(tool) = self.mcp_tool_name() else {
            self.row(
                step,
                expected,
                "no tool named *pane_states offered to the model".into(),
                false,
                String::new(),
            );
            return true;
        };
        write_scene(&self.scene, a, Some((&tool, &self.pane)));
        let before = self.mock.bodies().len();
        if !self.type_text("kit check the panes") {
            return self.lost("the typed prompt never showed");
        }
        self.keys(ENTER);
        let end = Instant::now() + Duration::from_secs(40);
        let mut approved = Vec::new();
        let mut found = None;
        while Instant::now() < end && found.is_none() {
            let screen = self.s.capture(&self.pane);
            if screen.contains(a.approval.marker) && approved.len() < 3 {
                approved.push(last_rows(&screen, 1));
                self.keys(a.approval.keys);
            }
            let new: Vec<PathBuf> = self.mock.bodies().into_iter().skip(before).collect();
            let results: Vec<_> = new
                .iter()
                .filter_map(|p| tool_result(p, &self.pane))
                .collect();
            found = results
                .iter()
                .find(|r| r.is_ok())
                .or(results.first())
                .cloned();
            std::thread::sleep(Duration::from_millis(100));
        }
        let tool_note = match self.mcp_namespace() {
            Some(ns) => format!(
                "tool {tool} (offered in namespace {ns}; the mock's function call names no namespace)"
            ),
            None => format!("tool {tool}"),
        };
        let note = if approved.is_empty() {
            tool_note
        } else {
            format!("{tool_note}; approved at: {}", approved.join(" / "))
        };
        let (observed, ok) = match found {
            Some(Ok(state)) => (format!("reached: the pane {state}"), true),
            Some(Err(text)) => (format!("an error reached the model: {text}"), false),
            None => {
                let last = self
                    .mock
                    .bodies()
                    .iter()
                    .skip(before)
                    .last()
                    .map(|p| last_message(p));
                (
                    format!(
                        "no result in 40 s; last request ends: {}",
                        last.unwrap_or_default()
                    ),
                    false,
                )
            }
        };
        self.row(step, expected, observed, ok, note);
        let idle = |r: &Run, s: &str| s.contains("Checked the panes") && r.idle_now(s);
        self.simple(
            "idle after the MCP call",
            Want::idle(a.name),
            None,
            &|_| {},
            &idle,
            How::default(),
        )
    }

    /// The namespace the agent offers the MCP tool in, if any.
    fn mcp_namespace(&self) -> Option<String> {
        fn walk(v: &Value) -> Option<String> {
            match v {
                Value::Object(m) => {
                    let in_ns = m.get("type").and_then(Value::as_str) == Some("namespace")
                        && m.get("tools")
                            .is_some_and(|t| t.to_string().contains("pane_states"));
                    if in_ns {
                        return m.get("name").and_then(Value::as_str).map(str::to_owned);
                    }
                    m.values().find_map(walk)
                }
                Value::Array(a) => a.iter().find_map(walk),
                _ => None,
            }
        }
        self.mock.bodies().iter().rev().find_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            walk(&serde_json::from_str(&text).ok()?)
        })
    }

    /// The name the agent gives the MCP tool, from its requests.
    fn mcp_tool_name(&self) -> Option<String> {
        let re = regex::Regex::new(r"[A-Za-z0-9_.:-]*pane_states").unwrap();
        for p in self.mock.bodies().iter().rev() {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let mut names = Vec::new();
            tool_names(&v, &mut names);
            if let Some(n) = names.into_iter().find(|n| n.contains("pane_states")) {
                return Some(n);
            }
            // Not offered as a tool: named in the text (Claude Code's
            // deferred tools, found through its ToolSearch).
            let mut strings = Vec::new();
            all_strings(&v, &mut strings);
            if let Some(m) = strings.iter().find_map(|s| re.find(s)) {
                return Some(m.as_str().to_owned());
            }
        }
        None
    }

    /// Exit the agent; the shell's prompt is back (`any` says so).
    fn exit(&mut self) -> bool {
        let exit = self.a.exit;
        if !self.type_text(exit) {
            return self.lost("the typed exit command never showed");
        }
        let any = self.arm();
        let how = How {
            nudge: true,
            ..How::default()
        };
        let back = |r: &Run, _: &str| r.at_prompt();
        let ok = self.simple(
            "exited: the shell's prompt",
            Want::prompt(),
            Some(any),
            &|r| r.keys(ENTER),
            &back,
            how,
        );
        // What is still running once the agent is gone (Codex's app-server
        // daemon outlives its TUI): ended here.
        let left = self.reaper.end(&[self.pane_pid]);
        self.row(
            "after exit: processes left running (ended)",
            "informational".into(),
            if left.is_empty() {
                "none".into()
            } else {
                left.join("; ")
            },
            true,
            String::new(),
        );
        ok
    }

    /// A step that could not be driven: say so and stop this phase.
    fn lost(&mut self, what: &str) -> bool {
        let shown = self.s.capture(&self.pane);
        println!("{}: {what}; pane shows:\n{shown}", self.a.name);
        self.row(
            "(driving)",
            "the agent follows the keys".into(),
            what.into(),
            false,
            last_rows(&shown, 3),
        );
        false
    }

    /// Back at a clear shell prompt (ending whatever is left of the agent).
    fn recover(&mut self) -> bool {
        if !self.at_prompt() {
            self.reaper.end(&[self.pane_pid]);
            self.keys(&["C-c"]);
            if !self.poll(Duration::from_secs(10), |_| self.at_prompt()) {
                self.row(
                    "(recover)",
                    "a shell prompt".into(),
                    "none".into(),
                    false,
                    String::new(),
                );
                return false;
            }
        }
        self.s.type_line(&self.pane, "clear");
        let ok = self.poll(Duration::from_secs(10), |s| s.trim() == "$") && self.at_prompt();
        self.s.tmux(&["clear-history", "-t", &self.pane]);
        ok
    }

    /// `tmux-wait agents install NAME` with the private HOME.
    fn install_hooks(&mut self) {
        let name = self.a.name;
        let mut c = self.s.tw();
        c.args(["agents", "install", name]).env("HOME", &self.home);
        // The agents' own directory variables would send the hook (and
        // the record of the edit) out of the private home.
        for v in [
            "CLAUDE_CONFIG_DIR",
            "QWEN_HOME",
            "GEMINI_CLI_HOME",
            "CODEX_HOME",
            "XDG_STATE_HOME",
        ] {
            c.env_remove(v);
        }
        let f = run_bounded(c);
        self.row(
            &format!("hooks: tmux-wait agents install {name}"),
            "exit 0".into(),
            format!("exit {:?}: {}", f.code, first_line(&f.stdout, &f.stderr)),
            f.code == Some(0),
            String::new(),
        );
    }
}

/// The mock's scene: a slow turn, a turn whose command asks first, and
/// (once its name is known) a call of the MCP tool.
fn write_scene(path: &Path, a: &Agent, mcp: Option<(&str, &str)>) {
    let slow = format!(
        "{BEGIN}: after a long think, here is an answer streamed piece by piece \
         over several seconds, so that the screen shows it arriving; {END}."
    );
    let mut turns = vec![
        json!({"match": "kit slow turn",
               "reply": {"think": 5, "text": slow, "seconds": 6, "chunks": 12}}),
        json!({"match": "kit write a file",
               "reply": {"think": 5, "shell": a.shell,
                         "text": "I will run a command that writes a file."},
               "after_tool": {"text": "The command finished and printed mock-done.",
                              "seconds": 1, "chunks": 2}}),
    ];
    if let Some((tool, pane)) = mcp {
        turns.push(json!({"match": "kit check the panes",
                          "reply": {"_call": [tool, {"pane_ids": [pane]}],
                                    "text": "Checking the panes."},
                          "after_tool": {"text": "Checked the panes.", "seconds": 1, "chunks": 2}}));
    }
    let mut scene = json!({"turns": turns, "default": {"text": "OK."}, "aux": {"text": "Mock"}});
    if a.name == "aider" {
        // aider offers no tools: its command comes as a fenced block.
        scene["tools_optional"] = json!(true);
    }
    std::fs::write(path, serde_json::to_string_pretty(&scene).unwrap()).unwrap();
}

/// Every tool name a request offers (in any of the four formats); a tool
/// in a namespace (Codex's MCP tools: namespace `mcp__tmux_wait`, tool
/// `pane_states`) as `NAMESPACE__TOOL`.
fn tool_names(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("namespace") => {
            let ns = m.get("name").and_then(Value::as_str).unwrap_or("");
            let mut inner = Vec::new();
            tool_names(m.get("tools").unwrap_or(&Value::Null), &mut inner);
            out.extend(inner.into_iter().map(|t| format!("{ns}__{t}")));
        }
        Value::Object(m) => {
            if let Some(Value::String(n)) = m.get("name") {
                out.push(n.clone());
            }
            m.values().for_each(|x| tool_names(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| tool_names(x, out)),
        _ => {}
    }
}

/// In a request body that carries a tool's result back to the model:
/// Ok, `pane_states`'s result for `pane` (the state it gave), or Err, what
/// came back instead (an error).
fn tool_result(body: &Path, pane: &str) -> Option<Result<String, String>> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(body).ok()?).ok()?;
    let mut strings = Vec::new();
    all_strings(&v, &mut strings);
    for s in &strings {
        if s.contains("\"panes\"") && s.contains(pane) {
            // (Some wrap it: Gemini CLI in <untrusted_context>.)
            let json = match (s.find('{'), s.rfind('}')) {
                (Some(a), Some(b)) if a < b => &s[a..=b],
                _ => s.as_str(),
            };
            let parsed: Value = serde_json::from_str(json).unwrap_or(Value::Null);
            let p = &parsed["panes"][0];
            return Some(Ok(if p.is_null() {
                "(in text)".into()
            } else {
                Obs::of(p).show()
            }));
        }
    }
    let last = last_item(&v);
    let text = last.to_string();
    let is_result = [
        "tool_result",
        "function_call_output",
        "functionResponse",
        "\"role\":\"tool\"",
    ]
    .iter()
    .any(|k| text.contains(k));
    (is_result && text.contains("pane_states")).then(|| Err(text.chars().take(300).collect()))
}

fn all_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Object(m) => m.values().for_each(|x| all_strings(x, out)),
        Value::Array(a) => a.iter().for_each(|x| all_strings(x, out)),
        _ => {}
    }
}

/// The last message (or input item) of a request.
fn last_item(v: &Value) -> Value {
    ["messages", "input", "contents"]
        .iter()
        .find_map(|k| v[k].as_array().and_then(|a| a.last().cloned()))
        .unwrap_or(Value::Null)
}

/// The last message of a logged request, shortened.
fn last_message(body: &Path) -> String {
    let v: Value = std::fs::read_to_string(body)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    last_item(&v).to_string().chars().take(300).collect()
}

/// The screen's last 12 non-blank rows, where agents keep their status.
fn bottom(screen: &str) -> String {
    let rows: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    rows[rows.len().saturating_sub(12)..].join("\n")
}

fn last_rows(screen: &str, n: usize) -> String {
    let rows: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    rows[rows.len().saturating_sub(n)..]
        .iter()
        .map(|r| r.trim())
        .collect::<Vec<_>>()
        .join(" / ")
}

fn first_line(stdout: &str, stderr: &str) -> String {
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}
