//! The peer's known defects, one test each: what it misses or misreports,
//! tmux-wait gets right.

use crate::common::*;

/// Defect 1: a new line equal to an older one is still new output.
#[test]
fn a_repeated_line_is_new_output() {
    let s = TestServer::new();
    s.type_line(&s.pane, "echo ready");
    s.wait_for_prompt(&s.pane);
    let w = s.start_text(&["--pattern", "ready"]);
    s.type_line(&s.pane, "sleep 0.2; echo rea''dy");
    let f = w.finish(&s);
    assert_eq!(f.matched_line(), "ready");
}

/// Defect 1, prompt form: a prompt that comes back identical is new output.
/// (Matched as written: `$ `, with its blank.)
#[test]
fn an_identical_prompt_coming_back_is_new_output() {
    let s = TestServer::new();
    let w = s.start_text(&["--regex", "--pattern", "^\\$ $"]);
    s.type_line(&s.pane, "sleep 0.3");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}", f.stdout);
    let v = f.json();
    assert_eq!(v["outcome"], "matched");
    assert!(v["elapsed_seconds"].as_f64().unwrap() >= 0.3, "{v}");
}

/// Defect 2: clear, clear-history and Ctrl-L do not abort the wait.
#[test]
fn clear_and_clear_history_do_not_abort() {
    let s = TestServer::new();
    s.type_line(&s.pane, "seq 1 200");
    s.wait_for_prompt(&s.pane);
    let w = s.start_text(&["--pattern", "AFTERCLEAR"]);
    s.type_line(&s.pane, "clear");
    s.wait_for_prompt(&s.pane);
    s.tmux(&["clear-history", "-t", &s.pane]);
    s.tmux(&["send-keys", "-t", &s.pane, "C-l"]);
    s.type_line(&s.pane, "sleep 0.2; echo AFTER''CLEAR");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}\n{}", f.stdout, f.stderr);
    assert_eq!(f.json()["matched_lines"][0], "AFTERCLEAR");
}

/// Defect 3: output that scrolls past history-limit is still seen.
#[test]
fn a_marker_flooded_past_history_limit_is_seen() {
    let s = TestServer::with(Options {
        history_limit: 50,
        ..Options::default()
    });
    let w = s.start_text(&["--pattern", "FLOODMARK", "--stop", "NEVERSTOP"]);
    s.type_line(&s.pane, "seq 1 2000; echo FLOOD''MARK; seq 1 10000");
    let f = w.finish(&s);
    assert_eq!(f.matched_line(), "FLOODMARK");
}

/// Defect 4: text overwritten within milliseconds is still seen.
#[test]
fn text_overwritten_at_once_is_seen() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "BLINK"]);
    s.type_line(&s.pane, "sleep 0.2; printf 'BL''INK\\r     \\r'");
    let f = w.finish(&s);
    assert_eq!(f.matched_line(), "BLINK");
}

/// Defect 5: the echo of a typed command is not output.
#[test]
fn the_typed_command_echo_is_not_output() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "MARK"]);
    let t0 = std::time::Instant::now();
    s.type_line(&s.pane, "sleep 1; echo MARK");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}", f.stdout);
    let v = f.json();
    assert_eq!(v["matched_lines"][0], "MARK");
    assert!(t0.elapsed().as_secs_f64() >= 1.0, "matched the echo: {v}");
    assert!(v["elapsed_seconds"].as_f64().unwrap() >= 1.0, "{v}");
}

/// Defect 5, any-output form: typing alone is not new output.
#[test]
fn typing_at_the_prompt_is_not_any_output() {
    let s = TestServer::new();
    let w = s.start_text(&["--timeout", "1"]);
    s.tmux(&["send-keys", "-t", &s.pane, "-l", "echo not yet"]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(1), "{}", f.stdout);
    assert_eq!(f.json()["saw_new_output"], false);
    s.tmux(&["send-keys", "-t", &s.pane, "C-u"]);
}

/// Defect 6: NaN and infinite timeouts are errors, never endless waits.
#[test]
fn nan_and_infinite_timeouts_are_errors() {
    let s = TestServer::new();
    for t in ["nan", "NaN", "inf", "infinity", "-1", "0", "1e400"] {
        let mut c = s.tw();
        c.args(["text", "-t", &s.pane, "--timeout", t, "--json"]);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(2), "{t}: {}", f.stdout);
        assert_eq!(f.json()["error"]["kind"], "usage", "{t}");
        assert_eq!(f.stderr.lines().count(), 1, "{t}: {}", f.stderr);
    }
}

/// Defect 7: a channel wait says `signalled` only when it was.
#[test]
fn channel_wait_reports_a_killed_server() {
    let s = TestServer::new();
    let mut c = s.tw();
    c.args(["channel", "never-signalled", "--json", "--timeout", "20"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    // Armed once tmux lists the waiting client's command.
    s.wait_until(&s.pane, "the wait-for client", || {
        s.processes_using_socket()
            .iter()
            .any(|p| p.contains("wait-for -- never-signalled"))
    });
    s.tmux(&["kill-server"]);
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "server_exited");
}

/// Defect 8: nothing is left behind after a timeout, an error or a signal.
#[test]
fn nothing_is_left_behind() {
    let s = TestServer::new();
    // Timeout.
    let w = s.start_text(&["--pattern", "x", "--timeout", "0.3"]);
    assert_eq!(w.finish(&s).code, Some(1));
    let mut c = s.tw();
    c.args(["channel", "leftover-check", "--timeout", "0.3"]);
    assert_eq!(run_bounded(c).code, Some(1));
    // Error.
    let mut c = s.tw();
    c.args(["text", "-t", "%999", "--timeout", "1"]);
    assert_eq!(run_bounded(c).code, Some(2));
    // Signals.
    for (sig, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let w = s.start_text(&["--pattern", "x", "--timeout", "30"]);
        signal(w.pid(), sig);
        let f = w.finish(&s);
        assert_eq!(f.code, Some(code), "signal {sig}: {}", f.stderr);
        assert_eq!(f.json()["error"]["kind"], "interrupted");
    }
    let mut c = s.tw();
    c.args(["channel", "interrupted-ch", "--timeout", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    s.wait_until(&s.pane, "the wait-for client", || {
        s.processes_using_socket()
            .iter()
            .any(|p| p.contains("wait-for -- interrupted-ch"))
    });
    signal(child.id(), "TERM");
    assert_eq!(finished(child.wait_with_output().unwrap()).code, Some(143));
    s.wait_no_helpers();
    // Only the test's own client counts: no control client survived.
    let clients = s.tmux(&["list-clients", "-F", "#{client_name}"]);
    assert_eq!(clients.trim(), "", "clients left: {clients}");
}
