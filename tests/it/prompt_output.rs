//! Output written while a shell waits at its prompt is output; the echo of
//! keys typed there never is. Each case on real shells: bash (readline),
//! zsh (zle) and dash (no line editor: the kernel echoes), and bash with
//! OSC 133 marks. A waiter is armed, then the case is played, and the
//! result says whether the text counted.

use crate::common::*;

const SHELLS: [&str; 3] = ["bash", "zsh", "dash"];

/// The shells of `SHELLS` that are here; the others are skipped, saying so.
fn shells() -> Vec<&'static str> {
    installed_shells(&SHELLS)
}

/// A text wait for `pattern` on `pane`, armed, with `timeout`.
fn wait(s: &TestServer, pane: &str, pattern: &str, timeout: &str) -> Waiter {
    s.start_wait(&[
        "text",
        "-t",
        pane,
        "--json",
        "--pattern",
        pattern,
        "--timeout",
        timeout,
    ])
}

/// Type `text` key by key, each drawn before the next (as a person types,
/// slowly), without Enter.
fn type_slowly(s: &TestServer, pane: &str, text: &str) {
    let mut shown = String::new();
    for ch in text.chars() {
        s.tmux(&["send-keys", "-t", pane, "-l", &ch.to_string()]);
        shown.push(ch);
        // (Captured lines end without their trailing blanks.)
        s.wait_until(pane, &format!("{shown:?} to be drawn"), || {
            s.capture(pane).contains(shown.trim_end())
        });
    }
}

/// The wait ended with a match on exactly `line`.
fn matched(f: &Finished, line: &str, what: &str) {
    assert_eq!(f.code, Some(0), "{what}: {} / {}", f.stdout, f.stderr);
    assert_eq!(
        f.json()["matched_lines"][0],
        line,
        "{what}: {} / {}",
        f.stdout,
        f.stderr
    );
}

/// The wait timed out: what was written did not count as new output.
fn not_matched(f: &Finished, what: &str) {
    assert_eq!(f.code, Some(1), "{what}: {} / {}", f.stdout, f.stderr);
    assert_eq!(f.json()["outcome"], "timeout", "{what}: {}", f.stdout);
}

/// Start a background job that waits for channel `go`, then runs `then`.
fn background_job(s: &TestServer, pane: &str, go: &str, then: &str) {
    s.type_line(pane, &format!("(tmux wait-for {go}; {then}) &"));
    s.wait_for_prompt(pane);
}

/// A background job's line, written while the shell waits at its prompt,
/// is output: the most common shape of "wait until my server is up".
#[test]
fn a_background_jobs_line_at_the_prompt_is_output() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let go = unique("go");
        background_job(&s, &p, &go, "echo READY_$((4+2))");
        let w = wait(&s, &p, "READY_6", "10");
        s.tmux(&["wait-for", "-S", &go]);
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{sh}: {} / {}", f.stdout, f.stderr);
        assert!(
            f.json()["matched_lines"][0]
                .as_str()
                .is_some_and(|l| l.ends_with("READY_6")),
            "{sh}: {}",
            f.stdout
        );
        assert_eq!(f.json()["saw_new_output"], true, "{sh}");
    }
}

/// A partial line (`printf 'Continue? '`) from a background job is output
/// at once: under a line editor (bash, zsh) the shell did not write it;
/// under the kernel's echo (dash) a process of the pane wrote it, which
/// typed keys never are.
#[test]
fn a_background_partial_line_at_the_prompt() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let go = unique("go");
        background_job(
            &s,
            &p,
            &go,
            "printf 'Continue%s ' '?'; tmux wait-for never-$$",
        );
        let w = wait(&s, &p, "Continue?", "10");
        s.tmux(&["wait-for", "-S", &go]);
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{sh}: {} / {}", f.stdout, f.stderr);
        s.tmux(&["send-keys", "-t", &p, "C-c"]);
    }
}

/// A write to the pane's terminal from outside the pane (`printf > tty`,
/// as `wall` does) is output.
#[test]
fn a_write_to_the_tty_from_outside_is_output() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let tty = s.tmux(&["display-message", "-p", "-t", &p, "#{pane_tty}"]);
        let w = wait(&s, &p, "FROM_OUTSIDE", "10");
        std::fs::OpenOptions::new()
            .write(true)
            .open(tty.trim())
            .and_then(|mut t| std::io::Write::write_all(&mut t, b"FROM_OUTSIDE\r\n"))
            .unwrap();
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{sh}: {} / {}", f.stdout, f.stderr);
    }
}

/// Text typed without Enter, slowly, piece by piece: echo, never output.
#[test]
fn typed_text_without_enter_is_never_output() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let w = wait(&s, &p, "TYPED_ONLY", "1.5");
        type_slowly(&s, &p, "echo TYPED_ONLY");
        let f = w.finish(&s);
        not_matched(&f, sh);
        assert_eq!(f.json()["saw_new_output"], false, "{sh}: {}", f.stdout);
        s.tmux(&["send-keys", "-t", &p, "C-u"]);
    }
}

/// A typed command whose own output matches later: the wait returns on
/// the output, not on the echo of the command line.
#[test]
fn a_typed_command_matches_on_its_output_not_its_echo() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let go = unique("go");
        let w = wait(&s, &p, "BOTH_ECHO_AND_OUTPUT", "10");
        s.type_line(
            &p,
            &format!("tmux wait-for {go}; echo BOTH_ECHO_AND_OUTPUT"),
        );
        s.wait_for_command(&p, "tmux");
        let w = armed(&s, w, &format!("{sh}: matched the echo"));
        s.tmux(&["wait-for", "-S", &go]);
        matched(&w.finish(&s), "BOTH_ECHO_AND_OUTPUT", sh);
    }
}

/// A typed command longer than the pane is wide, wrapping over rows.
#[test]
fn a_typed_command_wrapping_over_rows_is_echo() {
    for sh in shells() {
        let s = TestServer::with(Options {
            width: 40,
            ..Options::default()
        });
        let p = s.shell_window(sh, "");
        let go = unique("go");
        let w = wait(&s, &p, "WRAPPED_PATTERN", "10");
        let filler = "x".repeat(60);
        s.type_line(
            &p,
            &format!("tmux wait-for {go}; : {filler}; echo WRAPPED_PATTERN"),
        );
        s.wait_for_command(&p, "tmux");
        let w = armed(&s, w, &format!("{sh}: matched the wrapped echo"));
        s.tmux(&["wait-for", "-S", &go]);
        matched(&w.finish(&s), "WRAPPED_PATTERN", sh);
    }
}

/// Editing the line with Left and Backspace, then Enter: the echo of the
/// edits is not output; what the edited command prints is.
#[test]
fn editing_with_left_and_backspace_is_echo() {
    for sh in ["bash", "zsh"] {
        if !installed(sh) {
            continue;
        }
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        // (Time to type and edit; a wrong match would come with the Enter.)
        let w = wait(&s, &p, "EDITEDX", "5");
        type_slowly(&s, &p, "echo EDITEDXY");
        s.tmux(&["send-keys", "-t", &p, "Left", "BSpace"]);
        s.wait_until(&p, "the edit", || s.capture(&p).contains("EDITEDY"));
        let w = armed(&s, w, &format!("{sh}: matched edited echo"));
        s.tmux(&["send-keys", "-t", &p, "Enter"]);
        // The command prints EDITEDY: no match, the wait times out on it.
        let f = w.finish(&s);
        not_matched(&f, sh);
    }
}

/// History recall (Up) redraws an old command line: echo. Enter runs it.
#[test]
fn history_recall_is_echo() {
    for sh in ["bash", "zsh"] {
        if !installed(sh) {
            continue;
        }
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let go = unique("go");
        s.type_line(&p, &format!("tmux wait-for {go}; echo RECALLED_$((1))"));
        s.wait_for_command(&p, "tmux");
        s.tmux(&["wait-for", "-S", &go]);
        s.wait_for_prompt(&p);
        let w = wait(&s, &p, "RECALLED", "10");
        s.tmux(&["send-keys", "-t", &p, "Up"]);
        s.wait_until(&p, "the recalled line", || {
            s.capture(&p).matches("RECALLED_$((1))").count() >= 2
        });
        let w = armed(&s, w, &format!("{sh}: matched the recalled line"));
        s.tmux(&["send-keys", "-t", &p, "Enter"]);
        s.wait_for_command(&p, "tmux");
        s.tmux(&["wait-for", "-S", &go]);
        matched(&w.finish(&s), "RECALLED_1", sh);
    }
}

/// Tab completion that lists candidates: the list is the shell's own
/// writing while it reads a line, like its prompt, so it is not output.
#[test]
fn a_completion_list_is_not_output() {
    for sh in ["bash", "zsh"] {
        if !installed(sh) {
            continue;
        }
        let s = TestServer::new();
        for f in ["cand_LISTED_a", "cand_LISTED_b"] {
            std::fs::write(s.dir().join(f), "").unwrap();
        }
        let p = s.shell_window(sh, "");
        let w = wait(&s, &p, "LISTED", "1.5");
        type_slowly(&s, &p, "ls cand");
        // Tab completes what is common, and lists the rest once pressed again.
        s.wait_until(&p, "the list", || {
            s.tmux(&["send-keys", "-t", &p, "Tab"]);
            std::thread::sleep(std::time::Duration::from_millis(100));
            s.capture(&p).contains("cand_LISTED_b")
        });
        not_matched(&w.finish(&s), sh);
        s.tmux(&["send-keys", "-t", &p, "C-u"]);
    }
}

/// Ctrl-C on a typed line, Ctrl-L redrawing it: echo, never output.
#[test]
fn ctrl_c_and_ctrl_l_are_echo() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let w = wait(&s, &p, "ABANDONED", "1.5");
        type_slowly(&s, &p, "echo ABANDONED");
        s.tmux(&["send-keys", "-t", &p, "C-c"]);
        s.wait_for_prompt(&p);
        type_slowly(&s, &p, "echo REDRAWN_ABANDONED");
        s.tmux(&["send-keys", "-t", &p, "C-l"]);
        s.tmux(&["send-keys", "-t", &p, "C-u"]);
        not_matched(&w.finish(&s), sh);
    }
}

/// A multi-line command (PS2 continuation): the typed lines are echo, the
/// output is output.
#[test]
fn a_continued_command_is_echo_until_it_runs() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let go = unique("go");
        let w = wait(&s, &p, "CONTINUED", "10");
        s.type_line(&p, "for i in 1; do");
        s.wait_until(&p, "the continuation prompt", || {
            s.capture(&p)
                .lines()
                .rev()
                .find(|l| !l.is_empty())
                .is_some_and(|l| l.trim_end().ends_with(">"))
        });
        s.type_line(&p, &format!("tmux wait-for {go}; echo CONTINUED; done"));
        s.wait_for_command(&p, "tmux");
        let w = armed(&s, w, &format!("{sh}: matched the continued line"));
        s.tmux(&["wait-for", "-S", &go]);
        matched(&w.finish(&s), "CONTINUED", sh);
    }
}

/// With OSC 133 marks (the shell integration `tmux-wait shell-init` prints)
/// the same holds: a background line is output, typed text is not.
#[test]
fn with_osc133_marks() {
    let s = TestServer::new();
    let p = s.shell_window("bash", "eval \"$(tmux-wait shell-init bash)\"");
    let w = wait(&s, &p, "MARKED", "1.5");
    type_slowly(&s, &p, "echo MARKED");
    not_matched(&w.finish(&s), "typed");
    s.tmux(&["send-keys", "-t", &p, "C-u"]);
    let go = unique("go");
    background_job(&s, &p, &go, "echo MARKED_BG");
    let w = wait(&s, &p, "MARKED_BG", "10");
    s.tmux(&["wait-for", "-S", &go]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{} / {}", f.stdout, f.stderr);
}

/// `output` and a watch follow the same rule: a background line at the
/// prompt is returned by `output`.
#[test]
fn output_returns_a_background_line_at_the_prompt() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let go = unique("go");
        background_job(&s, &p, &go, "echo OUT_BG");
        let mut c = s.tw();
        c.args(["output", "-t", &p, "--json", "--timeout", "1"]);
        let first = run_bounded(c);
        assert_eq!(first.code, Some(0), "{sh}: {}", first.stderr);
        let o = s.start_wait(&["output", "-t", &p, "--json", "--timeout", "10"]);
        s.tmux(&["wait-for", "-S", &go]);
        let f = o.finish(&s);
        let v = f.json();
        let lines: Vec<&str> = v["lines"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l.as_str())
            .collect();
        assert!(
            lines.iter().any(|l| l.ends_with("OUT_BG")),
            "{sh}: {}",
            f.stdout
        );
    }
}

/// A watch (what the plugin's `W` runs) and the poll engine take a
/// background line at the prompt as output too. The job repeats its line,
/// so the watch sees one whenever it is armed; it is killed at the end.
#[test]
fn a_watch_and_the_poll_engine_see_a_background_line() {
    for sh in shells() {
        let s = TestServer::new();
        let p = s.shell_window(sh, "");
        let go = unique("go");
        background_job(
            &s,
            &p,
            &go,
            "i=0; while [ $i -lt 50 ]; do echo WATCHED_$((1+1)); i=$((i+1)); sleep 0.2; done",
        );
        let poll = s.start_wait(&[
            "text",
            "--engine",
            "poll",
            "-t",
            &p,
            "--pattern",
            "WATCHED_2",
            "--timeout",
            "10",
            "--json",
        ]);
        let watch = s.spawn(&[
            "watch",
            "-t",
            &p,
            "--pattern",
            "WATCHED_2",
            "--timeout",
            "10s",
            "--json",
        ]);
        s.tmux(&["wait-for", "-S", &go]);
        let f = poll.finish(&s);
        assert_eq!(f.code, Some(0), "{sh}, poll: {} / {}", f.stdout, f.stderr);
        let line = f.json()["matched_lines"][0].as_str().map(str::to_owned);
        assert!(
            line.is_some_and(|l| l.ends_with("WATCHED_2")),
            "{sh}, poll: {}",
            f.stdout
        );
        let w = done(watch);
        s.type_line(&p, "kill $!");
        assert_eq!(w.code, Some(0), "{sh}, watch: {} / {}", w.stdout, w.stderr);
        assert_eq!(w.json()["outcome"], "matched", "{sh}, watch: {}", w.stdout);
    }
}

/// The wait is still waiting (it matched nothing yet); else fail with
/// what it printed.
fn armed(s: &TestServer, w: Waiter, what: &str) -> Waiter {
    if !still_running(w.pid()) {
        let f = w.finish(s);
        panic!("{what}: {} / {}", f.stdout, f.stderr);
    }
    w
}

fn still_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or("");
            state != "Z"
        })
        .unwrap_or(false)
}

/// The tail a match reports is drawn from the stream (no second call to
/// tmux); it must be what the pane shows from the typed command down:
/// overwritten and wrapped lines included, in every shell, with zsh's
/// PROMPT_SP on as well.
#[test]
fn a_matchs_tail_is_what_the_pane_shows() {
    let mut cases: Vec<(&str, &str)> = shells().into_iter().map(|sh| (sh, "")).collect();
    if installed("zsh") {
        cases.push(("zsh", "setopt prompt_sp"));
    }
    for (sh, rc) in cases {
        let s = TestServer::new();
        let pane = s.shell_window(sh, rc);
        let w = wait(&s, &pane, "END-OF-IT", "8");
        // `read` keeps the pane as it was at the match (no prompt after).
        let cmd = "printf 'one\\ntwo\\r2wo\\n%0150d\\nEND-OF-IT\\n' 7; read x";
        s.type_line(&pane, cmd);
        let f = w.finish(&s);
        matched(&f, "END-OF-IT", &format!("{sh} {rc}"));
        let tail: Vec<String> = f.json()["tail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect();
        let shown = s.tmux(&["capture-pane", "-p", "-J", "-t", &pane]);
        let rows: Vec<&str> = shown.lines().map(str::trim_end).collect();
        let from = rows
            .iter()
            .rposition(|r| r.ends_with(cmd))
            .unwrap_or_else(|| panic!("{sh}: no typed line in {shown}"));
        let mut expected: Vec<String> = rows[from..].iter().map(|r| (*r).to_owned()).collect();
        while expected.last().is_some_and(|r| r.is_empty()) {
            expected.pop();
        }
        assert_eq!(tail, expected, "{sh} {rc}: pane shows\n{shown}");
        assert_eq!(tail[2], "2wo", "{sh} {rc}");
        s.tmux(&["send-keys", "-t", &pane, "C-c"]);
    }
}
