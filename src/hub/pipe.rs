//! The one tmux command list that opens a pane's pipe: only when the pane
//! has none, and with the wait's entry queries read in the same go.

use super::policy::ENTRY_QUERIES;
use super::protocol::Entry;
use crate::error::{Error, Kind, Result};
use crate::tmux::protocol::{command_list, format_escape, quote};
use crate::tmux::{PaneState, Socket};

/// The pipe's command line, without its token: this very binary's
/// `pipe-feed`, which `sh -c` runs after tmux expanded it as a format.
pub(super) fn feed_command(socket: &Socket) -> Result<String> {
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find tmux-wait itself", e))?;
    let sock = socket.absolute().path();
    Ok(format_escape(&format!(
        "exec {} -S {} pipe-feed",
        quote(&exe.to_string_lossy()),
        quote(&sock.to_string_lossy())
    )))
}

/// A finished `if-shell ... pipe-pane ...` command list.
pub(super) struct Started {
    pub(super) pane: String,
    pub(super) result: Result<Entry>,
}

impl Started {
    /// How the start ended, in a word (for the hub's log).
    pub(super) fn outcome(&self) -> &'static str {
        match &self.result {
            Ok(Entry::Fresh { .. }) => "fresh",
            Ok(Entry::Foreign) => "foreign",
            Ok(_) => "other",
            Err(_) => "error",
        }
    }
}

/// Open pane `pane`'s pipe unless it has one, and read its state and
/// `queries` in the same command list.
pub(super) fn start_pipe(
    socket: &Socket,
    pane: &str,
    feed: &str,
    queries: &[Vec<String>],
) -> Started {
    let nonce = crate::state::random_id();
    let s = |a: &str| a.to_owned();
    // Only the pipe-pane itself is if-shell's: tmux 3.3 to master keep the
    // commands `if-shell -F` runs (it never frees their list), so the
    // queries, which read and open nothing, follow it in the same list,
    // run after whichever branch ran.
    let open = vec![vec![
        s("pipe-pane"),
        s("-I"),
        s("-O"),
        s("-t"),
        s(pane),
        s(feed),
    ]];
    // A dead pane (remain-on-exit) gets no pipe: tmux 3.2a opens one that
    // then never closes, and the pane looks piped by someone else after.
    let foreign = vec![vec![
        s("display-message"),
        s("-p"),
        s("-t"),
        s(pane),
        format!("{nonce}:foreign:#{{pane_dead}}"),
    ]];
    let mut args = vec![
        s("if-shell"),
        s("-F"),
        s("-t"),
        s(pane),
        s("#{||:#{pane_pipe},#{pane_dead}}"),
        command_list(&foreign),
        command_list(&open),
    ];
    for (i, q) in queries.iter().enumerate() {
        args.extend([
            s(";"),
            s("display-message"),
            s("-p"),
            format!("{nonce}:{i}"),
        ]);
        args.push(s(";"));
        args.extend(q.iter().cloned());
    }
    args.extend([
        s(";"),
        s("display-message"),
        s("-p"),
        format!("{nonce}:end"),
    ]);
    let result = match socket.run(args) {
        Err(e) => Err(e),
        Ok(lines)
            if lines
                .first()
                .is_some_and(|l| *l == format!("{nonce}:foreign:1")) =>
        {
            Err(Error::new(
                Kind::PaneDied,
                format!("pane {pane} is dead (its program has exited)"),
            ))
        }
        Ok(lines)
            if lines
                .first()
                .is_some_and(|l| *l == format!("{nonce}:foreign:0")) =>
        {
            Ok(Entry::Foreign)
        }
        Ok(lines) => {
            crate::tmux::split_replies(&lines, &nonce, queries.len()).and_then(|replies| {
                if PaneState::parse(&replies[0])?.dead {
                    return Err(Error::new(
                        Kind::PaneDied,
                        format!("pane {pane} is dead (its program has exited)"),
                    ));
                }
                debug_assert!(replies.len() >= ENTRY_QUERIES);
                Ok(Entry::Fresh { replies })
            })
        }
    };
    Started {
        pane: pane.to_owned(),
        result,
    }
}
