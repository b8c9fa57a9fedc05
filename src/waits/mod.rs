//! One module per capability: drive an engine, ask the matcher, decide the
//! outcome, honour timeouts and interruption.

pub mod agents;
pub mod attention;
pub mod channel;
pub mod command;
pub mod hooks;
pub mod store;
pub mod text;
pub mod watch;
