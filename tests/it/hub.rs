//! The hub: every wait of a server reads its pane through one process that
//! owns the panes' pipes (`pipe-pane`); no tmux client is ever attached.

use crate::common::{TestServer, Waiter, run_bounded, signal, unique};
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
/// (Their timeout is long: the first of fifty is armed seconds before
/// the last on a loaded machine, and the flood after them takes seconds
/// more. The default 8 s ran out on tmux 3.2a in CI with the line drawn.)
fn wait_line_with(s: &TestServer, cmd: std::process::Command, pane: &str, regex: &str) -> Waiter {
    s.start_wait_cmd(
        cmd,
        &[
            "text",
            "-t",
            pane,
            "--json",
            "--timeout",
            "60",
            "--regex",
            "--pattern",
            regex,
        ],
    )
}

/// A text wait on `pane` that never matches (nor times out while a test
/// runs), armed.
fn wait_never(s: &TestServer, pane: &str) -> Waiter {
    s.start_wait(&[
        "text",
        "-t",
        pane,
        "--json",
        "--pattern",
        "never",
        "--timeout",
        "10m",
    ])
}

/// Wait until `n` waits are connected to the hub (a pipe's command
/// handing its socket over counts for a moment too).
fn wait_waiters(s: &TestServer, n: usize) {
    s.wait_until(&s.pane, &format!("{n} waits at the hub"), || {
        s.hub_waiters() == n
    });
}

fn hub_socket(s: &TestServer) -> std::path::PathBuf {
    s.dir().join(".s.tmux-wait-hub")
}

/// Twenty waits on twenty panes of two sessions: one hub, a pipe per pane,
/// no client attached anywhere, every marker found, and nothing left once
/// they are done (no pipe, no process, no socket, no lock file).
#[test]
fn waits_share_one_hub_and_attach_no_client() {
    let s = TestServer::new();
    s.tmux(&["new-session", "-d", "-s", "second"]);
    let mut panes = vec![s.pane.clone()];
    for i in 0..19 {
        panes.push(new_window(&s, if i % 2 == 0 { "main:" } else { "second:" }));
    }
    let waits: Vec<_> = panes
        .iter()
        .enumerate()
        .map(|(i, p)| wait_line(&s, p, &format!("^SHARED_{i}$")))
        .collect();
    wait_waiters(&s, 20);
    assert_eq!(s.hub_pids().len(), 1, "{:?}", s.processes_using_socket());
    assert_eq!(clients(&s), 0);
    assert_eq!(
        s.tmux(&["list-sessions", "-F", "#{session_attached}"])
            .trim(),
        "0\n0"
    );
    for p in &panes {
        assert!(s.pane_piped(p), "{p} is not piped");
    }
    for (i, p) in panes.iter().enumerate() {
        s.type_line(p, &format!("echo SHARED_$(({i}))"));
    }
    for (i, w) in waits.into_iter().enumerate() {
        assert_eq!(w.finish(&s).matched_line(), format!("SHARED_{i}"));
    }
    s.wait_no_helpers();
    for p in &panes {
        assert!(!s.pane_piped(p), "{p} is still piped");
    }
    assert!(!hub_socket(&s).exists(), "the hub left its socket");
    assert!(
        !s.dir().join(".s.tmux-wait-hub.lock").exists(),
        "the hub left its lock file"
    );
}

/// Waits on one pane share its pipe: a wait that joins later sees what is
/// written after it joined, and not what was written before.
#[test]
fn waits_on_one_pane_share_its_pipe_and_each_starts_where_it_joined() {
    let s = TestServer::new();
    let first = wait_line(&s, &s.pane, "^(EARLY|LATE)_[0-9]$");
    s.type_line(&s.pane, "echo EARLY_$((0+1))");
    let first = first.finish(&s);
    assert_eq!(first.matched_line(), "EARLY_1");
    // Now several at once: the later ones join the first's stream.
    let keep = wait_never(&s, &s.pane);
    s.type_line(&s.pane, "echo EARLY_$((1+1))");
    s.wait_until(&s.pane, "the early line", || {
        s.capture(&s.pane).contains("\nEARLY_2")
    });
    let b = wait_line(&s, &s.pane, "^(EARLY|LATE)_[0-9]$");
    wait_waiters(&s, 2);
    let c = wait_line(&s, &s.pane, "^LATE_3$");
    wait_waiters(&s, 3);
    s.type_line(&s.pane, "echo LATE_$((1+2))");
    let b = b.finish(&s);
    assert_eq!(b.matched_line(), "LATE_3", "{}", b.stdout);
    assert_eq!(c.finish(&s).matched_line(), "LATE_3");
    drop(keep);
    s.wait_no_helpers();
    assert!(!s.pane_piped(&s.pane));
}

/// A pane moved into another session mid-wait: the pipe goes with the
/// pane, so the wait goes on without a gap.
#[test]
fn a_pane_moved_to_another_session_is_followed() {
    let s = TestServer::new();
    let p = s.split();
    let w = wait_line(&s, &p, "^MOVED_2$");
    s.tmux(&["new-session", "-d", "-s", "elsewhere"]);
    s.tmux(&["break-pane", "-d", "-s", &p, "-t", "elsewhere:"]);
    s.type_line(&p, "echo MOVED_$((1+1))");
    assert_eq!(w.finish(&s).matched_line(), "MOVED_2");
    s.wait_no_helpers();
}

/// The hub runs nothing but reads: a connection that asks for anything
/// else, is malformed, or names no pane, is closed unanswered, and the
/// server and the real wait are untouched.
#[test]
fn the_hub_refuses_what_is_not_a_query() {
    let s = TestServer::new();
    let w = wait_line(&s, &s.pane, "^STILL_1$");
    let path = hub_socket(&s);
    let pane = s.pane.clone();
    let closed = |line: &str| {
        let mut c = UnixStream::connect(&path).expect("connect to the hub");
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut got = Vec::new();
        let r = c.read_to_end(&mut got);
        assert!(r.is_ok(), "the hub kept the connection open: {line}");
        assert!(got.is_empty(), "the hub answered {line}");
    };
    let hello = "tmux-wait-hub 2";
    for extra in [
        r#"[["kill-server"]]"#,
        r#"[["display-message","hi"]]"#,
        r#"[["wait-for","never"]]"#,
        r#"[["switch-client","-t","$0"]]"#,
        r#"[["send-keys","-t","%0","rm -rf /","Enter"]]"#,
    ] {
        closed(&format!(
            r#"{{"hello":"{hello}","pane":"{pane}","extra":{extra}}}"#
        ));
    }
    closed(&format!(r#"{{"hello":"{hello}","pane":"%0;kill-server"}}"#));
    closed(&format!(r#"{{"hello":"tmux-wait-hub 1","pane":"{pane}"}}"#));
    closed("hello");
    closed("{");
    // The server and the real wait are untouched.
    assert!(s.tmux_cmd().arg("has-session").status().unwrap().success());
    s.type_line(&s.pane, "echo STILL_$((0+1))");
    assert_eq!(w.finish(&s).matched_line(), "STILL_1");
    s.wait_no_helpers();
}

/// A pane whose output the user pipes already (a logging plugin): the
/// user's pipe is never touched, a text wait there polls instead, and
/// run and output say why they cannot.
#[test]
fn a_users_pipe_is_left_alone() {
    let s = TestServer::new();
    let log = s.dir().join("user.log");
    s.tmux(&[
        "pipe-pane",
        "-t",
        &s.pane,
        &format!("cat >> {}", log.display()),
    ]);
    let w = wait_line(&s, &s.pane, "^POLLED_9$");
    s.type_line(&s.pane, "echo POLLED_$((4+5))");
    assert_eq!(w.finish(&s).matched_line(), "POLLED_9");
    let mut c = s.tw();
    c.args(["output", "-t", &s.pane, "--json", "--timeout", "1"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "pipe_busy");
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    s.wait_no_helpers();
    assert!(s.pane_piped(&s.pane), "the user's pipe was closed");
    s.type_line(&s.pane, "echo STILL_LOGGED");
    s.wait_until(&s.pane, "the user's log", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("\rSTILL_LOGGED"))
    });
}

/// Waits in a row (each joining the pipe the last one left, or starting
/// one when it had closed) all find their text; a channel wait beside them
/// is unaffected, and nothing is left: the pipe closes after the last.
#[test]
fn waits_in_a_row_each_get_the_panes_stream() {
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
    assert!(!s.pane_piped(&s.pane));
}

/// A wait that stops reading (SIGSTOP) is dropped once its queue passes the
/// limit, instead of holding up the other waits; resumed, it ends with a
/// one-line error.
#[test]
fn a_stopped_wait_is_dropped_not_waited_for() {
    let s = TestServer::new();
    let p2 = s.split();
    let mut c = s.tw();
    // The first wait starts the hub, which takes the limit from it.
    c.env("TMUX_WAIT_HUB_QUEUE_MB", "1");
    // A pattern matched line by line only (it names the text's edges): the
    // wait is sent the flood whole, not sieved (a sieved flood is a few
    // hundred bytes a chunk, and would not fill the queue).
    let stopped = s.start_wait_cmd(
        c,
        &[
            "text",
            "-t",
            &s.pane,
            "--json",
            "--regex",
            "--pattern",
            r"\Anever\z",
        ],
    );
    let other = wait_line(&s, &p2, "^OTHER_2$");
    wait_waiters(&s, 2);
    let pid = stopped.pid().to_string();
    signal(&pid, "STOP");
    s.type_line(&s.pane, "seq 1 2000000");
    s.wait_until(&s.pane, "the stopped wait to be dropped", || {
        s.hub_waiters() == 1
    });
    s.type_line(&p2, "echo OTHER_$((1+1))");
    assert_eq!(other.finish(&s).matched_line(), "OTHER_2");
    signal(&pid, "CONT");
    let f = stopped.finish(&s);
    assert_eq!(f.code, Some(2), "{} {}", f.stdout, f.stderr);
    assert!(f.stderr.contains("hub"), "{}", f.stderr);
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    s.wait_no_helpers();
}

/// A server named by a relative `-S` path: the hub (which runs from `/`)
/// and the pipes' commands still find it.
#[test]
fn a_relative_socket_path_reaches_the_same_server() {
    let s = TestServer::new();
    // The harness names the socket by its absolute path; this one does not.
    let mut rel = std::process::Command::new(crate::common::BIN);
    rel.args(["-S", "s"])
        .current_dir(s.dir())
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env("TMPDIR", s.dir());
    let w = wait_line_with(&s, rel, &s.pane, "^REL_4$");
    wait_waiters(&s, 1);
    s.type_line(&s.pane, "echo REL_$((2+2))");
    assert_eq!(w.finish(&s).matched_line(), "REL_4");
    s.wait_no_helpers();
}

/// Waits coming and going on a pane that floods: its pipe opens and closes
/// twenty times under a full stream, and the server stays up.
#[test]
fn waits_coming_and_going_on_a_flooding_pane_keep_the_server_alive() {
    let s = TestServer::new();
    let quiet = s.split();
    let keep = wait_never(&s, &quiet);
    s.type_line(&s.pane, "while :; do seq 1 100000; done");
    s.wait_for_command(&s.pane, "seq");
    for _ in 0..20 {
        let w = wait_never(&s, &s.pane);
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

/// A pane's session is killed under its waits: they end with pane_died,
/// whatever detach-on-destroy says, and nothing is left.
#[test]
fn killing_the_session_ends_its_waits() {
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

/// Fifty waits on a flooding pane: the hub searches each chunk once for
/// all of them and sends each only what its patterns can hit, its first
/// line and its last lines (the sieve). Every wait's answer is still the
/// line it waits for, exactly; the one that waits past the flood sees its
/// tail as drawn; and the hub's log says it left most of the flood out.
#[test]
fn fifty_waits_on_a_flood_each_get_their_line_with_most_of_it_left_out() {
    let s = TestServer::new();
    let log = s.dir().join("hub.log");
    let mut first = s.tw();
    first.env("TMUX_WAIT_HUB_LOG", &log);
    let last = wait_line_with(&s, first, &s.pane, "^done [0-9]+$");
    let numbers: Vec<u32> = (0..48).map(|i| 150_001 + i * 3_001).collect();
    let mut waits: Vec<(String, Waiter)> = numbers
        .iter()
        .map(|n| (n.to_string(), wait_line(&s, &s.pane, &format!("^{n}$"))))
        .collect();
    // A stop among the lines: the wait stops there, not at the line after.
    waits.push((
        "300003".into(),
        s.start_wait(&[
            "text",
            "-t",
            &s.pane,
            "--json",
            "--pattern",
            "never there",
            "--regex",
            "--stop",
            "^300003$",
        ]),
    ));
    s.type_line(&s.pane, "seq 1 400000; echo done 7");
    for (line, w) in waits {
        let v = w.finish(&s).json();
        assert_eq!(v["matched_lines"], serde_json::json!([line]), "{v}");
    }
    assert_flood_tail(&last.finish(&s).json(), "done 7", 399_990, 400_000);
    // Nearly all of what each wait was sent came sieved. Not all: its
    // first 4 KiB, each chunk's first and last lines go whole, and so do
    // the 49 lines among the flood that a pattern hits. (The first 64 KiB
    // went whole before, and a first read of 400 KB as the flood began
    // went whole to every wait that had not had them yet.)
    let (sieved, text) = sieved_waits(&log, 50, (19, 20));
    assert!(sieved >= 45, "waits sieved: {sieved}: {text}");
}

/// A pane that prints a line every few milliseconds, with eight waits on
/// it: the lines none of their patterns hits are held a moment (each
/// wait wakes a few times a second, not for every line), and each wait
/// still gets exactly its line, with the lines before it in its tail.
#[test]
fn eight_waits_on_a_pane_printing_line_by_line_each_get_their_line() {
    let s = TestServer::new();
    let log = s.dir().join("hub.log");
    let mut first = s.tw();
    first.env("TMUX_WAIT_HUB_LOG", &log);
    let last = wait_line_with(&s, first, &s.pane, "^done [0-9]+$");
    let ticks = [40, 95, 130, 171, 172, 199];
    let waits: Vec<(String, Waiter)> = ticks
        .iter()
        .map(|n| {
            let line = format!("tick {n}");
            let w = wait_line(&s, &s.pane, &format!("^{line}$"));
            (line, w)
        })
        .collect();
    let never = wait_never(&s, &s.pane);
    wait_waiters(&s, 8);
    // Its first lines at once: a wait's first 4 KiB are sent whole.
    s.type_line(
        &s.pane,
        "seq 1 2000; for i in $(seq 1 200); do echo tick $i; sleep 0.005; done; echo done 9",
    );
    for (line, w) in waits {
        let v = w.finish(&s).json();
        assert_eq!(v["matched_lines"], serde_json::json!([line]), "{v}");
    }
    let v = last.finish(&s).json();
    assert_eq!(v["matched_lines"], serde_json::json!(["done 9"]), "{v}");
    let end = ["tick 199", "tick 200", "done 9"].map(serde_json::Value::from);
    assert!(
        v["tail"].as_array().unwrap().windows(3).any(|w| w == end),
        "{v}"
    );
    drop(never);
    let held = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        held.contains("plain lines held, passed on"),
        "the hub held no line: {held}"
    );
}

/// With fifty waits on a pane printing line by line, the lines none of
/// their patterns hits are held up to a second: a wait whose time ends
/// meanwhile still knows new output came (it takes what is held for it
/// at its deadline), and times out.
#[test]
fn a_wait_ending_while_its_lines_are_held_saw_them() {
    let s = TestServer::new();
    let log = s.dir().join("hub.log");
    let (a, b) = (s.dir().join("a"), s.dir().join("b"));
    let until =
        |f: &std::path::Path| format!("while [ ! -e {} ]; do sleep 0.02; done", f.display());
    s.type_line(
        &s.pane,
        &format!(
            "{}; echo start; {}; for i in $(seq 1 200); do echo tick $i; sleep 0.01; done",
            until(&a),
            until(&b)
        ),
    );
    let mut first = s.tw();
    first.env("TMUX_WAIT_HUB_LOG", &log);
    let first = wait_line_with(&s, first, &s.pane, "^never$");
    let others: Vec<Waiter> = (0..48).map(|_| wait_never(&s, &s.pane)).collect();
    // A line's end passed on: the stream stands at a line's start.
    std::fs::write(&a, "").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let short = s.start_wait(&[
        "text",
        "-t",
        &s.pane,
        "--json",
        "--pattern",
        "never",
        "--timeout",
        "1s",
    ]);
    // Its wants said (the fiftieth wait's the hub heard), the pane quiet
    // since it came.
    s.wait_until(&s.pane, "the short wait's wants at the hub", || {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let ids: std::collections::HashSet<&str> = log
            .lines()
            .filter_map(|l| l.split("wants ").nth(1)?.split_whitespace().next())
            .collect();
        ids.len() >= 50
    });
    std::fs::write(&b, "").unwrap();
    let v = short.finish(&s).json();
    assert_eq!(v["outcome"], "timeout", "{v}");
    assert_eq!(v["saw_new_output"], true, "{v}");
    drop((first, others));
    let held = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        held.contains("plain lines held, passed on"),
        "the hub held no line: {held}"
    );
}

/// The same with colours, as grep, compilers and test runners write
/// them: each wait gets exactly its line (a pattern is matched against
/// the line as it shows, colours apart), and a good part of the flood is
/// left out of what each is sent (each chunk's last lines go whole, and
/// chunks are at most 64 KiB of 23-byte lines).
#[test]
fn waits_on_a_coloured_flood_get_their_line_with_most_of_it_left_out() {
    let s = TestServer::new();
    let log = s.dir().join("hub.log");
    let mut first = s.tw();
    first.env("TMUX_WAIT_HUB_LOG", &log);
    let last = wait_line_with(&s, first, &s.pane, "^done [0-9]+$");
    let numbers: Vec<u32> = (0..9).map(|i| 100_001 + i * 9_001).collect();
    let waits: Vec<(String, Waiter)> = numbers
        .iter()
        .map(|n| (n.to_string(), wait_line(&s, &s.pane, &format!("^{n}$"))))
        .collect();
    s.type_line(
        &s.pane,
        "seq 1 200000 | grep --color=always '[0-9]*'; echo done 8",
    );
    for (line, w) in waits {
        let v = w.finish(&s).json();
        assert_eq!(v["matched_lines"], serde_json::json!([line]), "{v}");
    }
    assert_flood_tail(&last.finish(&s).json(), "done 8", 199_995, 200_000);
    let (sieved, text) = sieved_waits(&log, 10, (1, 5));
    assert!(sieved >= 8, "waits sieved: {sieved}: {text}");
}

/// A screen redrawn in place as fast as Python writes it: first from home,
/// each row cleared and drawn in colour with a spinner (an agent's screen
/// while it works), then as an Ink TUI draws (Claude Code, Gemini CLI,
/// Qwen Code): the last frame erased line by line going up, inside
/// synchronized output, the cursor hidden.
const REDRAW: &str = r#"import sys
w = sys.stdout.buffer
spin = "\u280b\u2819\u2839\u2838\u283c"
for f in range(3000):
    rows = [b"\x1b[H"]
    for r in range(30):
        rows.append(("\x1b[2K\x1b[38;5;%dm%s\x1b[0m working on step %d, row %d \x1b[1mbold\x1b[22m\r\n"
                     % (16 + (f + r) % 200, spin[(f + r) % 5], f, r)).encode())
    w.write(b"".join(rows))
w.write(b"\x1b[2J\x1b[H")
for f in range(3000):
    out = [b"\x1b[?2026h\x1b[?25l"]
    if f:
        out.append(b"\x1b[2K\x1b[1A" * 9 + b"\x1b[2K\x1b[G")
    out.append("\r\n".join("\x1b[36m%s\x1b[39m thinking %d.%d" % (spin[f % 5], f, r)
                           for r in range(10)).encode())
    out.append(b"\x1b[?2026l")
    w.write(b"".join(out))
w.write(b"\r\nall done\r\n")
w.flush()
"#;

/// Ten waits on a screen redrawn in place ([`REDRAW`]): each gets exactly
/// its line (one in each kind of frame), and most of the screen is left
/// out of what each is sent: the hub parses the frames once for all of
/// them (see `pane::vt::frames`).
#[test]
fn waits_on_a_redrawn_screen_get_their_line_with_most_of_it_left_out() {
    let s = TestServer::new();
    let log = s.dir().join("hub.log");
    let script = s.dir().join("redraw.py");
    std::fs::write(&script, REDRAW).unwrap();
    let mut first = s.tw();
    first.env("TMUX_WAIT_HUB_LOG", &log);
    let last = wait_line_with(&s, first, &s.pane, "^all done$");
    let lines: Vec<String> = [(700, 3), (1500, 29), (2999, 0), (2400, 12), (2900, 17)]
        .iter()
        .map(|(f, r)| format!(" working on step {f}, row {r} bold"))
        .chain(
            [(600, 2), (1700, 9), (2999, 9), (2100, 0)]
                .iter()
                .map(|(f, r)| format!(" thinking {f}.{r}")),
        )
        .collect();
    let waits: Vec<(String, Waiter)> = lines
        .iter()
        .map(|l| {
            (
                l.clone(),
                wait_line(&s, &s.pane, &format!("{}$", regex::escape(l))),
            )
        })
        .collect();
    s.type_line(&s.pane, &format!("python3 {}", script.display()));
    for (line, w) in waits {
        let v = w.finish(&s).json();
        let got = v["matched_lines"][0]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            got.ends_with(&line) && got.chars().count() == line.chars().count() + 1,
            "{line}: {v}"
        );
    }
    let v = last.finish(&s).json();
    assert_eq!(v["matched_lines"], serde_json::json!(["all done"]), "{v}");
    let (sieved, text) = sieved_waits(&log, 10, (1, 2));
    assert!(sieved >= 8, "waits with most left out: {sieved}: {text}");
}

/// The last wait's reply ends the flood: it matched `done`, and its tail
/// holds the flood's last lines, `from..=to`, as drawn.
fn assert_flood_tail(v: &serde_json::Value, done: &str, from: u32, to: u32) {
    assert_eq!(v["matched_lines"], serde_json::json!([done]), "{v}");
    let tail: Vec<&str> = v["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let want: Vec<String> = (from..=to).map(|n| n.to_string()).collect();
    assert!(
        tail.windows(want.len()).any(|w| w == want),
        "the flood's last lines in the tail: {tail:?}"
    );
}

/// The hub's log (it logs each wait's bytes as it leaves) once `waits`
/// have left, and how many of them were sent over a megabyte with more
/// than `share` (a fraction: n, d) of it left out.
fn sieved_waits(log: &std::path::Path, waits: usize, share: (u64, u64)) -> (usize, String) {
    let end = std::time::Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.matches("left out").count() >= waits || std::time::Instant::now() > end {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let sieved = text
        .lines()
        .filter_map(|l| l.split(": streamed ").nth(1))
        .filter_map(|r| {
            let (a, b) = r.split_once(", left out ")?;
            Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?))
        })
        .filter(|(streamed, left)| *streamed > 1_000_000 && left * share.1 > streamed * share.0)
        .count();
    (sieved, text)
}
