//! Errors, their machine-readable kinds and their exit codes.
//!
//! Every failure is one `Error`: a kind (stable, for scripts and `--json`)
//! and a one-line message (for people). Exit codes come from one table,
//! `exit::TABLE`; a test checks the README and every `--help` against it.

use std::fmt;

/// Documented exit codes.
pub mod exit {
    /// Found (text) or signalled (channel).
    pub const OK: i32 = 0;
    /// The timeout ended the wait.
    pub const TIMEOUT: i32 = 1;
    /// Bad usage, bad input, tmux or pane trouble.
    pub const ERROR: i32 = 2;
    /// A `--stop` pattern ended the wait.
    pub const STOPPED: i32 = 3;
    /// The wait timed out while the pane was on the alternate screen.
    pub const ALTERNATE_SCREEN: i32 = 4;
    /// The channel was signalled with a non-zero `--status`.
    pub const SIGNALLED_FAILURE: i32 = 5;
    /// `run`: the timeout ended the wait, the command goes on (as
    /// `timeout(1)`).
    pub const RUN_TIMED_OUT: i32 = 124;
    /// `run`: tmux-wait itself failed (as `timeout(1)`); otherwise `run`
    /// exits with the command's own status.
    pub const RUN_FAILED: i32 = 125;
    /// Ended by SIGHUP, SIGINT, SIGTERM: 128 plus the signal's number.
    pub const INTERRUPTED: [i32; 3] = [129, 130, 143];

    /// The whole table, as the README and each command's `--help` give it
    /// (a test keeps the three in step): every code and what it says.
    pub const TABLE: &[(i32, &str)] = &[
        (OK, "done: found, signalled, sent, finished, quiet"),
        (TIMEOUT, "timed out"),
        (ERROR, "error"),
        (STOPPED, "stopped by a --stop pattern"),
        (ALTERNATE_SCREEN, "timed out on the alternate screen"),
        (SIGNALLED_FAILURE, "signalled with a non-zero --status"),
        (RUN_TIMED_OUT, "run: timed out, the command goes on"),
        (RUN_FAILED, "run: tmux-wait failed"),
        (129, "interrupted by SIGHUP"),
        (130, "interrupted by SIGINT"),
        (143, "interrupted by SIGTERM"),
    ];

    /// The exit code of a failure of kind `kind`; `run` exits as
    /// timeout(1) does, so its own failures are 125.
    pub fn of_failure(kind: super::Kind, run: bool) -> i32 {
        match kind {
            super::Kind::Interrupted(_) => kind.exit_code(),
            _ if run => RUN_FAILED,
            _ => kind.exit_code(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad arguments or environment (`TMUX_WAIT_MAX_SECONDS`).
    Usage,
    InvalidRegex,
    InvalidChannel,
    /// No tmux server is listening on the socket.
    NoServer,
    /// The target does not name a pane.
    NoPane,
    /// The pane was killed or its program exited during the wait.
    PaneDied,
    /// The pane was respawned during the wait: its output is another program's.
    PaneRespawned,
    /// The tmux server went away during the wait.
    ServerExited,
    /// tmux refused a command or answered something unexpected.
    Tmux,
    /// A local system call failed (spawning tmux, pipes).
    Io,
    /// `run`: the pane is not at a shell prompt it can type into.
    NotAtPrompt,
    /// `run`: another run is typing into the same pane.
    Busy,
    /// Another program pipes the pane's output (`pipe-pane`), before the
    /// wait or during it; tmux-wait leaves that pipe alone.
    PipeBusy,
    /// SIGINT, SIGTERM or SIGHUP arrived; the number is the signal's.
    Interrupted(i32),
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Usage => "usage",
            Kind::InvalidRegex => "invalid_regex",
            Kind::InvalidChannel => "invalid_channel",
            Kind::NoServer => "no_server",
            Kind::NoPane => "no_pane",
            Kind::PaneDied => "pane_died",
            Kind::PaneRespawned => "pane_respawned",
            Kind::ServerExited => "server_exited",
            Kind::Tmux => "tmux_error",
            Kind::Io => "io_error",
            Kind::NotAtPrompt => "not_at_prompt",
            Kind::Busy => "busy",
            Kind::PipeBusy => "pipe_busy",
            Kind::Interrupted(_) => "interrupted",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            Kind::Interrupted(sig) => 128 + sig,
            _ => exit::ERROR,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
}

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Kind::Usage, message)
    }

    pub fn io(what: &str, e: std::io::Error) -> Self {
        Self::new(Kind::Io, format!("{what}: {e}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_table() {
        assert_eq!(Kind::Usage.exit_code(), 2);
        assert_eq!(Kind::ServerExited.exit_code(), 2);
        assert_eq!(Kind::Interrupted(2).exit_code(), 130);
        assert_eq!(Kind::Interrupted(15).exit_code(), 143);
        assert_eq!(Kind::Interrupted(1).exit_code(), 129);
    }
}
