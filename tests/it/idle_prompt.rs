//! `output` where the shell sits at its prompt as the last call left it:
//! answered from one look at the pane, with no pipe of its own. These tests
//! prove the look is taken (another program's pipe on the pane, which the
//! long way refuses, is no obstacle to it) and that anything it cannot
//! vouch for still goes the long way: text typed at the prompt, a line
//! another writer put below the prompt, new output, a job behind the shell.

use crate::common::{TestServer, installed_shells, json_lines, run_bounded};
use serde_json::Value;

const SHELLS: [&str; 4] = ["bash", "zsh", "dash", "fish"];

fn output(s: &TestServer, pane: &str, timeout: &str) -> Value {
    let mut c = s.tw();
    c.args(["output", "-t", pane, "--json", "--timeout", timeout]);
    let f = run_bounded(c);
    assert!(matches!(f.code, Some(0) | Some(1)), "{f:?}");
    f.json()
}

/// Pipe `pane`'s output to a log, as a logging plugin does: from now on
/// only a call that needs no pipe of its own can answer.
fn log_pane(s: &TestServer, pane: &str) -> std::path::PathBuf {
    let log = s.dir().join(format!("log-{}", &pane[1..]));
    s.tmux(&[
        "pipe-pane",
        "-t",
        pane,
        &format!("cat >> '{}'", log.display()),
    ]);
    assert!(s.pane_piped(pane));
    log
}

/// In every shell: once a call has taken what there was, the next finds
/// the shell idle at once, even with another program's pipe on the pane
/// (the long way refuses there, as the last call here shows); and the
/// user's pipe is left as it was.
#[test]
fn an_idle_prompt_is_answered_without_a_pipe_of_its_own() {
    for shell in installed_shells(&SHELLS) {
        let s = TestServer::new();
        let pane = s.shell_window(shell, "");
        s.type_line(&pane, "echo first");
        s.wait_until(&pane, "first", || {
            s.capture(&pane).lines().any(|l| l == "first")
        });
        s.wait_for_prompt(&pane);
        let v = output(&s, &pane, "5");
        assert!(json_lines(&v).contains(&"first".to_owned()), "{shell}: {v}");
        s.wait_no_helpers();
        let log = log_pane(&s, &pane);
        for _ in 0..2 {
            let v = output(&s, &pane, "5");
            assert_eq!(v["reason"], "idle", "{shell}: {v}");
            assert_eq!(json_lines(&v), Vec::<String>::new(), "{shell}: {v}");
            assert_eq!(v["lines_missed"], 0, "{shell}: {v}");
            assert_eq!(v["lines_missed_exact"], true, "{shell}: {v}");
        }
        assert!(s.pane_piped(&pane), "{shell}: the user's pipe was closed");
        // New output needs the stream, which another program has.
        s.type_line(&pane, "echo second");
        s.wait_until(&pane, "second", || {
            std::fs::read_to_string(&log).is_ok_and(|t| t.contains("second\r\n"))
        });
        s.wait_for_prompt(&pane);
        let mut c = s.tw();
        c.args(["output", "-t", &pane, "--json", "--timeout", "1"]);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(2), "{shell}: {f:?}");
        assert_eq!(f.json()["error"]["kind"], "pipe_busy", "{shell}: {f:?}");
        s.tmux(&["pipe-pane", "-t", &pane]);
        let v = output(&s, &pane, "5");
        assert!(
            json_lines(&v).contains(&"second".to_owned()),
            "{shell}: {v}"
        );
        s.wait_no_helpers();
    }
}

/// Text typed at the prompt and not entered is reported by every call
/// while it stays; once erased, the prompt is idle again.
#[test]
fn text_typed_at_an_idle_prompt_is_reported_each_time() {
    let s = TestServer::new();
    let pane = s.pane.clone();
    s.wait_for_prompt(&pane);
    output(&s, &pane, "5");
    s.tmux(&["send-keys", "-t", &pane, "-l", "echo half-typed"]);
    s.wait_until(&pane, "the typed text", || {
        s.capture(&pane).contains("$ echo half-typed")
    });
    for _ in 0..2 {
        let v = output(&s, &pane, "0.3");
        assert_ne!(v["reason"], "idle", "{v}");
        assert!(
            v["unsubmitted_input"]
                .as_str()
                .is_some_and(|t| t.ends_with("echo half-typed")),
            "{v}"
        );
    }
    s.tmux(&["send-keys", "-t", &pane, "C-u"]);
    s.wait_for_prompt(&pane);
    let v = output(&s, &pane, "5");
    assert_eq!(v["reason"], "idle", "{v}");
    assert_eq!(v["unsubmitted_input"], Value::Null, "{v}");
    assert_eq!(json_lines(&v), Vec::<String>::new(), "{v}");
}

/// Another writer (a background job, `wall`, a notifier) puts a line
/// below the prompt and puts the cursor back: the rows the cursor names
/// are unchanged, but that line is new output, and is returned.
#[test]
fn a_line_written_below_an_idle_prompt_is_output() {
    let s = TestServer::new();
    let pane = s.pane.clone();
    s.wait_for_prompt(&pane);
    output(&s, &pane, "5");
    let tty = s.tmux(&["display-message", "-p", "-t", &pane, "#{pane_tty}"]);
    // Save the cursor, two rows down, write, restore the cursor.
    std::fs::write(tty.trim(), "\x1b7\n\nFROM-ELSEWHERE\x1b8").unwrap();
    s.wait_until(&pane, "the line below", || {
        s.capture(&pane).contains("FROM-ELSEWHERE")
    });
    s.wait_for_prompt(&pane);
    let v = output(&s, &pane, "5");
    assert_ne!(v["reason"], "idle", "{v}");
    assert!(json_lines(&v).contains(&"FROM-ELSEWHERE".to_owned()), "{v}");
}

/// A job left running behind the shell may write at any moment: the
/// prompt is not idle.
#[test]
fn a_prompt_with_a_job_behind_it_is_not_idle() {
    let s = TestServer::new();
    let pane = s.pane.clone();
    let go = crate::common::unique("go");
    s.type_line(&pane, &format!("(tmux wait-for {go}; echo JOB-DONE) &"));
    s.wait_until(&pane, "the job", || s.capture(&pane).contains("[1]"));
    s.wait_for_prompt(&pane);
    output(&s, &pane, "0.3");
    let v = output(&s, &pane, "0.3");
    assert_ne!(v["reason"], "idle", "{v}");
    s.tmux(&["wait-for", "-S", &go]);
    s.wait_until(&pane, "the job's line", || {
        s.capture(&pane).contains("JOB-DONE")
    });
    // (Written after the prompt, on its row.)
    let v = output(&s, &pane, "5");
    assert!(
        json_lines(&v).iter().any(|l| l.ends_with("JOB-DONE")),
        "{v}"
    );
}
