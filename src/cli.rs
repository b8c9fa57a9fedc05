//! The command line, as clap sees it. One struct per subcommand; nothing
//! here knows how a wait works.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub const EXIT_CODES: &str = "\
Exit codes:
  0    found (text) or signalled (channel)
  1    timed out
  2    error: bad usage, invalid regex or channel name, no server, no such
       pane, pane died or respawned, server exited during the wait
  3    stopped by a --stop pattern
  4    timed out while the pane was on the alternate screen
  5    channel: signalled with a non-zero --status
  129  interrupted by SIGHUP, 130 by SIGINT, 143 by SIGTERM (after cleaning up)
`run` exits like timeout(1) (the command's status, 124, 125) and `output`
0/1/2: see their --help.

With --json, one JSON object is printed on stdout, errors included:
{\"error\": {\"kind\": ..., \"message\": ...}}. Errors also print one line on stderr.";

#[derive(Debug, Parser)]
#[command(
    name = "tmux-wait",
    version,
    about = "Wait, from inside tmux, for text in a pane, for a command to finish, or for a wait-for channel.",
    long_about = "Wait, from inside tmux, for text in a pane, for a command to finish, or for a tmux wait-for channel.\n\n\
        Waits follow the pane's output as tmux delivers it to a control-mode \
        client: they wake within about a millisecond, cost nothing while waiting, \
        and see only output written after the wait began. `run` types a command \
        into a pane's shell and reports its exit status and only its own output; \
        `output` returns what a pane wrote that you have not seen yet.",
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// tmux socket name, as tmux -L (default: the server in $TMUX, else tmux's default)
    #[arg(
        short = 'L',
        global = true,
        value_name = "SOCKET_NAME",
        conflicts_with = "socket_path"
    )]
    pub socket_name: Option<String>,

    /// tmux socket path, as tmux -S
    #[arg(short = 'S', global = true, value_name = "SOCKET_PATH")]
    pub socket_path: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Wait for new output in a pane to match a pattern (or for any new output)
    #[command(after_help = EXIT_CODES)]
    Text(TextArgs),
    /// Wait until a tmux wait-for channel is signalled, with a timeout
    #[command(after_help = EXIT_CODES)]
    Channel(ChannelArgs),
    /// Signal a tmux wait-for channel, optionally with a result (--status, --message)
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
    /// Share one control client per session among text waits (started by them)
    #[command(hide = true)]
    Hub(HubArgs),
    /// Wait for text, for the running command to finish, or for the pane to go quiet, then report: status line, message, bell, desktop notification, hook, channel
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
    /// List the running watches of the server
    List(ListArgs),
    /// Cancel watches: one by id, those of a pane, or all
    Cancel(CancelArgs),
    /// Push the status-line segment again (--clear forgets the last result)
    Status(StatusArgs),
    /// Show a menu of the running watches on a client, to cancel one or all
    Menu(MenuArgs),
    /// Channel hooks declared with `set -g @tmux-wait-hook-NAME ACTION`
    Hooks(HooksArgs),
    /// Listen on one declared hook's channel until the server goes or the hook is removed (started by `hooks sync`)
    Listen(ListenArgs),
    /// Serve the waits as MCP tools over stdio, for AI agents (wait_for_text, wait_for_channel, signal_channel, run_command, wait)
    Mcp,
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

pub const WATCH_HELP: &str = "\
A watch records itself in a private per-user directory, so `tmux-wait list`
shows it and `tmux-wait cancel` ends it, updates the status segment
(#{@tmux_wait_status}), and when it ends: shows a message on the clients
(@tmux-wait-message on), rings the bell in the pane (@tmux-wait-bell), sends
a desktop notification (@tmux-wait-desktop, notify-send or osascript), runs
the @tmux-wait-on-done command with TMUX_WAIT_* variables, and signals its
channel (tmux-wait-done-ID unless --channel).

Exit codes as for text; a cancelled watch exits 143.";

pub const RUN_HELP: &str = "\
The words of COMMAND are joined with spaces and typed as one line into the
pane's shell (bash, zsh, sh, dash, ksh), which must be at its prompt. The
output is what the command wrote: not the prompt, not the echo, not the
wrapper. `cd` and `export` persist, as when typed by hand. Afterwards $? in
the shell is 0 (the wrapper's); the status is the command's exit code here.

Exit codes (as timeout(1)):
  N    the command's own exit status
  0    also: the command stopped at an interactive program's prompt
  124  timed out: the command keeps running; `tmux-wait output` continues
  125  tmux-wait failed (the error says why): bad usage, no such pane, the
       pane is not at a shell prompt or has unsubmitted text (see --force)
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM";

pub const OUTPUT_HELP: &str = "\
Returns at once when there are lines the cursor has not shown, else waits
for new output (gathered until the pane is quiet for 20 ms), the followed
command's end (exit status when known), an interactive program's prompt
(>>>, (gdb), ... or --prompt), --until, or the timeout. A cursor is kept in
the pane option @tmux-wait-cursor-NAME; a new cursor starts with the screen.

Exit codes:
  0    returned lines or a state change
  1    timed out with nothing new
  2    error (bad usage, no such pane, server gone)
  129/130/143  interrupted by SIGHUP/SIGINT/SIGTERM";

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
    /// Pane to type into (as for text)
    #[arg(short = 't', long = "target", value_name = "TARGET")]
    pub target: Option<String>,

    /// How long to wait for the command to end; it keeps running after
    #[arg(long, value_name = "DUR", default_value = "30")]
    pub timeout: String,

    /// Clear unsubmitted text at the prompt (C-e C-u) and type anyway
    #[arg(long)]
    pub force: bool,

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
pub struct HubArgs {
    #[arg(long, value_name = "ID")]
    pub session: String,
    #[arg(long, value_name = "VERSION")]
    pub tmux_version: String,
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
    #[arg(long, value_name = "CHANNEL")]
    pub ready: Option<String>,
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

    /// Signal this tmux channel once the wait is armed (as for text)
    #[arg(long, value_name = "CHANNEL")]
    pub ready: Option<String>,

    #[command(flatten)]
    pub opts: OutputOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// Control mode where it works, else polling
    Auto,
    /// A tmux control-mode client streams the pane's output (events)
    Control,
    /// capture-pane every --interval (the peer's way)
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

    /// Print one JSON object (the WaitForTextResult shape) on stdout
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
}
