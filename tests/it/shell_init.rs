//! `tmux-wait shell-init SHELL`: a real bash, zsh and fish load the printed
//! code from their rc files as a person would (`eval "$(tmux-wait
//! shell-init bash)"`), and `output` and `watch --done` then report the
//! exit status of commands typed into them, from the OSC 133 D mark.

use crate::common::*;
use serde_json::Value;
use std::process::Command;

/// A new window running `shell` with the integration loaded from its rc
/// file (and `extra_rc` before it), at its `$ ` prompt.
fn shell_pane(s: &TestServer, shell: &str, extra_rc: &str) -> String {
    let init = match shell {
        "fish" => "tmux-wait shell-init fish | source".to_owned(),
        sh => format!("eval \"$(tmux-wait shell-init {sh})\""),
    };
    s.shell_window(shell, &format!("{extra_rc}\n{init}"))
}

fn output(s: &TestServer, pane: &str) -> Value {
    output_within(s, pane, "5")
}

/// Take what is unseen, waiting at most `timeout` for something new.
fn output_within(s: &TestServer, pane: &str, timeout: &str) -> Value {
    let mut c = s.tw();
    c.args(["output", "-t", pane, "--json", "--timeout", timeout]);
    let f = run_bounded(c);
    assert!(matches!(f.code, Some(0 | 1)), "{f:?}");
    f.json()
}

/// The exit status of a command typed by a person, as `output` and
/// `watch --done` report it.
fn reports_exit_status(shell: &str) {
    if !installed(shell) {
        println!("skipped: {shell} is not installed");
        return;
    }
    let s = TestServer::new();
    let pane = shell_pane(&s, shell, "");
    // A first call places the cursor.
    let first = output_within(&s, &pane, "0.3");
    assert_eq!(first["exit_status"], Value::Null, "{first}");
    s.type_line(&pane, "sh -c 'sleep 0.3; exit 3'");
    let mut last = Value::Null;
    s.wait_until(&pane, "output to report the end", || {
        last = output(&s, &pane);
        last["finished"] == true || last["timed_out"] == true
    });
    assert_eq!(last["exit_status"], 3, "{last}");
    assert_eq!(last["exit_source"], "osc133", "{last}");
    s.wait_for_prompt(&pane);

    // The F key's watch: the command runs when it starts.
    s.type_line(&pane, "sh -c 'sleep 1; exit 4'");
    s.wait_for_command_other_than(&pane, shell);
    let mut c = s.tw();
    c.args(["watch", "-t", &pane, "--done", "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    let v = f.json();
    assert_eq!(v["outcome"], "done", "{v}");
    assert_eq!(v["exit_status"], 4, "{v}");
    assert_eq!(v["ok"], false, "{v}");
    s.wait_for_prompt(&pane);

    // An empty line is no command: it ends nothing.
    let _ = output_within(&s, &pane, "0.3");
    let w = s.start_wait(&["output", "-t", &pane, "--json", "--timeout", "1"]);
    s.type_line(&pane, "");
    let f = w.finish(&s);
    assert_eq!(f.json()["finished"], false, "{}", f.stdout);
    s.wait_for_prompt(&pane);
    // A command that fails at once, ending while output waits.
    let _ = output_within(&s, &pane, "0.3");
    let w = s.start_wait(&["output", "-t", &pane, "--json", "--timeout", "5"]);
    s.type_line(&pane, "false");
    last = w.finish(&s).json();
    if last["finished"] != true && last["timed_out"] != true {
        s.wait_until(&pane, "output to report the end of `false`", || {
            last = output(&s, &pane);
            last["finished"] == true || last["timed_out"] == true
        });
    }
    assert_eq!(last["exit_status"], 1, "{last}");
    assert_eq!(last["exit_source"], "osc133", "{last}");

    // The marks tell the typed line from output: a text wait does not
    // match what is typed, only what the command writes.
    s.wait_for_prompt(&pane);
    let w = s.start_wait(&[
        "text",
        "-t",
        &pane,
        "--pattern",
        "TYPED-HERE",
        "--json",
        "--timeout",
        "5",
    ]);
    s.type_line(&pane, "echo TYPED-HERE | tr A-Z a-z; echo tYpEd-hErE");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(f.json()["matched_lines"][0], "typed-here", "{}", f.stdout);
}

#[test]
fn bash_reports_exit_status() {
    reports_exit_status("bash");
}

#[test]
fn zsh_reports_exit_status() {
    reports_exit_status("zsh");
}

#[test]
fn fish_reports_exit_status() {
    reports_exit_status("fish");
}

/// What the shell had is kept: `$?` reaches the user's own PROMPT_COMMAND
/// (or precmd hook), and loading the code twice (an rc file sourced again)
/// adds the marks once.
#[test]
fn keeps_the_users_prompt_command_and_status() {
    for shell in ["bash", "zsh"] {
        if !installed(shell) {
            println!("skipped: {shell} is not installed");
            continue;
        }
        let s = TestServer::new();
        let (mine, again) = if shell == "bash" {
            (
                "PROMPT_COMMAND='mine=$?'",
                "eval \"$(tmux-wait shell-init bash)\"",
            )
        } else {
            (
                "mine_hook() { mine=$? }; autoload -Uz add-zsh-hook; add-zsh-hook precmd mine_hook",
                "eval \"$(tmux-wait shell-init zsh)\"",
            )
        };
        let pane = shell_pane(&s, shell, &format!("{mine}\n{again}"));
        let out = s.dir().join(format!("{shell}.out"));
        s.type_line(&pane, "sh -c 'exit 7'");
        s.wait_for_prompt(&pane);
        s.type_line(
            &pane,
            &format!(
                "echo \"status=$? mine=$mine\" > '{o}'; {list} >> '{o}'",
                o = out.display(),
                list = if shell == "bash" {
                    "declare -p PROMPT_COMMAND PS0 PS1"
                } else {
                    "print -r -- $precmd_functions $preexec_functions ${PS1//$'\\e'/ESC}"
                }
            ),
        );
        s.wait_until(&pane, "the report", || {
            std::fs::read_to_string(&out).is_ok_and(|t| t.lines().count() >= 2)
        });
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.starts_with("status=7 mine=7\n"), "{shell}: {text}");
        assert_eq!(
            text.matches("__tmux_wait_prompt_start").count(),
            1,
            "{shell}: {text}"
        );
        assert_eq!(text.matches("133;B").count(), 1, "{shell}: {text}");
        if shell == "bash" {
            assert_eq!(text.matches("133;C").count(), 1, "{shell}: {text}");
        } else {
            assert_eq!(
                text.matches("__tmux_wait_preexec").count(),
                1,
                "{shell}: {text}"
            );
        }
    }
}

#[test]
fn prints_code_for_each_shell_and_refuses_others() {
    for shell in ["bash", "zsh", "fish"] {
        let f = run_bounded({
            let mut c = Command::new(BIN);
            c.args(["shell-init", shell]);
            c
        });
        assert_eq!(f.code, Some(0), "{f:?}");
        assert!(f.stdout.contains("133;D;"), "{shell}: {}", f.stdout);
        assert!(f.stderr.is_empty());
    }
    let f = run_bounded({
        let mut c = Command::new(BIN);
        c.args(["shell-init", "tcsh"]);
        c
    });
    assert_eq!(f.code, Some(2), "{f:?}");
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
}

/// A person's command that ends while no call watches: tmux 3.8 keeps its
/// status (from the OSC 133 D mark), and `output` reports it; older tmux
/// keeps none, and `output` says only that it ended.
#[test]
fn a_command_that_ended_unwatched_reports_its_status_where_tmux_keeps_it() {
    let s = TestServer::new();
    let pane = shell_pane(&s, "bash", "");
    let go = unique("go");
    s.type_line(&pane, &format!("tmux wait-for {go}; (exit 7)"));
    s.wait_for_command(&pane, "tmux");
    // A call while it runs: the cursor says a command was running.
    let v = output_within(&s, &pane, "0.3");
    assert_eq!(v["finished"], false, "{v}");
    s.tmux(&["wait-for", "-S", &go]);
    s.wait_for_prompt(&pane);
    let v = output_within(&s, &pane, "1");
    assert_eq!(v["finished"], true, "{v}");
    let version = s.tmux(&["display-message", "-p", "#{version}"]);
    let keeps_status = version.trim().starts_with("next-3.8") || version.trim() >= "3.8";
    if keeps_status {
        assert_eq!(v["exit_status"], 7, "{version}: {v}");
        assert_eq!(v["exit_source"], "osc133", "{version}: {v}");
    } else {
        assert_eq!(v["exit_status"], Value::Null, "{version}: {v}");
        assert_eq!(v["exit_source"], "shell", "{version}: {v}");
    }
}
