//! The helper's code as a library: the `tmux-wait` binary is a thin `main`
//! over `app::run`, and the fuzz targets under `fuzz/` drive the parsers
//! (the hub's frames, VT line tracker, durations, the output clipper, cursor
//! records)
//! directly.

pub mod app;
pub mod cli;
pub mod clip;
pub mod config;
pub mod cursor;
pub mod engine;
pub mod error;
pub mod hub;
pub mod matcher;
pub mod mcp;
pub mod notify;
pub mod pane;
pub mod plain;
pub mod remote;
pub mod report;
pub mod signals;
pub mod state;
pub mod sys;
#[cfg(test)]
mod testutil;
pub mod tmux;
pub mod waits;

/// The allocator of the static Linux builds (musl, the release archives):
/// with musl's own, the line tracker took command output four times
/// slower than the glibc build (docs/benchmarks.md).
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
