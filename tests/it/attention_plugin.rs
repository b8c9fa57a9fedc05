//! The plugin's attention through a person's real client (inside an
//! outer tmux): the toggle key, the status segment and the window's mark,
//! the notification, no mark for the pane on the person's screen, the
//! jump key, the menu, marks clearing when their pane is visited, and the
//! user's own hooks untouched.

use crate::common::outer::OuterClient;
use crate::common::*;

fn server() -> TestServer {
    server_with("")
}

/// A server whose status line shows the segment and the windows' marks,
/// with `extra` lines of config.
pub(crate) fn server_with(extra: &str) -> TestServer {
    TestServer::with(server_options(extra))
}

/// The options of [`server_with`].
pub(crate) fn server_options(extra: &str) -> Options {
    Options {
        extra_config: format!(
            "set -g status on\n\
             set -g status-right '[#{{tmux_wait_attention}}]'\n\
             set -g window-status-format '#I#{{?#{{@tmux-wait-attention-window}},!,}}'\n\
             set -g window-status-current-format '#I*'\n{extra}"
        ),
        ..Options::default()
    }
}

pub(crate) fn load_plugin(s: &TestServer) {
    let entry = root().join("tmux-wait.tmux");
    s.tmux(&["run-shell", &entry.to_string_lossy()]);
}

pub(crate) fn opt(s: &TestServer, args: &[&str]) -> String {
    let mut a = vec!["show-option", "-qv"];
    a.extend_from_slice(args);
    s.tmux(&a).trim().to_owned()
}

pub(crate) fn segment(s: &TestServer) -> String {
    opt(s, &["-g", "@tmux_wait_attention"])
}

/// Attention is on and every pane watched.
pub(crate) fn wait_watching(s: &TestServer) {
    s.wait_until(&s.pane, "attention to watch", || {
        !opt(s, &["-g", "@tmux-wait-attention-scope"]).is_empty()
    });
}

pub(crate) fn ask(s: &TestServer, pane: &str, q: &str) {
    s.type_line(pane, &format!("python3 -c \"input('{q} ')\""));
}

/// The notifications tmux-wait's attention gave so far.
pub(crate) fn notifications(s: &TestServer) -> Vec<String> {
    s.tmux(&["show-messages"])
        .lines()
        .filter(|l| l.contains(" message: tmux-wait ⚑"))
        .map(str::to_owned)
        .collect()
}

/// A new window (in the background), its shell at its prompt.
pub(crate) fn window(s: &TestServer) -> String {
    let p = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&p);
    p
}

#[test]
fn marks_the_status_line_and_the_window_and_the_jump_key_goes_there() {
    let s = server();
    load_plugin(&s);
    assert_eq!(
        s.tmux(&["show-option", "-gv", "status-right"]).trim(),
        "[#{@tmux_wait_attention}]"
    );
    let other = window(&s);
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    // prefix A: attention on for this session.
    person.prefixed(&s, "A");
    wait_watching(&s);
    s.wait_until(&s.pane, "the toggle's message", || {
        s.tmux(&["show-messages"])
            .contains("attention on for session main")
    });
    // A question in the window the person does not see: marked.
    ask(&s, &other, "Deploy? [y/N]");
    s.wait_until(&other, "the mark", || segment(&s) == "⚑1 main:1 asking");
    assert_eq!(
        opt(&s, &["-w", "-t", &other, "@tmux-wait-attention-window"]),
        "asking"
    );
    person.wait_for_screen("[⚑1 main:1 asking]");
    person.wait_for_screen("1!");
    s.wait_until(&other, "the notification", || {
        s.tmux(&["show-messages"])
            .contains(&format!("main:1 {other} asking: Deploy? [y/N]"))
    });
    // The menu lists it.
    person.prefixed(&s, "M-w");
    person.wait_for_screen(&format!("go to {other} main:1 asking: Deploy?"));
    person.keys(&["q"]);
    // prefix a: there; the mark is gone.
    person.prefixed(&s, "a");
    s.wait_until(&other, "the jump", || {
        // (list-clients: tmux 3.2a answers `display-message -p -c` with
        // its usage.)
        s.tmux(&["list-clients", "-F", "#{client_name} #{pane_id}"])
            .lines()
            .any(|l| l.trim() == format!("{} {other}", person.name))
    });
    s.wait_until(&other, "the mark to clear", || segment(&s).is_empty());
    person.wait_for_screen("[]");
    assert_eq!(
        opt(&s, &["-w", "-t", &other, "@tmux-wait-attention-window"]),
        ""
    );
    // The pane on the person's screen gets no mark: answered there, its
    // prompt comes back under the person's eyes.
    person.keys(&["y", "Enter"]);
    s.wait_for_prompt(&other);
    ask(&s, &other, "Again?");
    s.wait_for_command(&other, "python3");
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert_eq!(segment(&s), "", "a mark for the pane on the screen");
    person.keys(&["n", "Enter"]);
    s.wait_for_prompt(&other);
    // A pane off screen ends a command: marked; visited (next window):
    // cleared by the hook, without the jump key.
    s.type_line(&s.pane, "sleep 0.3");
    s.wait_until(&s.pane, "the prompt's mark", || {
        segment(&s) == "⚑1 main:0 prompt"
    });
    person.prefixed(&s, "n");
    s.wait_until(&s.pane, "the visit to clear it", || segment(&s).is_empty());
    // No pane needs anyone: the jump key says so.
    person.prefixed(&s, "a");
    s.wait_until(&s.pane, "the message", || {
        s.tmux(&["show-messages"]).contains("no pane needs you")
    });
    // Off again: the segment is empty, the process gone, no hook left.
    assert!(s.pane_watched(&s.pane));
    person.prefixed(&s, "A");
    s.wait_until(&s.pane, "attention off", || {
        opt(&s, &["-g", "@tmux-wait-attention-pid"]).is_empty()
    });
    assert!(!s.pane_watched(&s.pane), "the watch's pane option is left");
    for hook in [
        "after-select-pane",
        "session-window-changed",
        "client-session-changed",
    ] {
        assert!(
            !s.tmux(&["show-hooks", "-g", hook])
                .contains("attention visit"),
            "{hook}"
        );
    }
    assert!(
        !s.tmux(&["show-hooks", "-gw", "window-pane-changed"])
            .contains("attention visit")
    );
    drop(person);
    s.wait_until(&s.pane, "no helper left", || {
        s.processes_using_socket()
            .iter()
            .all(|p| !p.contains("attention serve"))
    });
}

#[test]
fn the_users_own_hooks_run_before_during_and_after() {
    let s = server();
    s.tmux(&["set-hook", "-g", "after-select-pane", "set -g @mine ran"]);
    s.tmux(&[
        "set-hook",
        "-g",
        "session-window-changed",
        "set -g @mine2 ran",
    ]);
    load_plugin(&s);
    let b = s.split();
    let ran = |s: &TestServer| opt(s, &["-g", "@mine"]) == "ran";
    s.tmux(&["select-pane", "-t", &b]);
    assert!(ran(&s));
    s.tmux(&["set-option", "-gu", "@mine"]);
    let mut c = s.tw();
    c.args(["attention", "toggle", "-t", "main"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    wait_watching(&s);
    // Nothing marked: the visit hooks are not there yet; a question makes
    // them come, after the user's.
    let hooks = s.tmux(&["show-hooks", "-g", "after-select-pane"]);
    assert!(!hooks.contains("attention visit"), "{hooks}");
    ask(&s, &b, "Mark me? [y/N]");
    s.wait_until(&b, "our visit hook", || {
        s.tmux(&["show-hooks", "-g", "after-select-pane"])
            .contains("attention visit")
    });
    let hooks = s.tmux(&["show-hooks", "-g", "after-select-pane"]);
    assert!(
        hooks.find("set-option -g @mine ran") < hooks.find("attention visit"),
        "{hooks}"
    );
    s.tmux(&["select-pane", "-t", &s.pane]);
    s.wait_until(&s.pane, "the user's hook", || ran(&s));
    s.tmux(&["set-option", "-gu", "@mine"]);
    // Toggled again with attention on for every session: still one set of
    // our hooks.
    s.tmux(&["set-option", "-g", "@tmux-wait-attention", "on"]);
    let mut c = s.tw();
    c.args(["attention", "sync"]);
    assert_eq!(run_bounded(c).code, Some(0));
    let mut c = s.tw();
    c.args(["attention", "toggle", "-t", "main"]);
    assert_eq!(run_bounded(c).code, Some(0));
    s.tmux(&["set-option", "-gu", "@tmux-wait-attention"]);
    let mut c = s.tw();
    c.args(["attention", "sync"]);
    assert_eq!(run_bounded(c).code, Some(0));
    s.wait_until(&s.pane, "attention off", || {
        opt(&s, &["-g", "@tmux-wait-attention-pid"]).is_empty()
    });
    assert_eq!(
        s.tmux(&["show-hooks", "-g", "after-select-pane"]).trim(),
        "after-select-pane[0] set-option -g @mine ran"
    );
    assert_eq!(
        s.tmux(&["show-hooks", "-g", "session-window-changed"])
            .trim(),
        "session-window-changed[0] set-option -g @mine2 ran"
    );
    s.tmux(&["select-pane", "-t", &b]);
    s.wait_until(&s.pane, "the user's hook after", || ran(&s));
}
