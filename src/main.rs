//! tmux-wait: wait, from inside tmux, for text in a pane or for a tmux
//! `wait-for` channel. `main` parses nothing itself: see `app::run`.

mod app;
mod cli;
mod config;
mod engine;
mod error;
mod matcher;
mod notify;
mod report;
mod signals;
mod state;
mod tmux;
mod waits;

fn main() {
    let code = app::run(std::env::args_os().collect());
    std::process::exit(code);
}
