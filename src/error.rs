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
    /// `agents install|remove`: the settings file is read-only; nothing
    /// was written (the message shows what to change by hand).
    pub const READ_ONLY: i32 = 6;
    /// `answer`: refused, nothing typed: the pane asks nothing, asks
    /// another question than the one named, reads a password, or offers
    /// no such answer.
    pub const REFUSED: i32 = 7;
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
        (
            READ_ONLY,
            "agents: a read-only settings file, nothing written",
        ),
        (
            REFUSED,
            "answer: refused, nothing typed (not the question named, none, a password)",
        ),
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
    /// tmux-wait, its hub or the whole system is out of file descriptors
    /// (`EMFILE`, `ENFILE`): the wait could not start. Waits already
    /// running go on.
    TooManyOpenFiles,
    /// A host could not be reached through ssh, or its connection
    /// dropped (ssh's own message says why).
    HostUnreachable,
    /// A host runs no tmux-wait, or one older than this.
    NoHelper,
    /// `agents`: the settings file (or its directory) is read-only.
    ReadOnly,
    /// `answer` refused to type: why.
    Refused(Refusal),
    /// SIGINT, SIGTERM or SIGHUP arrived; the number is the signal's.
    Interrupted(i32),
}

/// Why `answer` typed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The pane asks nothing now.
    NoQuestion,
    /// It asks another question than the one named, another program
    /// reads it, or it changed as the keys were about to go.
    QuestionChanged,
    /// It reads a password.
    Password,
    /// Its question offers no such answer.
    NoSuchAnswer,
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
            Kind::TooManyOpenFiles => "too_many_open_files",
            Kind::HostUnreachable => "host_unreachable",
            Kind::NoHelper => "no_helper",
            Kind::ReadOnly => "read_only",
            Kind::Refused(Refusal::NoQuestion) => "no_question",
            Kind::Refused(Refusal::QuestionChanged) => "question_changed",
            Kind::Refused(Refusal::Password) => "password",
            Kind::Refused(Refusal::NoSuchAnswer) => "no_such_answer",
            Kind::Interrupted(_) => "interrupted",
        }
    }

    pub fn exit_code(self) -> i32 {
        match self {
            Kind::Interrupted(sig) => 128 + sig,
            Kind::ReadOnly => exit::READ_ONLY,
            Kind::Refused(_) => exit::REFUSED,
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

    /// A failed system call. Out of descriptors (`EMFILE`, `ENFILE`) is
    /// its own kind, with a message that names the limit.
    pub fn io(what: &str, e: std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::EMFILE) => Self::new(
                Kind::TooManyOpenFiles,
                format!("{what}: {}", out_of_descriptors("tmux-wait")),
            ),
            Some(libc::ENFILE) => Self::new(
                Kind::TooManyOpenFiles,
                format!(
                    "{what}: the system is out of file descriptors (too many open files in the system); end some programs"
                ),
            ),
            _ => Self::new(Kind::Io, format!("{what}: {e}")),
        }
    }

    /// The error of a wait refused because `who` (`tmux-wait`,
    /// `tmux-wait's hub`) is out of file descriptors.
    pub fn too_many_open_files(who: &str) -> Self {
        Self::new(Kind::TooManyOpenFiles, out_of_descriptors(who))
    }
}

/// True for the errors of a process (`EMFILE`) or a system (`ENFILE`) out
/// of file descriptors.
pub fn is_out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// "WHO is out of file descriptors (limit N open files); ...".
fn out_of_descriptors(who: &str) -> String {
    format!(
        "{who} is out of file descriptors (limit {} open files); raise it with ulimit -n, or end some waits",
        open_files_limit()
    )
}

/// This process's soft open-files limit (`ulimit -Sn`).
pub fn open_files_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        // rlim_t is not u64 everywhere.
        #[allow(clippy::unnecessary_cast)]
        let cur = r.rlim_cur as u64;
        cur
    } else {
        0
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
        assert_eq!(Kind::TooManyOpenFiles.exit_code(), 2);
        assert_eq!(Kind::ReadOnly.exit_code(), 6);
        assert_eq!(Kind::Refused(Refusal::Password).exit_code(), 7);
    }

    #[test]
    fn out_of_descriptors_names_the_limit() {
        let e = Error::io(
            "cannot run tmux",
            std::io::Error::from_raw_os_error(libc::EMFILE),
        );
        assert_eq!(e.kind, Kind::TooManyOpenFiles);
        let limit = open_files_limit();
        assert_eq!(
            e.message,
            format!(
                "cannot run tmux: tmux-wait is out of file descriptors (limit {limit} open files); raise it with ulimit -n, or end some waits"
            )
        );
        let e = Error::io("x", std::io::Error::from_raw_os_error(libc::ENFILE));
        assert_eq!(e.kind, Kind::TooManyOpenFiles);
        let e = Error::io("x", std::io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(e.kind, Kind::Io);
    }
}
