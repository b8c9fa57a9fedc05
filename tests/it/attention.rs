//! `tmux-wait any` and `panes`: which pane needs someone, with real
//! programs in real panes (shells with and without their integration, a
//! `[y/N]` question, `read`, a password, a REPL, a pager, a quiet command,
//! a bell, a program that exits, typed text that is not submitted, a test
//! program that draws like a full-screen agent), and the wait's own rules
//! (`--all`, `--now`, a timeout with every pane pending, panes that appear
//! after it began, a pane that another program pipes).

use crate::common::*;
use serde_json::Value;

/// `any --json` on `targets` (with `extra` arguments), armed.
fn any(s: &TestServer, targets: &[&str], extra: &[&str]) -> Waiter {
    let mut args = vec!["any", "--json"];
    for t in targets {
        args.extend(["-t", t]);
    }
    args.extend_from_slice(extra);
    if !extra.contains(&"--timeout") {
        args.extend(["--timeout", "15"]);
    }
    s.start_wait(&args)
}

fn result(s: &TestServer, w: Waiter) -> Value {
    let f = w.finish(s);
    assert!(
        matches!(f.code, Some(0 | 1)),
        "any failed: {} / {}",
        f.stdout,
        f.stderr
    );
    f.json()
}

/// The pane's attention object, which must be `state`.
fn expect(v: &Value, pane: &str, state: &str) {
    assert_eq!(v["outcome"], "attention", "{v}");
    assert_eq!(v["pane_id"], pane, "{v}");
    assert_eq!(v["state"], state, "{v}");
}

fn pending_state<'a>(v: &'a Value, pane: &str) -> &'a Value {
    v["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pane_id"] == pane)
        .map(|p| &p["state"])
        .unwrap_or_else(|| panic!("{pane} not pending: {v}"))
}

/// A command that ends: bash and zsh come back to their prompt, with the
/// exit status where the shell reports it (its integration loaded).
fn back_at_the_prompt(shell: &str, integration: bool) {
    if !installed(shell) {
        println!("skipped: {shell} is not installed");
        return;
    }
    let s = TestServer::new();
    let rc = if integration {
        format!("eval \"$(tmux-wait shell-init {shell})\"")
    } else {
        String::new()
    };
    let pane = s.shell_window(shell, &rc);
    let w = any(&s, &[&pane], &[]);
    s.type_line(&pane, "sleep 0.3; false");
    let v = result(&s, w);
    expect(&v, &pane, "prompt");
    assert_eq!(v["reason"], "command_finished", "{v}");
    if integration {
        assert_eq!(v["exit_status"], 1, "{v}");
    } else {
        assert_eq!(v["exit_status"], Value::Null, "{v}");
    }
    assert!(v["tail"].as_array().is_some_and(|t| !t.is_empty()), "{v}");
    // A command too quick to be seen running counts too.
    s.wait_for_prompt(&pane);
    let w = any(&s, &[&pane], &[]);
    s.type_line(&pane, "true");
    let v = result(&s, w);
    expect(&v, &pane, "prompt");
    if integration {
        assert_eq!(v["exit_status"], 0, "{v}");
    }
}

#[test]
fn bash_back_at_its_prompt() {
    back_at_the_prompt("bash", false);
}

#[test]
fn bash_with_shell_init_back_at_its_prompt_with_the_status() {
    back_at_the_prompt("bash", true);
}

#[test]
fn zsh_back_at_its_prompt() {
    back_at_the_prompt("zsh", false);
}

#[test]
fn zsh_with_shell_init_back_at_its_prompt_with_the_status() {
    back_at_the_prompt("zsh", true);
}

#[test]
fn a_yes_no_question_is_asking() {
    let s = TestServer::new();
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "python3 -c \"input('Proceed? [y/N] ')\"");
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert_eq!(v["reason"], "reads_line", "{v}");
    assert_eq!(v["question"], "Proceed? [y/N]", "{v}");
    assert_eq!(v["command"], "python3", "{v}");
    assert_eq!(v["session"], "main", "{v}");
    assert_eq!(v["window"], 0, "{v}");
    // Answered: back at the prompt.
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "y");
    expect(&result(&s, w), &s.pane, "prompt");
}

#[test]
fn read_and_a_password_are_asking() {
    let s = TestServer::new();
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "read -p 'Name? ' name");
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert_eq!(v["reason"], "reads_line", "{v}");
    assert_eq!(v["question"], "Name?", "{v}");
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "bob");
    expect(&result(&s, w), &s.pane, "prompt");
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "read -s -p 'Password: ' pw");
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert_eq!(v["reason"], "reads_password", "{v}");
    assert_eq!(v["question"], "Password:", "{v}");
    // The answer echoes nothing: the prompt coming back is seen anyway.
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "secret");
    expect(&result(&s, w), &s.pane, "prompt");
}

#[test]
fn a_repl_at_its_prompt_is_asking() {
    let s = TestServer::new();
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "python3 -q -i");
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert_eq!(v["reason"], "repl_prompt", "{v}");
    assert_eq!(v["question"], ">>>", "{v}");
    // A statement typed and not sent is the person at work: nothing.
    let w = any(&s, &[&s.pane], &["--timeout", "1"]);
    s.tmux(&["send-keys", "-t", &s.pane, "-l", "1+"]);
    let v = result(&s, w);
    assert_eq!(v["outcome"], "timeout", "{v}");
    // Sent: it answers and asks again.
    let w = any(&s, &[&s.pane], &[]);
    s.tmux(&["send-keys", "-t", &s.pane, "1", "Enter"]);
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert_eq!(v["question"], ">>>", "{v}");
    s.type_line(&s.pane, "exit()");
}

/// A pager waits for a key: it holds up whatever ran it until someone
/// pages or quits, so it is asking (its last row is the question).
#[test]
fn a_pager_is_asking() {
    let s = TestServer::new();
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "seq 1 200 | less");
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert_eq!(v["reason"], "reads_keys", "{v}");
    assert_eq!(v["command"], "less", "{v}");
    assert!(v["question"].is_string(), "{v}");
    let w = any(&s, &[&s.pane], &[]);
    s.tmux(&["send-keys", "-t", &s.pane, "q"]);
    expect(&result(&s, w), &s.pane, "prompt");
}

#[test]
fn a_command_that_writes_nothing_goes_quiet() {
    let s = TestServer::new();
    let w = any(
        &s,
        &[&s.pane],
        &["--until", "quiet", "--quiet-after", "400ms"],
    );
    s.type_line(&s.pane, "echo start; sleep 30");
    let v = result(&s, w);
    expect(&v, &s.pane, "quiet");
    assert_eq!(v["reason"], "no_output", "{v}");
    assert_eq!(v["command"], "sleep", "{v}");
    s.tmux(&["send-keys", "-t", &s.pane, "C-c"]);
}

#[test]
fn a_bell_counts_and_an_osc_ending_in_bel_does_not() {
    let s = TestServer::new();
    let w = any(&s, &[&s.pane], &["--until", "bell", "--timeout", "2"]);
    s.type_line(&s.pane, "printf '\\033]0;title\\007'; sleep 0.2");
    let v = result(&s, w);
    assert_eq!(v["outcome"], "timeout", "{v}");
    let w = any(&s, &[&s.pane], &["--until", "bell"]);
    s.type_line(&s.pane, "sleep 0.2; printf 'ding\\a'; sleep 5");
    let v = result(&s, w);
    expect(&v, &s.pane, "bell");
    assert_eq!(v["reason"], "bell", "{v}");
    s.tmux(&["send-keys", "-t", &s.pane, "C-c"]);
}

#[test]
fn a_pane_whose_program_exits() {
    let s = TestServer::with(Options {
        extra_config: "set -g remain-on-exit on".into(),
        ..Options::default()
    });
    let other = s.split();
    let w = any(&s, &[&other], &[]);
    s.type_line(&other, "exit 3");
    let v = result(&s, w);
    expect(&v, &other, "exited");
    assert_eq!(v["reason"], "pane_dead", "{v}");
    if v["exit_status"] != Value::Null {
        assert_eq!(v["exit_status"], 3, "{v}");
    }
    // A pane that closes.
    let third = s.split();
    let w = any(&s, &[&third], &[]);
    s.tmux(&["kill-pane", "-t", &third]);
    let v = result(&s, w);
    expect(&v, &third, "exited");
    assert_eq!(v["reason"], "pane_closed", "{v}");
}

#[test]
fn typed_text_that_is_not_submitted_is_not_reported() {
    let s = TestServer::new();
    let w = any(
        &s,
        &[&s.pane],
        &[
            "--until",
            "prompt,asking,exited,bell,working",
            "--timeout",
            "1.5",
        ],
    );
    s.tmux(&["send-keys", "-t", &s.pane, "-l", "echo typed but not sent"]);
    let v = result(&s, w);
    assert_eq!(v["outcome"], "timeout", "{v}");
    assert_eq!(*pending_state(&v, &s.pane), "prompt", "{v}");
    s.tmux(&["send-keys", "-t", &s.pane, "C-u"]);
}

/// A test program that draws like a full-screen coding agent: raw mode, a
/// spinner with "esc to interrupt" for two seconds (working, though it
/// sleeps in between), then a question box while it reads a key.
const AGENT: &str = r#"
import os, select, sys, termios, time, tty
fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
tty.setraw(fd)
try:
    end = time.time() + 2
    i = 0
    while time.time() < end:
        sys.stdout.write("\r\x1b[2K" + "|/-\\"[i % 4] + " Editing files… (esc to interrupt)")
        sys.stdout.flush()
        i += 1
        select.select([fd], [], [], 0.1)
    sys.stdout.write("\r\x1b[2K")
    box = ["╭────────────────────────────╮",
           "│ Do you want to proceed?    │",
           "│ ❯ 1. Yes                   │",
           "│   2. No                    │",
           "╰────────────────────────────╯"]
    sys.stdout.write("\r\n".join(box) + "\r\n")
    sys.stdout.flush()
    select.select([fd], [], [])
    os.read(fd, 1)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, old)
"#;

/// A full-screen program that draws like an agent but is none a profile
/// knows is judged by the general rules (no agent's words judge it); a
/// profile of the user's that names its process judges it.
#[test]
fn a_full_screen_program_is_judged_by_its_own_profile_only() {
    let s = TestServer::new();
    let script = s.dir().join("agent.py");
    std::fs::write(&script, AGENT).unwrap();
    let w = any(&s, &[&s.pane], &["--until", "asking"]);
    let start = std::time::Instant::now();
    s.type_line(&s.pane, &format!("python3 {}", script.display()));
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert!(
        start.elapsed() >= std::time::Duration::from_secs(2),
        "asking while the spinner ran: {v}"
    );
    assert_eq!(v["reason"], "reads_keys", "{v}");
    assert_eq!(v["agent"], serde_json::Value::Null, "{v}");
    let w = any(&s, &[&s.pane], &[]);
    s.tmux(&["send-keys", "-t", &s.pane, "1"]);
    expect(&result(&s, w), &s.pane, "prompt");
    // The user's profile for it, by its process.
    let profiles = s.dir().join("mine.json");
    std::fs::write(
        &profiles,
        r#"{"profiles":[{"name":"my-agent","agent":"My agent","version":"1",
            "processes":["agent.py"],"working":["esc to interrupt"],
            "asking":["Do you want to proceed?"]}]}"#,
    )
    .unwrap();
    let p = profiles.display().to_string();
    let w = any(&s, &[&s.pane], &["--until", "asking", "--profiles", &p]);
    s.type_line(&s.pane, &format!("python3 {}", script.display()));
    let v = result(&s, w);
    assert_eq!(
        (&v["reason"], &v["agent"], &v["question"]),
        (
            &serde_json::json!("agent_question"),
            &serde_json::json!("my-agent"),
            &serde_json::json!("Do you want to proceed?")
        ),
        "{v}"
    );
    s.tmux(&["send-keys", "-t", &s.pane, "1"]);
}

#[test]
fn all_now_and_a_timeout_with_every_pane_pending() {
    let s = TestServer::new();
    let b = s.split();
    // Both at their prompts already: --now returns one at once. (Not
    // armed with --ready: it may end before the test's wait-for starts.)
    let mut c = s.tw();
    c.args([
        "any",
        "--json",
        "-t",
        &s.pane,
        "-t",
        &b,
        "--now",
        "--timeout",
        "15",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    let v = f.json();
    assert_eq!(v["outcome"], "attention", "{v}");
    assert_eq!(v["state"], "prompt", "{v}");
    assert_eq!(v["reason"], "at_prompt", "{v}");
    assert_eq!(v["pending"].as_array().unwrap().len(), 1, "{v}");
    // Without --now nothing changes: a timeout, every pane pending.
    let w = any(&s, &[&s.pane, &b], &["--timeout", "0.5"]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(1), "{f:?}");
    let v = f.json();
    assert_eq!(v["outcome"], "timeout", "{v}");
    assert_eq!(*pending_state(&v, &s.pane), "prompt", "{v}");
    assert_eq!(*pending_state(&v, &b), "prompt", "{v}");
    // --all: both must get there; the first alone does not end it.
    s.type_line(&s.pane, "sleep 30");
    s.type_line(&b, "sleep 30");
    s.wait_for_command(&s.pane, "sleep");
    s.wait_for_command(&b, "sleep");
    let w = any(&s, &[&s.pane, &b], &["--all"]);
    s.tmux(&["send-keys", "-t", &s.pane, "C-c"]);
    s.wait_for_prompt(&s.pane);
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.tmux(&["send-keys", "-t", &b, "C-c"]);
    let v = result(&s, w);
    assert_eq!(v["outcome"], "all", "{v}");
    let panes = v["panes"].as_array().unwrap();
    assert_eq!(panes.len(), 2, "{v}");
    assert!(panes.iter().all(|p| p["state"] == "prompt"), "{v}");
    // The human line says what and where.
    let mut c = s.tw();
    c.args(["any", "-t", &s.pane, "--now"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(
        f.stdout.starts_with(&format!("{} main:0 prompt", s.pane)),
        "{}",
        f.stdout
    );
}

#[test]
fn panes_added_to_a_watched_session_are_watched() {
    let s = TestServer::new();
    // The default: every pane of the current session (the one tmux picks).
    // (--now: whether the question comes before or after the new pane is
    // watched, it counts; the first pane at its prompt does not ask.)
    let w = s.start_wait(&[
        "any",
        "--json",
        "--until",
        "asking",
        "--now",
        "--timeout",
        "15",
    ]);
    let late = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&late);
    s.type_line(&late, "python3 -c \"input('Late? ')\"");
    let v = result(&s, w);
    expect(&v, &late, "asking");
    assert_eq!(v["question"], "Late?", "{v}");
    assert_eq!(v["window"], 1, "{v}");
    s.type_line(&late, "");
}

/// Terminals other programs make all day (ssh logins, terminal windows,
/// other servers' panes) cost the watched server nothing: `any --server`
/// asks tmux for its panes again only when the terminal is one of the
/// server's. A pane the server makes afterwards is still watched.
#[test]
fn other_programs_terminals_cost_the_server_nothing() {
    let s = TestServer::new();
    let server = s.tmux(&["display-message", "-p", "#{pid}"]);
    let server = server.trim();
    let run_ns = || -> u64 {
        let t = std::fs::read_to_string(format!("/proc/{server}/schedstat")).unwrap();
        t.split(' ').next().unwrap().parse().unwrap()
    };
    let w = any(&s, &[], &["--server", "--until", "asking"]);
    let before = run_ns();
    for _ in 0..50 {
        let ptmx = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/ptmx")
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(40));
        drop(ptmx);
    }
    // (The watch looks 20 ms after a terminal appears.)
    std::thread::sleep(std::time::Duration::from_millis(100));
    let spent = run_ns() - before;
    // (Each look costs the server about 0.35 ms on a 2-core machine:
    // 50 looks, about 18 ms.)
    assert!(
        spent < 5_000_000,
        "the server worked {:.1} ms while 50 terminals of another program came and went",
        spent as f64 / 1e6
    );
    let late = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&late);
    s.type_line(&late, "python3 -c \"input('Late? ')\"");
    let v = result(&s, w);
    expect(&v, &late, "asking");
    s.type_line(&late, "");
}

/// A logging `pipe-pane` on a pane: the stream cannot be had, the kernel
/// alone says what the pane waits for (looked at once a second).
#[test]
fn next_to_a_logging_pipe() {
    let s = TestServer::new();
    let log = s.dir().join("log.txt");
    s.tmux(&[
        "pipe-pane",
        "-t",
        &s.pane,
        &format!("cat >> '{}'", log.display()),
    ]);
    let w = any(&s, &[&s.pane], &[]);
    s.type_line(&s.pane, "python3 -c \"input('Logged? ')\"");
    let v = result(&s, w);
    expect(&v, &s.pane, "asking");
    assert_eq!(v["reason"], "reads_line", "{v}");
    assert_eq!(v["question"], "Logged?", "{v}");
    // The user's pipe is still theirs.
    assert!(s.pane_piped(&s.pane));
    s.type_line(&s.pane, "n");
    s.wait_until(&s.pane, "the log", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Logged?"))
    });
}

#[test]
fn ndjson_reports_each_change_until_the_timeout() {
    let s = TestServer::new();
    let w = s.start_wait(&["any", "-t", &s.pane, "--ndjson", "--timeout", "3"]);
    s.type_line(&s.pane, "sleep 0.5");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(1), "{f:?}");
    let lines: Vec<Value> = f
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let states: Vec<&str> = lines.iter().filter_map(|l| l["state"].as_str()).collect();
    assert_eq!(states, ["working", "prompt"], "{}", f.stdout);
    assert_eq!(lines.last().unwrap()["outcome"], "timeout", "{}", f.stdout);
    assert!(lines[0]["tail"].is_null(), "{}", f.stdout);
}

#[test]
fn a_pattern_in_new_output_is_the_event_text() {
    let s = TestServer::new();
    let w = any(&s, &[&s.pane], &["--pattern", "listening on"]);
    s.type_line(&s.pane, "sleep 0.2; echo 'Listening on :8080'; sleep 30");
    let v = result(&s, w);
    expect(&v, &s.pane, "text");
    assert_eq!(v["line"], "Listening on :8080", "{v}");
    s.tmux(&["send-keys", "-t", &s.pane, "C-c"]);
}

#[test]
fn panes_says_what_each_pane_waits_for() {
    let s = TestServer::new();
    let b = s.split();
    s.type_line(&b, "python3 -c \"input('Ready? ')\"");
    s.wait_for_command(&b, "python3");
    let mut state = Value::Null;
    s.wait_until(&b, "panes to see the question", || {
        let mut c = s.tw();
        c.args(["panes", "--json"]);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(0), "{f:?}");
        state = f.json();
        let p = state["panes"].as_array().unwrap();
        p.iter()
            .any(|p| p["pane_id"] == b && p["state"] == "asking")
    });
    let panes = state["panes"].as_array().unwrap();
    let a = panes.iter().find(|p| p["pane_id"] == s.pane).unwrap();
    assert_eq!(a["state"], "prompt", "{state}");
    let q = panes.iter().find(|p| p["pane_id"] == b).unwrap();
    assert_eq!(q["question"], "Ready?", "{state}");
    assert_eq!(q["command"], "python3", "{state}");
    assert!(q["since"].as_f64().unwrap() > 1e9, "{state}");
    let mut c = s.tw();
    c.arg("panes");
    let f = run_bounded(c);
    assert!(f.stdout.contains("asking"), "{}", f.stdout);
    s.type_line(&b, "");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let s = TestServer::new();
    for args in [
        vec!["any", "--until", "asking,nope"],
        vec!["any", "-t", "nosuchsession"],
        vec!["any", "-t", "%99"],
        vec!["any", "--quiet-after", "0"],
        vec!["any", "--pattern", "x", "--until", "prompt"],
        vec!["any", "--server", "-t", "%0"],
        vec!["panes", "-t", "nosuch:9"],
    ] {
        let mut c = s.tw();
        c.args(&args);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(2), "{args:?}: {f:?}");
        assert_eq!(f.stderr.lines().count(), 1, "{args:?}: {}", f.stderr);
        assert!(f.stderr.starts_with("tmux-wait: error: "), "{}", f.stderr);
    }
    let profiles = s.dir().join("bad.json");
    std::fs::write(&profiles, "{").unwrap();
    let mut c = s.tw();
    c.args(["any", "--profiles"]).arg(&profiles).arg("--json");
    let f = run_bounded(c);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert_eq!(f.json()["error"]["kind"], "usage", "{}", f.stdout);
}
