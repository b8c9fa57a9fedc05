//! The attention commands' arguments: `any`, `panes`, `answer`, `log`
//! and the plugin's `attention`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Where `any` and `panes` look beyond one server: the global `-L`/`-S`
/// (several), every server of this user, other hosts.
#[derive(Debug, Clone, Args)]
pub struct ManyArgs {
    /// Every tmux server of this user on this host (a live socket in tmux's socket directory); for any, also those that start during the wait
    #[arg(long)]
    pub all_servers: bool,

    /// Also the panes of another host, through ssh (repeatable): user@host:socket, the user and the socket optional; its panes are HOST/%N
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,

    /// An ssh config file for the hosts (default: $TMUX_WAIT_SSH_CONFIG, else ssh's own)
    #[arg(
        long,
        value_name = "FILE",
        env = "TMUX_WAIT_SSH_CONFIG",
        hide_env_values = true
    )]
    pub ssh_config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AnyArgs {
    /// A pane, window or session to watch (repeatable): %3, @2, api:1, api. Default: every pane of the current session
    #[arg(short = 't', long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,

    /// Every pane of the server, new sessions' included
    #[arg(long, conflicts_with = "targets")]
    pub server: bool,

    /// States and events that end the wait, comma-separated: working, prompt, asking, quiet, exited, bell, text [default: prompt,asking,exited,bell; with --pattern also text; with --ndjson all]
    #[arg(long, value_name = "STATES")]
    pub until: Option<String>,

    /// Wait until every pane needs someone, and report them all
    #[arg(long, conflicts_with = "ndjson")]
    pub all: bool,

    /// Also return a pane that is in such a state already
    #[arg(long)]
    pub now: bool,

    /// A command that writes nothing this long is quiet
    #[arg(long, value_name = "DUR", default_value = "30")]
    pub quiet_after: String,

    /// Text to wait for in new output (repeatable; literal and case-insensitive unless --regex): the event text
    #[arg(short = 'p', long = "pattern", value_name = "P")]
    pub patterns: Vec<String>,

    /// Treat --pattern as regular expressions
    #[arg(short = 'r', long)]
    pub regex: bool,

    /// Agent profiles to try before the shipped ones (a JSON file, as profiles/agents.json)
    #[arg(long, value_name = "FILE")]
    pub profiles: Option<PathBuf>,

    /// How long to wait: seconds or with a unit; clamped by $TMUX_WAIT_MAX_SECONDS
    #[arg(long, value_name = "DUR", default_value = "30")]
    pub timeout: String,

    /// Signal this tmux channel once every pane is watched
    #[arg(long, value_name = "CHANNEL")]
    pub ready: Option<String>,

    /// Print one JSON object on stdout
    #[arg(long, conflicts_with = "ndjson")]
    pub json: bool,

    /// Print one JSON object per change of any pane, until the timeout
    #[arg(long)]
    pub ndjson: bool,

    #[command(flatten)]
    pub many: ManyArgs,

    /// With --ndjson: print {"event":"armed"} once every pane is watched (for a tmux-wait that merges these lines from another host)
    #[arg(long, hide = true, requires = "ndjson")]
    pub mark_armed: bool,

    /// With --mark-armed: end when nothing came on stdin for this long (the reader on another host sends a byte now and then)
    #[arg(long, hide = true, value_name = "DUR", requires = "mark_armed")]
    pub input_within: Option<String>,
}

#[derive(Debug, Args)]
pub struct PanesArgs {
    /// A pane, window or session (repeatable). Default: every pane of the current session
    #[arg(short = 't', long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,

    /// Every pane of the server
    #[arg(long, conflicts_with = "targets")]
    pub server: bool,

    /// A command that wrote nothing this long is quiet
    #[arg(long, value_name = "DUR", default_value = "30")]
    pub quiet_after: String,

    /// Agent profiles to try before the shipped ones
    #[arg(long, value_name = "FILE")]
    pub profiles: Option<PathBuf>,

    /// Print one JSON object on stdout: {\"panes\": [...]}
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub many: ManyArgs,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The pane that asks (%3, api:1.0, {last})
    #[arg(short = 't', long = "target", value_name = "PANE", required = true)]
    pub target: String,

    /// The answer: y, n, a number of an agent's options, enter, ... as `answer -t PANE` lists them (case-insensitive)
    #[arg(value_name = "CHOICE")]
    pub choice: Option<String>,

    /// Type only if the pane asks exactly this question (its `question` in panes --json)
    #[arg(long, value_name = "TEXT")]
    pub question: Option<String>,

    /// Type only if the pane asks the question of this id (as `answer -t PANE --json` gives it)
    #[arg(long, value_name = "ID")]
    pub question_id: Option<String>,

    /// Type only if this process reads the pane's terminal (`pid` of `answer -t PANE --json`)
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,

    /// Type only if the question began then (the `since` of panes --json, seconds since the epoch, within a second)
    #[arg(long, value_name = "SECS")]
    pub since: Option<f64>,

    /// How long to watch the pane move on after the keys
    #[arg(long, value_name = "DUR", default_value = "3")]
    pub timeout: String,

    /// Agent profiles to try before the shipped ones
    #[arg(long, value_name = "FILE")]
    pub profiles: Option<PathBuf>,

    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,

    /// The menu's: type only if the pane's mark began then (@tmux-wait-attention-began)
    #[arg(long, hide = true, value_name = "SECS")]
    pub began: Option<String>,

    /// The menu's: say the outcome on this client, and go to a password prompt instead
    #[arg(long, hide = true)]
    pub from_menu: bool,

    /// The client to tell (with --from-menu)
    #[arg(short = 'c', long, hide = true, value_name = "CLIENT")]
    pub client: Option<String>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only the events of the last DUR (2h, 30m)
    #[arg(long, value_name = "DUR")]
    pub since: Option<String>,

    /// Print one JSON object on stdout: {\"events\": [...]}
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AttentionArgs {
    #[command(subcommand)]
    pub command: AttentionCommand,
}

#[derive(Debug, Subcommand)]
pub enum AttentionCommand {
    /// Keep the marks, the status segment and the notifications of every session with attention on
    Serve,
    /// Turn attention on or off for a session
    Toggle {
        #[arg(short = 't', long = "target", value_name = "SESSION")]
        target: String,
        #[arg(short = 'c', long, value_name = "CLIENT")]
        client: Option<String>,
    },
    /// Start or stop the watch as the options say (the plugin's load)
    Sync,
    /// Clear the marks of the panes on the clients' screens
    Visit,
    /// Move a client to the next pane that needs someone
    Next {
        #[arg(short = 'c', long, value_name = "CLIENT")]
        client: Option<String>,
    },
    /// Go to a pane on another server or host that needs someone (the menu's items)
    Go {
        /// The pane's id, hex-encoded
        id: String,
        #[arg(short = 'c', long, value_name = "CLIENT")]
        client: Option<String>,
    },
}
