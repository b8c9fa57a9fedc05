//! Text waits on real tmux servers: the seed's behaviours, one test each.

use crate::common::*;

#[test]
fn matches_new_output_and_reports_the_seed_shape() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "server listening"]);
    s.type_line(&s.pane, "echo 'Server listening on port 8000'");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let v = f.json();
    assert_eq!(v["found"], true);
    assert_eq!(v["outcome"], "matched");
    assert_eq!(v["matched_index"], 0);
    assert_eq!(v["matched_lines"][0], "Server listening on port 8000");
    assert_eq!(v["saw_new_output"], true);
    assert_eq!(v["matched_at_entry"], false);
    assert_eq!(v["alternate_screen"], false);
    assert_eq!(v["pane_id"], s.pane.as_str());
    assert_eq!(v["effective_timeout"], 8.0);
    assert!(v["elapsed_seconds"].as_f64().unwrap() > 0.0);
    let tail: Vec<&str> = v["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(tail.contains(&"Server listening on port 8000"), "{tail:?}");
    assert_eq!(v.as_object().unwrap().len(), 11);
}

#[test]
fn scrollback_and_visible_text_from_before_never_match() {
    let s = TestServer::new();
    s.type_line(&s.pane, "seq 1 100; echo OLDMARK");
    s.wait_until(&s.pane, "OLDMARK", || {
        s.capture(&s.pane).contains("\nOLDMARK")
    });
    s.wait_for_prompt(&s.pane);
    let w = s.start_text(&["--pattern", "OLDMARK", "--pattern", "99", "--timeout", "1"]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(1), "{}", f.stdout);
    let v = f.json();
    assert_eq!(v["outcome"], "timeout");
    assert_eq!(v["found"], false);
    assert_eq!(v["matched_at_entry"], true);
    assert_eq!(v["saw_new_output"], false);
    assert_eq!(v["matched_lines"].as_array().unwrap().len(), 0);
}

#[test]
fn stale_paint_below_the_cursor_never_matches() {
    let s = TestServer::new();
    // Paint STALE three rows down, then put the cursor back up.
    s.type_line(&s.pane, "clear; printf '\\n\\n\\n\\nSTALE\\033[5A\\r'");
    s.wait_until(&s.pane, "STALE", || s.capture(&s.pane).contains("STALE"));
    s.wait_for_prompt(&s.pane);
    let w = s.start_text(&["--pattern", "STALE", "--timeout", "1"]);
    s.type_line(&s.pane, "echo other");
    let f = w.finish(&s);
    let v = f.json();
    assert_eq!(v["outcome"], "timeout", "{v}");
    assert_eq!(v["matched_at_entry"], true);
    assert_eq!(v["saw_new_output"], true);
}

#[test]
fn output_at_the_entry_row_without_newline_counts() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "Continue? [y/N]"]);
    s.type_line(&s.pane, "sleep 0.2; read -p 'Continue? [y/N] ' x");
    let f = w.finish(&s);
    assert_eq!(f.matched_line(), "Continue? [y/N]");
    s.type_line(&s.pane, "n");
}

#[test]
fn text_rewritten_with_carriage_return_counts() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "100%"]);
    s.type_line(&s.pane, "printf '10%%\\r50%%\\r100%%\\r'; sleep 1; echo");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}", f.stdout);
}

#[test]
fn a_marker_split_across_a_wrap_matches() {
    let s = TestServer::with(Options {
        width: 20,
        ..Options::default()
    });
    let w = s.start_text(&["--pattern", "MARKER"]);
    // 17 zeros then MARKER: the row breaks inside the marker.
    s.type_line(&s.pane, "printf '%017dMARKER\\n' 0");
    let f = w.finish(&s);
    assert_eq!(f.matched_line(), "00000000000000000MARKER");
}

#[test]
fn stop_beats_pattern_in_the_same_output() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "ok", "--stop", "nomatch", "--stop", "error:"]);
    s.type_line(&s.pane, "printf 'all ok\\nerror: bad\\n'");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(3), "{}", f.stdout);
    let v = f.json();
    assert_eq!(v["outcome"], "stopped");
    assert_eq!(v["found"], false);
    assert_eq!(v["matched_index"], 1);
    assert_eq!(v["matched_lines"][0], "error: bad");
}

/// Under a flood, a text wait makes only the lines its patterns can hit:
/// a hit among tens of thousands of lines is still found, anchored and
/// case-insensitive, and so is a stop in the middle of them.
#[test]
fn a_hit_among_a_flood_of_lines_is_found() {
    let s = TestServer::new();
    let found = s.start_text(&["--regex", "--pattern", "^done in [0-9]+s$"]);
    let stopped = s.start_text(&["--pattern", "never there", "--regex", "--stop", "^49999$"]);
    s.type_line(&s.pane, "seq 1 60000; printf 'x\\nDone in 7s\\n'; seq 1 30");
    let v = found.finish(&s).json();
    assert_eq!(v["outcome"], "matched", "{v}");
    assert_eq!(v["matched_lines"], serde_json::json!(["Done in 7s"]), "{v}");
    // The tail is the pane as drawn, lines no pattern could hit included.
    let tail = v["tail"].as_array().unwrap();
    assert!(!tail.is_empty(), "{v}");
    for l in tail.iter().map(|l| l.as_str().unwrap()) {
        let known = ["x", "Done in 7s", "$"].contains(&l) || l.parse::<u32>().is_ok();
        assert!(known, "{l:?} in {v}");
    }
    let v = stopped.finish(&s).json();
    assert_eq!(v["outcome"], "stopped", "{v}");
    assert_eq!(v["matched_lines"], serde_json::json!(["49999"]), "{v}");
}

#[test]
fn first_pattern_in_list_order_wins() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "second", "--pattern", "first"]);
    // One line holding both: which pattern wins is the list's order, not
    // the text's.
    s.type_line(&s.pane, "echo 'first, then sec''ond'");
    let v = w.finish(&s).json();
    assert_eq!(v["matched_index"], 0);
    assert_eq!(v["matched_lines"][0], "first, then second");
}

#[test]
fn regex_and_match_case() {
    let s = TestServer::new();
    let w = s.start_text(&["--regex", "--match-case", "--pattern", "^Done in [0-9]+s$"]);
    s.type_line(&s.pane, "printf 'done in 5s\\nDone in 7s\\n'");
    let v = w.finish(&s).json();
    assert_eq!(v["matched_lines"][0], "Done in 7s");
}

#[test]
fn no_pattern_means_any_output() {
    let s = TestServer::new();
    let w = s.start_text(&[]);
    s.type_line(&s.pane, "sleep 0.2; echo something");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0));
    let v = f.json();
    assert_eq!(v["outcome"], "any_output");
    assert_eq!(v["found"], true);
    assert!(v["matched_index"].is_null());
    assert_eq!(v["matched_lines"][0], "something");
}

#[test]
fn alternate_screen_suppresses_matching() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "SECRET", "--timeout", "1.5"]);
    s.type_line(
        &s.pane,
        "printf '\\033[?1049hSECRET\\n'; sleep 3; printf '\\033[?1049l'",
    );
    let f = w.finish(&s);
    assert_eq!(f.code, Some(4), "{}", f.stdout);
    let v = f.json();
    assert_eq!(v["outcome"], "alternate_screen");
    assert_eq!(v["alternate_screen"], true);
    assert_eq!(v["found"], false);
}

#[test]
fn a_killed_pane_is_an_error() {
    let s = TestServer::new();
    let p2 = s.split();
    let w = s.start_wait(&["text", "-t", &p2, "--pattern", "never", "--json"]);
    s.tmux(&["kill-pane", "-t", &p2]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "pane_died");
    assert!(f.stderr.starts_with("tmux-wait: error: "));
}

#[test]
fn a_respawned_pane_is_an_error() {
    let s = TestServer::new();
    let w = s.start_text(&["--pattern", "never"]);
    s.tmux(&["respawn-pane", "-k", "-t", &s.pane]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "pane_respawned");
}

#[test]
fn a_dead_pane_is_an_error() {
    let s = TestServer::with(Options {
        extra_config: "set -g remain-on-exit on".into(),
        ..Options::default()
    });
    let w = s.start_text(&["--pattern", "never"]);
    s.type_line(&s.pane, "exit");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "pane_died");
}

#[test]
fn the_ceiling_clamps_the_timeout() {
    let s = TestServer::new();
    let mut cmd = s.tw();
    cmd.env("TMUX_WAIT_MAX_SECONDS", "0.3");
    let w = s.start_wait_cmd(
        cmd,
        &[
            "text",
            "-t",
            &s.pane,
            "--json",
            "--pattern",
            "x",
            "--timeout",
            "1h",
        ],
    );
    let v = w.finish(&s).json();
    assert_eq!(v["outcome"], "timeout");
    assert_eq!(v["effective_timeout"], 0.3);
}

#[test]
fn targets_by_session_and_window() {
    let s = TestServer::new();
    for target in ["main:0.0", "main", "$0"] {
        let w = s.start_wait(&["text", "-t", target, "--json", "--pattern", "T-OK"]);
        s.type_line(&s.pane, "echo T-OK");
        let v = w.finish(&s).json();
        assert_eq!(v["pane_id"], s.pane.as_str(), "{target}");
        s.wait_for_prompt(&s.pane);
    }
}

#[test]
fn poll_engine_matches_too() {
    let s = TestServer::new();
    let w = s.start_text(&[
        "--engine",
        "poll",
        "--interval",
        "20ms",
        "--pattern",
        "POLLED",
    ]);
    s.type_line(&s.pane, "sleep 0.2; echo POL\"\"LED");
    let f = w.finish(&s);
    assert_eq!(f.matched_line(), "POLLED");
}

#[test]
fn human_output_is_one_line() {
    let s = TestServer::new();
    let w = s.start_wait(&["text", "-t", &s.pane, "--pattern", "HUMAN"]);
    s.type_line(&s.pane, "echo HUMAN");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0));
    assert_eq!(f.stdout.lines().count(), 1, "{}", f.stdout);
    assert!(
        f.stdout.starts_with("matched \"HUMAN\" in %"),
        "{}",
        f.stdout
    );
}

#[test]
fn ready_is_signalled_only_once_armed() {
    let s = TestServer::new();
    let go = unique("go");
    // The pane prints the marker the instant the ready channel is signalled:
    // a wait that signalled before it was armed would miss it.
    s.type_line(
        &s.pane,
        &format!(
            "while tmux -S {} wait-for {go}; do echo ARMED-OK; done",
            s.socket.display()
        ),
    );
    for _ in 0..5 {
        let mut c = s.tw();
        c.args([
            "text",
            "-t",
            &s.pane,
            "--json",
            "--pattern",
            "ARMED-OK",
            "--ready",
            &go,
            "--timeout",
            "10",
        ]);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(0), "{}", f.stdout);
    }
    s.tmux(&["send-keys", "-t", &s.pane, "C-c"]);
}

#[test]
fn hostile_pane_output_stays_data_and_json_stays_valid() {
    let s = TestServer::new();
    let marker = s.dir().join("pwned");
    let w = s.start_text(&["--pattern", "END-HOSTILE"]);
    s.type_line(
        &s.pane,
        &format!(
            "printf '#(touch {m}) #{{pane_id}} $(touch {m}) \\x27;\\\\\\xff\\xfe \\033]0;title\\007 END-HOSTILE\\n'",
            m = marker.display()
        ),
    );
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{}", f.stdout);
    let v = f.json();
    let line = v["matched_lines"][0].as_str().unwrap();
    assert!(
        line.contains("#(touch") && line.contains("#{pane_id}"),
        "{line}"
    );
    assert!(line.contains('\u{fffd}'), "{line}");
    assert!(!marker.exists());
}

#[test]
fn inside_tmux_the_server_and_pane_come_from_the_environment() {
    let s = TestServer::new();
    let p2 = s.split();
    let mut c = std::process::Command::new(BIN);
    c.env("TMUX", format!("{},1,0", s.socket.display()))
        .env("TMUX_PANE", &p2)
        .env_remove("TMUX_WAIT_MAX_SECONDS");
    let w = s.start_wait_cmd(c, &["text", "--json", "--pattern", "FROM-ENV"]);
    s.type_line(&p2, "echo FROM''-ENV");
    let v = w.finish(&s).json();
    assert_eq!(v["pane_id"], p2.as_str());
    assert_eq!(v["outcome"], "matched");
}

/// A wait on a pane another wait already streams joins that stream where
/// it stands: output on the line the cursor is on completes that line, and
/// nothing written after the second wait armed is missed.
#[test]
fn a_second_wait_on_a_streamed_pane_takes_up_the_cursors_line() {
    let s = TestServer::new();
    let go = unique("go");
    s.type_line(
        &s.pane,
        &format!("printf 'WAITING-'; tmux wait-for {go}; echo DONE"),
    );
    s.wait_until(&s.pane, "WAITING- to be drawn", || {
        s.capture(&s.pane)
            .lines()
            .any(|l| l.trim_end() == "WAITING-")
    });
    let first = s.start_text(&["--pattern", "never printed", "--timeout", "8"]);
    let second = s.start_text(&["--pattern", "waiting-done"]);
    s.tmux(&["wait-for", "-S", &go]);
    let f = second.finish(&s);
    assert_eq!(f.code, Some(0), "{} {}", f.stdout, f.stderr);
    assert_eq!(f.json()["matched_lines"][0], "WAITING-DONE");
    drop(first);
}
