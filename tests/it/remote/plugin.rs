//! The plugin with `@tmux-wait-hosts`: a remote pane that needs someone
//! is counted in the status segment and listed in the menu; choosing it
//! opens a window attached to its session there, the pane selected.

use super::sshd::{Keys, Sshd};
use crate::attention_plugin::{load_plugin, segment, server_with, wait_watching};
use crate::common::outer::OuterClient;
use crate::common::*;
use std::time::{Duration, Instant};

#[test]
fn the_status_segment_counts_a_remote_pane_and_the_menu_goes_there() {
    need_sshd!();
    let keys = Keys::new();
    let a = Sshd::start(&keys, "hosta", true);
    let ta = a.tmux(4);
    let s = server_with("set -g @tmux-wait-attention on\nset -g @tmux-wait-hosts hosta");
    // The ssh connections' sockets in the test's own directory, for the
    // plugin's processes and ours alike (the harness clears
    // XDG_RUNTIME_DIR, and tmux's directory is every test's).
    let run = keys.run_dir();
    s.tmux(&[
        "set-environment",
        "-g",
        "XDG_RUNTIME_DIR",
        &run.to_string_lossy(),
    ]);
    s.tmux(&[
        "set-option",
        "-g",
        "@tmux-wait-ssh-config",
        &keys.config.to_string_lossy(),
    ]);
    load_plugin(&s);
    wait_watching(&s);
    s.wait_until(&s.pane, "the host to be watched", || {
        s.tmux(&["show-option", "-gqv", "@tmux-wait-attention-hosts"])
            .trim()
            == "hosta"
    });
    let pane = ta.panes[2].clone();
    ta.type_line(&pane, "read -p 'Deploy? ' x");
    s.wait_until(&s.pane, "the remote pane's mark", || {
        segment(&s) == "⚑1 main:2 asking"
    });
    let person = OuterClient::attach(&s, "main");
    person.prefixed(&s, "M-w");
    let item = format!("go to hosta/{pane} main:2 asking: Deploy?");
    person.wait_for_screen(&item);
    person.keys(&["q"]);

    // The menu's item for it runs this (with the menu's client).
    let id: String = format!("hosta/{pane}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut c = s.tw();
    c.env("XDG_RUNTIME_DIR", &run)
        .args(["attention", "go", &id, "-c", &person.name]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    // A window of ours runs ssh, attached there to the pane's session
    // with the pane selected; the mark is gone.
    ta.wait_for(&pane, "a client", |_| {
        ta.run(&["list-clients", "-F", "#{pane_id}"]).trim() == pane
    });
    let windows = s.tmux(&[
        "list-windows",
        "-F",
        "#{window_active} #{@tmux-wait-attached}",
    ]);
    assert!(
        windows.lines().any(|l| l.starts_with("1 hosta main")),
        "{windows}"
    );
    assert_eq!(segment(&s), "");
    // Chosen again (asked again): the same window, not a second one.
    ta.type_line(&pane, "");
    ta.type_line(&pane, "read -p 'Again? ' x");
    s.wait_until(&s.pane, "the second mark", || {
        segment(&s) == "⚑1 main:2 asking"
    });
    s.tmux(&["select-window", "-t", ":0"]);
    let mut c = s.tw();
    c.env("XDG_RUNTIME_DIR", &run)
        .args(["attention", "go", &id, "-c", &person.name]);
    assert_eq!(run_bounded(c).code, Some(0));
    let windows = s.tmux(&[
        "list-windows",
        "-F",
        "#{window_active} #{@tmux-wait-attached}",
    ]);
    assert_eq!(
        windows.lines().filter(|l| l.contains("hosta main")).count(),
        1,
        "{windows}"
    );
    assert!(
        windows.lines().any(|l| l.starts_with("1 hosta main")),
        "{windows}"
    );
    ta.type_line(&pane, "");
    drop(person);
}

/// The same with `@tmux-wait-servers`: another server of this host.
#[test]
fn another_server_here_is_counted_and_the_menu_goes_there() {
    let dir = tempfile::Builder::new()
        .prefix("tw-other")
        .tempdir()
        .unwrap();
    let other = super::sshd::Tmux::start(dir.path(), "other", 3);
    let path = other.socket();
    let s = server_with(&format!(
        "set -g @tmux-wait-attention on\nset -g @tmux-wait-servers '{path}'"
    ));
    load_plugin(&s);
    wait_watching(&s);
    let pane = other.panes[1].clone();
    // (Watched once every pane there is armed: only what changes after
    // counts.)
    s.wait_until(&s.pane, "the other server to be watched", || {
        s.tmux(&["show-option", "-gqv", "@tmux-wait-attention-servers"])
            .trim()
            == path
    });
    assert_eq!(
        other
            .run(&["display-message", "-p", "-t", &pane, "#{pane_pipe}"])
            .trim(),
        "1"
    );
    other.type_line(&pane, "read -p 'Merge? ' x");
    s.wait_until(&s.pane, "the other server's mark", || {
        segment(&s) == "⚑1 main:1 asking"
    });
    let person = OuterClient::attach(&s, "main");
    // (A pane of another server is named by its server: its socket's
    // path, here outside tmux's directory.)
    let others = s.tmux(&["show-option", "-gqv", "@tmux-wait-attention-others"]);
    let name = others.split('\t').next().unwrap_or("");
    assert_eq!(name, format!("{path} {pane}"), "{others}");
    let id: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    let mut c = s.tw();
    c.args(["attention", "go", &id, "-c", &person.name]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    other.wait_for(&pane, "a client", |_| {
        other.run(&["list-clients", "-F", "#{pane_id}"]).trim() == pane
    });
    assert_eq!(segment(&s), "");
    other.type_line(&pane, "");
    drop(person);
}

/// A host away for a while (its sshd and sessions killed, then started
/// again): a question asked meanwhile in a pane the plugin knew, and in a
/// window made meanwhile, are marked in the segment once it is back, each
/// with its question; a pane marked before and closed meanwhile is
/// marked no more. Then the plugin's watch is back at idle.
#[test]
fn questions_asked_while_a_host_was_away_are_marked_when_it_is_back() {
    need_sshd!();
    let keys = Keys::new();
    let mut a = Sshd::start(&keys, "hosta", true);
    let ta = a.tmux(3);
    let s = server_with("set -g @tmux-wait-attention on\nset -g @tmux-wait-hosts hosta");
    let run = keys.run_dir();
    s.tmux(&[
        "set-environment",
        "-g",
        "XDG_RUNTIME_DIR",
        &run.to_string_lossy(),
    ]);
    s.tmux(&[
        "set-option",
        "-g",
        "@tmux-wait-ssh-config",
        &keys.config.to_string_lossy(),
    ]);
    load_plugin(&s);
    wait_watching(&s);
    let reached = || {
        s.tmux(&["show-option", "-gqv", "@tmux-wait-attention-hosts"])
            .trim()
            .to_owned()
    };
    let others = || s.tmux(&["show-option", "-gqv", "@tmux-wait-attention-others"]);
    // A poll that says what the plugin showed when it fails.
    let until = |what: &str, ok: &dyn Fn() -> bool| {
        let end = Instant::now() + DEADLINE;
        while !ok() {
            assert!(
                Instant::now() < end,
                "never {what}; the segment is {:?}, the hosts watched {:?}, the others:\n{}",
                segment(&s),
                reached(),
                others()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    until("the host watched", &|| reached() == "hosta");
    // Marked before it goes away, closed while it is.
    let closed = ta.panes[2].clone();
    ta.type_line(&closed, "read -p 'Before? ' x");
    until("the mark before", &|| segment(&s) == "⚑1 main:2 asking");

    a.kill();
    until("the host said away", &|| reached().is_empty());
    let old = ta.panes[0].clone();
    ta.type_line(&old, "read -p 'While down? [y/N] ' x");
    ta.wait_for(&old, "its question", |row| row == "While down? [y/N]");
    let new = ta
        .run(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "bash",
            "-c",
            "read -p 'Made while down? ' x",
        ])
        .trim()
        .to_owned();
    ta.wait_for(&new, "its question", |row| row == "Made while down?");
    ta.run(&["kill-pane", "-t", &closed]);

    a.restart();
    until(
        "both questions marked, the closed pane's mark gone",
        &|| {
            let o = others();
            segment(&s).starts_with("⚑2 ")
                && o.contains(&format!("hosta/{old}\t"))
                && o.contains("asking: While down? [y/N]")
                && o.contains(&format!("hosta/{new}\t"))
                && o.contains("asking: Made while down?")
                && !o.contains(&format!("hosta/{closed}\t"))
        },
    );
    until("the host watched again", &|| reached() == "hosta");

    // The plugin's watch (and its ssh) and the host's tmux-wait, at idle.
    let serve: Vec<u32> = s
        .processes_using_socket()
        .iter()
        .filter(|p| p.contains(" attention serve"))
        .filter_map(|p| p.split(':').next()?.parse().ok())
        .collect();
    assert_eq!(serve.len(), 1, "{:?}", s.processes_using_socket());
    let mut pids: Vec<u32> = super::outage::host_processes(&a)
        .iter()
        .map(|p| p.0)
        .collect();
    pids.extend(&serve);
    let used = super::outage::idle_ticks(&pids);
    println!("{used} ticks in 2 s after the return (the plugin's watch, its ssh, the host's)");
    assert!(used <= 2, "{used} ticks of CPU while nothing happened");
    for p in [&old, &new] {
        ta.type_line(p, "");
    }
}
