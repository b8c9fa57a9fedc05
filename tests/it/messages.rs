//! What people read: a timeout cut by a limit says so once on stderr, a
//! literal pattern that reads like a regex gets a hint when it times out,
//! and the result line names the pattern that decided.

use crate::common::*;

fn run_tw(s: &TestServer, ceiling: Option<&str>, args: &[&str]) -> Finished {
    let mut c = s.tw();
    if let Some(v) = ceiling {
        c.env("TMUX_WAIT_MAX_SECONDS", v);
    }
    c.args(args);
    run_bounded(c)
}

#[test]
fn a_cut_timeout_says_so_once() {
    let s = TestServer::new();
    s.type_line(&s.pane, "echo unseen");
    s.wait_until(&s.pane, "the echo", || {
        // (capture-pane -J keeps trailing spaces on tmux 3.2.)
        s.capture(&s.pane).lines().any(|l| l.trim_end() == "unseen")
    });
    // output's own ceiling: returns at once with the unseen lines.
    let f = run_tw(&s, None, &["output", "-t", &s.pane, "--timeout", "2h"]);
    assert_eq!(f.code, Some(0), "{f:?}");
    let notice = "tmux-wait: --timeout 2h is more than output's ceiling of 1500s; waiting 1500s";
    assert_eq!(f.stderr.matches(notice).count(), 1, "{}", f.stderr);
    assert!(f.stderr.starts_with(notice), "{}", f.stderr);

    // TMUX_WAIT_MAX_SECONDS, for each kind of wait: once each.
    let cases: &[&[&str]] = &[
        &[
            "text",
            "-t",
            &s.pane,
            "--pattern",
            "never",
            "--timeout",
            "1m",
        ],
        &[
            "watch",
            "-t",
            &s.pane,
            "--pattern",
            "never",
            "--timeout",
            "1m",
        ],
        &["channel", "never-signalled", "--timeout", "1m"],
        &[
            "output",
            "-t",
            &s.pane,
            "--until",
            "never",
            "--timeout",
            "1m",
        ],
    ];
    for args in cases {
        let f = run_tw(&s, Some("0.3"), args);
        assert_eq!(f.code, Some(1), "{args:?}: {f:?}");
        let notice = "tmux-wait: --timeout 1m is more than TMUX_WAIT_MAX_SECONDS=0.3; waiting 0.3s";
        assert_eq!(
            f.stderr.matches(notice).count(),
            1,
            "{args:?}: {}",
            f.stderr
        );
        assert_eq!(
            f.stderr.matches("is more than").count(),
            1,
            "{args:?}: {}",
            f.stderr
        );
    }
    // The default timeout, cut: said as such.
    let f = run_tw(
        &s,
        Some("0.2"),
        &["text", "-t", &s.pane, "--pattern", "never"],
    );
    assert!(
        f.stderr.starts_with(
            "tmux-wait: the default --timeout of 8s is more than TMUX_WAIT_MAX_SECONDS=0.2; waiting 0.2s\n"
        ),
        "{}",
        f.stderr
    );
    // run: the command's own status, after the notice.
    let p2 = s.split();
    let f = run_tw(
        &s,
        Some("10"),
        &["run", "-t", &p2, "--timeout", "1m", "--", "echo ran"],
    );
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(f.stdout, "ran\n");
    assert_eq!(
        f.stderr,
        "tmux-wait: --timeout 1m is more than TMUX_WAIT_MAX_SECONDS=10; waiting 10s\n"
    );
    // With --json the JSON's effective_timeout says it; stderr stays quiet.
    let f = run_tw(
        &s,
        Some("0.3"),
        &[
            "text",
            "-t",
            &s.pane,
            "--pattern",
            "x",
            "--timeout",
            "1m",
            "--json",
        ],
    );
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.is_empty(), "{}", f.stderr);
    assert_eq!(f.json()["effective_timeout"], 0.3);
    // Within the limits: nothing said.
    let f = run_tw(&s, None, &["channel", "quiet", "--timeout", "0.2"]);
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.is_empty(), "{}", f.stderr);
}

#[test]
fn a_literal_that_reads_like_a_regex_gets_a_hint() {
    let s = TestServer::new();
    let f = run_tw(
        &s,
        None,
        &[
            "text",
            "-t",
            &s.pane,
            "--pattern",
            "error.*failed",
            "--timeout",
            "0.2",
        ],
    );
    assert_eq!(f.code, Some(1));
    assert!(
        f.stdout.trim_end().ends_with(
            "; \"error.*failed\" is matched as literal text: add --regex to match it as a regular expression"
        ),
        "{}",
        f.stdout
    );
    assert_eq!(f.stdout.lines().count(), 1);
    for args in [
        &["--pattern", "error.*failed", "--regex"][..],
        &["--pattern", "Server listening"][..],
    ] {
        let mut all = vec!["text", "-t", &s.pane, "--timeout", "0.2"];
        all.extend_from_slice(args);
        let f = run_tw(&s, None, &all);
        assert_eq!(f.code, Some(1));
        assert!(!f.stdout.contains("--regex"), "{}", f.stdout);
    }
}

#[test]
fn the_result_line_names_the_pattern() {
    let s = TestServer::new();
    let p2 = s.split();
    let w = s.start_wait(&[
        "text",
        "-t",
        &p2,
        "--pattern",
        "never",
        "--pattern",
        "READY",
        "--stop",
        "FAILED",
    ]);
    s.type_line(&p2, "echo 'service RE''ADY'");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(
        f.stdout
            .starts_with(&format!("matched \"READY\" in {p2} after ")),
        "{}",
        f.stdout
    );
    assert!(
        f.stdout.trim_end().ends_with(": service READY"),
        "{}",
        f.stdout
    );
    let w = s.start_wait(&["text", "-t", &p2, "--pattern", "READY", "--stop", "FAILED"]);
    s.type_line(&p2, "echo 'FAIL''ED: 2'");
    let f = w.finish(&s);
    assert_eq!(f.code, Some(3), "{f:?}");
    assert!(
        f.stdout
            .starts_with(&format!("stopped by \"FAILED\" in {p2} after ")),
        "{}",
        f.stdout
    );
}
