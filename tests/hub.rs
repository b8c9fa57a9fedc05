//! The hub: text waits on a session share one tmux control client.

mod common;

use common::{TestServer, Waiter, run_bounded, unique};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

fn clients(s: &TestServer) -> usize {
    s.tmux(&["list-clients", "-F", "#{client_name}"])
        .lines()
        .count()
}

fn new_window(s: &TestServer, target: &str) -> String {
    let p = s
        .tmux(&["new-window", "-d", "-t", target, "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&p);
    p
}

/// A text wait on `pane` for a line matching `regex`, armed.
fn wait_line(s: &TestServer, pane: &str, regex: &str) -> Waiter {
    wait_line_with(s, s.tw(), pane, regex)
}

/// The same, run by `cmd` (another environment or socket name).
fn wait_line_with(s: &TestServer, cmd: std::process::Command, pane: &str, regex: &str) -> Waiter {
    s.start_wait_cmd(
        cmd,
        &["text", "-t", pane, "--json", "--regex", "--pattern", regex],
    )
}

/// A text wait on `pane` that never matches, armed.
fn wait_never(s: &TestServer, pane: &str) -> Waiter {
    s.start_wait(&["text", "-t", pane, "--json", "--pattern", "never"])
}

fn send_signal(sig: &str, pid: &str) {
    let st = std::process::Command::new("kill")
        .args([sig, pid])
        .status()
        .unwrap();
    assert!(st.success(), "kill {sig} {pid}");
}

fn hub_socket(s: &TestServer, session_number: u32) -> std::path::PathBuf {
    s.dir().join(format!(".s.tmux-wait-hub-{session_number}"))
}

/// Twenty waits on twenty panes of one session: one control client, one
/// hub, every marker found, and nothing left once they are done.
#[test]
fn waits_on_one_session_share_one_client() {
    let s = TestServer::new();
    let mut panes = vec![s.pane.clone()];
    for _ in 0..19 {
        panes.push(new_window(&s, "main:"));
    }
    let waits: Vec<_> = panes
        .iter()
        .enumerate()
        .map(|(i, p)| wait_line(&s, p, &format!("^SHARED_{i}$")))
        .collect();
    assert_eq!(s.hub_waiters(), 20);
    assert_eq!(s.hub_pids().len(), 1, "{:?}", s.processes_using_socket());
    assert_eq!(clients(&s), 1);
    for (i, p) in panes.iter().enumerate() {
        s.type_line(p, &format!("echo SHARED_$(({i}))"));
    }
    for (i, w) in waits.into_iter().enumerate() {
        assert_eq!(w.finish(&s).matched_line(), format!("SHARED_{i}"));
    }
    s.wait_no_helpers();
    assert_eq!(clients(&s), 0);
    assert!(!hub_socket(&s, 0).exists(), "the hub left its socket");
    assert!(
        !s.dir().join(".s.tmux-wait-hub-0.lock").exists(),
        "the hub left its lock file"
    );
}

/// Waits in two sessions get a hub each; a wait of one session never sees
/// the other's output.
#[test]
fn each_session_has_its_own_hub() {
    let s = TestServer::new();
    let other = s
        .tmux(&["new-session", "-d", "-s", "other", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&other);
    let a = wait_line(&s, &s.pane, "^TWO_1$");
    let b = wait_line(&s, &other, "^TWO_1$");
    assert_eq!(s.hub_pids().len(), 2);
    assert_eq!(clients(&s), 2);
    s.type_line(&other, "echo TWO_$((0+1))");
    assert_eq!(b.finish(&s).matched_line(), "TWO_1");
    s.type_line(&s.pane, "echo TWO_$((0+1))");
    let a = a.finish(&s);
    assert_eq!(a.matched_line(), "TWO_1");
    assert_eq!(a.json()["pane_id"], s.pane.as_str());
    s.wait_no_helpers();
}

/// A pane moved into another session mid-wait: the hub's client cannot
/// follow it, so the wait attaches one of its own there and still finds
/// what the pane prints afterwards.
#[test]
fn a_pane_moved_to_another_session_is_followed() {
    let s = TestServer::new();
    let p = s.split();
    let w = wait_line(&s, &p, "^MOVED_2$");
    s.tmux(&["new-session", "-d", "-s", "elsewhere"]);
    s.tmux(&["break-pane", "-d", "-s", &p, "-t", "elsewhere:"]);
    s.wait_until(&p, "the wait to follow the pane", || {
        s.tmux(&["list-clients", "-F", "#{client_session}"])
            .lines()
            .any(|l| l == "elsewhere")
    });
    s.type_line(&p, "echo MOVED_$((1+1))");
    assert_eq!(w.finish(&s).matched_line(), "MOVED_2");
    s.wait_no_helpers();
}

/// A hub killed (SIGKILL) or told to stop (SIGTERM) under its waits: they
/// end at once with a one-line error, its control client goes with it, and
/// the next wait starts a new hub.
#[test]
fn a_killed_hub_ends_its_waits_and_a_new_one_takes_over() {
    let s = TestServer::new();
    for (i, sig) in ["-KILL", "-TERM"].into_iter().enumerate() {
        let w = wait_never(&s, &s.pane);
        let hubs = s.hub_pids();
        assert_eq!(hubs.len(), 1);
        send_signal(sig, &hubs[0]);
        let f = w.finish(&s);
        assert_eq!(f.code, Some(2), "{sig}: {} {}", f.stdout, f.stderr);
        assert_eq!(f.stderr.lines().count(), 1, "{sig}: {}", f.stderr);
        assert!(f.json()["error"]["kind"].is_string(), "{sig}: {}", f.stdout);
        s.wait_no_helpers();
        assert_eq!(clients(&s), 0);
        let w = wait_line(&s, &s.pane, &format!("^AGAIN_{i}3$"));
        s.type_line(&s.pane, &format!("echo AGAIN_{i}$((1+2))"));
        assert_eq!(w.finish(&s).matched_line(), format!("AGAIN_{i}3"));
        s.wait_no_helpers();
    }
}

/// The hub passes on queries only: a connection that asks for anything
/// else, or chains commands, or names another session, is closed and the
/// server is untouched.
#[test]
fn the_hub_refuses_what_is_not_a_query() {
    let s = TestServer::new();
    let w = wait_line(&s, &s.pane, "^STILL_1$");
    let path = hub_socket(&s, 0);
    let pane = s.pane.clone();
    let closed = |hello: &str, line: &str| {
        let mut c = UnixStream::connect(&path).expect("connect to the hub");
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(format!("{hello}\n{line}\n").as_bytes())
            .unwrap();
        let mut got = Vec::new();
        let r = c.read_to_end(&mut got);
        assert!(
            r.is_ok(),
            "the hub kept the connection open: {hello} / {line}"
        );
        String::from_utf8_lossy(&got).into_owned()
    };
    let hello = format!("tmux-wait-hub 1 $0 {pane}");
    for bad in [
        "kill-server",
        "display-message -p x ; kill-server",
        "display-message -p x;kill-server",
        "wait-for never",
        "switch-client -t '$0'",
        "refresh-client -A '%0:off'",
    ] {
        let got = closed(&hello, bad);
        assert!(!got.contains("%error"), "{bad}: {got}");
    }
    closed("tmux-wait-hub 1 $7 %0", "display-message -p x");
    closed("hello", "display-message -p x");
    // A well-formed query is answered.
    let mut c = UnixStream::connect(&path).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(format!("{hello}\ndisplay-message -p 'a;b #{{pane_id}}'\n").as_bytes())
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(&format!("a;b {pane}\n%end")) {
        let k = c.read(&mut buf).expect("the hub answers");
        assert!(k > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..k]);
    }
    drop(c);
    // The server and the real wait are untouched.
    s.type_line(&s.pane, "echo STILL_$((0+1))");
    assert_eq!(w.finish(&s).matched_line(), "STILL_1");
    s.wait_no_helpers();
}

/// TMUX_WAIT_NO_HUB=1: the wait attaches a client of its own, no hub.
#[test]
fn no_hub_when_turned_off() {
    let s = TestServer::new();
    let mut c = s.tw();
    c.env("TMUX_WAIT_NO_HUB", "1");
    let w = wait_line_with(&s, c, &s.pane, "^OWN_1$");
    assert!(s.hub_pids().is_empty(), "{:?}", s.processes_using_socket());
    assert_eq!(clients(&s), 1);
    s.type_line(&s.pane, "echo OWN_$((0+1))");
    assert_eq!(w.finish(&s).matched_line(), "OWN_1");
    s.wait_no_helpers();
}

/// Waits in a row (sharing the hub while it lingers, or starting one
/// again) all find their text; a channel wait beside them is unaffected,
/// and nothing is left.
#[test]
fn waits_in_a_row_reuse_the_hub() {
    let s = TestServer::new();
    for i in 0..5 {
        let w = wait_line(&s, &s.pane, &format!("^ROW_{i}$"));
        s.type_line(&s.pane, &format!("echo ROW_$(({i}))"));
        assert_eq!(w.finish(&s).matched_line(), format!("ROW_{i}"));
    }
    let ch = unique("hubch");
    let mut sig = s.tw();
    sig.args(["signal", &ch]);
    assert_eq!(run_bounded(sig).code, Some(0));
    let mut c = s.tw();
    c.args(["channel", &ch, "--timeout", "5"]);
    assert_eq!(run_bounded(c).code, Some(0));
    s.wait_no_helpers();
    assert_eq!(clients(&s), 0);
}

/// A wait that stops reading (SIGSTOP) is dropped once its queue passes the
/// limit, instead of holding up the session's other waits; resumed, it ends
/// with a one-line error.
#[test]
fn a_stopped_wait_is_dropped_not_waited_for() {
    let s = TestServer::new();
    let p2 = s.split();
    let mut c = s.tw();
    // The first wait starts the hub, which takes the limit from it.
    c.env("TMUX_WAIT_HUB_QUEUE_MB", "1");
    let stopped = s.start_wait_cmd(c, &["text", "-t", &s.pane, "--json", "--pattern", "never"]);
    let other = wait_line(&s, &p2, "^OTHER_2$");
    assert_eq!(s.hub_waiters(), 2);
    let pid = stopped.pid().to_string();
    send_signal("-STOP", &pid);
    s.type_line(&s.pane, "seq 1 400000");
    s.wait_until(&s.pane, "the stopped wait to be dropped", || {
        s.hub_waiters() == 1
    });
    s.type_line(&p2, "echo OTHER_$((1+1))");
    assert_eq!(other.finish(&s).matched_line(), "OTHER_2");
    send_signal("-CONT", &pid);
    let f = stopped.finish(&s);
    assert_eq!(f.code, Some(2), "{} {}", f.stdout, f.stderr);
    assert!(f.stderr.contains("hub"), "{}", f.stderr);
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    s.wait_no_helpers();
}

/// A server named by a relative `-S` path: the hub (which runs from `/`)
/// still finds it.
#[test]
fn a_relative_socket_path_reaches_the_same_server() {
    let s = TestServer::new();
    // The harness names the socket by its absolute path; this one does not.
    let mut rel = std::process::Command::new(common::BIN);
    rel.args(["-S", "s"])
        .current_dir(s.dir())
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env("TMPDIR", s.dir());
    let w = wait_line_with(&s, rel, &s.pane, "^REL_4$");
    assert_eq!(s.hub_waiters(), 1);
    s.type_line(&s.pane, "echo REL_$((2+2))");
    assert_eq!(w.finish(&s).matched_line(), "REL_4");
    s.wait_no_helpers();
}

/// Waits coming and going on a pane that floods: the hub pauses the pane's
/// output for its client each time the last wait leaves. Switching it `off`
/// instead crashed tmux 3.3a within two rounds (issue 5054: output queued
/// for the client is read after the pane's buffer was trimmed).
#[test]
fn waits_coming_and_going_on_a_flooding_pane_keep_the_server_alive() {
    let s = TestServer::new();
    let quiet = s.split();
    let keep = wait_never(&s, &quiet);
    s.type_line(&s.pane, "while :; do seq 1 100000; done");
    s.wait_for_command(&s.pane, "seq");
    for _ in 0..20 {
        let w = wait_never(&s, &s.pane);
        // Let output queue up for the hub's client, then leave.
        s.wait_until(&s.pane, "output to flow", || s.hub_waiters() == 2);
        drop(w);
        s.wait_until(&s.pane, "the wait to leave", || s.hub_waiters() == 1);
        assert!(
            s.tmux_cmd().arg("has-session").status().unwrap().success(),
            "the tmux server died"
        );
    }
    s.tmux(&["send-keys", "-t", &s.pane, "C-c"]);
    let w = wait_line(&s, &quiet, "^ALIVE_5$");
    s.type_line(&quiet, "echo ALIVE_$((2+3))");
    assert_eq!(w.finish(&s).matched_line(), "ALIVE_5");
    drop(keep);
    s.wait_no_helpers();
}

/// The hub's session is killed under its waits (tmux moves or detaches the
/// hub's client): the waits end with pane_died, and the hub goes at once,
/// whether tmux detaches its client or moves it to another session.
#[test]
fn killing_the_session_ends_its_waits_and_its_hub() {
    for detach in ["on", "off"] {
        let s = TestServer::new();
        s.tmux(&["set", "-g", "detach-on-destroy", detach]);
        let pane = s
            .tmux(&[
                "new-session",
                "-d",
                "-s",
                "doomed",
                "-P",
                "-F",
                "#{pane_id}",
            ])
            .trim()
            .to_owned();
        s.wait_for_prompt(&pane);
        let w = wait_never(&s, &pane);
        assert_eq!(s.hub_pids().len(), 1);
        s.tmux(&["kill-session", "-t", "doomed"]);
        let f = w.finish(&s);
        assert_eq!(f.code, Some(2), "{detach}: {} {}", f.stdout, f.stderr);
        assert_eq!(
            f.json()["error"]["kind"],
            "pane_died",
            "{detach}: {}",
            f.stdout
        );
        s.wait_no_helpers();
        assert_eq!(clients(&s), 0, "{detach}");
    }
}
