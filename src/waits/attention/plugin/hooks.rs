//! The hooks that see a person visit a pane, or leave one, and those that
//! see a marked pane's place change (a session renamed, a window moved or
//! linked, a pane joined to or broken out of a window): appended to the
//! user's own (`set-hook -a`), each starting a process only while some
//! pane is marked or held, put back when a reload of the config replaced
//! them (`set-hook` without `-a` replaces every command of a hook), and
//! removed (only ours, told by what they run) when attention goes off.
//!
//! `swap-pane` runs no hook of its own; it changes the active pane of the
//! windows it swaps between (`window-pane-changed`), except with `-d`.

use super::marks::VISIT;
use crate::error::{Error, Result};
use crate::tmux::Socket;
use crate::tmux::protocol::{format_escape, quote, sh_quote};

/// The hooks that see a visit or a move: name, and whether it is a
/// window hook.
const HOOKS: [(&str, bool); 10] = [
    ("after-select-pane", false),
    ("window-pane-changed", true),
    ("session-window-changed", false),
    ("client-session-changed", false),
    ("client-attached", false),
    ("client-detached", false),
    ("session-renamed", false),
    ("window-layout-changed", true),
    ("window-linked", false),
    ("window-unlinked", false),
];

/// The hooks of this server's tmux: `window-linked` and `window-unlinked`
/// are window hooks before tmux 3.3, session hooks since.
fn hooks(socket: &Socket) -> Vec<(&'static str, bool)> {
    let old = socket
        .version()
        .is_some_and(|v| v < crate::tmux::Version(3, 3));
    HOOKS
        .iter()
        .map(|&(name, window)| {
            let linking = name == "window-linked" || name == "window-unlinked";
            (name, window || (linking && old))
        })
        .collect()
}
/// What tells our hooks from the user's.
const OURS: &str = "attention visit";

/// The hook command that clears the marks of the panes a person visits
/// (and lets held ones count once they leave): it starts a process only
/// while some pane is marked or held.
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
        quote(&format!("#{{{VISIT}}}")),
        quote(&run)
    ))
}

/// One of our hooks as `show-hooks` lists it: its index, and whether it
/// is this version's (an older one tested another option).
struct Ours {
    index: u32,
    current: bool,
}

/// Our hooks per hook, from `show-hooks` (one tmux command).
fn our_hooks(socket: &Socket) -> Vec<(&'static str, bool, Vec<Ours>)> {
    let hooks = hooks(socket);
    let mut args: Vec<&str> = Vec::new();
    for &(name, window) in &hooks {
        if !args.is_empty() {
            args.push(";");
        }
        args.extend(["show-hooks", if window { "-gw" } else { "-g" }, name]);
    }
    let lines = socket.run(&args).unwrap_or_default();
    hooks
        .iter()
        .map(|&(name, window)| {
            let ours = lines
                .iter()
                .filter(|l| l.contains(OURS))
                .filter_map(|l| {
                    let rest = l.strip_prefix(name)?.strip_prefix('[')?;
                    let index = rest.split(']').next()?.parse().ok()?;
                    Some(Ours {
                        index,
                        current: l.contains(VISIT),
                    })
                })
                .collect();
            (name, window, ours)
        })
        .collect()
}

/// `set-hook -u` of `ours`, the highest index first (so the others'
/// indexes hold).
fn unset(args: &mut Vec<String>, name: &str, window: bool, ours: &[&Ours]) {
    let mut idx: Vec<u32> = ours.iter().map(|o| o.index).collect();
    idx.sort_by_key(|i| std::cmp::Reverse(*i));
    for i in idx {
        if !args.is_empty() {
            args.push(";".into());
        }
        let flags = if window { "-gwu" } else { "-gu" };
        args.extend(["set-hook".into(), flags.into(), format!("{name}[{i}]")]);
    }
}

/// Append our hook to each, after the user's own (once; one of an older
/// version is replaced). Returns whether any was missing.
pub(super) fn add_hooks(socket: &Socket) -> Result<bool> {
    let mut args: Vec<String> = Vec::new();
    let mut cmd = None;
    for (name, window, ours) in our_hooks(socket) {
        if ours.iter().any(|o| o.current) {
            continue;
        }
        unset(&mut args, name, window, &ours.iter().collect::<Vec<_>>());
        let cmd = match &cmd {
            Some(c) => c,
            None => cmd.insert(hook_command(socket)?),
        };
        if !args.is_empty() {
            args.push(";".into());
        }
        let flags = if window { "-gwa" } else { "-ga" };
        args.extend(["set-hook".into(), flags.into(), name.into(), cmd.clone()]);
    }
    if !args.is_empty() {
        socket.run(&args)?;
    }
    Ok(!args.is_empty())
}

/// Remove our hooks, and only ours.
pub(super) fn remove_hooks(socket: &Socket) {
    let mut args: Vec<String> = Vec::new();
    for (name, window, ours) in our_hooks(socket) {
        unset(&mut args, name, window, &ours.iter().collect::<Vec<_>>());
    }
    if !args.is_empty() {
        let _ = socket.run(&args);
    }
}
