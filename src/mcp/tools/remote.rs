//! Other hosts and servers in the tools: `hosts` and `servers` on the
//! attention tools (the CLI's `--host` and `-L`/`-S`), and a remote pane
//! (`HOST/%N`, as those tools report it) for `run_command`, `wait` and
//! `wait_for_text`, run there by `tmux-wait remote exec HOST -- ...`
//! through the host's one ssh connection.

use super::*;
use crate::remote::{Host, split_qualified};

/// The host of a qualified pane id (`HOST/%N`), checked, and the pane's
/// own id; None for a pane here.
pub(super) fn host_of(pane_id: Option<&str>) -> Result<Option<(Host, String)>, CallError> {
    let Some((spec, pane)) = pane_id.and_then(split_qualified) else {
        return Ok(None);
    };
    let host = Host::parse(spec).map_err(|e| {
        CallError::usage(format!(
            "pane_id: {}",
            e.message.trim_start_matches("--host ")
        ))
    })?;
    Ok(Some((host, pane.to_owned())))
}

/// Send the call to `host`: the child becomes `remote exec HOST -- ARGS`
/// (the host's own socket in its spec, none of this server's).
pub(super) fn route(
    p: &mut Prepared,
    args: &mut Vec<OsString>,
    host: Host,
    pane: &str,
    socket_name: Option<&str>,
) -> Result<(), CallError> {
    if socket_name.is_some() {
        return Err(CallError::usage(
            "socket_name: a pane on another host names its server in its id (HOST:SOCKET/%N)",
        ));
    }
    if p.relative_save_to.is_some() {
        return Err(CallError::usage(
            "save_to: give an absolute path (on the pane's host) for a pane on another host",
        ));
    }
    let mut v: Vec<OsString> = vec![
        "remote".into(),
        "exec".into(),
        host.spec.clone().into(),
        "--".into(),
    ];
    v.append(args);
    *args = v;
    p.socket = Vec::new();
    p.target = Some(host.qualify(pane));
    p.host = Some(host.spec);
    Ok(())
}

/// `--host` for each of `hosts`, `-L`/`-S` for each of `servers` (`*`:
/// every server of the user): the attention tools' sources (true when
/// there are some). The panes then are every pane of each, so `pane_ids`
/// and `session_name` do not go with them.
pub(super) fn sources(
    ctx: &Context,
    p: &mut Prepared,
    (hosts, servers): (Option<&[String]>, Option<&[String]>),
    socket_name: Option<&str>,
    args: &mut Vec<OsString>,
) -> Result<bool, CallError> {
    if hosts.is_none() && servers.is_none() {
        return Ok(false);
    }
    if p.target.is_some() {
        return Err(CallError::usage(
            "pane_ids, session_name: with hosts or servers every pane of each is watched; give one or the other",
        ));
    }
    if servers.is_some() && socket_name.is_some() {
        return Err(CallError::usage(
            "socket_name: servers names the servers; give one or the other",
        ));
    }
    let mut socket: Vec<OsString> = Vec::new();
    match servers {
        None => socket = socket_args(ctx, socket_name)?,
        Some([]) => {
            return Err(CallError::usage(
                "servers: an empty list names no server; omit it for this one, or [\"*\"] for every server of yours",
            ));
        }
        Some(list) => {
            for s in list {
                if s == "*" {
                    args.push("--all-servers".into());
                } else if s.contains('/') {
                    plain("servers", s)?;
                    socket.extend(["-S".into(), s.into()]);
                } else {
                    socket.extend(socket_args(ctx, Some(s)).map_err(|e| {
                        CallError::usage(e.message.replacen("socket_name", "servers", 1))
                    })?);
                }
            }
        }
    }
    for h in hosts.unwrap_or_default() {
        let h = Host::parse(h).map_err(|e| {
            CallError::usage(format!(
                "hosts: {}",
                e.message.trim_start_matches("--host ")
            ))
        })?;
        args.push(format!("--host={}", h.spec).into());
    }
    p.socket = socket;
    Ok(true)
}

/// A remote call's result as the tools give it: its `pane_id` (and the
/// `pane_id` in its notes) qualified with the host.
pub fn qualify_output(stdout: &str, host: &str) -> String {
    let mut out = String::new();
    for line in stdout.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(mut o)) => {
                if let Some(Value::String(p)) = o.get("pane_id")
                    && p.starts_with('%')
                {
                    let q = format!("{host}/{p}");
                    o.insert("pane_id".into(), Value::String(q));
                }
                out.push_str(&Value::Object(o).to_string());
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}
