//! A trace of what a wait or a watch saw, for the one who debugs it: with
//! `TMUX_WAIT_TRACE=FILE` in its environment, each line (a time since the
//! epoch, the process, then what happened) is appended to FILE; without
//! it, nothing is done but one look at a flag. Not for users: a tool for
//! the hardest cases (a line taken for typed, a pane missed under load),
//! named in CONTRIBUTING.

use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

static FILE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();

fn file() -> Option<&'static Mutex<std::fs::File>> {
    FILE.get_or_init(|| {
        let path = std::env::var_os("TMUX_WAIT_TRACE").filter(|p| !p.is_empty())?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
            .map(Mutex::new)
    })
    .as_ref()
}

/// Whether tracing is on.
pub fn on() -> bool {
    file().is_some()
}

/// Append one line.
pub fn line(args: std::fmt::Arguments) {
    let Some(f) = file() else { return };
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    if let Ok(mut f) = f.lock() {
        let _ = writeln!(f, "{t:.3} {} {args}", std::process::id());
    }
}

/// `trace!("...", args)`: a line of the trace, its arguments formatted
/// only when tracing is on.
#[macro_export]
macro_rules! trace {
    ($($a:tt)*) => {
        if $crate::sys::trace::on() {
            $crate::sys::trace::line(format_args!($($a)*));
        }
    };
}
