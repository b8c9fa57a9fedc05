//! Clients attaching, detaching and switching; the config reloaded;
//! attention turned off and on with its key; a watch reaching its
//! `@tmux-wait-timeout`.

use super::Day;
use crate::attention_plugin::ask;
use crate::common::outer::OuterClient;

#[test]
fn clients_come_and_go_the_config_reloads_and_attention_goes_off_and_on() {
    let mut d = Day::start("set-hook -g client-attached 'set -g @users-hook ran'");
    let q = d.window();
    ask(&d.s, &q, "Deploy? [y/N]");
    d.wait_segment(&q, "⚑1 main:1 asking");
    // The person goes there: held (seen), not counted.
    d.person.prefixed(&d.s, "1");
    d.wait_segment(&q, "");
    d.idle("a visit to a question");

    // They detach: nobody sees it, it counts.
    let name = d.person.name.clone();
    d.person.prefixed(&d.s, "d");
    d.wait_segment(&q, "⚑1 main:1 asking");
    d.s.wait_until(&q, "the client to go", || {
        !d.s.tmux(&["list-clients", "-F", "#{client_name}"])
            .lines()
            .any(|l| l == name)
    });
    d.idle("the client detached");

    // They attach again, at window 1: seen again.
    d.person = OuterClient::attach(&d.s, "main");
    d.wait_segment(&q, "");
    assert_eq!(
        crate::attention_plugin::opt(&d.s, &["-g", "@users-hook"]),
        "ran"
    );
    d.idle("a client attached");

    // They switch to another session: the question counts again.
    d.s.tmux(&["new-session", "-d", "-s", "side"]);
    d.person.prefixed(&d.s, ")");
    d.s.wait_until(&q, "the switch", || d.on_screen() != q);
    d.wait_segment(&q, "⚑1 main:1 asking");
    d.idle("switch-client");

    // The config reloaded: the same watch, no hook twice, the user's
    // own hook kept, nobody told again.
    let watch = d.watch_pid();
    let told = d.notifications().len();
    let hooks = |d: &Day| {
        let g = d.s.tmux(&["show-hooks", "-g"]);
        let w = d.s.tmux(&["show-hooks", "-gw"]);
        format!("{g}{w}")
    };
    let before = hooks(&d);
    let conf = d.s.dir().join("tmux.conf");
    d.s.tmux(&["source-file", &conf.to_string_lossy()]);
    crate::lifecycle::wait_watching(&d.s);
    d.idle("source-file of the config");
    assert_eq!(d.watch_pid(), watch, "the watch was started again");
    assert_eq!(hooks(&d), before, "the hooks changed");
    assert_eq!(d.notifications().len(), told);
    assert_eq!(d.segment(), "⚑1 main:1 asking");

    // Back in main, at window 0: attention off for this session (prefix
    // A): its marks go; the watch goes on for the other session.
    d.person.prefixed(&d.s, "(");
    d.person.prefixed(&d.s, "0");
    d.s.wait_until(&q, "the person at main:0", || d.on_screen() == "%0");
    d.wait_segment(&q, "⚑1 main:1 asking");
    d.person.prefixed(&d.s, "A");
    d.wait_segment(&q, "");
    d.idle("attention turned off for the session");
    assert!(d.mark(&q).is_empty());
    // On again: the question still waiting is marked (not told: it was
    // already).
    d.person.prefixed(&d.s, "A");
    d.wait_segment(&q, "⚑1 main:1 asking");
    assert_eq!(d.notifications().len(), told);
    d.idle("attention turned on for the session");

    // Off for every session, and the plugin loaded again (as a reload of
    // an edited config does): main stays on, as its key said; off with
    // the key too, nothing is watched: the watch, the marks and our hooks
    // go, the user's hook stays.
    d.s.tmux(&["set-option", "-g", "@tmux-wait-attention", "off"]);
    crate::attention_plugin::load_plugin(&d.s);
    d.wait_segment(&q, "⚑1 main:1 asking");
    d.person.prefixed(&d.s, "A");
    d.s.wait_until(&q, "the watch to end", || d.watch_pid().is_empty());
    d.wait_segment(&q, "");
    d.idle("attention turned off everywhere");
    let left = hooks(&d);
    assert!(!left.contains("attention visit"), "{left}");
    assert!(left.contains("@users-hook"), "{left}");
    assert!(
        d.s.processes_using_socket()
            .iter()
            .all(|c| !c.contains("attention serve")),
        "{:?}",
        d.s.processes_using_socket()
    );
    d.person.prefixed(&d.s, "A");
    crate::lifecycle::wait_watching(&d.s);
    d.wait_segment(&q, "⚑1 main:1 asking");
    assert_eq!(d.notifications().len(), told);
    d.idle("attention turned on again");
}

#[test]
fn a_watch_that_reaches_its_timeout_ends_and_costs_nothing_after() {
    let mut d = Day::start("set -g @tmux-wait-timeout 2s");
    let p = d.window();
    d.s.type_line(&p, "sleep 900");
    d.s.wait_for_command(&p, "sleep");
    // prefix F there: the watch for the command's end runs.
    d.person.prefixed(&d.s, "1");
    d.s.wait_until(&p, "the person to be there", || d.on_screen() == p);
    d.person.prefixed(&d.s, "F");
    let status = |d: &Day| crate::attention_plugin::opt(&d.s, &["-g", "@tmux_wait_status"]);
    d.s.wait_until(&p, "the watch", || status(&d).starts_with("⏳1"));
    d.s.wait_until(&p, "the timeout", || {
        status(&d).starts_with("⌛ command to finish")
    });
    d.s.wait_until(&p, "the watch's process to end", || {
        d.s.processes_using_socket()
            .iter()
            .all(|c| !c.contains(" watch "))
    });
    d.idle("a watch's timeout");
}

/// Terminals that other programs make and close all day (ssh logins,
/// terminal windows, `script`, another tmux server's short panes) are not
/// the server's: the watch, `any` and the server stay at idle meanwhile.
#[test]
fn terminals_other_programs_make_and_close_cost_nothing() {
    let mut d = Day::start("");
    let q = d.window();
    ask(&d.s, &q, "Deploy? [y/N]");
    d.wait_segment(&q, "⚑1 main:1 asking");
    d.idle("a question");
    // A terminal made and closed every 20 ms, each gone before anyone
    // could ask whose it was, for longer than the idle check takes.
    let mut churn = std::process::Command::new("python3")
        .args([
            "-c",
            "import os,time\n\
             end = time.time() + 30\n\
             while time.time() < end:\n\
             \x20   m, s = os.openpty(); os.close(s); os.close(m); time.sleep(0.02)",
        ])
        .spawn()
        .expect("python3");
    d.idle("terminals made and closed elsewhere");
    let _ = churn.kill();
    let _ = churn.wait();
    d.wait_segment(&q, "⚑1 main:1 asking");
}
