//! Coding agents' own signals, from their side: the hook command an agent
//! runs at its events (`event`), and the commands that add it to an
//! agent's settings, beside the user's own hooks, and remove exactly it
//! again (`settings`); for OpenCode, a plugin of its own (`opencode`).
//!
//! The hook says what the agent does now by writing a mark into its
//! pane's stream (an OSC string tmux ignores, as `run`'s marks are): every
//! watch of the pane reads it in order with the agent's own output, within
//! a millisecond, whether or not a watch runs when it comes, and nothing
//! else is asked of tmux or of a process of ours.

mod edit;
mod event;
mod file;
mod jsonc;
pub mod opencode;
mod settings;

pub use event::{Kind, event, kind_of};
pub use settings::{AGENTS, install, remove};
