//! Hostile and malformed input (issue 6): arguments a shell or a tmux
//! format would interpret, oversized and invalid ones, and pane output made
//! of escapes, invalid UTF-8, huge and wide lines. Each is a clear one-line
//! error or is handled as data; nothing is ever run.

use crate::common::{TestServer, run_bounded};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// Text that runs something if a shell or tmux ever interprets it.
fn traps(s: &TestServer) -> (String, std::path::PathBuf) {
    let m = s.dir().join("trap-sprung");
    let m = m.display();
    (
        format!("#(touch {m}) $(touch {m}) `touch {m}` #{{pane_id}} ; \" ' \\"),
        s.dir().join("trap-sprung"),
    )
}

fn one_line_error(f: &crate::common::Finished, code: i32, kind: &str) {
    assert_eq!(f.code, Some(code), "{f:?}");
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    if !kind.is_empty() {
        assert_eq!(f.json()["error"]["kind"], kind, "{}", f.stdout);
    }
}

#[test]
fn patterns_that_look_like_code_match_as_text() {
    let s = TestServer::new();
    let (trap, marker) = traps(&s);
    // The pane's shell gets the text as data, through a variable of a new
    // pane's environment.
    s.tmux(&["set-environment", "-g", "TW_TRAP", &trap]);
    let p = s.split();
    let w = s.start_wait(&["text", "-t", &p, "--json", "--pattern", &trap]);
    let mut c = s.tw();
    c.args([
        "run",
        "-t",
        &p,
        "--json",
        "--",
        "printf '%s\\n' \"$TW_TRAP\"",
    ]);
    let r = run_bounded(c).json();
    assert_eq!(r["output"][0], trap.as_str(), "{r}");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}", f.stdout);
    assert_eq!(f.json()["matched_lines"][0], trap.as_str());
    assert!(!marker.exists(), "a trap was sprung");
}

#[test]
fn hostile_targets_channels_and_cursors_are_clear_errors() {
    let s = TestServer::new();
    let (trap, marker) = traps(&s);
    for t in [
        "%0; kill-server",
        "#{pane_id}",
        trap.as_str(),
        "$(touch x)",
        "-t",
    ] {
        let mut c = s.tw();
        c.args(["text", "--json", "--timeout", "1", "-t", t]);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(2), "{t}: {f:?}");
        assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    }
    for name in ["a;b", "$(x)", "#{pane_id}", "a b", "a\nb", &"x".repeat(129)] {
        let mut c = s.tw();
        c.args(["channel", name, "--json", "--timeout", "1"]);
        one_line_error(&run_bounded(c), 2, "invalid_channel");
    }
    for cursor in ["a;b", "#{x}", "../x", ""] {
        let mut c = s.tw();
        c.args([
            "output",
            "-t",
            &s.pane,
            "--json",
            "--timeout",
            "1",
            "--cursor",
            cursor,
        ]);
        one_line_error(&run_bounded(c), 2, "usage");
    }
    // The server was never told to do anything.
    assert!(s.tmux(&["list-sessions"]).contains("main"));
    assert!(!marker.exists());
}

#[test]
fn oversized_invalid_and_catastrophic_arguments() {
    let s = TestServer::new();
    // Linux caps one argument at 128 KiB; 120 KB fits.
    let big = "a".repeat(120_000);
    let mut c = s.tw();
    c.args([
        "text",
        "-t",
        &s.pane,
        "--json",
        "--timeout",
        "0.2",
        "--pattern",
        &big,
    ]);
    assert_eq!(run_bounded(c).code, Some(1));
    let mut c = s.tw();
    c.args([
        "text",
        "-t",
        &s.pane,
        "--json",
        "--timeout",
        "0.2",
        "--regex",
        "--pattern",
    ])
    .arg(format!("({big})+{{1000}}"));
    one_line_error(&run_bounded(c), 2, "invalid_regex");
    let mut c = s.tw();
    c.args(["channel", &big, "--json"]);
    one_line_error(&run_bounded(c), 2, "invalid_channel");
    // Invalid UTF-8 in any argument.
    for sub in ["text", "run", "output", "channel"] {
        let mut c = s.tw();
        c.arg(sub)
            .arg("--pattern")
            .arg(OsStr::from_bytes(b"\xff\xfe"));
        let f = run_bounded(c);
        let want = if sub == "run" { 125 } else { 2 };
        assert_eq!(f.code, Some(want), "{sub}: {f:?}");
        assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    }
    // A pattern with a line break could never match: said at once.
    let mut c = s.tw();
    c.args(["text", "-t", &s.pane, "--json", "--pattern", "a\nb"]);
    one_line_error(&run_bounded(c), 2, "invalid_regex");
    // A catastrophic-backtracking regex on a long line: linear time.
    let w = s.start_wait(&[
        "text",
        "-t",
        &s.pane,
        "--json",
        "--regex",
        "--pattern",
        "^(a+)+$",
        "--timeout",
        "20",
    ]);
    let mut c = s.tw();
    c.args([
        "run",
        "-t",
        &s.pane,
        "--",
        "printf 'a%.0s' $(seq 1 50000); printf 'b\\n'",
    ]);
    assert_eq!(run_bounded(c).code, Some(0));
    s.tmux(&[
        "send-keys",
        "-t",
        &s.pane,
        "-l",
        "printf 'a%.0s' $(seq 1 30000); echo",
    ]);
    s.tmux(&["send-keys", "-t", &s.pane, "Enter"]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}", f.stdout);
}

#[test]
fn hostile_pane_output_is_text_in_json_and_safe_for_people() {
    let s = TestServer::new();
    let (trap, marker) = traps(&s);
    s.tmux(&["set-environment", "-g", "TW_TRAP", &trap]);
    let p = s.split();
    // Invalid UTF-8, control characters, OSC (title, clipboard), DCS, a
    // 10 000-column line, wide and combining characters, and the traps.
    let cmd = "printf 'bad:\\377\\376:end\\n'; \
               printf 'ctl:\\001\\002\\033[31mred\\033[0m\\n'; \
               printf '\\033]0;title\\007\\033]52;c;aGk=\\007\\033Pq#0;2;0;0;0\\033\\\\osc-dcs\\n'; \
               printf 'x%.0s' $(seq 1 10000); printf 'END-OF-LONG\\n'; \
               printf '\\344\\270\\226\\347\\225\\214 e\\314\\201\\n'; \
               printf '%s\\n' \"$TW_TRAP\"";
    let mut c = s.tw();
    c.args(["run", "-t", &p, "--json", "--max-lines", "0", "--"])
        .arg(cmd);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let v = f.json();
    let out: Vec<String> = v["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(out[0], "bad:\u{fffd}\u{fffd}:end", "{v}");
    assert!(out[1].starts_with("ctl:") && out[1].ends_with("red"), "{v}");
    assert_eq!(out[2], "osc-dcs", "{v}");
    assert_eq!(
        out[3].len(),
        10_000 + "END-OF-LONG".len(),
        "long line joined"
    );
    assert_eq!(out[4], "\u{4e16}\u{754c} e\u{301}");
    assert_eq!(out[5], trap);
    // For people: no raw escape or control character reaches the terminal.
    let mut c = s.tw();
    c.args(["run", "-t", &p, "--max-lines", "0", "--"]).arg(cmd);
    let f = run_bounded(c);
    assert!(
        !f.stdout
            .bytes()
            .any(|b| b == 0x1b || (b < 0x20 && b != b'\n')),
        "{:?}",
        f.stdout
    );
    // A text wait finds a marker at the end of the 10 000-column line.
    let w = s.start_wait(&["text", "-t", &p, "--json", "--pattern", "END-OF-LONG"]);
    s.type_line(&p, "printf 'y%.0s' $(seq 1 10000); echo END-OF-LONG");
    assert_eq!(w.finish(&s).code, Some(0));
    assert!(!marker.exists());
}
