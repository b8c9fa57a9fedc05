//! Attention: which pane needs someone, across many panes, without
//! polling. `tmux-wait any` waits until a pane of the targets changes into
//! a state that needs someone (or into any state named by `--until`);
//! `tmux-wait panes` says what each pane waits for now; the plugin keeps a
//! mark per pane, a status segment and notifications from the same watch.
//!
//! A pane is in one state at a time (see [`State`]), and two events count
//! beside them: a bell and a `--pattern` hit. What decides, for each pane:
//!
//! - **its stream** (the hub's pipe, as every wait reads it): when output
//!   comes and goes quiet, OSC 133 and bracketed paste (a shell's prompt
//!   back, with its status), `run`'s marks, BELs, the line under the
//!   cursor without typed echo (the question);
//! - **the kernel**, asked once a burst of output has gone quiet for a
//!   millisecond (at once after a short line left open: a question): who
//!   is in the terminal's foreground, whether it sleeps in a read of the
//!   terminal (a line, or key by key), the terminal's mode (no echo: a
//!   password) — `pane::shell::reads`;
//! - **the screen**, captured once, for a program that reads key by key
//!   and is not at a prompt a REPL draws: once still for 500 ms, a
//!   profile's patterns (`profiles/agents.json`) say whether an agent
//!   works, asks or waits for its next instruction;
//! - **the pane's process**, watched by a pidfd, for `exited`.
//!
//! Nothing is polled while panes are still: a pane that writes nothing
//! costs nothing, a command that runs silently is looked at a dozen times
//! in its first 20 s and then only at `--quiet-after`.

pub mod answer;
mod any;
mod feed;
mod judge;
pub mod log;
mod machine;
pub mod many;
mod pane;
pub mod plugin;
mod profiles;
mod report;
mod snapshot;
mod targets;
mod unknown;
mod watcher;

pub use any::{any, any_armed};
pub use machine::{Change, State, Status, Until, What};
pub use profiles::Profiles;
pub use report::{AnyResult, PaneReport, PanesResult, Problem};
pub use snapshot::panes;

use crate::tmux::Socket;
use std::time::Duration;

/// How long a command must write nothing to be `quiet`, by default.
pub const QUIET_AFTER: Duration = Duration::from_secs(30);

/// A validated `tmux-wait any`.
#[derive(Debug, Clone)]
pub struct AnyRequest {
    pub socket: Socket,
    /// Targets as given (panes, windows, sessions); empty: the current
    /// session, or every pane of the server with `server`.
    pub targets: Vec<String>,
    pub server: bool,
    pub until: Until,
    pub all: bool,
    pub now: bool,
    pub quiet_after: Duration,
    pub patterns: crate::matcher::PatternList,
    pub timeout: Duration,
    pub ndjson: bool,
    /// Channel to signal once every pane is watched.
    pub ready: Option<String>,
    pub profiles: Profiles,
}

/// A validated `tmux-wait panes`.
#[derive(Debug, Clone)]
pub struct PanesRequest {
    pub socket: Socket,
    pub targets: Vec<String>,
    pub server: bool,
    pub quiet_after: Duration,
    pub profiles: Profiles,
}
