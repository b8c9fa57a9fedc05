//! The plugin's marks in ordinary use, through a person's real client
//! (inside an outer tmux): an exited pane is marked and can be jumped to;
//! new windows are no news, unless their program ends or asks at once; a question asked under the person's eyes is
//! marked once they leave it unanswered; a pane beside the person's in a
//! split is marked; a reload of the config keeps every hook, the user's
//! and the plugin's.

use crate::attention_plugin::{
    ask, load_plugin, notifications, opt, segment, server_with, wait_watching, window,
};
use crate::common::outer::OuterClient;
use crate::common::*;

/// The client's pane, as the server says.
fn client_on(s: &TestServer, person: &OuterClient) -> String {
    s.tmux(&["list-clients", "-F", "#{client_name} #{pane_id}"])
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{} ", person.name))
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// Wait until a notification says what `told` looks for; on the deadline,
/// fail showing every notification given.
fn wait_told(s: &TestServer, told: impl Fn(&str) -> bool) {
    let end = std::time::Instant::now() + DEADLINE;
    loop {
        let all = notifications(s);
        if all.iter().any(|m| told(m)) {
            return;
        }
        assert!(
            std::time::Instant::now() < end,
            "the notification never came; told: {all:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn pane_opt(s: &TestServer, pane: &str, name: &str) -> String {
    opt(s, &["-p", "-t", pane, name])
}

/// Attention on for every session, the plugin loaded, a person attached
/// to main (window 0) who has pressed a key.
fn watched(extra: &str) -> (TestServer, OuterClient) {
    let s = server_with(&format!("set -g @tmux-wait-attention on\n{extra}"));
    load_plugin(&s);
    wait_watching(&s);
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    (s, person)
}

#[test]
fn an_exited_pane_is_marked_told_listed_and_jumped_to() {
    let (s, person) = watched("set -g remain-on-exit on");
    // A program in a new window ends with status 3 once the watch reads
    // its pane (its pipe is open).
    let chan = unique("go");
    let p = s
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("tmux wait-for {chan}; exit 3"),
        ])
        .trim()
        .to_owned();
    s.wait_until(&p, "the watch to arm", || s.pane_watched(&p));
    s.tmux(&["wait-for", "-S", &chan]);
    s.wait_until(&p, "the mark", || segment(&s) == "⚑1 main:1 exited");
    assert_eq!(
        opt(&s, &["-w", "-t", &p, "@tmux-wait-attention-window"]),
        "exited"
    );
    person.wait_for_screen("[⚑1 main:1 exited]");
    wait_told(&s, |m| {
        m.contains(&format!("main:1 {p} exited")) && m.contains("exit 3)")
    });
    assert!(
        !notifications(&s).iter().any(|m| m.contains("( %")),
        "{:?}",
        notifications(&s)
    );
    // The menu lists it; the jump key goes there and the mark goes.
    person.prefixed(&s, "M-w");
    person.wait_for_screen(&format!("go to {p} main:1 exited"));
    person.keys(&["q"]);
    person.prefixed(&s, "a");
    s.wait_until(&p, "the jump", || client_on(&s, &person) == p);
    s.wait_until(&p, "the mark to clear", || segment(&s).is_empty());
    // Another exits off screen, and is respawned before anyone looks:
    // its mark goes, and its new shell's first prompt is no news.
    let q = s
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("tmux wait-for {chan}; exit 4"),
        ])
        .trim()
        .to_owned();
    s.wait_until(&q, "the watch to arm", || s.pane_watched(&q));
    s.tmux(&["wait-for", "-S", &chan]);
    s.wait_until(&q, "the mark", || segment(&s) == "⚑1 main:2 exited");
    s.tmux(&[
        "respawn-pane",
        "-t",
        &q,
        "env PS1='$ ' bash --noprofile --norc",
    ]);
    s.wait_for_prompt(&q);
    s.wait_until(&q, "the mark to go", || segment(&s).is_empty());
    assert_eq!(pane_opt(&s, &q, "@tmux-wait-attention-mark"), "");
}

/// A window made while attention watches, whose program ends or asks
/// before the watch has looked at it even once: that is news too (a build
/// that fails at once, `ssh` at its password). Old panes found that way
/// are where they stand; a new one was just made.
#[test]
fn a_new_window_that_ends_or_asks_at_once_is_marked() {
    let (s, _person) = watched("set -g remain-on-exit on");
    let new = |cmd: &str| {
        s.tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", cmd])
            .trim()
            .to_owned()
    };
    // The watch is held (SIGSTOP) while both happen, so that they come
    // before its first look.
    let watch = opt(&s, &["-g", "@tmux-wait-attention-pid"]);
    signal(&watch, "STOP");
    let ended = new("exit 5");
    let asks = new("python3 -c 'import getpass; getpass.getpass(\"Passphrase: \")'");
    s.wait_until(&ended, "the program to end", || {
        s.tmux(&["display-message", "-p", "-t", &ended, "#{pane_dead}"])
            .trim()
            == "1"
    });
    s.wait_until(&asks, "the question", || {
        s.capture(&asks).contains("Passphrase:")
    });
    signal(&watch, "CONT");
    let window_mark = |p: &str| opt(&s, &["-w", "-t", p, "@tmux-wait-attention-window"]);
    s.wait_until(&ended, "the exit's mark", || {
        window_mark(&ended) == "exited"
    });
    s.wait_until(&asks, "the question's mark", || {
        window_mark(&asks) == "asking"
    });
    wait_told(&s, |m| m.contains(&format!("{ended} exited")));
    wait_told(&s, |m| m.contains(&format!("{asks} asking")));
    assert!(s.pane_watched(&asks));
}

#[test]
fn new_windows_are_not_marked_and_a_command_after_is() {
    let (s, person) = watched("");
    let before = notifications(&s).len();
    let mut panes = Vec::new();
    for _ in 0..5 {
        panes.push(window(&s));
    }
    // One the person opens: it is on their screen.
    let here = s
        .tmux(&["new-window", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&here);
    s.wait_until(&here, "the person to see it", || {
        client_on(&s, &person) == here
    });
    // A command in one of them ends off screen: that is news, and the only
    // news.
    s.wait_until(&panes[2], "the watch to arm", || s.pane_watched(&panes[2]));
    s.type_line(&panes[2], "true");
    s.wait_until(&panes[2], "its mark", || segment(&s) == "⚑1 main:3 prompt");
    // (Told right after the mark is set.)
    wait_told(&s, |m| m.contains(&format!("main:3 {} prompt", panes[2])));
    let told = notifications(&s);
    assert_eq!(told.len() - before, 1, "{told:?}");
    for p in panes.iter().chain([&here]) {
        if p != &panes[2] {
            assert_eq!(pane_opt(&s, p, "@tmux-wait-attention-mark"), "", "{p}");
        }
    }
}

#[test]
fn a_question_seen_and_left_unanswered_is_marked_when_the_person_leaves() {
    let (s, person) = watched("");
    let other = window(&s);
    // rm -i asks in the pane the person is looking at: no mark, no
    // message, but it is held.
    let file = s.dir().join("victim");
    std::fs::write(&file, "").unwrap();
    s.type_line(&s.pane, &format!("rm -i '{}'", file.display()));
    s.wait_until(&s.pane, "the question to be held", || {
        pane_opt(&s, &s.pane, "@tmux-wait-attention-held") == "1"
    });
    assert_eq!(segment(&s), "");
    // The person leaves it unanswered: now it needs them, without a
    // message (they saw it).
    let told = notifications(&s).len();
    person.prefixed(&s, "n");
    s.wait_until(&s.pane, "the mark", || segment(&s) == "⚑1 main:0 asking");
    person.wait_for_screen("[⚑1 main:0 asking]");
    assert_eq!(notifications(&s).len(), told);
    // The jump key takes them back; away again, it is still marked.
    person.prefixed(&s, "a");
    s.wait_until(&s.pane, "the jump", || client_on(&s, &person) == s.pane);
    s.wait_until(&s.pane, "the mark to be held", || segment(&s).is_empty());
    person.prefixed(&s, "l");
    s.wait_until(&s.pane, "the mark again", || {
        segment(&s) == "⚑1 main:0 asking"
    });
    person.prefixed(&s, "l");
    s.wait_until(&s.pane, "the mark to be held", || segment(&s).is_empty());
    // Answered: no mark, held or not.
    person.keys(&["y", "Enter"]);
    s.wait_for_prompt(&s.pane);
    s.wait_until(&s.pane, "the held mark to go", || {
        pane_opt(&s, &s.pane, "@tmux-wait-attention-mark").is_empty()
    });
    assert!(!file.exists());
    // A pane beside the person's in a split is out of their sight: marked,
    // and told.
    let beside = s.split();
    ask(&s, &beside, "Ship it? [y/N]");
    s.wait_until(&beside, "the mark", || segment(&s) == "⚑1 main:0 asking");
    wait_told(&s, |m| {
        m.contains(&format!("main:0 {beside} asking: Ship it? [y/N]"))
    });
    drop(other);
}

#[test]
fn reloading_the_config_keeps_every_hook_the_users_and_ours() {
    let s = server_with("");
    let conf = s.dir().join("user.conf");
    std::fs::write(
        &conf,
        format!(
            "set-hook -g after-select-pane 'set -g @mine ran'\n\
             set-hook -g client-detached 'set -g @left ran'\n\
             set -g @tmux-wait-attention on\n\
             run-shell '{}'\n",
            root().join("tmux-wait.tmux").display()
        ),
    )
    .unwrap();
    let conf = conf.to_string_lossy().into_owned();
    s.tmux(&["source-file", &conf]);
    wait_watching(&s);
    let pid = opt(&s, &["-g", "@tmux-wait-attention-pid"]);
    // (The visit hooks are there while a pane is marked: a question in a
    // window of its own.)
    let q = window(&s);
    ask(&s, &q, "Stay? [y/N]");
    s.wait_until(&q, "the mark", || segment(&s) == "⚑1 main:1 asking");
    let hooks = || {
        let mut all = String::new();
        for h in [
            "after-select-pane",
            "session-window-changed",
            "client-session-changed",
            "client-attached",
            "client-detached",
        ] {
            all.push_str(&s.tmux(&["show-hooks", "-g", h]));
        }
        all.push_str(&s.tmux(&["show-hooks", "-gw", "window-pane-changed"]));
        all
    };
    let whole = |h: &str| {
        h.matches("attention visit").count() == 6
            && h.matches("@mine ran").count() == 1
            && h.matches("@left ran").count() == 1
    };
    s.wait_until(&s.pane, "every hook", || whole(&hooks()));
    // The reload's set-hook replaces each hook's commands: the plugin's
    // load puts ours back, after the user's.
    s.tmux(&["source-file", &conf]);
    s.wait_until(&s.pane, "every hook after the reload", || whole(&hooks()));
    let h = s.tmux(&["show-hooks", "-g", "after-select-pane"]);
    assert!(
        h.find("@mine ran") < h.find("attention visit"),
        "the user's first: {h}"
    );
    assert_eq!(opt(&s, &["-g", "@tmux-wait-attention-pid"]), pid);
    // Ours still see a visit: a mark goes when the person selects its
    // pane.
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    let b = s.split();
    s.wait_until(&b, "the watch to arm", || s.pane_watched(&b));
    s.type_line(&b, "true");
    s.wait_until(&b, "the mark", || segment(&s) == "⚑2 main:1 asking");
    s.tmux(&["select-pane", "-t", &b]);
    s.wait_until(&b, "the visit", || segment(&s) == "⚑1 main:1 asking");
    assert_eq!(opt(&s, &["-g", "@mine"]), "ran");
}
