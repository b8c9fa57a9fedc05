//! Typing a command: the line `run` types, and what may be typed.

use super::*;

/// The command line `run` types: the command itself goes through `eval` in
/// single quotes, so the shell parses it once, as typed, and `cd`/`export`
/// stay in the shell. It starts with a space, which keeps it out of the
/// shell's history where the shell leaves such lines out (bash with
/// `HISTCONTROL=ignorespace`, zsh with `HIST_IGNORE_SPACE`, fish), unless
/// `history` asks to keep it.
///
/// The status goes into `status_file` (where a wait that could no longer
/// read the stream finds it: another program took the pane's pipe), then
/// into the stream with the end mark: once the mark is seen the file is
/// there, and the shell has only `unset` left to run. Where the file
/// cannot be written (a shell on another host, over ssh), nothing is said.
///
/// `printf` is the shell's builtin, never a function or alias of the same
/// name: `command printf` in POSIX shells, `builtin printf` in zsh (whose
/// `command` runs the external program, a process for each mark).
pub fn wrapper(
    id: &str,
    command: &str,
    history: bool,
    status_file: Option<&str>,
    zsh: bool,
) -> String {
    let printf = if zsh {
        "builtin printf"
    } else {
        "command printf"
    };
    let mark = |what: &str| format!("'\\033]{RUN_OSC};{RUN_TAG};{id};{what}\\007'");
    let file = status_file
        .map(|f| {
            format!(
                "{printf} %d \"$_tmux_wait_status\" 2>/dev/null >{};",
                quote(f)
            )
        })
        .unwrap_or_default();
    format!(
        "{}{printf} {};eval {};_tmux_wait_status=$?;{file}{printf} {} \"$_tmux_wait_status\";unset _tmux_wait_status",
        if history { "" } else { " " },
        mark("B"),
        quote(command),
        mark("E;%d")
    )
}

/// The name of the file [`sourced`] has the shell read for run `id`: it
/// holds the wrapper's signature and its end mark's format, so that the
/// echo of the typed line is known for a wrapper's (see `wrapper_rows`),
/// and starts with `run-` (old ones are swept with the status files).
pub(super) fn script_name(id: &str) -> String {
    format!("run-{RUN_OSC};{RUN_TAG};{id};E;%d")
}

/// The short line `run` types when the wrapper (see [`wrapper`]) is in a
/// file the shell can read, at `script`: the shell reads the file with its
/// `.` builtin, which runs it in the shell itself, as `eval` does. Each
/// typed character costs the shell's line editor and tmux a few
/// microseconds, and a wrapper is over 300 of them. It ends as every
/// wrapper does (`WRAPPER_END`), and starts with a space (kept out of the
/// history: the history of such a line would not hold the command).
pub fn sourced(script: &str) -> String {
    format!(" command . {};unset _tmux_wait_status", quote(script))
}

/// A tmux command's arguments.
pub(super) fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

pub(super) fn validate_command(command: &str) -> Result<()> {
    if command.trim().is_empty() {
        return Err(Error::usage("the command is empty"));
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(Error::usage(format!(
            "the command is {} bytes; at most {MAX_COMMAND_BYTES} are typed (put it in a script)",
            command.len()
        )));
    }
    if let Some(c) = command.chars().find(|c| c.is_control()) {
        return Err(Error::usage(format!(
            "the command must be one line without control characters (found {:?}); put longer scripts in a file",
            c
        )));
    }
    Ok(())
}

/// A lock held from the prompt check until the command has started, so two
/// runs cannot type into one prompt at once.
pub(super) fn pane_lock(
    socket: &Socket,
    pane: &str,
    deadline: Instant,
) -> Result<Option<crate::tmux::LockFile>> {
    // One lock for the server's runs (held for the few milliseconds of
    // typing): no file per pane to leave behind.
    match crate::tmux::lock_beside_socket(socket, "tmux-wait-run-lock", true, deadline) {
        crate::tmux::SocketLock::Held(f) => Ok(Some(f)),
        crate::tmux::SocketLock::Unavailable => Ok(None),
        crate::tmux::SocketLock::TimedOut => Err(Error::new(
            Kind::Busy,
            format!("another tmux-wait run is typing into pane {pane}"),
        )),
    }
}
