//! The hub: how waits read a pane's output without attaching a tmux client.
//!
//! Why no client: a client attached to a session, even a hidden control
//! client, is a candidate for the "current client" of every command another
//! program runs without `-c` (tmux's `cmd_find_best_client` picks the client
//! with the latest activity, and a new client's activity is its creation
//! time). Messages from scripts went to our invisible client,
//! `switch-client` moved it instead of the person, and since tmux 3.7
//! `send-keys` refuses when that client is read-only. The attach also
//! counted as activity of the session. So tmux-wait reads panes through
//! `pipe-pane`, which attaches nothing: tmux copies the pane's output to a
//! socket, byte for byte, in the order it reads it.
//!
//! A pane has one pipe, so one process per server owns the pipes and shares
//! each with every wait on that pane: the hub. A wait connects to it over a
//! Unix socket beside tmux's (`.NAME.tmux-wait-hub`, 0600, peers of another
//! uid refused) and sends one [`Request`] line. The hub answers with an
//! [`Entry`] frame, then streams the pane's bytes in `D` frames:
//!
//! - The first wait on a pane gets a fresh pipe. The hub starts it with one
//!   tmux command list that first checks that the pane has no pipe
//!   (`if-shell -F '#{pane_pipe}'`, evaluated and run in one go), then opens
//!   the pipe and reads the pane's state and the wait's own queries. tmux
//!   runs a command list without reading any pane in between, so the
//!   replies show the pane exactly where the stream starts.
//! - A wait that joins a pane another wait already streams gets the stream
//!   from there on, and lines a capture of its own up with it (see
//!   `engine::stream`).
//! - A pane piped by someone else (a logging plugin, the user's own
//!   `pipe-pane`) is never touched: the answer is [`Entry::Foreign`].
//!
//! When the last wait on a pane leaves, its pipe stays `KEEP` (the hub's
//! own linger) for the next call on the pane to join, unless the pane
//! writes `router::IDLE_BYTES` meanwhile (see `router`). The pipe is opened
//! with `-I -O`: tmux then also reads the socket, sees the end of it the
//! moment the hub closes its side (that moment over, or the hub died), and
//! closes the pipe at once. The hub never writes to it, so nothing is ever
//! typed into the pane. The pipe's command
//! is `tmux-wait pipe-feed TOKEN` (see `feed`): it hands its end of the
//! socket to the hub and exits, so no process per pane stays behind.
//!
//! After the entry a wait may send `sync N` lines: the hub reads whatever
//! the pane's pipe holds at that moment, passes it on, then answers `S N`.
//! Output tmux wrote before the hub saw the request is then before the
//! answer (see `engine::stream`, which lines replies of separate tmux
//! commands up with the stream this way). A `wants JSON` line says which
//! lines the wait can use (a regex, and how many last lines it keeps): the
//! hub then searches each chunk once for all such waits on the pane and
//! sends them `P` frames with the plain lines none of them can use left
//! out, or `R` frames with a run of a screen redrawn in place left out
//! (see `sieve`); `whole` takes that back.
//!
//! Lifetime: started detached by the first wait that finds none (one
//! starter at a time under a lock beside the socket); one per server, kept
//! so by a lock it holds; leaves `LINGER` after its last wait, closing every
//! pipe, and sweeps the files left beside the sockets of gone servers.
//!
//! Descriptors: the hub raises its open-files limit and refuses a wait that
//! would not fit (`budget`); pipe starts wait their turn (`starts`).

mod budget;
mod client;
mod conn;
mod dropped;
mod feed;
mod join;
mod pipe;
mod policy;
mod protocol;
mod router;
mod server;
mod sieve;
mod starts;
mod tap;

pub use crate::pane::skip::{FrameRun, Framed, Sieved, WHOLE, Wants};
pub use client::{connect, path, read_entry};
pub use feed::pipe_feed;
pub use join::JoinPoint;
pub use policy::{ENTRY_QUERIES, allowed, entry_queries};
pub use protocol::{Decoder, EndReason, Entry, Frame, HELLO, MAX_FRAME, Request, encode_raw};
pub use server::serve;
pub use sieve::{Cut, Framer, SIEVE_AFTER, Sieve};
