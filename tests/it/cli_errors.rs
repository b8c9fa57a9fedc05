//! Bad input: a clear one-line error and a documented exit code, never a
//! panic, a hang or a silent success.

use crate::common::*;
use std::process::Command;

fn tw_no_server(args: &[&str]) -> Finished {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(BIN);
    c.arg("-S").arg(dir.path().join("none")).args(args);
    c.env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("TMUX_WAIT_MAX_SECONDS");
    run_bounded(c)
}

fn assert_error(f: &Finished, kind: &str, needle: &str) {
    assert_eq!(f.code, Some(2), "stdout {} stderr {}", f.stdout, f.stderr);
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    assert!(f.stderr.starts_with("tmux-wait: error: "), "{}", f.stderr);
    assert!(f.stderr.contains(needle), "{:?} lacks {needle:?}", f.stderr);
    if !f.stdout.is_empty() {
        assert_eq!(f.json()["error"]["kind"], kind);
        assert!(f.json()["error"]["message"].is_string());
    }
}

#[test]
fn usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["text", "--bogus", "--json"], "unexpected argument"),
        (&["text", "--timeout", "soon", "--json"], "--timeout"),
        (&["text", "--interval", "5ms", "--json"], "minimum of 10ms"),
        (&["text", "--interval", "nan", "--json"], "--interval"),
        (&["text", "--engine", "magic", "--json"], "invalid value"),
        (&["nosuchcommand"], "unrecognized subcommand"),
    ];
    for (args, needle) in cases {
        let f = tw_no_server(args);
        assert_error(&f, "usage", needle);
    }
    let mut c = Command::new(BIN);
    c.args(["-L", "a", "-S", "/nonexistent/x", "text", "--json"]);
    assert_error(&run_bounded(c), "usage", "cannot be used with");
}

#[test]
fn invalid_regexes_name_the_pattern() {
    let f = tw_no_server(&[
        "text",
        "--regex",
        "--pattern",
        "ok",
        "--stop",
        "(unclosed",
        "--json",
    ]);
    assert_error(&f, "invalid_regex", "--stop #1 is not a valid regex");
    let f = tw_no_server(&["text", "--pattern", "", "--json"]);
    assert_error(&f, "invalid_regex", "--pattern #1 is empty");
}

#[test]
fn bad_ceiling_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(BIN);
    c.arg("-S").arg(dir.path().join("none"));
    c.env("TMUX_WAIT_MAX_SECONDS", "forever")
        .args(["text", "--json"]);
    let f = run_bounded(c);
    assert_error(&f, "usage", "TMUX_WAIT_MAX_SECONDS");
}

#[test]
fn no_server() {
    assert_error(&tw_no_server(&["text", "--json"]), "no_server", "tmux:");
    assert_error(
        &tw_no_server(&["channel", "x", "--json"]),
        "no_server",
        "tmux:",
    );
    assert_error(&tw_no_server(&["signal", "x"]), "no_server", "tmux:");
}

#[test]
fn no_such_pane() {
    let s = TestServer::new();
    for t in ["%999", "main:7", "nosuch:0.0", "@99"] {
        let mut c = s.tw();
        c.args(["text", "-t", t, "--json", "--timeout", "2"]);
        let f = run_bounded(c);
        assert_error(&f, "no_pane", "no pane matches target");
    }
    let mut c = s.tw();
    c.args(["text", "-t", "bad\ntarget", "--json"]);
    assert_error(&run_bounded(c), "no_pane", "invalid target");
}

#[test]
fn ready_channel_is_validated() {
    let f = tw_no_server(&["text", "--ready", "a b", "--json"]);
    assert_error(&f, "invalid_channel", "invalid channel name");
    let f = tw_no_server(&["watch", "--done", "--ready", "a b", "--json"]);
    assert_error(&f, "invalid_channel", "invalid channel name");
}

#[test]
fn version_and_help() {
    let f = tw_no_server(&["--version"]);
    assert_eq!(f.code, Some(0));
    assert_eq!(
        f.stdout.trim(),
        format!("tmux-wait {}", env!("CARGO_PKG_VERSION"))
    );
    let f = tw_no_server(&["text", "--help"]);
    assert_eq!(f.code, Some(0));
    for needle in [
        "Exit codes:",
        "--pattern",
        "--ready",
        "alternate screen",
        "143",
    ] {
        assert!(f.stdout.contains(needle), "help lacks {needle}");
    }
}

/// Type `line` into `pane` followed by what records its exit status, its
/// stdout and stderr in files; return them once the line has ended.
fn in_pane(s: &TestServer, pane: &str, line: &str) -> Finished {
    let ch = unique("done");
    let d = s.dir().display().to_string();
    s.type_line(
        pane,
        &format!("{line} >'{d}/out' 2>'{d}/err'; echo $? >'{d}/st'; tmux wait-for -S {ch}"),
    );
    let mut w = s.tmux_cmd();
    w.args(["wait-for", &ch]);
    assert_eq!(run_bounded(w).code, Some(0));
    let read = |f: &str| std::fs::read_to_string(s.dir().join(f)).unwrap_or_default();
    Finished {
        code: read("st").trim().parse().ok(),
        stdout: read("out"),
        stderr: read("err"),
    }
}

/// `run` typed at a pane's prompt without -t would type into its own pane
/// and wait for itself: refused at once (exit 125, one line saying what to
/// do). -t '{last}' from a second pane types into the first one.
#[test]
fn run_refuses_its_own_pane() {
    let s = TestServer::new();
    let first = s.pane.clone();
    for line in [
        "tmux-wait run -- echo hi",
        "tmux-wait run -t \"$TMUX_PANE\" -- echo hi",
        "{ x=$(tmux-wait run -- echo hi); }",
    ] {
        let start = std::time::Instant::now();
        let f = in_pane(&s, &first, line);
        assert_eq!(f.code, Some(125), "{line}: {f:?}");
        assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
        assert!(
            f.stderr
                .starts_with("tmux-wait: error: run types into another pane")
                && f.stderr.contains("-t '{last}'"),
            "{}",
            f.stderr
        );
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        s.wait_for_prompt(&first);
    }
    let f = in_pane(&s, &first, "tmux-wait run --json -- echo hi");
    assert_eq!(f.code, Some(125), "{f:?}");
    assert_eq!(f.json()["error"]["kind"], "usage");
    // A background job of the pane's shell may type into it: the shell is
    // at its prompt.
    s.wait_for_prompt(&first);
    let f = in_pane(
        &s,
        &first,
        "(sleep 0.3; tmux-wait run -t \"$TMUX_PANE\" -- echo from-the-job) &",
    );
    assert_eq!(f.code, Some(0), "{f:?}");
    s.wait_until(&first, "the background run", || {
        s.capture(&first).contains("from-the-job\n")
    });
    // (The next command line lets bash report the job as done.)
    s.wait_until(&first, "the job to end", || {
        in_pane(&s, &first, "jobs").stdout.is_empty()
    });
    s.wait_for_prompt(&first);
    // From a second pane, '{last}' is the first one.
    // (A pane split from the command line gets that client's environment.)
    let out = s
        .tmux_cmd()
        .args(["split-window", "-P", "-F", "#{pane_id}"])
        .env("PATH", path_with_helper())
        .output()
        .unwrap();
    let second = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    s.wait_for_prompt(&second);
    s.wait_for_prompt(&first);
    let f = in_pane(
        &s,
        &second,
        "tmux-wait run -t '{last}' -- 'echo typed; (exit 4)'",
    );
    assert_eq!(f.code, Some(4), "{f:?}");
    assert_eq!(f.stdout, "typed\n");
    assert!(f.stderr.is_empty(), "{}", f.stderr);
}
