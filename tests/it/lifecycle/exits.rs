//! Exits (kept by `remain-on-exit`, with each kind of status, and not
//! kept), respawns and kills.

use super::Day;
use crate::common::*;

#[test]
fn exits_respawns_and_kills_each_end_at_idle() {
    let mut d = Day::start("");
    let s = &d.s;
    // A shell typed `exit` at (status 0): marked, told, listed.
    let a = d.window();
    let n = d.any.count();
    s.type_line(&a, "exit");
    d.wait_segment(&a, "⚑1 main:1 exited");
    assert_eq!(d.window_mark(&a), "exited");
    let said = d.any.wait(n, &a, "exited");
    assert_eq!(said["exit_status"], 0, "{said}");
    assert_eq!(said["reason"], "pane_dead", "{said}");
    s.wait_until(&a, "the notification", || {
        d.notifications()
            .iter()
            .any(|m| m.contains(&format!("{a} exited")))
    });
    d.idle("a shell's exit (status 0)");

    // A program that fails (status 3), once its pane is watched.
    let chan = unique("go");
    let n = d.any.count();
    let b = d.window_running(&format!("tmux wait-for {chan}; exit 3"));
    d.s.wait_until(&b, "the watch to arm", || d.s.pane_watched(&b));
    d.s.tmux(&["wait-for", "-S", &chan]);
    let said = d.any.wait(n, &b, "exited");
    assert_eq!(said["exit_status"], 3, "{said}");
    d.wait_segment(&b, "⚑2 main:1 exited");
    assert_eq!(d.mark(&b), "exited");
    d.idle("a program's exit (status 3)");

    // A program killed by a signal: 128 + the signal.
    let n = d.any.count();
    let c = d.window_running("sleep 900");
    d.s.wait_until(&c, "the watch to arm", || d.s.pane_watched(&c));
    let pid =
        d.s.tmux(&["display-message", "-p", "-t", &c, "#{pane_pid}"])
            .trim()
            .to_owned();
    signal(&pid, "TERM");
    let said = d.any.wait(n, &c, "exited");
    // (tmux 3.2a has no `pane_dead_signal`: a pane killed by a signal
    // has no status there.)
    let version = d.s.tmux(&["display-message", "-p", "#{version}"]);
    if version.trim() == "3.2a" {
        assert_eq!(said["exit_status"], serde_json::Value::Null, "{said}");
    } else {
        assert_eq!(said["exit_status"], 143, "{said}");
    }
    d.wait_segment(&c, "⚑3 main:1 exited");
    let menu = d.menu();
    for p in [&a, &b, &c] {
        assert!(
            menu.contains(&format!("go to {p} ")),
            "{p} not in the menu:\n{menu}"
        );
    }
    d.idle("a program killed by SIGTERM");

    // Respawned with a shell: its exit is over; a shell's first prompt is
    // no news.
    let n = d.any.count();
    d.s.tmux(&["respawn-pane", "-t", &a]);
    d.s.wait_for_prompt(&a);
    d.s.wait_until(&a, "the mark to go", || d.mark(&a).is_empty());
    d.wait_segment(&a, "⚑2 main:2 exited");
    d.idle("respawn-pane of an exited pane");
    assert!(
        d.any
            .since(n)
            .iter()
            .all(|v| v["pane_id"] != a.as_str() || v["state"] != "exited"),
        "a respawned pane said exited: {:?}",
        d.any.since(n)
    );

    // Respawned with -k while it runs: the killed program's end is no
    // need; the new shell is at its prompt.
    d.s.type_line(&a, "sleep 900");
    d.s.wait_for_command(&a, "sleep");
    d.s.tmux(&["respawn-pane", "-k", "-t", &a]);
    d.s.wait_for_prompt(&a);
    d.idle("respawn-pane -k of a running pane");
    assert!(d.mark(&a).is_empty(), "marked: {}", d.mark(&a));

    // An exited pane killed: its mark goes with it (`any` said its exit
    // already).
    d.s.tmux(&["kill-pane", "-t", &b]);
    d.wait_segment(&c, &format!("⚑1 {} exited", d.place(&c)));
    d.idle("kill-pane of an exited pane");

    // A pane that asks, killed: `any` says it closed, its mark goes.
    let k = d.window();
    crate::attention_plugin::ask(&d.s, &k, "Kill me? [y/N]");
    d.wait_segment(&c, &format!("⚑2 {} exited", d.place(&c)));
    let n = d.any.count();
    d.s.tmux(&["kill-pane", "-t", &k]);
    let said = d.any.wait(n, &k, "exited");
    assert_eq!(said["reason"], "pane_closed", "{said}");
    d.wait_segment(&c, &format!("⚑1 {} exited", d.place(&c)));
    d.idle("kill-pane of a pane that asks");

    // An exit where remain-on-exit is off: the pane closes; nothing to go
    // to, so nothing is marked.
    let e = d.window();
    d.s.wait_until(&e, "the watch to arm", || d.s.pane_watched(&e));
    d.s.tmux(&["set-option", "-w", "-t", &e, "remain-on-exit", "off"]);
    let n = d.any.count();
    d.s.type_line(&e, "exit");
    let said = d.any.wait(n, &e, "exited");
    assert_eq!(said["reason"], "pane_closed", "{said}");
    d.idle("an exit that closes its pane");
    assert_eq!(d.segment(), format!("⚑1 {} exited", d.place(&c)));
}
