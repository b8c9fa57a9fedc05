//! A wait survives what happens around it: another program taking the
//! pane's pipe (a logging plugin's `pipe-pane`, a `pipe-pane -o` toggle),
//! its hub killed; it sees a prompt written with its blanks, unfinished
//! lines from any program, and typed lines under dash are still not output.

use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// `tmux-logging`'s way: a plain `pipe-pane 'cat >> FILE'`.
fn start_logging(s: &TestServer, pane: &str, log: &std::path::Path) {
    s.tmux(&[
        "pipe-pane",
        "-t",
        pane,
        &format!("cat >> '{}'", log.display()),
    ]);
}

fn log_has(log: &std::path::Path, text: &str) -> bool {
    std::fs::read_to_string(log).is_ok_and(|l| l.contains(text))
}

/// What a wait says of the stream stopping under it.
fn fallback(v: &Value) -> (String, bool) {
    (
        v["fallback"]["why"].as_str().unwrap_or("").to_owned(),
        v["fallback"]["polling"] == true,
    )
}

/// A text wait, a watch, `output` and `run` on a pane where logging starts
/// mid-wait: each goes on (polling) and finds what comes later; `run`
/// returns its command's status; the log holds what was written after it
/// started, and the user's pipe is left as it was set.
#[test]
fn a_logging_pipe_started_mid_wait_does_not_end_the_waits() {
    let s = TestServer::new();
    let p = s.pane.clone();
    let log = s.dir().join("pane.log");
    // A text wait and a watch.
    let text = s.start_text(&["--pattern", "LATER_MARK", "--timeout", "20"]);
    let mut watch = s.tw();
    watch
        .args([
            "watch",
            "-t",
            &p,
            "--pattern",
            "LATER_MARK",
            "--json",
            "--timeout",
            "20",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let watch = watch.spawn().unwrap();
    s.wait_until(&p, "both waits at the hub", || s.hub_waiters() >= 2);
    start_logging(&s, &p, &log);
    s.type_line(&p, "sleep 0.3; echo LATER_''MARK");
    let t = text.finish(&s);
    assert_eq!(t.code, Some(0), "{} {}", t.stdout, t.stderr);
    assert_eq!(t.json()["matched_lines"], serde_json::json!(["LATER_MARK"]));
    assert_eq!(
        fallback(&t.json()),
        ("pipe_taken".into(), true),
        "{}",
        t.stdout
    );
    let w = done(watch);
    assert_eq!(w.code, Some(0), "{} {}", w.stdout, w.stderr);
    assert_eq!(w.json()["outcome"], "matched", "{}", w.stdout);
    s.wait_until(&p, "the log", || log_has(&log, "LATER_MARK"));
    assert!(s.pane_piped(&p), "the user's pipe is gone");
    s.wait_for_prompt(&p);

    // run: logging (re)started while the command runs; its status comes.
    s.tmux(&["pipe-pane", "-t", &p]);
    let mut run = s.tw();
    run.args([
        "run",
        "-t",
        &p,
        "--json",
        "--timeout",
        "20",
        "--",
        "for i in 1 2 3 4 5 6; do echo step $i; sleep 0.2; done; (exit 3)",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let run = run.spawn().unwrap();
    s.wait_until(&p, "the command to start", || {
        s.capture(&p).contains("step 1")
    });
    start_logging(&s, &p, &log);
    let r = done(run);
    assert_eq!(r.code, Some(3), "{} {}", r.stdout, r.stderr);
    let v = r.json();
    assert_eq!(v["exit_status"], 3, "{v}");
    assert_eq!(fallback(&v), ("pipe_taken".into(), true), "{v}");
    let out: Vec<&str> = v["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(out.last(), Some(&"step 6"), "{v}");
    s.wait_until(&p, "the log", || log_has(&log, "step 6"));
    s.wait_for_prompt(&p);

    // output, with the user's pipe taken over during the call.
    s.tmux(&["pipe-pane", "-t", &p]);
    let mut c = s.tw();
    c.args(["output", "-t", &p, "--timeout", "1"]);
    run_bounded(c);
    let o = s.start_wait(&[
        "output",
        "-t",
        &p,
        "--json",
        "--until",
        "OUT_MARK",
        "--timeout",
        "20",
    ]);
    start_logging(&s, &p, &log);
    s.type_line(&p, "sleep 0.3; echo OUT_''MARK");
    let f = o.finish(&s);
    assert_eq!(f.code, Some(0), "{} {}", f.stdout, f.stderr);
    assert_eq!(f.json()["reason"], "until", "{}", f.stdout);
    assert_eq!(fallback(&f.json()).0, "pipe_taken", "{}", f.stdout);
    s.tmux(&["pipe-pane", "-t", &p]);
    s.wait_no_helpers();
}

/// A `pipe-pane -o` toggle pressed twice during a wait: the first press
/// closes tmux-wait's pipe, the second opens the user's (the toggle does
/// what it would do without tmux-wait), and the wait goes on.
#[test]
fn a_pipe_pane_toggle_pressed_twice_during_a_wait() {
    let s = TestServer::new();
    let p = s.pane.clone();
    let log = s.dir().join("toggle.log");
    let w = s.start_text(&["--pattern", "TOGGLED_MARK", "--timeout", "20"]);
    let toggle = || {
        s.tmux(&[
            "pipe-pane",
            "-o",
            "-t",
            &p,
            &format!("cat >> '{}'", log.display()),
        ]);
    };
    toggle();
    s.wait_until(&p, "the pipe closed", || !s.pane_piped(&p));
    toggle();
    s.wait_until(&p, "the user's pipe", || s.pane_piped(&p));
    s.type_line(&p, "echo TOGGLED_''MARK");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{} {}", f.stdout, f.stderr);
    assert_eq!(
        fallback(&f.json()),
        ("pipe_taken".into(), true),
        "{}",
        f.stdout
    );
    s.wait_until(&p, "the log", || log_has(&log, "TOGGLED_MARK"));
    s.tmux(&["pipe-pane", "-t", &p]);
}

/// The hub killed with SIGKILL mid-wait: a text wait, a watch, `output`
/// and `run` go on through a new hub and find what is written after it.
#[test]
fn waits_outlive_a_killed_hub() {
    let s = TestServer::new();
    let p = s.pane.clone();
    let text = s.start_text(&["--pattern", "AFTER_KILL", "--timeout", "20"]);
    let mut c = s.tw();
    c.args(["output", "-t", &p, "--timeout", "1"]);
    run_bounded(c);
    let out = s.start_wait(&[
        "output",
        "-t",
        &p,
        "--json",
        "--until",
        "AFTER_KILL",
        "--timeout",
        "20",
    ]);
    // (Armed before the hub goes: a watch that loses its hub before it
    // has taken its start from the pane takes it again from the next, and
    // what was written meanwhile is from before it.)
    let watch = s.start_wait(&[
        "watch",
        "-t",
        &p,
        "--pattern",
        "AFTER_KILL",
        "--json",
        "--timeout",
        "20",
    ]);
    s.wait_until(&p, "three waits at the hub", || s.hub_waiters() >= 3);
    let hubs = s.hub_pids();
    assert_eq!(hubs.len(), 1, "{hubs:?}");
    signal(&hubs[0], "KILL");
    s.wait_until(&p, "a new hub", || {
        let now = s.hub_pids();
        now.len() == 1 && now != hubs
    });
    s.type_line(&p, "echo AFTER_''KILL");
    let t = text.finish(&s);
    assert_eq!(t.code, Some(0), "{} {}", t.stdout, t.stderr);
    assert_eq!(t.json()["fallback"]["why"], "hub_lost", "{}", t.stdout);
    let o = out.finish(&s);
    assert_eq!(o.json()["reason"], "until", "{}", o.stdout);
    let w = watch.finish(&s);
    assert_eq!(w.json()["outcome"], "matched", "{} {}", w.stdout, w.stderr);
    s.wait_for_prompt(&p);

    // run: the hub killed while the command runs; its status comes.
    let mut run = s.tw();
    run.args([
        "run",
        "-t",
        &p,
        "--json",
        "--timeout",
        "20",
        "--",
        "for i in 1 2 3 4 5; do echo step $i; sleep 0.2; done; (exit 4)",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let run = run.spawn().unwrap();
    s.wait_until(&p, "the command to start", || {
        s.capture(&p).contains("step 1")
    });
    for h in s.hub_pids() {
        signal(&h, "KILL");
    }
    let r = done(run);
    assert_eq!(r.code, Some(4), "{} {}", r.stdout, r.stderr);
    assert_eq!(r.json()["fallback"]["why"], "hub_lost", "{}", r.stdout);
    s.wait_no_helpers();
}

/// Hubs that keep dying (three times within a second) end the wait with
/// the error, instead of a loop of restarts.
#[test]
fn hubs_that_keep_dying_end_the_wait() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "never", "--timeout", "30"]);
    let end = Instant::now() + DEADLINE;
    let pid = w.pid();
    while still_running(pid) {
        for h in s.hub_pids() {
            signal(&h, "KILL");
        }
        assert!(Instant::now() < end, "the wait went on");
        std::thread::sleep(Duration::from_millis(20));
    }
    let f = w.finish(&s);
    assert_eq!(f.code, Some(2), "{} {}", f.stdout, f.stderr);
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    s.wait_no_helpers();
}

fn still_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|st| st != "Z")
    })
}

/// A pattern that ends in a blank matches what was written with it: bash's
/// and zsh's prompt `PROMPT> `, and a `(y/n) ` question.
#[test]
fn a_pattern_ending_in_a_blank_matches_a_prompt() {
    for sh in ["bash", "zsh"] {
        if !installed(sh) {
            eprintln!("skipped: {sh} is not installed");
            continue;
        }
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let w = s.start_wait(&[
            "text",
            "-t",
            &p,
            "--pattern",
            "PROMPT> ",
            "--json",
            "--timeout",
            "10",
        ]);
        s.type_line(&p, "PS1='PROMPT> '");
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{sh}: {} {}", f.stdout, f.stderr);
        assert_eq!(
            f.json()["matched_lines"],
            serde_json::json!(["PROMPT> "]),
            "{sh}"
        );
        let w = s.start_wait(&[
            "text",
            "-t",
            &p,
            "--pattern",
            "(y/n) ",
            "--json",
            "--timeout",
            "10",
        ]);
        s.type_line(&p, "printf '(y/n) '; read x");
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{sh}: {} {}", f.stdout, f.stderr);
        s.type_line(&p, "n");
    }
}

/// Unfinished lines (no newline yet, as a prompt) from writers other than
/// the pane's main program match at once: a child that asks and reads, a
/// job in the same process group, another writer while `cat` reads, and
/// carriage-return rewrites on a parked row.
#[test]
fn unfinished_lines_from_any_writer_match_at_once() {
    let s = TestServer::new();
    let cases = [
        (
            "sh -c 'sh -c \"sleep 0.5; printf \\\"Password: \\\"; read x\"; sleep 60'",
            "Password:",
        ),
        (
            "sh -c '(sleep 0.5; printf \"Continue? [y/N] \") & sleep 60'",
            "Continue? [y/N]",
        ),
        (
            "(sleep 0.5; printf 'Another? [y/N] ') & cat",
            "Another? [y/N]",
        ),
    ];
    for (cmd, marker) in cases {
        let p = s.split();
        let w = s.start_wait(&[
            "text",
            "-t",
            &p,
            "--pattern",
            marker,
            "--json",
            "--timeout",
            "10",
        ]);
        let asked = Instant::now();
        s.type_line(&p, cmd);
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{cmd}: {} {}", f.stdout, f.stderr);
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "{cmd}: {}",
            f.stdout
        );
        s.tmux(&["kill-pane", "-t", &p]);
    }
    // Parked on `sleep`, its row rewritten through the terminal.
    let p = s.split();
    s.type_line(&p, "printf 'PARKED: '; sleep 60");
    s.wait_until(&p, "the parked row", || s.capture(&p).contains("PARKED:"));
    let tty = s.tmux(&["display-message", "-p", "-t", &p, "#{pane_tty}"]);
    let w = s.start_wait(&[
        "text",
        "-t",
        &p,
        "--pattern",
        "working 2",
        "--json",
        "--timeout",
        "10",
    ]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(tty.trim())
        .and_then(|mut t| std::io::Write::write_all(&mut t, b"\rworking 1 \rworking 2 "))
        .unwrap();
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{} {}", f.stdout, f.stderr);
    s.tmux(&["kill-pane", "-t", &p]);
}

/// dash as the pane's program (`sh` on Debian), typed into with
/// `send-keys`: the typed line is not output, the command's output is.
#[test]
fn a_line_typed_into_dash_is_not_output() {
    if !installed("dash") {
        eprintln!("skipped: dash is not installed");
        return;
    }
    let s = TestServer::new();
    let p = s.shell_window("dash", "");
    for n in 0..10 {
        let w = s.start_wait(&[
            "text",
            "-t",
            &p,
            "--pattern",
            "echo TYPED_ONLY",
            "--pattern",
            &format!("TYPED_ONLY_{}", n + 2),
            "--json",
            "--timeout",
            "10",
        ]);
        s.tmux(&[
            "send-keys",
            "-t",
            &p,
            &format!("echo TYPED_ONLY_$(({n}+2))"),
            "Enter",
        ]);
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "run {n}: {} {}", f.stdout, f.stderr);
        assert_eq!(
            f.json()["matched_index"],
            1,
            "run {n}: the typed line matched: {}",
            f.stdout
        );
        s.wait_for_prompt(&p);
    }
}
