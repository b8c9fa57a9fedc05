//! tmux-wait is a guest in the person's tmux: while its waits are armed,
//! every command another program runs acts on the person's client as it
//! would without tmux-wait. A person's client (a client of the server
//! under test, inside a pane of an outer tmux) presses a key, then waits
//! of every kind are armed, then scripts run what plugins and session
//! switchers run: `display-message`, `display-menu`, `display-popup`,
//! `choose-tree`, `switch-client`, `send-keys`, tmux-wait's own `run`. tmux picks the "current client" of such a
//! command by activity (cmd_find_best_client): an attached tmux-wait
//! client would be newer than a person who has not typed since.

use crate::common::outer::OuterClient;
use crate::common::*;
use std::process::{Child, Command, Stdio};

/// A script outside tmux: the server named with -S, no TMUX.
fn script(s: &TestServer, args: &[&str]) -> Finished {
    let mut c = s.tmux_cmd();
    c.args(args);
    run_bounded(c)
}

/// A script run from inside pane `pane` (TMUX and TMUX_PANE set, as for a
/// command typed there or a plugin's run-shell).
fn script_in_pane(s: &TestServer, pane: &str, args: &[&str]) -> Finished {
    let pid = s.tmux(&["display-message", "-p", "#{pid}"]);
    let mut c = Command::new("tmux");
    c.env("TMUX", format!("{},{},0", s.socket.display(), pid.trim()))
        .env("TMUX_PANE", pane)
        .args(args);
    run_bounded(c)
}

/// Every kind of wait armed on the server: a text wait, a watch, an
/// `output`, a channel wait.
struct Armed {
    text: Waiter,
    output: Waiter,
    watch: Child,
    channel: Child,
}

fn arm_everything(s: &TestServer, pane: &str, other: &str) -> Armed {
    let text = s.start_wait(&[
        "text",
        "-t",
        pane,
        "--json",
        "--pattern",
        "STILL_0ARMED",
        "--timeout",
        "60",
    ]);
    let output = s.start_wait(&[
        "output",
        "-t",
        other,
        "--json",
        "--until",
        "NEVER_THIS",
        "--timeout",
        "60",
    ]);
    let watch = s.spawn(&["watch", "-t", other, "--pattern", "never-matches", "--json"]);
    let channel = s.spawn(&["channel", &unique("ch"), "--timeout", "60"]);
    s.wait_until(pane, "the waits to be armed", || {
        s.processes_using_socket()
            .iter()
            .any(|p| p.contains("wait-for -- ch-"))
            && s.hub_waiters() == 3
    });
    Armed {
        text,
        output,
        watch,
        channel,
    }
}

fn the_persons(s: &TestServer) -> Vec<String> {
    s.tmux(&["list-clients", "-F", "#{client_name} #{session_name}"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The current client of other programs' commands stays the person's.
#[test]
fn display_message_goes_to_the_person_while_waits_are_armed() {
    let s = TestServer::new();
    let other = s.split();
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    let armed = arm_everything(&s, &s.pane, &other);
    // No tmux-wait client is attached: the person's is the only one.
    assert_eq!(the_persons(&s), [format!("{} main", person.name)]);
    let f = script(&s, &["display-message", "-p", "#{client_name}"]);
    assert_eq!(f.stdout.trim(), person.name, "{f:?}");
    let f = script_in_pane(&s, &other, &["display-message", "-p", "#{client_name}"]);
    assert_eq!(f.stdout.trim(), person.name, "{f:?}");
    // A plugin's message (tmux-resurrect's "saved") shows on the person's
    // screen.
    let f = script(&s, &["display-message", "-d", "5000", "SAVED_BY_A_PLUGIN"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    person.wait_for_screen("SAVED_BY_A_PLUGIN");
    // A plugin's menu and a tree chooser open on the person's screen.
    // (display-menu returns once the menu is closed.)
    let mut menu = s.tmux_cmd();
    menu.args(["display-menu", "-T", "MENU_OF_A_PLUGIN", "an item", "i", ""])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut menu = menu.spawn().expect("display-menu");
    person.wait_for_screen("MENU_OF_A_PLUGIN");
    person.keys(&["q"]);
    s.wait_until(&s.pane, "the menu to close", || {
        matches!(menu.try_wait(), Ok(Some(_)))
    });
    // A plugin's popup too (it stays until the person presses Enter).
    let mut popup = s.tmux_cmd();
    popup
        .args(["display-popup", "-E", "echo POPUP_OF_A_PLUGIN; read x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut popup = popup.spawn().expect("display-popup");
    person.wait_for_screen("POPUP_OF_A_PLUGIN");
    person.keys(&["Enter"]);
    s.wait_until(&s.pane, "the popup to close", || {
        matches!(popup.try_wait(), Ok(Some(_))) && !person.screen().contains("POPUP_OF_A_PLUGIN")
    });
    let f = script(&s, &["choose-tree", "-s"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    person.wait_for_screen("main: 1 windows");
    person.keys(&["q"]);
    s.wait_until(&s.pane, "the chooser to close", || {
        s.tmux(&["list-panes", "-a", "-F", "#{pane_in_mode}"])
            .lines()
            .all(|l| l.trim() == "0")
    });
    finish_unaffected(&s, armed);
}

/// A session switcher's `switch-client` moves the person, and the waits
/// go on.
#[test]
fn switch_client_moves_the_person() {
    let s = TestServer::new();
    s.tmux(&["new-session", "-d", "-s", "other"]);
    let other = s.split();
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    let armed = arm_everything(&s, &s.pane, &other);
    let f = script(&s, &["switch-client", "-t", "other"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(the_persons(&s), [format!("{} other", person.name)]);
    let f = script_in_pane(&s, &other, &["switch-client", "-t", "main"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(the_persons(&s), [format!("{} main", person.name)]);
    finish_unaffected(&s, armed);
}

/// `send-keys` from a script works (since tmux 3.7 it fails when its
/// target client is read-only), and so does tmux-wait's own `run`, while
/// waits are armed.
#[test]
fn send_keys_and_run_work_while_waits_are_armed() {
    let s = TestServer::new();
    let other = s.split();
    let third = s.split();
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    let armed = arm_everything(&s, &s.pane, &other);
    let f = script(
        &s,
        &["send-keys", "-t", &third, "echo SENT_BY_A_SCRIPT", "Enter"],
    );
    assert_eq!(f.code, Some(0), "{f:?}");
    s.wait_until(&third, "the keys", || {
        s.capture(&third).contains("\nSENT_BY_A_SCRIPT\n")
    });
    // Looked for before the run: its command line, wider than the small
    // pane, may scroll the line off the person's screen.
    person.wait_for_screen("SENT_BY_A_SCRIPT");
    let mut c = s.tw();
    c.args(["run", "-t", &third, "--json", "--", "echo RUN_$((1+1))"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{} {}", f.stdout, f.stderr);
    assert_eq!(f.json()["output"][0], "RUN_2");
    person.wait_for_screen("RUN_2");
    finish_unaffected(&s, armed);
}

/// The person's own keys reach their pane while waits are armed, what
/// they type runs, and the prefix and copy mode work.
#[test]
fn the_persons_keys_still_reach_their_pane() {
    let s = TestServer::new();
    let other = s.split();
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    let armed = arm_everything(&s, &s.pane, &other);
    let active = s.tmux(&["display-message", "-p", "-t", "main:", "#{pane_id}"]);
    person.keys(&["-l", "echo TYPED_BY_THE_PERSON"]);
    person.keys(&["Enter"]);
    s.wait_until(active.trim(), "the person's command", || {
        s.capture(active.trim()).contains("\nTYPED_BY_THE_PERSON\n")
    });
    // Copy mode with the prefix, and out of it again.
    let in_mode = || {
        s.tmux(&[
            "display-message",
            "-p",
            "-t",
            active.trim(),
            "#{pane_in_mode}",
        ])
    };
    person.keys(&["C-b", "["]);
    s.wait_until(active.trim(), "copy mode", || in_mode().trim() == "1");
    person.keys(&["q"]);
    s.wait_until(active.trim(), "copy mode to end", || {
        in_mode().trim() == "0"
    });
    finish_unaffected(&s, armed);
}

/// The waits armed before saw none of this as their business and still
/// work: the text wait matches what is written now; the others end when
/// told to, with nothing left behind.
fn finish_unaffected(s: &TestServer, a: Armed) {
    s.type_line(&s.pane, "echo STILL_$((0))ARMED");
    let f = a.text.finish(s);
    assert_eq!(f.code, Some(0), "{} {}", f.stdout, f.stderr);
    assert_eq!(f.json()["matched_lines"][0], "STILL_0ARMED");
    drop(a.output);
    for mut c in [a.watch, a.channel] {
        let _ = c.kill();
        let _ = c.wait();
    }
    s.tmux(&["kill-server"]);
    s.wait_no_helpers();
}
