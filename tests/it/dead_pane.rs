//! A pane already dead when a wait starts (remain-on-exit on, its program
//! exited) ends the wait as a pane that dies during it: `pane_died`, with
//! the same exit code, for every command that reads a pane.

use crate::common::{Options, TestServer, run_bounded};

/// A pane whose program has exited, kept by remain-on-exit.
fn dead_pane(s: &TestServer) -> String {
    let p = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", "exit 3"])
        .trim()
        .to_owned();
    s.wait_until(&p, "the pane to be dead", || {
        s.tmux(&["display-message", "-p", "-t", &p, "#{pane_dead}"])
            .trim()
            == "1"
    });
    p
}

#[test]
fn a_wait_on_a_pane_dead_at_entry_is_pane_died() {
    let s = TestServer::with(Options {
        extra_config: "set -g remain-on-exit on".into(),
        ..Default::default()
    });
    let p = dead_pane(&s);
    let dead = format!("pane {p} is dead (its program has exited)");
    for (args, code) in [
        (vec!["text", "--pattern", "x"], 2),
        (vec!["text"], 2),
        (vec!["text", "--engine", "poll", "--pattern", "x"], 2),
        (vec!["output"], 2),
        (vec!["run", "--", "echo hi"], 125),
    ] {
        let f = run_bounded({
            let mut c = s.tw();
            c.arg(args[0])
                .args(["-t", &p, "--json", "--timeout", "5"])
                .args(&args[1..]);
            c
        });
        let j = f.json();
        assert_eq!(f.code, Some(code), "{args:?}: {j} {}", f.stderr);
        assert_eq!(j["error"]["kind"], "pane_died", "{args:?}: {j}");
        assert!(
            j["error"]["message"].as_str().unwrap().contains("is dead"),
            "{args:?}: {j}"
        );
        assert_eq!(f.stderr.lines().count(), 1, "{args:?}: {}", f.stderr);
    }
    // A watch records the same outcome (--done too: the dead pane's pid is
    // nobody's shell).
    for kind in [vec!["--pattern", "x"], vec!["--done"]] {
        let f = run_bounded({
            let mut c = s.tw();
            c.arg("watch")
                .args(&kind)
                .args(["-t", &p, "--json", "--timeout", "5"]);
            c
        });
        let j = f.json();
        assert_eq!(f.code, Some(2), "{kind:?}: {j} {}", f.stderr);
        assert_eq!(j["outcome"], "pane_died", "{kind:?}: {j}");
        assert_eq!(j["line"], dead.as_str(), "{kind:?}: {j}");
    }
    s.wait_no_helpers();
}
