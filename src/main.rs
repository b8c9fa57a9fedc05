//! tmux-wait: wait, from inside tmux, for text in a pane or for a tmux
//! `wait-for` channel. `main` parses nothing itself: see `app::run` in the
//! library.

use tmux_wait::{app, error, report};

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let json = args.iter().any(|a| a == "--json");
    let is_run = app::subcommand(&args) == Some("run");
    // A bug must still end in one clear line and a documented exit code,
    // after the unwinding has ended every child process we own.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("tmux-wait: error: internal error{at}: {what} (please report it)");
    }));
    let code = match std::panic::catch_unwind(|| app::run(args.clone())) {
        Ok(code) => code,
        Err(_) => {
            if json {
                println!(
                    "{}",
                    report::error_json("internal", "internal error; see stderr")
                );
            }
            error::exit::of_failure(error::Kind::Io, is_run)
        }
    };
    std::process::exit(code);
}
