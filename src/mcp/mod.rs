//! `tmux-wait mcp`: the waits as tools of an MCP server over stdio, for AI
//! agents (Claude Code, Cursor, orchestrators driving tmux panes).
//!
//! Tools: `wait_for_text`, `wait_for_channel`, `signal_channel`,
//! `run_command` and `wait`, with libtmux-mcp's names and parameters. Each
//! call runs the CLI as a child process (`tmux-wait [-L|-S] text|channel|
//! signal|run|output ... --json`, see `child`), and its JSON object is the
//! tool's result (`tools`). stdout carries nothing but protocol
//! (`transport`); logs go to stderr.

mod child;
mod progress;
mod server;
mod tools;
mod transport;

use crate::tmux::Socket;

/// Run the server on stdin/stdout until stdin closes or a signal comes;
/// returns the exit code (0, or 128 + the signal).
pub fn run(socket: Socket) -> i32 {
    // Each call holds a child's pipes: an agent's hundred calls at once
    // must not meet a soft limit of 256 (macOS). Children get the old one.
    crate::sys::fds::raise();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log(&format!("cannot start: {e}"));
            return crate::error::exit::ERROR;
        }
    };
    let code = rt.block_on(server::serve(socket));
    // stdin is read by a blocking thread that nothing can interrupt: do
    // not wait for it.
    rt.shutdown_background();
    code
}

/// One line on stderr.
pub(crate) fn log(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "tmux-wait mcp: {}", crate::report::sanitize(line));
}
