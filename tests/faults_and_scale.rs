//! The server going away under a text wait, and many waits at once: every
//! wait ends with the right answer and nothing is left running.

mod common;
use common::*;

#[test]
fn kill_server_during_a_text_wait_is_server_exited() {
    for how in ["kill-server", "SIGKILL"] {
        let s = TestServer::new();
        let w = s.start_wait(&["text", "-t", &s.pane, "--json", "--pattern", "never"]);
        if how == "kill-server" {
            s.tmux(&["kill-server"]);
        } else {
            s.kill_server_hard();
        }
        let f = w.finish(&s);
        assert_eq!(f.code, Some(2), "{how}: {}", f.stdout);
        assert_eq!(f.json()["error"]["kind"], "server_exited", "{how}");
        s.wait_no_helpers();
    }
}

#[test]
fn killing_the_session_of_the_pane_is_pane_died() {
    let s = TestServer::new();
    let other = s.tmux(&["new-session", "-d", "-s", "other", "-P", "-F", "#{pane_id}"]);
    let other = other.trim().to_owned();
    s.wait_for_prompt(&other);
    let w = s.start_wait(&["text", "-t", &other, "--json", "--pattern", "never"]);
    s.tmux(&["kill-session", "-t", "other"]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "pane_died");
}

#[test]
fn many_panes_many_waits_all_found() {
    let s = TestServer::new();
    let mut panes = vec![s.pane.clone()];
    for _ in 0..19 {
        let p = s.tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"]);
        panes.push(p.trim().to_owned());
    }
    for p in &panes {
        s.wait_for_prompt(p);
    }
    let waits: Vec<(String, Waiter)> = panes
        .iter()
        .map(|p| {
            let marker = format!("FAN-{}", &p[1..]);
            let w = s.start_wait(&["text", "-t", p, "--json", "--pattern", &marker]);
            (marker, w)
        })
        .collect();
    for (p, (marker, _)) in panes.iter().zip(&waits) {
        let (a, b) = marker.split_at(3);
        s.type_line(p, &format!("echo {a}''{b}"));
    }
    for (marker, w) in waits {
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{marker}: {}", f.stdout);
        assert_eq!(f.json()["matched_lines"][0], marker.as_str());
    }
    s.wait_no_helpers();
    assert_eq!(s.tmux(&["list-clients"]).trim(), "");
}

#[test]
fn fifty_waits_on_one_pane_and_a_hundred_in_a_row() {
    let s = TestServer::new();
    let waits: Vec<Waiter> = (0..50)
        .map(|_| s.start_wait(&["text", "-t", &s.pane, "--json", "--pattern", "SHARED-MARK"]))
        .collect();
    s.type_line(&s.pane, "echo SHARED''-MARK");
    for w in waits {
        assert_eq!(w.finish(&s).code, Some(0));
    }
    for _ in 0..100 {
        let mut c = s.tw();
        c.args(["text", "-t", &s.pane, "--timeout", "1ms", "--json"]);
        assert_eq!(run_bounded(c).code, Some(1));
    }
    s.wait_no_helpers();
    assert_eq!(s.tmux(&["list-clients"]).trim(), "");
}

#[test]
fn a_closed_stdout_keeps_the_exit_code() {
    let s = TestServer::new();
    let mut c = s.tw();
    c.args(["text", "-t", &s.pane, "--timeout", "200ms", "--json"]);
    c.stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    drop(child.stdout.take());
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(1));
}

#[test]
fn memory_stays_bounded_under_a_flood_and_an_endless_line() {
    let s = TestServer::with(Options {
        history_limit: 2000,
        ..Options::default()
    });
    let w = s.start_wait(&[
        "text",
        "-t",
        &s.pane,
        "--json",
        "--pattern",
        "NEVER-PRINTED",
        "--timeout",
        "60",
    ]);
    let done = unique("flood-done");
    s.type_line(
        &s.pane,
        &format!(
            "seq 1 500000; yes 0123456789 | head -c 8000000 | tr -d '\\n'; echo; tmux -S {} wait-for -S {done}",
            s.socket.display()
        ),
    );
    let mut sync = s.tmux_cmd();
    sync.args(["wait-for", &done]);
    assert_eq!(run_bounded(sync).code, Some(0));
    let hwm_kb = peak_memory_kb(w.pid());
    assert!(hwm_kb > 0 && hwm_kb < 64 * 1024, "peak memory {hwm_kb} kB");
    drop(w);
}
