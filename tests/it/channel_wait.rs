//! Channel waits on real tmux servers.

use crate::common::*;
use std::process::Stdio;

fn channel(s: &TestServer, name: &str, extra: &[&str]) -> std::process::Child {
    let mut c = s.tw();
    c.args(["channel", name, "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.spawn().unwrap()
}

fn wait_armed(s: &TestServer, name: &str) {
    let needle = format!("wait-for -- {name}");
    s.wait_until(&s.pane, "the wait-for client", || {
        s.processes_using_socket()
            .iter()
            .any(|p| p.contains(&needle))
    });
}

#[test]
fn signalled_while_waiting() {
    let s = TestServer::new();
    let name = unique("ch");
    let child = channel(&s, &name, &[]);
    wait_armed(&s, &name);
    let mut sig = s.tw();
    sig.args(["signal", &name]);
    assert_eq!(run_bounded(sig).code, Some(0));
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let v = f.json();
    assert_eq!(v["channel"], name.as_str());
    assert_eq!(v["outcome"], "signalled");
    assert_eq!(v["effective_timeout"], 30.0);
    assert_eq!(v.as_object().unwrap().len(), 7);
    // A tmux-wait signal says when it was sent, even without a result.
    assert!(v["status"].is_null() && v["message"].is_null() && v["sent"].is_f64());
}

/// A channel whose name starts with `-` (valid for tmux-wait and for
/// libtmux-mcp) is a name, not a flag of `tmux wait-for`.
#[test]
fn a_channel_name_starting_with_a_dash() {
    let s = TestServer::new();
    let name = unique("-dash");
    // On tmux-wait's command line, `--` ends the options.
    let child = {
        let mut c = s.tw();
        c.args(["channel", "--json", "--", &name])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    wait_armed(&s, &name);
    let mut sig = s.tw();
    sig.args(["signal", "--status", "0", "--", &name]);
    assert_eq!(run_bounded(sig).code, Some(0));
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(f.json()["channel"], name.as_str());
}

#[test]
fn a_signal_before_the_wait_is_latched_once() {
    let s = TestServer::new();
    let name = unique("latch");
    s.tmux(&["wait-for", "-S", &name]);
    let f = finished(
        channel(&s, &name, &["--timeout", "5"])
            .wait_with_output()
            .unwrap(),
    );
    assert_eq!(f.code, Some(0));
    assert_eq!(f.json()["outcome"], "signalled");
    // The latch is used up.
    let f = finished(
        channel(&s, &name, &["--timeout", "0.3"])
            .wait_with_output()
            .unwrap(),
    );
    assert_eq!(f.code, Some(1));
}

#[test]
fn times_out_and_leaves_no_process() {
    let s = TestServer::new();
    let name = unique("to");
    let f = finished(
        channel(&s, &name, &["--timeout", "300ms"])
            .wait_with_output()
            .unwrap(),
    );
    assert_eq!(f.code, Some(1));
    let v = f.json();
    assert_eq!(v["outcome"], "timeout");
    assert_eq!(v["effective_timeout"], 0.3);
    assert!(v["elapsed_seconds"].as_f64().unwrap() >= 0.3);
    s.wait_no_helpers();
}

#[test]
fn the_ceiling_clamps_channel_timeouts() {
    let s = TestServer::new();
    let mut c = s.tw();
    c.env("TMUX_WAIT_MAX_SECONDS", "200ms").args([
        "channel",
        "clamped",
        "--json",
        "--timeout",
        "1h",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(1));
    assert_eq!(f.json()["effective_timeout"], 0.2);
}

#[test]
fn plain_shell_signal_from_the_pane_is_seen() {
    let s = TestServer::new();
    let name = unique("pane-sig");
    let child = channel(&s, &name, &[]);
    wait_armed(&s, &name);
    s.type_line(
        &s.pane,
        &format!(
            "sleep 0.1; tmux -S {} wait-for -S {name}",
            s.socket.display()
        ),
    );
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(0), "{}", f.stderr);
}

#[test]
fn channel_names_are_validated() {
    let s = TestServer::new();
    for bad in [
        "",
        "a b",
        "x;kill-server",
        "$(touch /tmp/x)",
        "#{pane_id}",
        "a\nb",
        &"n".repeat(129),
    ] {
        for sub in [&["channel", bad, "--json"][..], &["signal", bad][..]] {
            let mut c = s.tw();
            c.args(sub);
            let f = run_bounded(c);
            assert_eq!(f.code, Some(2), "{sub:?}");
            assert!(
                f.stderr.contains("invalid channel name"),
                "{sub:?}: {}",
                f.stderr
            );
            if sub[0] == "channel" {
                assert_eq!(f.json()["error"]["kind"], "invalid_channel");
            }
        }
    }
    // The server is untouched.
    s.tmux(&["has-session", "-t", "main"]);
}

#[test]
fn a_timed_out_wait_does_not_swallow_the_next_signal() {
    // tmux keeps a killed wait-for client registered; tmux-wait clears it,
    // so a signal sent with nobody waiting is still latched for the next.
    let s = TestServer::new();
    let name = unique("ghost");
    let f = finished(
        channel(&s, &name, &["--timeout", "300ms"])
            .wait_with_output()
            .unwrap(),
    );
    assert_eq!(f.code, Some(1));
    s.tmux(&["wait-for", "-S", &name]);
    let f = finished(
        channel(&s, &name, &["--timeout", "5"])
            .wait_with_output()
            .unwrap(),
    );
    assert_eq!(f.code, Some(0), "the signal was swallowed: {}", f.stdout);
}

#[test]
fn a_timed_out_wait_does_not_wake_another_waiter() {
    let s = TestServer::new();
    let name = unique("shared");
    let other = channel(&s, &name, &["--timeout", "3"]);
    wait_armed(&s, &name);
    let f = finished(
        channel(&s, &name, &["--timeout", "300ms"])
            .wait_with_output()
            .unwrap(),
    );
    assert_eq!(f.code, Some(1));
    let f = finished(other.wait_with_output().unwrap());
    assert_eq!(f.code, Some(1), "the other waiter was woken: {}", f.stdout);
}

#[test]
fn the_last_session_ending_is_not_a_signal() {
    let s = TestServer::new();
    let name = unique("last-session");
    let child = channel(&s, &name, &["--timeout", "20"]);
    wait_armed(&s, &name);
    s.tmux(&["kill-session", "-t", "main"]);
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "server_exited");
}

#[test]
fn a_sigkilled_server_is_not_a_signal() {
    let s = TestServer::new();
    let name = unique("sigkill");
    let child = channel(&s, &name, &["--timeout", "20"]);
    wait_armed(&s, &name);
    s.kill_server_hard();
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "server_exited");
}

#[test]
fn a_signal_carries_its_result_and_only_its_own() {
    let s = TestServer::new();
    let name = unique("payload");
    let marker = s.dir().join("pwned");
    let hostile = format!(
        "build failed: $(touch {m}) #(touch {m}) `touch {m}`",
        m = marker.display()
    );
    let child = channel(&s, &name, &[]);
    wait_armed(&s, &name);
    let mut sig = s.tw();
    sig.args(["signal", &name, "--status", "2", "--message", &hostile]);
    assert_eq!(run_bounded(sig).code, Some(0));
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(5), "non-zero status exits 5: {}", f.stdout);
    let v = f.json();
    assert_eq!(v["status"], 2);
    assert_eq!(v["message"], hostile.as_str());
    assert!(v["sent"].as_f64().unwrap() > 1.6e9);
    // A plain wait-for -S afterwards carries nothing: the old result is not
    // shown again.
    let child = channel(&s, &name, &[]);
    wait_armed(&s, &name);
    s.tmux(&["wait-for", "-S", &name]);
    let f = finished(child.wait_with_output().unwrap());
    assert_eq!(f.code, Some(0));
    assert!(f.json()["message"].is_null(), "{}", f.stdout);
    // Status 0 exits 0; a result sent before the wait (latched) is kept.
    let mut sig = s.tw();
    sig.args(["signal", &name, "--status", "0", "--message", "ok"]);
    assert_eq!(run_bounded(sig).code, Some(0));
    let f = finished(
        channel(&s, &name, &["--timeout", "5"])
            .wait_with_output()
            .unwrap(),
    );
    assert_eq!(f.code, Some(0));
    assert_eq!(f.json()["message"], "ok");
    assert!(!marker.exists());
}
