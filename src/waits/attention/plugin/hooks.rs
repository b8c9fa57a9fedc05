//! The hooks that see a person visit a pane: appended to the user's own
//! (`set-hook -a`), each starting a process only while some pane is
//! marked, and removed (only ours, told by what they run) when attention
//! goes off.

use super::STATUS;
use crate::error::{Error, Result};
use crate::tmux::Socket;
use crate::tmux::protocol::{format_escape, quote, sh_quote};

/// The hooks that see a visit: name, and whether it is a window hook.
const HOOKS: [(&str, bool); 4] = [
    ("after-select-pane", false),
    ("window-pane-changed", true),
    ("session-window-changed", false),
    ("client-session-changed", false),
];
/// What tells our hooks from the user's.
const OURS: &str = "attention visit";

/// The hook command that clears the marks of the panes a person visits:
/// it starts a process only while some pane is marked.
fn hook_command(socket: &Socket) -> Result<String> {
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find tmux-wait itself", e))?;
    let sock = socket
        .run(["display-message", "-p", "#{socket_path}"])?
        .first()
        .cloned()
        .unwrap_or_default();
    let sh = format!(
        "{} -S {} {OURS} >/dev/null 2>&1",
        sh_quote(&exe.to_string_lossy()),
        sh_quote(&sock)
    );
    let run = format!("run-shell -b {}", quote(&format_escape(&sh)));
    Ok(format!(
        "if-shell -F {} {}",
        quote(&format!("#{{{STATUS}}}")),
        quote(&run)
    ))
}

/// Our hooks' indexes per hook, from `show-hooks`.
fn our_hooks(socket: &Socket) -> Vec<(&'static str, bool, Vec<String>)> {
    let mut out = Vec::new();
    for (name, window) in HOOKS {
        let flags = if window { "-gw" } else { "-g" };
        let lines = socket.run(["show-hooks", flags, name]).unwrap_or_default();
        let idx: Vec<String> = lines
            .iter()
            .filter(|l| l.contains(OURS))
            .filter_map(|l| {
                let rest = l.strip_prefix(name)?.strip_prefix('[')?;
                Some(rest.split(']').next()?.to_owned())
            })
            .collect();
        out.push((name, window, idx));
    }
    out
}

/// Append our hook to each, after the user's own (once).
pub(super) fn add_hooks(socket: &Socket) -> Result<()> {
    let cmd = hook_command(socket)?;
    let mut args: Vec<String> = Vec::new();
    for (name, window, idx) in our_hooks(socket) {
        if !idx.is_empty() {
            continue;
        }
        if !args.is_empty() {
            args.push(";".into());
        }
        let flags = if window { "-gwa" } else { "-ga" };
        args.extend(["set-hook".into(), flags.into(), name.into(), cmd.clone()]);
    }
    if !args.is_empty() {
        socket.run(&args)?;
    }
    Ok(())
}

/// Remove our hooks, and only ours (the highest index first, so the
/// others' indexes hold).
pub(super) fn remove_hooks(socket: &Socket) {
    let mut args: Vec<String> = Vec::new();
    for (name, window, mut idx) in our_hooks(socket) {
        idx.sort_by_key(|i| std::cmp::Reverse(i.parse::<u32>().unwrap_or(0)));
        for i in idx {
            if !args.is_empty() {
                args.push(";".into());
            }
            let flags = if window { "-gwu" } else { "-gu" };
            args.extend(["set-hook".into(), flags.into(), format!("{name}[{i}]")]);
        }
    }
    if !args.is_empty() {
        let _ = socket.run(&args);
    }
}
