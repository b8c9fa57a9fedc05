//! Which state store a wait writes to: the one of the tmux server behind a
//! socket, or of the server a pane was found on.
//!
//! Its own module, at the bottom of `waits/`, so that `command`, `watch`
//! and `hooks` all open stores the same way without one importing another
//! (dependencies inside `waits/` run one way; see `scripts/check-structure`).

use crate::error::Result;
use crate::state::Store;
use crate::tmux::{PaneInfo, ServerId, Socket};

/// The state store of the server behind `socket`.
pub fn store_for(socket: &Socket) -> Result<Store> {
    let lines = socket.run(["display-message", "-p", crate::tmux::SERVER_ID_FORMAT])?;
    open_store(&ServerId::parse(&lines.join("\n")))
}

/// The state store of the server `pane` was found on (asked with the pane
/// when it was, else now).
pub fn store_of(socket: &Socket, pane: &PaneInfo) -> Result<Store> {
    match &pane.server {
        Some(s) => open_store(s),
        None => store_for(socket),
    }
}

/// The state store of the server `s`.
fn open_store(s: &ServerId) -> Result<Store> {
    Store::open(&s.pid, &s.start, &s.socket_path)
}
