//! `output` on a pane that wrote nothing since the call began saves its
//! cursor from the capture it began with, guarded by tmux's formats (the
//! same program, size, history and cursor): the place must be the one a
//! second capture would give, a pane changed without writing must still
//! be read again, and first calls on a pane that keeps writing (its pipe
//! just opened) must together return every line once.

use crate::common::{TestServer, json_lines, run_bounded};
use serde_json::Value;
use tmux_wait::engine::stream::QuietState;
use tmux_wait::tmux::{PANE_STATE_FORMAT, PaneState};

fn output(s: &TestServer) -> Value {
    let mut c = s.tw();
    c.args(["output", "-t", &s.pane, "--json", "--timeout", "5"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    f.json()
}

/// Type `line` at the prompt and wait until the shell is back with
/// `done` printed.
fn type_and_wait(s: &TestServer, line: &str, done: &str) {
    s.type_line(&s.pane, line);
    s.wait_until(&s.pane, done, || {
        s.capture(&s.pane).lines().any(|l| l == done)
    });
    s.wait_for_prompt(&s.pane);
}

/// The lines an `output` returned after a typed command: those after the
/// typed line (which comes back as it was typed).
fn after_typed(v: &Value, typed: &str) -> Vec<String> {
    let l = json_lines(v);
    match l.iter().position(|x| x.ends_with(typed)) {
        Some(i) => l[i + 1..].to_vec(),
        None => l,
    }
}

#[test]
fn an_idle_output_keeps_the_place_even_after_a_resize_or_cleared_history() {
    let s = TestServer::new();
    // More lines than the screen holds: the cursor row has history above.
    type_and_wait(
        &s,
        "for i in $(seq 1 45); do echo L$i; done; echo LOOP-DONE",
        "LOOP-DONE",
    );
    let v = output(&s);
    assert!(json_lines(&v).contains(&"L45".to_owned()), "{v}");
    // Nothing new, several times: nothing, and at once.
    for _ in 0..3 {
        let v = output(&s);
        assert_eq!(v["reason"], "idle", "{v}");
        assert_eq!(json_lines(&v), Vec::<String>::new(), "{v}");
    }
    // Then new lines: exactly them.
    type_and_wait(&s, "echo one; echo two", "two");
    let v = output(&s);
    assert_eq!(after_typed(&v, "echo one; echo two"), ["one", "two"], "{v}");
    // The pane changes without writing a byte: narrower (its rows wrap
    // anew), then its history cleared. Nothing old comes back, and what
    // comes after is exactly the new lines.
    for (change, probe) in [
        (vec!["resize-window", "-t", "main", "-x", "60"], "three"),
        (vec!["clear-history", "-t", "main"], "four"),
    ] {
        let v = output(&s);
        assert_eq!(json_lines(&v), Vec::<String>::new(), "{v}");
        s.tmux(&change);
        let v = output(&s);
        assert_eq!(
            json_lines(&v),
            Vec::<String>::new(),
            "after {change:?}: {v}"
        );
        let typed = format!("echo {probe}");
        type_and_wait(&s, &typed, probe);
        let v = output(&s);
        assert_eq!(after_typed(&v, &typed), [probe], "after {change:?}: {v}");
    }
}

/// The guard itself, on a real pane: true while the pane stands as it was
/// captured, false once it was resized, written on, its history cleared or
/// its program replaced.
#[test]
fn the_quiet_guard_holds_only_while_the_pane_stands_as_captured() {
    let s = TestServer::new();
    type_and_wait(
        &s,
        "for i in $(seq 1 45); do echo L$i; done; echo LOOP-DONE",
        "LOOP-DONE",
    );
    let now = || {
        let st = PaneState::parse(&[s
            .tmux(&["display-message", "-p", "-t", &s.pane, PANE_STATE_FORMAT])
            .trim_end()
            .to_owned()])
        .expect("pane state");
        QuietState {
            pid: st.pane_pid,
            history_size: st.history_size as i64,
            cursor_y: i64::from(st.cursor_y),
            cursor_x: i64::from(st.cursor_x),
            height: i64::from(st.height),
            width: i64::from(st.width),
            rows: Vec::new(),
        }
    };
    let holds = |q: &QuietState| {
        s.tmux(&["display-message", "-p", "-t", &s.pane, &q.guard()])
            .trim()
            .to_owned()
    };
    let q = now();
    assert!(q.history_size > 0 && q.cursor_y >= 2, "{q:?}");
    assert_eq!(holds(&q), "1", "{q:?}");
    s.tmux(&["resize-window", "-t", "main", "-x", "60"]);
    assert_eq!(holds(&q), "0", "resized: {q:?}");
    let q = now();
    assert_eq!(holds(&q), "1", "{q:?}");
    // Text on the cursor's row, no new row.
    s.tmux(&["send-keys", "-t", &s.pane, "-l", "typed"]);
    s.wait_until(&s.pane, "the typed text", || {
        s.capture(&s.pane).contains("$ typed")
    });
    assert_eq!(holds(&q), "0", "typed: {q:?}");
    s.tmux(&["send-keys", "-t", &s.pane, "C-u"]);
    s.wait_until(&s.pane, "the line erased", || {
        !s.capture(&s.pane).contains("$ typed")
    });
    let q = now();
    assert_eq!(holds(&q), "1", "{q:?}");
    s.tmux(&["clear-history", "-t", &s.pane]);
    assert_eq!(holds(&q), "0", "history cleared: {q:?}");
    let q = now();
    s.tmux(&["respawn-pane", "-k", "-t", &s.pane]);
    s.wait_for_prompt(&s.pane);
    assert_eq!(holds(&q), "0", "respawned: {q:?}");
}

/// The pane changes without writing while an `output` waits (another
/// client narrows it, so its long rows wrap anew; or clears its history):
/// the cursor it saves at its timeout is where the pane stands then, so
/// the next call returns exactly what came after, nothing missed.
#[test]
fn a_pane_changed_during_an_idle_output_is_read_again() {
    for change in [
        vec!["resize-window", "-t", "main", "-x", "60"],
        vec!["clear-history", "-t", "main"],
    ] {
        let s = TestServer::new();
        // Rows of 80 characters: at 60 columns each takes two.
        type_and_wait(
            &s,
            "for i in $(seq 1 45); do printf 'L%-78s|\\n' $i; done; echo LOOP-DONE",
            "LOOP-DONE",
        );
        output(&s);
        let go = crate::common::unique("go");
        s.type_line(&s.pane, &format!("tmux wait-for {go}; echo after"));
        s.wait_for_command_other_than(&s.pane, "bash");
        // Takes the typed line, so the wait below starts with nothing new.
        output(&s);
        let ready = crate::common::unique("ready");
        let mut c = s.tw();
        c.args([
            "output",
            "-t",
            &s.pane,
            "--json",
            "--timeout",
            "1",
            "--ready",
            &ready,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        let child = c.spawn().unwrap();
        s.tmux(&["wait-for", &ready]);
        s.tmux(&change);
        let f = crate::common::finished(child.wait_with_output().unwrap());
        assert_eq!(f.code, Some(1), "{change:?}: {f:?}");
        assert_eq!(f.json()["reason"], "timeout", "{change:?}: {f:?}");
        s.tmux(&["wait-for", "-S", &go]);
        s.wait_until(&s.pane, "after", || {
            s.capture(&s.pane).lines().any(|l| l == "after")
        });
        s.wait_for_prompt(&s.pane);
        let v = output(&s);
        assert_eq!(json_lines(&v), ["after"], "{change:?}: {v}");
        assert_eq!(v["lines_missed"], 0, "{change:?}: {v}");
        assert_eq!(v["lines_missed_exact"], true, "{change:?}: {v}");
    }
}

/// Every `output` is the first call on the pane's pipe (closed before each,
/// as a pane that writes a lot has its idle pipe closed): it starts while
/// the pipe's reader is still being set up, and returns at once with the
/// lines already there while the loop goes on writing. Together the calls
/// are every line once, in order.
#[test]
fn first_calls_on_a_writing_pane_lose_no_line() {
    let s = TestServer::new();
    // The cursor is set at the prompt first: a new cursor starts with what
    // the screen shows, and on a loaded machine the loop can scroll its
    // first lines past the screen before the first call (six tests at a
    // time beside two other runs: the first call began at N24).
    output(&s);
    s.type_line(
        &s.pane,
        "for i in $(seq 1 300); do echo N$i; sleep 0.005; done; echo END-OF-LOOP",
    );
    let mut got: Vec<String> = Vec::new();
    let mut calls = Vec::new();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !got.iter().any(|l| l == "END-OF-LOOP") {
        assert!(std::time::Instant::now() < end, "{}", calls.join("\n"));
        s.tmux(&["pipe-pane", "-t", &s.pane]);
        s.wait_until(&s.pane, "the pipe to close", || {
            s.tmux(&["display-message", "-p", "-t", &s.pane, "#{pane_pipe}"])
                .trim()
                == "0"
        });
        let v = output(&s);
        calls.push(v.to_string());
        got.extend(json_lines(&v));
    }
    let numbers: Vec<String> = got
        .into_iter()
        .filter(|l| l.starts_with('N') && l[1..].bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let want: Vec<String> = (1..=300).map(|i| format!("N{i}")).collect();
    assert_eq!(numbers, want, "the calls said\n{}", calls.join("\n"));
}
