//! After a `run` returned before its command ended: the follower that
//! waits on for the end, and what `output` makes of it later.

use super::*;

/// The command goes on after `run` returns: start a follower that keeps
/// --save-to up to date and records the exit status for `output`, and hand
/// over to it without a gap or an overlap. The follower joins the pane's
/// stream at the hub with a token, and the hub puts that token into this
/// wait's stream at the point the follower's starts: what comes before it
/// is ours, everything after is the follower's. Returns why the command
/// cannot be followed, if it cannot.
pub(super) fn handoff(f: &mut Follow, c: &Common, id: &str) -> Option<String> {
    let token = crate::state::random_id();
    let mut args = vec![
        "follow-run",
        "-t",
        f.pane.pane_id.as_str(),
        "--id",
        id,
        "--mark",
        token.as_str(),
    ];
    let save = c.save_to.as_ref().map(|p| p.to_string_lossy().into_owned());
    if let Some(p) = &save {
        args.extend(["--save-to", p.as_str()]);
    }
    let pid = match c.socket.spawn_helper(&args, "a run follower") {
        Ok(pid) => pid,
        Err(e) => return Some(format!("{e}; --save-to and the exit status stop here")),
    };
    let joined = f
        .src
        .until_mark(&token, Instant::now() + Duration::from_secs(5));
    let items = f.src.take_items();
    f.absorb(items);
    if !matches!(joined, Ok(true)) {
        // No handoff: stop the follower.
        crate::state::terminate(pid);
        return Some(
            "the run follower did not start; --save-to and the exit status stop here".into(),
        );
    } else if let Some(fin) = f.finished {
        // The command ended while handing over: the follower has nothing
        // to wait for. The status is left where the next `output` looks
        // for it, as the follower would have.
        crate::state::terminate(pid);
        let status = fin.status.map(|s| s.to_string()).unwrap_or_default();
        let _ = c.socket.run([
            "set-option",
            "-p",
            "-t",
            &f.pane.pane_id,
            &exit_option(id),
            &status,
        ]);
    } else {
        // From here the follower writes the file.
        f.saver = None;
    }
    None
}

/// At entry, for a run a cursor left pending: its end mark (arriving now),
/// the status its follower stored, or the shell back at its prompt.
pub(super) fn pending_run_status(f: &mut Follow, socket: &Socket, id: &str) -> Result<()> {
    let ask = argv(&[
        "show-options",
        "-pqv",
        "-t",
        &f.pane.pane_id,
        &exit_option(id),
    ]);
    // The follower writes the status a few milliseconds after the end mark;
    // while it lives, give it that long.
    let patience = Instant::now() + Duration::from_secs(2);
    loop {
        // Looked at before the option: a follower gone by then has written
        // it already, if it ever will.
        let alive = follower_alive(socket, id);
        let v = f.src.query_all(std::slice::from_ref(&ask))?;
        // Output that came meanwhile may hold the end mark itself.
        let items = f.src.take_items();
        f.absorb(items);
        if f.finished.is_some() {
            return Ok(());
        }
        let v = v[0].first().cloned().unwrap_or_default();
        // The status the shell left in the run's file (no follower had a
        // stream to read: another program took the pane's pipe).
        if v.is_empty()
            && let Some(status) = f.store.as_ref().and_then(|s| s.take_run_status(id))
        {
            f.finished = Some(Finish {
                status: Some(status),
                source: ExitSource::Wrapper,
            });
            return Ok(());
        }
        if !v.is_empty() {
            let _ = socket.run(["set-option", "-pu", "-t", &f.pane.pane_id, &exit_option(id)]);
            f.finished = Some(Finish {
                status: v.trim().parse().ok(),
                source: ExitSource::Wrapper,
            });
            return Ok(());
        }
        // Still running: its end mark will come. (The shell in the
        // foreground is not enough: dash runs a loop's builtins and its
        // command substitutions there, and a stalled follower's status is
        // then no reason to guess the end; the shell must read its command
        // line again.)
        if f.foreground() != Fg::Shell || !f.shell_prompt() {
            return Ok(());
        }
        if !alive || Instant::now() >= patience {
            f.finished = Some(Finish {
                status: None,
                source: ExitSource::Unobserved,
            });
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The exit status tmux 3.8+ keeps for the last command a shell marked
/// with OSC 133 (`#{pane_command_status}`), if that command ended at or
/// after `since` (Unix seconds) and none runs now. None on older tmux,
/// without marks, or for an older command.
pub(super) fn command_status_since(socket: &Socket, pane: &str, since: u64) -> Option<i32> {
    if since == 0
        || socket
            .version()
            .is_none_or(|v| v < crate::tmux::Version(3, 8))
    {
        return None;
    }
    let fmt = "#{pane_command_status}\t#{pane_command_end_time}\t#{pane_command_running}";
    let line = socket
        .run(["display-message", "-p", "-t", pane, fmt])
        .ok()?
        .into_iter()
        .next()?;
    let f: Vec<&str> = line.split('\t').collect();
    let (status, end, running) = (f.first()?, f.get(1)?, f.get(2)?);
    let end: u64 = end.parse().ok()?;
    (*running != "1" && end >= since).then(|| status.parse().ok())?
}

/// Is the follower of run `id` still running? (Its record in the server's
/// state, which drops records of processes that are gone.)
pub(super) fn follower_alive(socket: &Socket, id: &str) -> bool {
    let label = follower_label(id);
    crate::waits::store::store_for(socket).is_ok_and(|s| {
        s.watches()
            .iter()
            .any(|w| w.kind == "run" && w.label == label)
    })
}

/// The option a run follower leaves the exit status of run ID in.
pub fn exit_option(id: &str) -> String {
    format!("@tmux-wait-exit-{id}")
}

/// `tmux-wait follow-run`: started by a `run` that returned before its
/// command ended; follows the pane until the command's end mark, appending
/// its output to --save-to, then stores the status for `output`.
pub fn follow_run(common: &Common, id: &str, mark: Option<String>) -> Result<()> {
    let deadline = Instant::now() + common.timeout;
    // Listed by `tmux-wait list` (kind "run"), ended by `tmux-wait cancel`,
    // and found by `output` (see `follower_alive`): recorded before it
    // joins the pane's stream, so it is never alive and unrecorded.
    let store = crate::waits::store::store_for(&common.socket)?;
    let watch_id = crate::state::new_id();
    store.add(&crate::state::WatchRecord {
        id: watch_id.clone(),
        pid: std::process::id(),
        pane_id: common.target.clone().unwrap_or_default(),
        kind: "run".into(),
        label: follower_label(id),
        started: crate::state::now_secs(),
        timeout_seconds: common.timeout.as_secs_f64(),
        channel: String::new(),
    })?;
    let result = Follow::open(common, None, mark, deadline)
        .and_then(|mut f| follow_run_loop(&mut f, common, id, deadline));
    store.remove(&watch_id);
    result
}

/// How the follower of run `id` is listed.
fn follower_label(id: &str) -> String {
    format!("the end of a command typed by run (follower of {id})")
}

pub(super) fn follow_run_loop(
    f: &mut Follow,
    common: &Common,
    id: &str,
    deadline: Instant,
) -> Result<()> {
    f.run = Some(id.to_owned());
    f.run_only = true;
    f.inside = true;
    f.saver = match &common.save_to {
        Some(p) => Some(Saver::open(p, false)?),
        None => None,
    };
    loop {
        match f.src.next_items(deadline)? {
            Some(items) => {
                f.absorb(items);
                if let Some(fin) = f.finished {
                    let status = fin.status.map(|s| s.to_string()).unwrap_or_default();
                    common.socket.run([
                        "set-option",
                        "-p",
                        "-t",
                        &f.pane.pane_id,
                        &exit_option(id),
                        &status,
                    ])?;
                    return Ok(());
                }
            }
            None => return Ok(()),
        }
    }
}
