//! `run` and `output` on real tmux servers: exit statuses, output without
//! prompt or echo, shell state, concurrency, timeouts continued by
//! `output`, cursors, clipping, saving, trimmed history, program prompts
//! and unsubmitted input.

use crate::common::{Finished, Options, TestServer, done, run_bounded, unique};
use serde_json::Value;

fn run(s: &TestServer, args: &[&str]) -> Finished {
    let mut c = s.tw();
    c.arg("run").args(args);
    run_bounded(c)
}

fn output(s: &TestServer, args: &[&str]) -> Finished {
    let mut c = s.tw();
    c.arg("output").args(args);
    run_bounded(c)
}

fn lines(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect()
}

/// Run with --json on the first pane; the result and the exit code.
fn run_json(s: &TestServer, extra: &[&str], command: &str) -> (Value, Option<i32>) {
    let mut args = vec!["-t", s.pane.as_str(), "--json"];
    args.extend_from_slice(extra);
    args.extend(["--", command]);
    let f = run(s, &args);
    (f.json(), f.code)
}

#[test]
fn exit_statuses_are_the_commands() {
    let s = TestServer::new();
    for (cmd, code) in [
        ("true", 0),
        ("false", 1),
        ("(exit 2)", 2),
        ("no-such-command-xyz", 127),
    ] {
        let (v, c) = run_json(&s, &[], cmd);
        assert_eq!(c, Some(code), "{v}");
        assert_eq!(v["exit_status"], code, "{v}");
        assert_eq!(v["timed_out"], false);
        assert_eq!(v["exit_source"], "wrapper");
    }
    // Without --json: the output on stdout, the status as exit code.
    let f = run(
        &s,
        &[
            "-t",
            &s.pane,
            "--",
            "echo out; exit_code() { return 3; }; exit_code",
        ],
    );
    assert_eq!(f.code, Some(3), "{f:?}");
    assert_eq!(f.stdout, "out\n");
}

#[test]
fn output_is_the_commands_own_lines() {
    let s = TestServer::new();
    let (v, _) = run_json(&s, &[], "echo first; printf 'second\\n\\nfourth'");
    assert_eq!(
        lines(&v, "output"),
        ["first", "second", "", "fourth"],
        "{v}"
    );
    // The peer's run_command keys are all there.
    for k in [
        "pane_id",
        "exit_status",
        "timed_out",
        "elapsed_seconds",
        "output",
        "output_truncated",
        "output_truncated_lines",
        "effective_timeout",
    ] {
        assert!(v.get(k).is_some(), "{k} missing in {v}");
    }
    let (v, _) = run_json(&s, &[], "true");
    assert_eq!(lines(&v, "output"), Vec::<String>::new(), "{v}");
}

#[test]
fn hostile_command_text_runs_as_typed() {
    let s = TestServer::new();
    let marker = s.dir().join("not-created");
    let cmd = format!(
        "printf '%s\\n' 'a;b' \"it's\" '$(touch {m})' '#{{pane_id}}' '#(touch {m})' '`touch {m}`' 'x;' '\\;' '~' '$HOME' '\"q\"' '{{' '}}' '%if 1' '# not a comment' 'é'",
        m = marker.display()
    );
    let (v, c) = run_json(&s, &[], &cmd);
    assert_eq!(c, Some(0), "{v}");
    assert_eq!(
        lines(&v, "output"),
        [
            "a;b",
            "it's",
            &format!("$(touch {})", marker.display()),
            "#{pane_id}",
            &format!("#(touch {})", marker.display()),
            &format!("`touch {}`", marker.display()),
            "x;",
            "\\;",
            "~",
            "$HOME",
            "\"q\"",
            "{",
            "}",
            "%if 1",
            "# not a comment",
            "é",
        ]
    );
    assert!(!marker.exists());
}

/// A pane in copy mode, or showing a full-screen program, is not typed
/// into: tmux checks and types in one command list. `--save-to` is left
/// as it was.
#[test]
fn run_types_nothing_into_copy_mode_or_a_full_screen() {
    let s = TestServer::new();
    let saved = s.dir().join("saved.txt");
    let saved_arg = saved.display().to_string();
    let absent = s.dir().join("absent.txt");
    let absent_arg = absent.display().to_string();
    std::fs::write(&saved, "kept\n").unwrap();
    let fmt = |f: &str| {
        s.tmux(&["display-message", "-p", "-t", &s.pane, f])
            .trim()
            .to_owned()
    };
    s.tmux(&["copy-mode", "-t", &s.pane]);
    s.wait_until(&s.pane, "copy mode", || fmt("#{pane_in_mode}") == "1");
    for save in [&saved_arg, &absent_arg] {
        let f = run(
            &s,
            &["-t", &s.pane, "--save-to", save, "--", "echo typed-in-mode"],
        );
        assert_eq!(f.code, Some(125), "{f:?}");
        assert!(f.stderr.contains("copy mode"), "{}", f.stderr);
    }
    assert_eq!(fmt("#{pane_in_mode}"), "1", "copy mode was left");
    s.tmux(&["send-keys", "-t", &s.pane, "-X", "cancel"]);
    s.wait_until(&s.pane, "copy mode to end", || {
        fmt("#{pane_in_mode}") == "0"
    });
    // The shell at its prompt, on the alternate screen.
    s.type_line(&s.pane, "printf '\\033[?1049h'");
    s.wait_until(&s.pane, "the alternate screen", || {
        fmt("#{alternate_on}") == "1"
    });
    let f = run(
        &s,
        &[
            "-t",
            &s.pane,
            "--save-to",
            &saved_arg,
            "--",
            "echo typed-in-full-screen",
        ],
    );
    assert_eq!(f.code, Some(125), "{f:?}");
    assert!(f.stderr.contains("full-screen program"), "{}", f.stderr);
    s.type_line(&s.pane, "printf '\\033[?1049l'");
    s.wait_until(&s.pane, "the normal screen", || {
        fmt("#{alternate_on}") == "0"
    });
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), "kept\n");
    assert!(!absent.exists(), "--save-to made a file though nothing ran");
    // Nothing was typed: a run now finds an empty prompt (it refuses one
    // with text on it), and its output replaces the saved file's.
    let (v, c) = run_json(&s, &["--save-to", &saved_arg], "echo after");
    assert_eq!(c, Some(0), "{v}");
    assert_eq!(lines(&v, "output"), ["after"]);
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), "after\n");
    assert!(
        !s.capture(&s.pane).contains("typed-in"),
        "{}",
        s.capture(&s.pane)
    );
}

#[test]
fn shell_state_persists_between_runs() {
    let s = TestServer::new();
    let d = s.dir().join("sub dir");
    std::fs::create_dir(&d).unwrap();
    run_json(
        &s,
        &[],
        &format!("cd '{}' && export TW_X=kept", d.display()),
    );
    let (v, _) = run_json(&s, &[], "pwd; echo $TW_X");
    assert_eq!(
        lines(&v, "output"),
        [d.display().to_string(), "kept".into()]
    );
}

#[test]
fn concurrent_runs_in_two_panes() {
    let s = TestServer::new();
    let p2 = s.split();
    let go = unique("go");
    // A channel for each: a shared one woken while only one of the two
    // `wait-for` clients had registered would wake that one and leave
    // the other waiting on a fresh channel (tmux keeps the wake-up only
    // for a channel nobody waits on).
    let spawn = |pane: &str, word: &str| {
        let mut c = s.tw();
        c.args(["run", "-t", pane, "--json", "--"])
            .arg(format!("tmux wait-for {go}-{word}; echo {word}; false"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    let a = spawn(&s.pane, "left");
    let b = spawn(&p2, "right");
    s.wait_for_command(&s.pane, "tmux");
    s.wait_for_command(&p2, "tmux");
    // Both commands are running, and both runs follow them at once.
    s.tmux(&["wait-for", "-S", &format!("{go}-left")]);
    s.tmux(&["wait-for", "-S", &format!("{go}-right")]);
    for (child, word) in [(a, "left"), (b, "right")] {
        let f = crate::common::finished(child.wait_with_output().unwrap());
        let v = f.json();
        assert_eq!(lines(&v, "output"), [word], "{v}");
        assert_eq!(v["exit_status"], 1);
    }
}

#[test]
fn a_timed_out_run_is_continued_by_output() {
    let s = TestServer::new();
    let go = unique("go");
    let save = s.dir().join("saved.log");
    let cmd = format!("echo one; tmux wait-for {go}; echo two; (exit 3)");
    let (v, c) = run_json(
        &s,
        &["--timeout", "0.3", "--save-to", save.to_str().unwrap()],
        &cmd,
    );
    assert_eq!(c, Some(124), "{v}");
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["exit_status"], Value::Null);
    assert_eq!(lines(&v, "output"), ["one"]);
    // output, armed before the command goes on, sees the rest and the end.
    let ready = unique("ready");
    let mut o = s.tw();
    o.args(["output", "-t", &s.pane, "--json", "--ready", &ready])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = o.spawn().unwrap();
    s.tmux(&["wait-for", &ready]);
    s.tmux(&["wait-for", "-S", &go]);
    let f = crate::common::finished(child.wait_with_output().unwrap());
    let mut v = f.json();
    let mut got = lines(&v, "lines");
    // Each call returns one burst; the end may come in the next.
    for _ in 0..5 {
        if v["finished"] == true {
            break;
        }
        v = output(&s, &["-t", &s.pane, "--json"]).json();
        got.extend(lines(&v, "lines"));
    }
    assert_eq!(got, ["two"], "{v}");
    assert_eq!(v["finished"], true, "{v}");
    assert_eq!(v["exit_status"], 3, "{v}");
    assert_eq!(v["exit_source"], "wrapper");
    // The follower run left behind kept the file up to date and ended.
    s.wait_until(&s.pane, "the saved output", || {
        std::fs::read_to_string(&save).unwrap_or_default() == "one\ntwo\n"
    });
    s.wait_until(&s.pane, "the follower to end", || {
        s.processes_using_socket().is_empty()
    });
}

/// A typed line that fills its last row exactly leaves the cursor on a row
/// tmux counts as its continuation: the command's first line, written
/// there after `run` returned, is joined to the typed line in tmux's
/// history. `output` still gives it, at every length of the typed line in
/// a 20-column pane.
#[test]
fn output_joined_to_a_typed_line_that_fills_its_row_is_kept() {
    let s = TestServer::new();
    s.tmux(&["resize-window", "-t", &s.pane, "-x", "20"]);
    // One channel (its name's length stays), signalled once its waiter runs.
    let go = unique("go");
    for pad in 0..20 {
        let word = format!("after{}", "x".repeat(pad));
        let cmd = format!("tmux wait-for {go}; echo {word}");
        let (v, c) = run_json(&s, &["--timeout", "0.2"], &cmd);
        assert_eq!(c, Some(124), "pad {pad}: {v}");
        s.wait_for_command(&s.pane, "tmux");
        s.tmux(&["wait-for", "-S", &go]);
        s.wait_for_prompt(&s.pane);
        let mut got = Vec::new();
        for _ in 0..5 {
            let v = output(&s, &["-t", &s.pane, "--json"]).json();
            got.extend(lines(&v, "lines"));
            if v["finished"] == true {
                break;
            }
        }
        assert_eq!(got, [word], "pad {pad}: {}", s.capture(&s.pane));
    }
}

#[test]
fn a_run_that_ended_unwatched_reports_its_status_from_its_follower() {
    let s = TestServer::new();
    let go = unique("go");
    let (v, c) = run_json(
        &s,
        &["--timeout", "0.2"],
        &format!("tmux wait-for {go}; echo late; (exit 7)"),
    );
    assert_eq!(c, Some(124), "{v}");
    s.tmux(&["wait-for", "-S", &go]);
    s.wait_until(&s.pane, "the follower to end", || {
        s.processes_using_socket().is_empty()
    });
    let f = output(&s, &["-t", &s.pane, "--json"]);
    let v = f.json();
    assert_eq!(lines(&v, "lines"), ["late"], "{v}");
    assert_eq!(v["exit_status"], 7, "{v}");
    assert_eq!(v["finished"], true);
    // Nothing is left in the pane's options but the cursor.
    let opts = s.tmux(&["show-options", "-p", "-t", &s.pane]);
    assert!(!opts.contains("tmux-wait-exit"), "{opts}");
}

#[test]
fn two_named_cursors_read_the_same_lines_independently() {
    let s = TestServer::new();
    for c in ["a", "b"] {
        output(&s, &["-t", &s.pane, "--cursor", c, "--timeout", "0.1"]);
    }
    run_json(&s, &[], "echo alpha");
    let a = output(&s, &["-t", &s.pane, "--cursor", "a", "--json"]).json();
    assert!(lines(&a, "lines").contains(&"alpha".to_owned()), "{a}");
    run_json(&s, &[], "echo beta");
    let a = output(&s, &["-t", &s.pane, "--cursor", "a", "--json"]).json();
    let b = output(&s, &["-t", &s.pane, "--cursor", "b", "--json"]).json();
    let (la, lb) = (lines(&a, "lines"), lines(&b, "lines"));
    assert!(
        la.contains(&"beta".to_owned()) && !la.contains(&"alpha".to_owned()),
        "{a}"
    );
    assert!(
        lb.contains(&"alpha".to_owned()) && lb.contains(&"beta".to_owned()),
        "{b}"
    );
    // Nothing new and nothing running: cursor a says so at once, with no
    // lines (exit 0, reason idle); waiting for a pattern waits it out
    // (exit 1).
    let f = output(
        &s,
        &["-t", &s.pane, "--cursor", "a", "--json", "--timeout", "5"],
    );
    assert_eq!(f.code, Some(0), "{}", f.stdout);
    assert_eq!(f.json()["reason"], "idle", "{}", f.stdout);
    assert_eq!(lines(&f.json(), "lines"), Vec::<String>::new());
    let f = output(
        &s,
        &[
            "-t",
            &s.pane,
            "--cursor",
            "a",
            "--json",
            "--timeout",
            "0.2",
            "--until",
            "never",
        ],
    );
    assert_eq!(f.code, Some(1), "{}", f.stdout);
    assert_eq!(lines(&f.json(), "lines"), Vec::<String>::new());
}

#[test]
fn until_returns_while_the_command_runs() {
    let s = TestServer::new();
    let go = unique("go");
    let (v, _) = run_json(
        &s,
        &["--timeout", "0.2"],
        // READY is printed by the program that then waits, so whatever
        // `output --until` returns it names that program as running (an
        // `echo` followed by `tmux wait-for` left a moment where bash was).
        &format!(
            "echo starting; tmux wait-for {go}; python3 -c \"import subprocess; \
             print('READY now', flush=True); subprocess.run(['tmux', 'wait-for', '{go}'])\"; \
             echo end"
        ),
    );
    assert_eq!(v["timed_out"], true);
    let ready = unique("ready");
    let mut o = s.tw();
    o.args([
        "output", "-t", &s.pane, "--json", "--until", "READY", "--ready", &ready,
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let child = o.spawn().unwrap();
    s.tmux(&["wait-for", &ready]);
    s.tmux(&["wait-for", "-S", &go]);
    let v = crate::common::finished(child.wait_with_output().unwrap()).json();
    assert_eq!(v["reason"], "until", "{v}");
    assert_eq!(v["finished"], false);
    assert_eq!(lines(&v, "lines"), ["READY now"]);
    assert!(v["running"].as_str().unwrap().starts_with("python"), "{v}");
    s.tmux(&["wait-for", "-S", &go]);
    let v = output(&s, &["-t", &s.pane, "--json"]).json();
    assert!(lines(&v, "lines").contains(&"end".to_owned()), "{v}");
}

#[test]
fn max_lines_keeps_a_failing_summary_from_the_middle() {
    let s = TestServer::new();
    let cmd = "seq 1 300; echo 'test result: FAILED. 41 passed; 1 failed'; \
               echo 'src/x.c:3:7: error: boom'; seq 301 600; (exit 101)";
    let (v, c) = run_json(&s, &["--max-lines", "20"], cmd);
    assert_eq!(c, Some(101));
    let out = lines(&v, "output");
    assert_eq!(out[0], "test result: FAILED. 41 passed; 1 failed", "{v}");
    assert_eq!(out[1], "src/x.c:3:7: error: boom");
    assert_eq!(out[2], "1");
    assert_eq!(out.last().unwrap(), "600");
    assert!(out.iter().any(|l| l.contains("lines clipped")), "{v}");
    assert_eq!(v["output_truncated"], true);
    assert_eq!(v["output_truncated_lines"], 602 - 18);
    // --show and --last-lines
    let (v, _) = run_json(&s, &["--show", "^5.$", "--last-lines", "1"], "seq 1 100");
    assert_eq!(
        lines(&v, "output"),
        [
            "50:50", "51:51", "52:52", "53:53", "54:54", "55:55", "56:56", "57:57", "58:58",
            "59:59", "100-100"
        ]
    );
}

#[test]
fn save_to_holds_the_whole_output() {
    let s = TestServer::new();
    let save = s.dir().join("out.txt");
    let (v, _) = run_json(
        &s,
        &["--save-to", save.to_str().unwrap(), "--last-lines", "2"],
        "seq 1 5000",
    );
    assert_eq!(lines(&v, "output"), ["4999", "5000"]);
    let want: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&save).unwrap(), want);
    // An unwritable path is a clear error before anything is typed.
    let f = run(
        &s,
        &[
            "-t",
            &s.pane,
            "--save-to",
            "/nonexistent-dir/x",
            "--",
            "echo no",
        ],
    );
    assert_eq!(f.code, Some(125), "{f:?}");
    assert!(f.stderr.contains("cannot write --save-to"), "{}", f.stderr);
    assert_eq!(f.stderr.lines().count(), 1);
}

#[test]
fn trimmed_history_is_reported_as_missed_lines() {
    let s = TestServer::with(Options {
        history_limit: 100,
        ..Default::default()
    });
    output(&s, &["-t", &s.pane, "--timeout", "0.1"]);
    // Written with nobody watching, far past the history limit.
    s.type_line(&s.pane, "seq 1 3000");
    s.wait_until(&s.pane, "seq to finish", || {
        s.capture(&s.pane).contains("\n3000\n")
    });
    s.wait_for_prompt(&s.pane);
    let v = output(&s, &["-t", &s.pane, "--json", "--max-lines", "0"]).json();
    assert_eq!(v["lines_missed_exact"], false, "{v}");
    assert!(v["lines_missed"].as_u64().unwrap() > 0, "{v}");
    let got = lines(&v, "lines");
    assert_eq!(got.last().unwrap(), "3000");
    assert_ne!(got[0], "$ seq 1 3000", "lines from before the trim: {v}");
    // Right after, nothing was missed.
    run_json(&s, &[], "echo again");
    let v = output(&s, &["-t", &s.pane, "--json", "--timeout", "0.2"]).json();
    assert_eq!(v["lines_missed"], 0, "{v}");
    assert_eq!(v["lines_missed_exact"], true);
}

#[test]
fn a_python_prompt_is_where_output_stops() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("0")
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        panic!("python3 is needed for this test (CI installs it)");
    }
    let s = TestServer::new();
    let (v, c) = run_json(&s, &[], "python3 -q");
    assert_eq!(c, Some(0), "{v}");
    assert_eq!(v["prompt"], ">>>", "{v}");
    assert_eq!(v["finished"], false);
    s.type_line(&s.pane, "print(6*7)");
    let v = output(&s, &["-t", &s.pane, "--json"]).json();
    assert_eq!(v["reason"], "prompt", "{v}");
    assert!(lines(&v, "lines").contains(&"42".to_owned()), "{v}");
    s.type_line(&s.pane, "exit()");
    // Each call returns what came (the echo first, maybe), until the end.
    let mut seen = Vec::new();
    for _ in 0..10 {
        let v = output(&s, &["-t", &s.pane, "--json"]).json();
        seen.push(v.clone());
        if v["finished"] == true {
            // The follower `run` left watched python end.
            assert_eq!(v["exit_status"], 0, "{v}");
            return;
        }
    }
    panic!("python's end was never reported: {seen:?}");
}

#[test]
fn unsubmitted_text_is_reported_and_never_typed_over() {
    let s = TestServer::new();
    s.tmux(&["send-keys", "-t", &s.pane, "-l", "echo half-typed"]);
    s.wait_until(&s.pane, "the typed text", || {
        s.capture(&s.pane).contains("$ echo half-typed")
    });
    let f = run(&s, &["-t", &s.pane, "--", "echo other"]);
    assert_eq!(f.code, Some(125), "{f:?}");
    assert!(f.stderr.contains("unsubmitted text"), "{}", f.stderr);
    let v = output(&s, &["-t", &s.pane, "--json", "--timeout", "0.2"]).json();
    assert_eq!(v["unsubmitted_input"], "$ echo half-typed", "{v}");
    assert_eq!(v["input_outcome"], "pending");
    // --force clears the line and runs.
    let (v, c) = run_json(&s, &["--force"], "echo forced");
    assert_eq!(c, Some(0), "{v}");
    assert_eq!(lines(&v, "output"), ["forced"]);
}

/// Text typed at the prompt and submitted while an `--until` wait runs:
/// the command it starts is followed to the pattern (the submission is no
/// answer to `--until`).
#[test]
fn until_waits_past_the_submission_of_typed_text() {
    let s = TestServer::new();
    let go = unique("go");
    let ready = unique("ready");
    s.tmux(&[
        "send-keys",
        "-t",
        &s.pane,
        "-l",
        &format!("tmux wait-for {go}; echo UN''TIL_3"),
    ]);
    s.wait_until(&s.pane, "the typed text", || {
        s.capture(&s.pane).contains("echo UN''TIL_3")
    });
    let w = s.spawn(&[
        "output", "-t", &s.pane, "--until", "UNTIL_", "--json", "--ready", &ready,
    ]);
    s.tmux(&["wait-for", &ready]);
    s.tmux(&["send-keys", "-t", &s.pane, "Enter"]);
    s.wait_for_command(&s.pane, "tmux");
    s.tmux(&["wait-for", "-S", &go]);
    let v = done(w).json();
    assert_eq!(v["reason"], "until", "{v}");
    assert_eq!(lines(&v, "lines"), ["UNTIL_3"], "{v}");
    assert_eq!(v["input_outcome"], "submitted", "{v}");
}

/// Typed text erased while a wait runs: the wait says so when it goes.
#[test]
fn typed_text_erased_is_said() {
    let s = TestServer::new();
    let ready = unique("ready");
    s.tmux(&["send-keys", "-t", &s.pane, "-l", "echo never"]);
    s.wait_until(&s.pane, "the typed text", || {
        s.capture(&s.pane).contains("$ echo never")
    });
    let w = s.spawn(&["output", "-t", &s.pane, "--json", "--ready", &ready]);
    s.tmux(&["wait-for", &ready]);
    s.tmux(&["send-keys", "-t", &s.pane, "C-u"]);
    let v = done(w).json();
    assert_eq!(v["input_outcome"], "erased", "{v}");
    assert_eq!(v["unsubmitted_input"], "$ echo never", "{v}");
    assert_eq!(lines(&v, "lines"), Vec::<String>::new(), "{v}");
}

#[test]
fn run_refuses_a_pane_that_is_not_at_a_prompt() {
    let s = TestServer::new();
    let go = unique("go");
    s.type_line(&s.pane, &format!("tmux wait-for {go}"));
    s.wait_for_command(&s.pane, "tmux");
    let f = run(&s, &["-t", &s.pane, "--", "echo no"]);
    assert_eq!(f.code, Some(125), "{f:?}");
    assert!(f.stderr.contains("not at a shell prompt"), "{}", f.stderr);
    s.tmux(&["wait-for", "-S", &go]);
    for bad in [
        &["--", "a\nb"][..],
        &["--", ""],
        &["--max-lines", "x", "--", "ls"],
    ] {
        let mut args = vec!["-t", s.pane.as_str()];
        args.extend_from_slice(bad);
        let f = run(&s, &args);
        assert_eq!(f.code, Some(125), "{bad:?}: {f:?}");
        assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
    }
}

#[test]
fn ndjson_streams_each_burst_until_the_end() {
    let s = TestServer::new();
    let go = unique("go");
    let (v, _) = run_json(
        &s,
        &["--timeout", "0.2"],
        &format!(
            "echo one; tmux wait-for {go}; echo two; tmux wait-for {go}; echo three; (exit 5)"
        ),
    );
    assert_eq!(v["timed_out"], true);
    let ready = unique("ready");
    let mut o = s.tw();
    o.args(["output", "-t", &s.pane, "--ndjson", "--ready", &ready])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = o.spawn().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    s.tmux(&["wait-for", &ready]);
    let mut objects: Vec<Value> = Vec::new();
    let mut next = || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    // Each signal releases one burst, read before the next is sent.
    s.tmux(&["wait-for", "-S", &go]);
    objects.push(next());
    while !lines(objects.last().unwrap(), "lines").contains(&"two".to_owned()) {
        objects.push(next());
    }
    s.tmux(&["wait-for", "-S", &go]);
    while objects.last().unwrap()["finished"] != true {
        objects.push(next());
    }
    let all: Vec<String> = objects.iter().flat_map(|v| lines(v, "lines")).collect();
    assert_eq!(all, ["two", "three"], "{objects:?}");
    assert_eq!(objects.last().unwrap()["exit_status"], 5);
    assert!(objects.len() >= 2, "{objects:?}");
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
}

/// Where `/proc` cannot say what runs in the pane (not Linux), tmux's
/// `#{pane_current_command}` and `ps` do: the same answers.
#[test]
fn without_proc_tmux_says_what_runs() {
    let s = TestServer::new();
    let tw = |args: &[&str]| {
        let mut c = s.tw();
        c.env("TMUX_WAIT_NO_PROC", "1").args(args);
        run_bounded(c)
    };
    let f = tw(&["run", "-t", &s.pane, "--json", "--", "echo hi; false"]);
    assert_eq!(f.code, Some(1), "{}", f.stdout);
    // A person's command: its end is seen (the shell is back, reading).
    tw(&["output", "-t", &s.pane, "--timeout", "0.1"]);
    let go = unique("go");
    s.type_line(&s.pane, &format!("echo a; tmux wait-for {go}; echo b"));
    s.wait_for_command(&s.pane, "tmux");
    let f = tw(&["run", "-t", &s.pane, "--", "echo no"]);
    assert_eq!(f.code, Some(125), "{f:?}");
    assert!(f.stderr.contains("tmux is running"), "{}", f.stderr);
    s.tmux(&["wait-for", "-S", &go]);
    let mut seen = Vec::new();
    for _ in 0..10 {
        let v = tw(&["output", "-t", &s.pane, "--json"]).json();
        seen.push(v.clone());
        if v["finished"] == true {
            assert_eq!(v["exit_source"], "shell", "{v}");
            let all: Vec<String> = seen.iter().flat_map(|v| lines(v, "lines")).collect();
            assert!(all.contains(&"b".to_owned()), "{seen:?}");
            // An interactive program's prompt, told by tmux's foreground name.
            let f = tw(&["run", "-t", &s.pane, "--json", "--", "python3 -q"]);
            assert_eq!(f.json()["prompt"], ">>>", "{}", f.stdout);
            return;
        }
    }
    panic!("the end was never reported: {seen:?}");
}

/// The follower a timed-out run leaves is listed and can be cancelled.
#[test]
fn a_runs_follower_is_listed_and_cancellable() {
    let s = TestServer::new();
    let go = unique("go");
    let (v, _) = run_json(&s, &["--timeout", "0.2"], &format!("tmux wait-for {go}"));
    assert_eq!(v["timed_out"], true);
    let mut list = Vec::new();
    s.wait_until(&s.pane, "the follower to be listed", || {
        let mut c = s.tw();
        c.args(["list", "--json"]);
        list = run_bounded(c)
            .json()
            .as_array()
            .cloned()
            .unwrap_or_default();
        list.iter().any(|w| w["kind"] == "run")
    });
    let id = list.iter().find(|w| w["kind"] == "run").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut c = s.tw();
    c.args(["cancel", &id]);
    assert_eq!(run_bounded(c).code, Some(0));
    s.wait_until(&s.pane, "the follower to end", || {
        !s.processes_using_socket()
            .iter()
            .any(|p| p.contains("follow-run"))
    });
    s.tmux(&["wait-for", "-S", &go]);
}

/// A shell that does not see our files (in a mount namespace of its own
/// where tmux-wait's private directory is empty, as in a container or a
/// chroot) is typed the whole wrapper, not a line that reads it from a
/// file: the command runs and its output comes back.
#[test]
fn a_shell_that_sees_other_files_runs_the_command_all_the_same() {
    let allowed = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    if !allowed {
        eprintln!("skipped: unshare --mount is not allowed here");
        return;
    }
    let s = TestServer::new();
    let pid = s.tmux(&["display-message", "-p", "-t", &s.pane, "#{pane_pid}"]);
    let ns = format!("/proc/{}/ns/mnt", pid.trim());
    let ours = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    s.type_line(
        &s.pane,
        &format!(
            "exec unshare --mount --propagation private sh -c 'mount -t tmpfs none {} && exec bash --norc --noprofile'",
            s.dir().display()
        ),
    );
    s.wait_until(&s.pane, "the shell in a namespace of its own", || {
        std::fs::read_link(&ns).is_ok_and(|n| n != ours)
            && s.tmux(&[
                "display-message",
                "-p",
                "-t",
                &s.pane,
                "#{pane_current_command}",
            ])
            .trim()
                == "bash"
    });
    let (v, code) = run_json(&s, &["--timeout", "20"], "echo inside");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(lines(&v, "output"), ["inside"], "{v}");
}
