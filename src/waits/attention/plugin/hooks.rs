//! The hooks that see a person visit a pane, or leave one, and those that
//! see a marked pane's place change (a session renamed, a window moved or
//! linked, a pane joined to or broken out of a window): appended to the
//! user's own (`set-hook -a`), put back when a reload of the config
//! replaced them (`set-hook` without `-a` replaces every command of a
//! hook), and removed (only ours, told by what they run) when attention
//! goes off.
//!
//! They are there only while some pane is marked or held (`refresh` adds
//! and removes them as that changes): with nothing marked, nothing runs.
//! Each is one `run-shell -b` (a visit hook: `attention visit`); a move
//! hook's shell command is a format that tmux expands to nothing unless
//! its window or session holds a mark (a split, a resize or a new window
//! elsewhere then runs an empty shell).
//!
//! (No `if-shell`: tmux 3.3a to master keep the commands that `if-shell`
//! and `run-shell -C` parse when a hook runs them, a couple of kilobytes
//! each time, and the server would grow all day.)
//!
//! `swap-pane` runs no hook of its own; it changes the active pane of the
//! windows it swaps between (`window-pane-changed`), except with `-d`.

use super::options::{MARK, VISIT, WINDOW};
use crate::error::{Error, Result};
use crate::tmux::Socket;
use crate::tmux::protocol::{format_escape, quote};

/// When a hook runs `attention visit` (all of them only while some pane
/// is marked or held): a format tmux expands in the hook's context, true
/// (not empty, not 0) when it must.
#[derive(Clone, Copy)]
enum Guard {
    /// Always: a visit may clear or count a mark.
    Visit,
    /// The hook's window has a mark, or a marked pane: a pane joined to
    /// or taken from it, or killed in it, may change where a mark is.
    Window,
    /// The window the hook names (`hook_window`) has a mark or a marked
    /// pane: linked somewhere (moved, linked, broken out), its place
    /// changed. (The hook runs in the session's current window.)
    Linked,
    /// A pane of the hook's session is marked: a rename changes the
    /// segment's words.
    Session,
}

impl Guard {
    fn format(self) -> String {
        match self {
            Guard::Visit => "1".to_owned(),
            Guard::Window => format!("#{{{WINDOW}}}#{{P:#{{{MARK}}}}}"),
            Guard::Linked => format!(
                "#{{W:#{{?#{{==:#{{window_id}},#{{hook_window}}}},#{{{WINDOW}}}#{{P:#{{{MARK}}}}},}}}}"
            ),
            Guard::Session => format!("#{{W:#{{P:#{{{MARK}}}}}}}"),
        }
    }
}

/// The hooks that see a visit or a move: name, whether it is a window
/// hook, and when it runs `attention visit`. A pane killed in a window of
/// its own unlinks the window; one killed beside others changes the
/// window's layout.
const HOOKS: [(&str, bool, Guard); 10] = [
    ("after-select-pane", false, Guard::Visit),
    ("window-pane-changed", true, Guard::Visit),
    ("session-window-changed", false, Guard::Visit),
    ("client-session-changed", false, Guard::Visit),
    ("client-attached", false, Guard::Visit),
    ("client-detached", false, Guard::Visit),
    ("session-renamed", false, Guard::Session),
    ("window-layout-changed", true, Guard::Window),
    ("window-linked", false, Guard::Linked),
    // (A window unlinked may be gone: killed with a pane whose watch had
    // already ended, an exited one.)
    ("window-unlinked", false, Guard::Visit),
];

/// The hooks of this server's tmux: `window-linked` and `window-unlinked`
/// are window hooks before tmux 3.3, session hooks since.
fn hooks(socket: &Socket) -> Vec<(&'static str, bool, Guard)> {
    let old = socket
        .version()
        .is_some_and(|v| v < crate::tmux::Version(3, 3));
    HOOKS
        .iter()
        .map(|&(name, window, guard)| {
            let linking = name == "window-linked" || name == "window-unlinked";
            (name, window || (linking && old), guard)
        })
        .collect()
}

/// What tells our hooks from the user's.
const OURS: &str = "attention visit";

/// The hook command that runs `attention visit` (which clears the marks
/// of the panes a person visits, lets held ones count once they leave,
/// and says where marked panes are now): at once for a visit hook, else
/// when `guard` holds.
fn hook_command(sock: &str, guard: Guard) -> Result<String> {
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find tmux-wait itself", e))?;
    let sh = format!(
        "{} -S {} {OURS} >/dev/null 2>&1",
        quote(&exe.to_string_lossy()),
        quote(sock)
    );
    let sh = match guard {
        Guard::Visit => format_escape(&sh),
        _ => format!("#{{?{},{},}}", guard.format(), branch_escape(&sh)),
    };
    Ok(format!("run-shell -b {}", quote(&sh)))
}

/// Text for a branch of a format's `#{?...}`: `#` doubled, and `,` and
/// `}` escaped as tmux reads them there.
fn branch_escape(s: &str) -> String {
    format_escape(s).replace(',', "#,").replace('}', "#}")
}

/// Whether a hook's line (as `show-hooks` prints it) is this version's
/// command for `guard`.
fn is_current(line: &str, guard: Guard) -> bool {
    !line.contains("if-shell")
        && match guard {
            Guard::Visit => !line.contains("#{?"),
            _ => line.contains(&guard.format()),
        }
}

/// One of our hooks as `show-hooks` lists it: its index, and whether it
/// is this version's (an older one tested another option).
struct Ours {
    index: u32,
    current: bool,
}

/// Our hooks per hook, from `show-hooks` (one tmux command).
fn our_hooks(socket: &Socket) -> Vec<(&'static str, bool, Guard, Vec<Ours>)> {
    let hooks = hooks(socket);
    let mut args: Vec<&str> = Vec::new();
    for &(name, window, _) in &hooks {
        if !args.is_empty() {
            args.push(";");
        }
        args.extend(["show-hooks", if window { "-gw" } else { "-g" }, name]);
    }
    let lines = socket.run(&args).unwrap_or_default();
    hooks
        .iter()
        .map(|&(name, window, guard)| {
            let ours = lines
                .iter()
                .filter(|l| l.contains(OURS))
                .filter_map(|l| {
                    let rest = l.strip_prefix(name)?.strip_prefix('[')?;
                    let index = rest.split(']').next()?.parse().ok()?;
                    Some(Ours {
                        index,
                        current: is_current(l, guard),
                    })
                })
                .collect();
            (name, window, guard, ours)
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

/// Our hooks after the user's own (once; one of an older version is
/// replaced) while some pane is marked or held, else none. Returns
/// whether any was changed.
pub(super) fn add_hooks(socket: &Socket) -> Result<bool> {
    let visit = !super::option(socket, VISIT).trim().is_empty();
    put(socket, visit)
}

/// Our hooks in place (`on`: some pane is marked or held) or not.
pub(super) fn visit_hooks(socket: &Socket, on: bool) {
    let _ = put(socket, on);
}

/// Our hooks there once each, this version's (`wanted`), or not there.
/// Returns whether any was changed.
fn put(socket: &Socket, wanted: bool) -> Result<bool> {
    let mut args: Vec<String> = Vec::new();
    let mut sock: Option<String> = None;
    for (name, window, guard, ours) in our_hooks(socket) {
        if wanted && ours.len() == 1 && ours[0].current || !wanted && ours.is_empty() {
            continue;
        }
        unset(&mut args, name, window, &ours.iter().collect::<Vec<_>>());
        if !wanted {
            continue;
        }
        let sock = match &sock {
            Some(s) => s,
            None => sock.insert(
                socket
                    .run(["display-message", "-p", "#{socket_path}"])?
                    .first()
                    .cloned()
                    .unwrap_or_default(),
            ),
        };
        let cmd = hook_command(sock, guard)?;
        if !args.is_empty() {
            args.push(";".into());
        }
        let flags = if window { "-gwa" } else { "-ga" };
        args.extend(["set-hook".into(), flags.into(), name.into(), cmd]);
    }
    if !args.is_empty() {
        socket.run(&args)?;
    }
    Ok(!args.is_empty())
}

/// Remove our hooks, and only ours.
pub(super) fn remove_hooks(socket: &Socket) {
    let mut args: Vec<String> = Vec::new();
    for (name, window, _, ours) in our_hooks(socket) {
        unset(&mut args, name, window, &ours.iter().collect::<Vec<_>>());
    }
    if !args.is_empty() {
        let _ = socket.run(&args);
    }
}
