//! The command line, as clap sees it. One struct per subcommand; nothing
//! here knows how a wait works.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod attention;
mod help;
pub use attention::*;
pub use help::*;

#[derive(Debug, Parser)]
#[command(
    name = "tmux-wait",
    version,
    about = "Wait, from inside tmux, for text in a pane, for a command to finish, or for a wait-for channel.",
    long_about = "Wait, from inside tmux, for text in a pane, for a command to finish, or for a tmux wait-for channel.\n\n\
        Waits follow the pane's output as tmux delivers it: they wake within \
        about a millisecond, cost nothing while waiting, and see only output \
        written after the wait began. `run` types a command \
        into a pane's shell and reports its exit status and only its own output; \
        `output` returns what a pane wrote that you have not seen yet.",
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// tmux socket name, as tmux -L (default: the server in $TMUX, else tmux's default); any and panes take several
    #[arg(
        short = 'L',
        global = true,
        value_name = "SOCKET_NAME",
        action = clap::ArgAction::Append
    )]
    pub socket_name: Vec<String>,

    /// tmux socket path, as tmux -S; any and panes take several
    #[arg(
        short = 'S',
        global = true,
        value_name = "SOCKET_PATH",
        action = clap::ArgAction::Append
    )]
    pub socket_path: Vec<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Wait for new output in a pane to match a pattern (or for any new output)
    #[command(after_help = TEXT_HELP)]
    Text(TextArgs),
    /// Wait until a tmux wait-for channel is signalled, with a timeout
    #[command(after_help = CHANNEL_HELP)]
    Channel(ChannelArgs),
    /// Signal a tmux wait-for channel, optionally with a result (--status, --message)
    #[command(after_help = SIGNAL_HELP)]
    Signal(SignalArgs),
    /// Type a command into a pane's shell, wait until it ends, report its exit status and its output
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// Wait for, then return, the pane's output this cursor has not shown before
    #[command(after_help = OUTPUT_HELP)]
    Output(OutputArgs),
    /// Follow a command typed by run after run returned (started by run)
    #[command(hide = true)]
    FollowRun(FollowRunArgs),
    /// Read panes for every wait of the server, through pipe-pane (started by the waits)
    #[command(hide = true)]
    Hub(HubArgs),
    /// Hand a pane's pipe to the hub (run by tmux's pipe-pane)
    #[command(hide = true)]
    PipeFeed(PipeFeedArgs),
    /// Wait for text, for the running command to finish, or for the pane to go quiet, then report: status line, message, bell, desktop notification, hook, channel
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
    /// List the running watches of the server
    #[command(after_help = SIMPLE_HELP)]
    List(ListArgs),
    /// Cancel watches: one by id, those of a pane, or all
    #[command(after_help = SIMPLE_HELP)]
    Cancel(CancelArgs),
    /// Push the status-line segment again (--clear forgets the last result)
    #[command(after_help = SIMPLE_HELP)]
    Status(StatusArgs),
    /// Show a menu of the running watches on a client, to cancel one or all, or to clear the last result
    #[command(after_help = MENU_HELP)]
    Menu(MenuArgs),
    /// Channel hooks declared with `set -g @tmux-wait-hook-NAME ACTION`
    #[command(after_help = SIMPLE_HELP)]
    Hooks(HooksArgs),
    /// Listen on one declared hook's channel until the server goes or the hook is removed (started by `hooks sync`)
    #[command(after_help = LISTEN_HELP)]
    Listen(ListenArgs),
    /// Wait until one of many panes needs someone: its shell is back at the prompt, a program asks, it exited, it rang the bell
    #[command(after_help = ANY_HELP)]
    Any(AnyArgs),
    /// Each pane's state now: working, prompt, asking, quiet or exited, and why
    #[command(after_help = PANES_HELP)]
    Panes(PanesArgs),
    /// Answer the question a pane asks now (y, n, an agent's option, Enter), only if it is still the one named; without CHOICE, show the question and its answers
    #[command(after_help = ANSWER_HELP)]
    Answer(AnswerArgs),
    /// What attention saw happen on the server: each pane that needed someone, how it ended (answered, and by whom), how long it waited
    #[command(after_help = LOG_HELP)]
    Log(LogArgs),
    /// The plugin's attention: marks, status segment, keys (run by the plugin)
    #[command(hide = true)]
    Attention(AttentionArgs),
    /// Serve the waits as MCP tools over stdio, for AI agents (wait_for_text, wait_for_channel, signal_channel, run_command, wait, wait_for_attention, pane_states)
    #[command(after_help = MCP_HELP)]
    Mcp,
    /// Print shell code that reports each command's exit status to tmux-wait (OSC 133 marks), for the rc file
    #[command(after_help = SHELL_INIT_HELP)]
    ShellInit(ShellInitArgs),
    /// Add tmux-wait's hook to coding agents' settings (beside your own hooks), or remove exactly it
    #[command(after_help = AGENTS_HELP)]
    Agents(AgentsArgs),
    /// Other hosts, through ssh: check them, install tmux-wait there, run a command of it there
    #[command(after_help = REMOTE_HELP)]
    Remote(RemoteArgs),
    /// Say in the agent's pane what its hook's event means (run by the agent's hook, event as JSON on stdin)
    #[command(hide = true)]
    AgentEvent(AgentEventArgs),
}

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: AgentsCommand,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Add tmux-wait's hook to each agent's settings
    Install {
        /// claude-code, qwen-code, gemini-cli, codex (hooks), opencode (a plugin)
        #[arg(required = true, value_name = "AGENT")]
        agents: Vec<String>,
    },
    /// Remove tmux-wait's hook from each agent's settings, and only it
    Remove {
        #[arg(required = true, value_name = "AGENT")]
        agents: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct RemoteArgs {
    #[command(subcommand)]
    pub command: RemoteCommand,

    /// An ssh config file for every ssh this runs (default: $TMUX_WAIT_SSH_CONFIG, else ssh's own)
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "TMUX_WAIT_SSH_CONFIG",
        hide_env_values = true
    )]
    pub ssh_config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Say, for each host, whether it is reached and which tmux-wait it runs
    Check {
        /// A host as ssh takes it, user@host:socket (the user and the socket are optional)
        #[arg(required = true, value_name = "HOST")]
        hosts: Vec<String>,
        /// Print one JSON object per host
        #[arg(long)]
        json: bool,
    },
    /// Put tmux-wait in ~/.local/bin/tmux-wait on HOST: this binary when its system and machine match this build's, else the signed release for them, verified here
    Install {
        /// A host as ssh takes it, user@host (the user is optional)
        #[arg(value_name = "HOST")]
        host: String,
        /// Download the release even when this binary would do
        #[arg(long)]
        from_release: bool,
        /// Where releases are published (URL/vVERSION/ holds SHA256SUMS, its signature and the archives)
        #[arg(long, value_name = "URL", default_value = crate::remote::release::DEFAULT_URL)]
        release_url: String,
        /// An allowed_signers file to verify SHA256SUMS.sig with (default: tmux-wait's release key, built in)
        #[arg(long, value_name = "FILE")]
        signers: Option<std::path::PathBuf>,
    },
    /// Run tmux-wait with ARGS on HOST through the shared ssh connection, with its output and exit status
    Exec {
        /// A host, user@host:socket (optional user and socket: the socket is passed to the command as -L or -S)
        #[arg(value_name = "HOST")]
        host: String,
        /// The command and its options (after --)
        #[arg(required = true, num_args = 1.., last = true, value_name = "ARGS")]
        args: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct AgentEventArgs {
    #[arg(long, value_name = "AGENT")]
    pub agent: String,
}

#[derive(Debug, Args)]
pub struct ShellInitArgs {
    /// The shell the code is for
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub command: HooksCommand,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Start a listener for every declared hook and stop those of hooks no longer declared (the plugin runs it on every load)
    Sync,
    /// The declared hooks, their listeners and the last result of each
    List {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Channel name
    pub name: String,
}

/// How command output is shown and kept: shared by `run` and `output`.
#[derive(Debug, Clone, Args)]
pub struct OutputOpts {
    /// Only lines matching this regex (numbered N:), plus the last few (--last-lines, default 3)
    #[arg(long, value_name = "REGEX")]
    pub show: Option<String>,

    /// With --show: also this many lines after each match (numbered N-), like grep -A
    #[arg(long, value_name = "N", requires = "show")]
    pub show_after: Option<usize>,

    /// Only the last N lines
    #[arg(long, value_name = "N")]
    pub last_lines: Option<usize>,

    /// At most N lines: longer output is clipped in the middle, led by the summary lines found there (test results, compiler errors, make's failure); 0 for all
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_lines: usize,

    /// Also write the output, unfiltered, to FILE (run: replaced; output: appended)
    #[arg(long, value_name = "FILE")]
    pub save_to: Option<PathBuf>,

    /// An interactive program's prompt to stop at (regex on the unfinished last line), besides `>>>`, `(gdb)`, `(Pdb)`, `In [N]:`, `sqlite>`, ...
    #[arg(long, value_name = "REGEX")]
    pub prompt: Option<String>,

    /// The cursor to read and move (per pane; a script, a key binding and an agent can each have their own)
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub cursor: String,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Pane to type into: any tmux target (%3, {last}, sess:1.0); required inside tmux, where the default would be run's own pane
    #[arg(short = 't', long = "target", value_name = "TARGET")]
    pub target: Option<String>,

    /// How long to wait for the command to end; it keeps running after
    #[arg(long, value_name = "DUR", default_value = "30")]
    pub timeout: String,

    /// Clear unsubmitted text at the prompt (C-e C-u) and type anyway
    #[arg(long)]
    pub force: bool,

    /// Let the shell keep the typed line in its history (it is typed without the leading space that bash's HISTCONTROL=ignorespace, zsh's HIST_IGNORE_SPACE and fish leave out of it)
    #[arg(long)]
    pub history: bool,

    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub opts: OutputOpts,

    /// The command (after --)
    #[arg(required = true, num_args = 1.., last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct HubArgs {}

#[derive(Debug, Args)]
pub struct PipeFeedArgs {
    pub token: String,
}

#[derive(Debug, Args)]
pub struct FollowRunArgs {
    #[arg(short = 't', long = "target", value_name = "PANE")]
    pub target: String,
    #[arg(long)]
    pub id: String,
    #[arg(long, value_name = "FILE")]
    pub save_to: Option<PathBuf>,
    #[arg(long, value_name = "DUR", default_value = "24h")]
    pub timeout: String,
    /// Join the pane's stream marked with this token (see `hub`)
    #[arg(long, value_name = "TOKEN")]
    pub mark: Option<String>,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Pane to read (as for text)
    #[arg(short = 't', long = "target", value_name = "TARGET")]
    pub target: Option<String>,

    /// How long to wait for something to return (at most 1500s)
    #[arg(long, value_name = "DUR", default_value = "30")]
    pub timeout: String,

    /// Return as soon as unseen output matches this regex (the command still running)
    #[arg(long, value_name = "REGEX")]
    pub until: Option<String>,

    /// Print one JSON object on stdout
    #[arg(long, conflicts_with = "ndjson")]
    pub json: bool,

    /// Stream one JSON object per batch of new lines until the command ends or the timeout
    #[arg(long)]
    pub ndjson: bool,

    /// Gather every line until the command ends (or a program asks, or the timeout), in one reply, instead of returning at the first burst
    #[arg(long)]
    pub until_finished: bool,

    /// Signal this tmux channel once the wait is armed (as for text)
    #[arg(long, value_name = "CHANNEL")]
    pub ready: Option<String>,

    #[command(flatten)]
    pub opts: OutputOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// The stream, or polling where another program pipes the pane
    Auto,
    /// The pane's output as tmux reads it, through pipe-pane (no client attached)
    #[value(alias = "control")]
    Stream,
    /// capture-pane every --interval (as libtmux-mcp's wait_for_text does): misses text overwritten between two polls
    Poll,
}

/// How new lines are matched: shared by `text` and `watch`.
#[derive(Debug, Clone, Args)]
pub struct MatchArgs {
    /// Success pattern (repeatable; the first in order that hits wins). Literal unless --regex. For text, none means any new output ends the wait
    #[arg(short = 'p', long = "pattern", value_name = "P")]
    pub patterns: Vec<String>,

    /// Failure pattern (repeatable): a hit ends the wait as "stopped" (exit 3); beats --pattern in the same output
    #[arg(short = 's', long = "stop", value_name = "S")]
    pub stops: Vec<String>,

    /// Treat --pattern and --stop as regular expressions (Rust regex syntax)
    #[arg(short = 'r', long)]
    pub regex: bool,

    /// Match case (default: case-insensitive)
    #[arg(short = 'c', long)]
    pub match_case: bool,
}

#[derive(Debug, Args)]
pub struct TextArgs {
    /// Pane to watch: any tmux target (%3, sess:1.0, $1); default: $TMUX_PANE, else the pane tmux picks
    #[arg(short = 't', long = "target", value_name = "TARGET")]
    pub target: Option<String>,

    #[command(flatten)]
    pub matching: MatchArgs,

    /// How long to wait: seconds (2.5) or with a unit (500ms, 2m, 1h); clamped by $TMUX_WAIT_MAX_SECONDS
    #[arg(long, value_name = "DUR", default_value = "8")]
    pub timeout: String,

    /// Polling interval for --engine poll (at least 10ms)
    #[arg(long, value_name = "DUR", default_value = "50ms")]
    pub interval: String,

    /// How to follow the pane
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    pub engine: Engine,

    /// Signal this tmux channel once the wait is armed, so a script can start the wait in the background, `tmux wait-for CHANNEL`, then act
    #[arg(long, value_name = "CHANNEL")]
    pub ready: Option<String>,

    /// Also match what the pane wrote since cursor NAME last read it (as output does: what was written between typing and this call is not missed), and move the cursor past what this wait saw
    #[arg(long, value_name = "NAME")]
    pub cursor: Option<String>,

    /// Print one JSON object on stdout (the keys of libtmux-mcp's wait_for_text result)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ChannelArgs {
    /// Channel name: 1 to 128 of A-Z a-z 0-9 _ . : -
    pub name: String,

    /// How long to wait: seconds or with a unit; clamped by $TMUX_WAIT_MAX_SECONDS
    #[arg(long, value_name = "DUR", default_value = "30")]
    pub timeout: String,

    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Pane to watch (as for text)
    #[arg(short = 't', long = "target", value_name = "TARGET")]
    pub target: Option<String>,

    #[command(flatten)]
    pub matching: MatchArgs,

    /// Read one more pattern from this pane option (set by the plugin's prompt), then unset it
    #[arg(long, value_name = "@OPTION")]
    pub pattern_option: Option<String>,

    /// Wait for the command running in the pane to finish (its shell prompt returns)
    #[arg(long, conflicts_with_all = ["patterns", "pattern_option", "quiet"])]
    pub done: bool,

    /// Wait until the pane has been quiet (no new output) this long
    #[arg(long, value_name = "DUR", conflicts_with_all = ["patterns", "pattern_option"])]
    pub quiet: Option<String>,

    /// Give up after this long
    #[arg(long, value_name = "DUR", default_value = "12h")]
    pub timeout: String,

    /// Channel to signal when the watch ends (default tmux-wait-done-ID)
    #[arg(long, value_name = "NAME")]
    pub channel: Option<String>,

    /// How the watch is named in lists and messages
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,

    /// Signal this tmux channel once the watch is armed (as for text): what the pane writes from then on counts
    #[arg(long, value_name = "CHANNEL")]
    pub ready: Option<String>,

    /// Print the result as one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print a JSON array of the watches
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct CancelArgs {
    /// The watch's id (from list)
    pub id: Option<String>,
    /// Every watch of this pane
    #[arg(long, value_name = "TARGET")]
    pub pane: Option<String>,
    /// Every watch of the server
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct MenuArgs {
    /// The client to show the menu on (default: the one tmux picks)
    #[arg(short = 'c', long, value_name = "CLIENT")]
    pub client: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Forget the last result
    #[arg(long)]
    pub clear: bool,
}

#[derive(Debug, Args)]
pub struct SignalArgs {
    /// Channel name: 1 to 128 of A-Z a-z 0-9 _ . : -
    pub name: String,

    /// A result to send with the signal, e.g. `--status $?` (a waiter exits 5 when it is not 0)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub status: Option<i32>,

    /// A message to send with the signal (at most 4096 bytes; shown as text, never run)
    #[arg(long, value_name = "TEXT")]
    pub message: Option<String>,

    /// Print one JSON object on stdout: {"channel", "status", "message"}
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_definition_is_valid() {
        Cli::command().debug_assert();
    }

    /// Every command's --help (and -h), hidden ones included.
    fn all_help(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        out.push((path.to_owned(), cmd.render_long_help().to_string()));
        out.push((path.to_owned(), cmd.render_help().to_string()));
        for sub in cmd.get_subcommands_mut() {
            let name = format!("{path} {}", sub.get_name());
            all_help(sub, &name, out);
        }
    }

    /// Help speaks of the product: none of the words of how it was made.
    #[test]
    fn help_has_no_internal_words() {
        let mut helps = Vec::new();
        all_help(&mut Cli::command(), "tmux-wait", &mut helps);
        assert!(helps.len() > 30);
        for (path, text) in &helps {
            let lower = text.to_lowercase();
            for word in ["peer", "seed", "waitfortextresult", "issue"] {
                assert!(
                    !lower.contains(word),
                    "`{path} --help` says {word:?}:\n{text}"
                );
            }
        }
    }

    /// Each command's help lists its own exit codes, not the whole table.
    #[test]
    fn each_command_lists_its_own_exit_codes() {
        let mut cmd = Cli::command();
        for sub in cmd.get_subcommands_mut().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name().to_owned();
            let text = sub.render_long_help().to_string();
            assert!(text.contains("Exit codes"), "{name}: {text}");
            let fives = text.contains("\n  5 ") || text.contains("\n  5  ");
            assert_eq!(fives, name == "channel", "{name}: {text}");
        }
    }

    /// The codes of an "Exit codes" block: `  N    ...` lines and
    /// `  129/130/143  ...` (N, the command's own status, aside).
    fn codes_in_help(text: &str) -> Vec<i32> {
        let Some(at) = text.find("Exit codes") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for line in text[at..].lines().skip(1) {
            if !line.starts_with("  ") || line.starts_with("   ") {
                continue;
            }
            let word = line.split_whitespace().next().unwrap_or("");
            out.extend(word.split('/').filter_map(|c| c.parse::<i32>().ok()));
        }
        out
    }

    /// The codes of the README's exit-code tables.
    fn codes_in_readme() -> Vec<i32> {
        let readme = include_str!("../README.md");
        let at = readme.find("## Exit codes").expect("an exit codes section");
        let section = &readme[at + 3..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        let mut out = Vec::new();
        for line in section.lines().filter(|l| l.starts_with("| ")) {
            let cell = line.split('|').nth(1).unwrap_or("").trim();
            out.extend(cell.split(", ").filter_map(|c| c.parse::<i32>().ok()));
        }
        out
    }

    /// One table of exit codes (`error::exit::TABLE`): every code a
    /// command's help or the README gives is in it, and every code in it
    /// is given by both.
    #[test]
    fn exit_codes_are_one_table() {
        use crate::error::exit::TABLE;
        let known: Vec<i32> = TABLE.iter().map(|(c, _)| *c).collect();
        let mut helps = Vec::new();
        let mut cmd = Cli::command();
        helps.push(("tmux-wait".to_owned(), cmd.render_long_help().to_string()));
        for sub in cmd.get_subcommands_mut() {
            helps.push((
                sub.get_name().to_owned(),
                sub.render_long_help().to_string(),
            ));
        }
        let mut in_help = Vec::new();
        for (name, text) in &helps {
            for c in codes_in_help(text) {
                assert!(
                    known.contains(&c),
                    "`{name} --help` gives exit code {c}, not in the table"
                );
                in_help.push(c);
            }
        }
        let in_readme = codes_in_readme();
        for c in &in_readme {
            assert!(
                known.contains(c),
                "the README gives exit code {c}, not in the table"
            );
        }
        for c in &known {
            assert!(
                in_help.contains(c),
                "no command's --help gives exit code {c}"
            );
            assert!(in_readme.contains(c), "the README's exit codes miss {c}");
        }
    }
}
