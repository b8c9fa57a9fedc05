//! `run` and `output` return every line a command wrote, once, also when
//! the shell itself writes them (a top-level loop of builtins, between its
//! foreground children); a question a program waits on is shown and ends
//! the call; what is typed at a REPL is not output, its answers are; a
//! stale status never ends a wait for a later command. Each case in bash,
//! zsh and dash (the shells that run `run`'s POSIX wrapper).

use crate::common::{Options, TestServer, installed, installed_shells, run_bounded};
use serde_json::Value;
use std::time::{Duration, Instant};

const SHELLS: [&str; 3] = ["bash", "zsh", "dash"];

fn shells() -> Vec<&'static str> {
    installed_shells(&SHELLS)
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .iter()
        .map(|l| l.as_str().unwrap_or_default().to_owned())
        .collect()
}

fn run(s: &TestServer, pane: &str, extra: &[&str], command: &str) -> Value {
    let mut c = s.tw();
    c.args(["run", "-t", pane, "--json", "--max-lines", "0"])
        .args(extra)
        .args(["--", command]);
    let f = run_bounded(c);
    let v = f.json();
    assert!(v.get("output").is_some(), "run {command:?} failed: {f:?}");
    v
}

fn output(s: &TestServer, pane: &str, extra: &[&str]) -> Value {
    let mut c = s.tw();
    c.args(["output", "-t", pane, "--json", "--max-lines", "0"])
        .args(extra);
    run_bounded(c).json()
}

/// `L1` .. `Ln`.
fn numbered(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("L{i}")).collect()
}

/// A server whose history holds every line of the stress runs.
fn roomy() -> TestServer {
    TestServer::with(Options {
        history_limit: 100_000,
        ..Options::default()
    })
}

/// The shell writes each line itself (builtin `echo`), between its
/// foreground children (`sleep`) or with none: all 300 lines, 10 runs of
/// each, in each shell (the shells run side by side; TW_EXACT_RUNS=N runs
/// each N times, to look for a rare loss).
#[test]
fn run_loses_no_line_of_a_loop_of_builtins() {
    let runs: usize = std::env::var("TW_EXACT_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    in_each_shell_at_once(move |s, p, sh| loops_lose_nothing(s, p, sh, runs));
}

/// The same, on a pane whose pipe is already open (another wait reads it,
/// as when calls follow each other and the pipe of the last is still
/// there, or a watch runs): each call joins the stream where it stands
/// instead of opening the pipe, and still gets every line once: loops of
/// builtins, a chain of commands, and a loop followed by `output` after
/// `run` timed out.
#[test]
fn every_line_also_when_the_pipe_is_already_open() {
    in_each_shell_at_once(|s, p, sh| {
        let holder = s.start_wait(&[
            "text",
            "-t",
            p,
            "--pattern",
            "^NEVER_SHARED$",
            "--timeout",
            "10m",
        ]);
        assert!(s.pane_piped(p), "{sh}: the holder's pipe");
        loops_lose_nothing(s, p, sh, 5);
        let chain = "echo L1; seq 2 2 | sed 's/^/L/'; (echo L3); printf 'L4\\n'; \
                     x=L5; echo $x; { echo L6; }; echo L7 | cat";
        let v = run(s, p, &[], chain);
        assert_eq!(strings(&v, "output"), numbered(7), "{sh}: {v}");
        run_then_output_a_loop(s, p, sh);
        // The holder read the pane all along (its connection to the hub is
        // the one left), and its pipe goes with it.
        s.wait_until(p, "the holder alone on the hub", || s.hub_waiters() == 1);
        drop(holder);
        s.wait_no_helpers();
        s.wait_until(p, "the pipe closed", || !s.pane_piped(p));
    });
}

/// `f` in a pane of each shell, the shells side by side (a server each).
fn in_each_shell_at_once(f: impl Fn(&TestServer, &str, &str) + Copy + Send + 'static) {
    let threads: Vec<_> = shells()
        .into_iter()
        .map(|sh| {
            std::thread::spawn(move || {
                let s = TestServer::new();
                let p = s.shell_window(sh, "");
                f(&s, &p, sh);
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a shell's runs");
    }
}

/// A loop of 300 builtin `echo`s, with and without a child between them,
/// `runs` times each: every line once, in order.
fn loops_lose_nothing(s: &TestServer, p: &str, sh: &str, runs: usize) {
    let want = numbered(300);
    for (what, cmd) in [
        (
            "with sleeps",
            "for i in $(seq 1 300); do echo L$i; sleep 0.001; done",
        ),
        ("without", "for i in $(seq 1 300); do echo L$i; done"),
    ] {
        for n in 0..runs {
            let v = run(s, p, &["--timeout", "60"], cmd);
            let got = strings(&v, "output");
            assert_eq!(
                got.len(),
                300,
                "{sh}, {what}, run {n}: {} lines of 300; missing: {:?}",
                got.len(),
                want.iter().filter(|l| !got.contains(l)).collect::<Vec<_>>()
            );
            assert_eq!(got, want, "{sh}, {what}, run {n}");
            assert_eq!(v["exit_status"], 0, "{sh}: {v}");
        }
    }
}

/// Ten commands in one line, mixing builtins, programs, pipelines and
/// subshells: every line, in order, six times in each shell.
#[test]
fn a_chain_of_ten_commands_loses_nothing() {
    let chain = "echo L1; seq 2 2 | sed 's/^/L/'; (echo L3); printf 'L4\\n'; \
                 sh -c 'echo L5'; seq 6 6 | sed 's/^/L/'; x=L7; echo $x; \
                 { echo L8; }; echo L9 | cat; (seq 10 10 | sed 's/^/L/')";
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        for n in 0..6 {
            let v = run(&s, &p, &[], chain);
            assert_eq!(strings(&v, "output"), numbered(10), "{sh}, run {n}: {v}");
        }
    }
}

/// A loop followed after `run` returns: `run`'s lines then each
/// `output`'s, together, are every line once, in order, and the end
/// carries the loop's status.
#[test]
fn output_follows_a_loop_line_by_line() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        run_then_output_a_loop(&s, &p, sh);
    }
}

/// `run` a 60-line loop that outlasts the call, then `output` until it
/// ends: every line once, in order, and the loop's status at the end.
fn run_then_output_a_loop(s: &TestServer, p: &str, sh: &str) {
    let v = run(
        s,
        p,
        &["--timeout", "0.3"],
        "for i in $(seq 1 60); do echo L$i; sleep 0.01; done; (exit 5)",
    );
    assert_eq!(v["timed_out"], true, "{sh}: {v}");
    let mut got = strings(&v, "output");
    // Each call's answer, for the message if a line goes missing.
    let mut calls = vec![v.to_string()];
    let end = Instant::now() + Duration::from_secs(30);
    let last = loop {
        let o = output(s, p, &["--timeout", "5"]);
        got.extend(strings(&o, "lines"));
        calls.push(o.to_string());
        if o["finished"] == true {
            break o;
        }
        assert!(
            Instant::now() < end,
            "{sh}: never finished; the calls said\n{}",
            calls.join("\n")
        );
    };
    assert_eq!(
        got,
        numbered(60),
        "{sh}: the calls said\n{}",
        calls.join("\n")
    );
    assert_eq!(last["exit_status"], 5, "{sh}: {last}");
    assert_eq!(last["exit_source"], "wrapper", "{sh}: {last}");
}

/// A run whose follower is gone (killed) while dash waits in a builtin
/// (`wait`, in the foreground, reading nothing) has not ended: `output`
/// follows on and reports the status the end mark brings, never an end
/// guessed from the shell being in the foreground.
#[test]
fn a_lost_follower_is_no_end_while_the_shell_runs_a_builtin() {
    if !installed("dash") {
        eprintln!("skipped: dash is not installed");
        return;
    }
    let s = TestServer::new();
    let p = s.shell_window("dash", "");
    let go = crate::common::unique("go");
    let v = run(
        &s,
        &p,
        &["--timeout", "0.2"],
        &format!("tmux wait-for {go} & wait; echo END; (exit 5)"),
    );
    assert_eq!(v["timed_out"], true, "{v}");
    let mut follower = None;
    s.wait_until(&p, "the run's follower to be listed", || {
        let mut c = s.tw();
        c.args(["list", "--json"]);
        follower = run_bounded(c)
            .json()
            .as_array()
            .and_then(|l| l.iter().find(|w| w["kind"] == "run").cloned());
        follower.is_some()
    });
    let pid = follower.unwrap()["pid"].as_u64().unwrap();
    crate::common::signal(pid, "KILL");
    s.wait_until(&p, "the follower gone", || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });
    // Nothing new yet, the command still runs: not finished.
    let o = output(&s, &p, &["--timeout", "0.5"]);
    assert_eq!(o["finished"], false, "{o}");
    s.tmux(&["wait-for", "-S", &go]);
    let mut calls = Vec::new();
    let end = Instant::now() + Duration::from_secs(30);
    let last = loop {
        let o = output(&s, &p, &["--timeout", "5"]);
        calls.push(o.to_string());
        if o["finished"] == true {
            break o;
        }
        assert!(Instant::now() < end, "never finished: {}", calls.join("\n"));
    };
    assert_eq!(last["exit_status"], 5, "{}", calls.join("\n"));
    assert_eq!(last["exit_source"], "wrapper", "{}", calls.join("\n"));
}

/// `--until` a line in the middle of a loop returns there; the next call
/// goes on from the line after it.
#[test]
fn until_a_line_in_the_middle_of_a_loop() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let v = run(
            &s,
            &p,
            &["--timeout", "0.1"],
            "for i in $(seq 1 40); do echo L$i; sleep 0.02; done",
        );
        let mut got = strings(&v, "output");
        let o = output(&s, &p, &["--until", "^L25$", "--timeout", "20"]);
        // (On a loaded machine the loop may have ended before the call:
        // then it says so, with every line.)
        let ended = o["finished"] == true;
        assert!(o["reason"] == "until" || ended, "{sh}: {o}");
        got.extend(strings(&o, "lines"));
        assert!(got.contains(&"L25".to_owned()), "{sh}: {got:?}");
        let end = Instant::now() + Duration::from_secs(30);
        let mut finished = ended;
        while !finished {
            let o = output(&s, &p, &["--timeout", "5"]);
            got.extend(strings(&o, "lines"));
            finished = o["finished"] == true;
            assert!(
                finished || Instant::now() < end,
                "{sh}: never finished: {o}"
            );
        }
        assert_eq!(got, numbered(40), "{sh}");
    }
}

/// Stress: a 2000-line loop of builtin `echo`, 20 times, each compared
/// line for line with what the pane's history holds.
#[test]
fn stress_two_thousand_lines_twenty_times_match_the_history() {
    let s = roomy();
    let p = s.pane.clone();
    let want = numbered(2000);
    for n in 0..20 {
        s.tmux(&["clear-history", "-t", &p]);
        let v = run(
            &s,
            &p,
            &["--timeout", "60"],
            "for i in $(seq 1 2000); do echo L$i; done",
        );
        let got = strings(&v, "output");
        // The history, cleared before the run, and the screen still show
        // the end of the run before: this run's lines are the last 2000.
        let history: Vec<String> = s
            .tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", &p])
            .lines()
            .map(|l| l.trim_end().to_owned())
            .filter(|l| {
                l.len() > 1 && l.starts_with('L') && l[1..].bytes().all(|b| b.is_ascii_digit())
            })
            .collect();
        let history = history[history.len().saturating_sub(2000)..].to_vec();
        assert_eq!(history, want, "run {n}: the pane's history");
        assert_eq!(got, history, "run {n}: run's output against the history");
    }
}

/// A program that asks (`input()`, `read -p`, a child's password prompt)
/// ends `run` at once with the question as its prompt; the answer typed
/// there, and what follows, come with the next `output`.
#[test]
fn a_question_is_shown_and_ends_the_call() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let cases = [
            (
                "python3 -c \"print('got', input('Continue? [y/N] '))\"",
                "Continue? [y/N]",
                "got y",
            ),
            (
                "read -p 'Proceed? [y/N] ' ans; echo \"got $ans\"",
                "Proceed? [y/N]",
                "got y",
            ),
            (
                "sh -c 'sh -c \"sleep 0.3; printf \\\"Password: \\\"; read x; echo got \\$x\"; sleep 0.2'",
                "Password:",
                "got y",
            ),
        ];
        for (cmd, question, answer) in cases {
            if sh == "zsh" && cmd.starts_with("read -p") {
                // zsh's read takes its prompt as `read 'ans?Proceed? '`.
                continue;
            }
            let asked = Instant::now();
            let v = run(&s, &p, &["--timeout", "8"], cmd);
            assert_eq!(
                v["prompt"],
                question,
                "{sh}: {cmd}: {v}\npane:\n{}",
                s.capture(&p)
            );
            assert_eq!(v["timed_out"], false, "{sh}: {cmd}: {v}");
            assert!(asked.elapsed() < Duration::from_secs(10), "{sh}: {v}");
            assert_eq!(strings(&v, "output").last().unwrap(), question, "{v}");
            s.tmux(&["send-keys", "-t", &p, "y", "Enter"]);
            let end = Instant::now() + Duration::from_secs(20);
            let mut lines = Vec::new();
            let o = loop {
                let o = output(&s, &p, &["--timeout", "5"]);
                lines.extend(strings(&o, "lines"));
                if o["finished"] == true {
                    break o;
                }
                assert!(Instant::now() < end, "{sh}: {cmd}: {o}");
            };
            assert!(
                lines.contains(&format!("{question} y")),
                "{sh}: {cmd}: the answer as typed: {lines:?}"
            );
            assert!(lines.contains(&answer.to_owned()), "{sh}: {cmd}: {lines:?}");
            assert_eq!(o["exit_status"], 0, "{sh}: {cmd}: {o}");
        }
    }
}

/// A question the pane is already at when `output` is called is its
/// answer: reason prompt, the question as the last (partial) line.
#[test]
fn output_at_a_question_returns_it() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let _ = output(&s, &p, &["--timeout", "1"]);
        let q = if sh == "zsh" {
            "read 'ans?Keep going? [y/N] '"
        } else {
            "read -p 'Keep going? [y/N] ' ans"
        };
        s.type_line(&p, q);
        s.wait_until(&p, "the question", || s.capture(&p).contains("Keep going?"));
        let o = output(&s, &p, &["--timeout", "10"]);
        assert_eq!(o["reason"], "prompt", "{sh}: {o}");
        assert_eq!(o["prompt"], "Keep going? [y/N]", "{sh}: {o}");
        assert_eq!(o["partial"], true, "{sh}: {o}");
        s.tmux(&["send-keys", "-t", &p, "n", "Enter"]);
    }
}

/// A statement typed at a REPL's prompt, or an answer typed at a question,
/// and not yet entered is not output: `output` waits for what the program
/// writes instead of returning the typed line. The question's line comes
/// back once, for context (the question is the program's); a REPL's
/// statement never does.
#[test]
fn a_statement_typed_but_not_entered_is_not_output() {
    if !installed("python3") {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let s = TestServer::new();
    let p = s.pane.clone();
    // (the program, its prompt, what is typed there, the line it makes,
    // whether that line comes back, a line of what the program writes
    // once it is entered)
    let cases = [
        (
            "python3 -c \"print('got', input('Continue? [y/N] '))\"",
            "Continue? [y/N]",
            "y",
            "Continue? [y/N] y",
            true,
            "got y",
        ),
        (
            "python3 -i -q",
            ">>>",
            "print('typed', 6 * 7)",
            ">>> print('typed', 6 * 7)",
            false,
            "typed 42",
        ),
    ];
    for (program, prompt, keys, line, back, answer) in cases {
        let v = run(&s, &p, &["--timeout", "20"], program);
        assert_eq!(v["prompt"], prompt, "{v}");
        s.tmux(&["send-keys", "-t", &p, "-l", keys]);
        s.wait_until(&p, "the typed keys on the screen", || {
            s.capture(&p).contains(line)
        });
        // It waits; a question's line comes back once, for context.
        let o = output(&s, &p, &["--timeout", "1"]);
        assert_eq!(o["timed_out"], true, "{o}");
        let want: Vec<String> = if back { vec![line.to_owned()] } else { vec![] };
        assert_eq!(strings(&o, "lines"), want, "{o}");
        s.tmux(&["send-keys", "-t", &p, "Enter"]);
        // (Until it ends or asks again: the next case types a command.)
        let o = output(&s, &p, &["--until-finished", "--timeout", "10"]);
        assert_eq!(strings(&o, "lines")[0], answer, "{o}");
        assert!(o["finished"] == true || o["reason"] == "prompt", "{o}");
    }
}

/// In a REPL (python3 -i), a typed statement is not output: `output`
/// after typing returns the answer and the next prompt, and a text wait
/// for the prompt matches the next one, not the line typed at it.
#[test]
fn a_repls_echo_is_not_output_its_answers_are() {
    if !installed("python3") {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let s = TestServer::new();
    let p = s.pane.clone();
    let v = run(&s, &p, &["--timeout", "20"], "python3 -i -q");
    assert_eq!(v["prompt"], ">>>", "{v}");
    for n in 0..3 {
        s.type_line(&p, &format!("print('answer', {n} * 7)"));
        let o = output(&s, &p, &["--timeout", "10"]);
        let lines = strings(&o, "lines");
        assert!(
            lines.contains(&format!("answer {}", n * 7)),
            "statement {n}: {o}"
        );
        assert_eq!(o["reason"], "prompt", "statement {n}: {o}");
        assert_eq!(o["prompt"], ">>>", "statement {n}: {o}");
    }
    // Armed first, then typed: the wait ends on the next prompt.
    let w = s.start_wait(&[
        "text",
        "-t",
        &p,
        "--pattern",
        ">>>",
        "--json",
        "--timeout",
        "10",
    ]);
    s.type_line(&p, "import time; time.sleep(0.5); print('slept')");
    let f = w.finish(&s);
    assert_eq!(
        f.json()["matched_lines"],
        serde_json::json!([">>>"]),
        "{}",
        f.stdout
    );
    // until ^>>> on output, armed then typed, the same.
    let _ = output(&s, &p, &["--timeout", "1"]);
    let w = s.start_wait(&[
        "output",
        "-t",
        &p,
        "--json",
        "--until",
        "^>>>",
        "--timeout",
        "10",
    ]);
    s.type_line(&p, "import time; time.sleep(0.5); print('slept again')");
    let o = w.finish(&s).json();
    assert_eq!(o["reason"], "until", "{o}");
    assert!(
        strings(&o, "lines").contains(&"slept again".to_owned()),
        "{o}"
    );
    s.type_line(&p, "exit()");
}

/// A REPL without bracketed paste (node's), the same.
#[test]
fn a_repl_without_bracketed_paste_too() {
    if !installed("node") {
        eprintln!("skipped: node is not installed");
        return;
    }
    let s = TestServer::new();
    let p = s.pane.clone();
    let v = run(&s, &p, &["--timeout", "20"], "node");
    assert_eq!(v["prompt"], ">", "{v}");
    let w = s.start_wait(&[
        "text",
        "-t",
        &p,
        "--pattern",
        "6 * 7",
        "--json",
        "--timeout",
        "2",
    ]);
    s.type_line(&p, "6 * 7");
    let f = w.finish(&s);
    assert_eq!(
        f.json()["outcome"],
        "timeout",
        "the typed line matched: {}",
        f.stdout
    );
    let w = s.start_wait(&[
        "text",
        "-t",
        &p,
        "--pattern",
        "^42$",
        "--regex",
        "--json",
        "--timeout",
        "10",
    ]);
    s.type_line(&p, "6 * 7");
    let f = w.finish(&s);
    // node previews the result under the line as it is typed (the grey
    // `42`), then prints it: the preview may count as output too, and come
    // in the same batch as the result. The typed line never does.
    let lines = f.json()["matched_lines"].clone();
    let lines = lines.as_array().expect("matched_lines");
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l == "42"),
        "{}",
        f.stdout
    );
    s.type_line(&p, ".exit");
}

/// A run that ended (its status kept by its follower) before a person
/// typed a new loop is not the end of that loop: `output --until` waits
/// for the loop's line.
#[test]
fn a_stale_status_does_not_end_a_later_commands_wait() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let v = run(&s, &p, &["--timeout", "0.2"], "sleep 0.6; echo ran");
        assert_eq!(v["timed_out"], true, "{sh}: {v}");
        // The first command ends, unwatched; then a new one starts.
        s.wait_until(&p, "the first command's end", || {
            s.capture(&p).contains("ran")
        });
        s.wait_for_prompt(&p);
        s.type_line(&p, "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.3; done");
        s.wait_until(&p, "the loop to start", || s.capture(&p).contains("tick 1"));
        let o = output(&s, &p, &["--until", "tick 4", "--timeout", "20"]);
        assert_eq!(o["reason"], "until", "{sh}: {o}");
        assert_eq!(o["finished"], false, "{sh}: {o}");
        assert!(
            strings(&o, "lines").contains(&"tick 4".to_owned()),
            "{sh}: {o}"
        );
    }
}

/// Nothing runs and nothing is new: `output` says so at once (idle),
/// instead of waiting out its timeout; with `--until-finished` a command's
/// every line comes in one reply.
#[test]
fn idle_at_once_and_everything_to_the_end_in_one_reply() {
    let s = TestServer::new();
    let p = s.pane.clone();
    let _ = output(&s, &p, &["--timeout", "1"]);
    let asked = Instant::now();
    let o = output(&s, &p, &["--timeout", "30"]);
    assert_eq!(o["reason"], "idle", "{o}");
    assert!(asked.elapsed() < Duration::from_secs(10), "{o}");
    let v = run(
        &s,
        &p,
        &["--timeout", "0.1"],
        "for i in $(seq 1 20); do echo L$i; sleep 0.03; done",
    );
    let mut got = strings(&v, "output");
    let o = output(&s, &p, &["--until-finished", "--timeout", "30"]);
    assert_eq!(o["finished"], true, "{o}");
    got.extend(strings(&o, "lines"));
    assert_eq!(got, numbered(20));
}

/// Typed first, waited for second: `text --cursor` also takes what was
/// written between the two, and moves the cursor past it.
#[test]
fn a_text_wait_with_a_cursor_sees_what_came_before_it() {
    let s = TestServer::new();
    let p = s.pane.clone();
    let _ = output(&s, &p, &["--cursor", "agent", "--timeout", "1"]);
    s.type_line(&p, "echo Trace''back HERE");
    s.wait_until(&p, "the line", || s.capture(&p).contains("Traceback HERE"));
    let mut c = s.tw();
    c.args([
        "text",
        "-t",
        &p,
        "--cursor",
        "agent",
        "--pattern",
        "Traceback",
        "--json",
        "--timeout",
        "10",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(
        f.json()["matched_lines"],
        serde_json::json!(["Traceback HERE"])
    );
    // Seen now: not matched again.
    let mut c = s.tw();
    c.args([
        "text",
        "-t",
        &p,
        "--cursor",
        "agent",
        "--pattern",
        "Traceback",
        "--json",
        "--timeout",
        "0.5",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(1), "{f:?}");
    // Without the cursor, the line before the call does not count.
    let mut c = s.tw();
    c.args([
        "text",
        "-t",
        &p,
        "--pattern",
        "HERE",
        "--json",
        "--timeout",
        "0.3",
    ]);
    assert_eq!(run_bounded(c).code, Some(1));
}
