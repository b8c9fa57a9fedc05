//! Channel hooks declared in tmux.conf: listeners that report every signal.

use crate::common::*;
use std::path::PathBuf;

fn tw(s: &TestServer, args: &[&str]) -> Finished {
    let mut c = s.tw();
    c.args(args);
    run_bounded(c)
}

fn listeners(s: &TestServer) -> Vec<String> {
    s.processes_using_socket()
        .into_iter()
        .filter(|p| p.contains(" listen "))
        .collect()
}

/// Seconds since process `pid` started (Linux /proc).
fn process_age(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let start: f64 = stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(uptime - start / 100.0)
}

fn option(s: &TestServer, name: &str) -> String {
    s.tmux(&["show-option", "-gqv", name]).trim().to_owned()
}

/// Load the plugin so it runs `hooks sync`, as on a config reload.
fn reload(s: &TestServer) {
    let entry = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tmux-wait.tmux");
    s.tmux(&["run-shell", &entry.to_string_lossy()]);
}

/// Signal `name` with `tmux-wait signal` and wait until the hook's tmux
/// command has appended to @log.
fn signal_and_see(s: &TestServer, name: &str, args: &[&str], entries: usize) {
    let mut a = vec!["signal", name];
    a.extend_from_slice(args);
    assert_eq!(tw(s, &a).code, Some(0));
    s.wait_until(&s.pane, "the hook to fire", || {
        option(s, "@log").matches(',').count() >= entries
    });
}

fn log_hook(s: &TestServer, name: &str) {
    s.tmux(&[
        "set-option",
        "-g",
        &format!("@tmux-wait-hook-{name}"),
        "set-option -gaF @log '#{@tmux-wait-last-seq}:#{@tmux-wait-last-coalesced}:#{@tmux-wait-last-status},'",
    ]);
}

#[test]
fn reload_keeps_one_listener_per_hook_and_stops_removed_ones() {
    let s = TestServer::new();
    s.tmux(&["set-option", "-g", "@tmux-wait-hook-build", "notify"]);
    log_hook(&s, "tests.unit:1");
    reload(&s);
    reload(&s);
    s.wait_until(&s.pane, "two listeners", || listeners(&s).len() == 2);
    // A third sync races nothing: still two, and the lock keeps it so.
    assert_eq!(tw(&s, &["hooks", "sync"]).code, Some(0));
    s.wait_until(&s.pane, "two listeners", || listeners(&s).len() == 2);
    let list = tw(&s, &["hooks", "list", "--json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    s.tmux(&["set-option", "-gu", "@tmux-wait-hook-build"]);
    reload(&s);
    s.wait_until(&s.pane, "one listener", || listeners(&s).len() == 1);
    assert!(listeners(&s)[0].contains("listen tests.unit:1"));
}

#[test]
fn a_hook_fires_on_each_of_twenty_signals_with_its_payload() {
    let s = TestServer::new();
    log_hook(&s, "ci");
    assert_eq!(tw(&s, &["hooks", "sync"]).code, Some(0));
    s.wait_until(&s.pane, "the listener", || listeners(&s).len() == 1);
    // The listener reads the channel's sequence when it starts; give it a
    // signal to be sure it is armed, then twenty more.
    signal_and_see(&s, "ci", &["--status", "0"], 1);
    for i in 1..=20 {
        let st = (i % 3).to_string();
        signal_and_see(&s, "ci", &["--status", &st], i + 1);
    }
    let log = option(&s, "@log");
    let entries: Vec<&str> = log.trim_end_matches(',').split(',').collect();
    assert_eq!(entries.len(), 21, "{log}");
    for (i, e) in entries.iter().enumerate().skip(1) {
        assert_eq!(*e, format!("{}:0:{}", i + 1, i % 3), "{log}");
    }
    // A plain wait-for -S from a script that knows nothing of tmux-wait
    // fires it too, with no status.
    s.tmux(&["wait-for", "-S", "ci"]);
    s.wait_until(&s.pane, "the plain signal", || {
        option(&s, "@log").matches(',').count() == 22
    });
    assert!(
        option(&s, "@log").ends_with("21:0:,"),
        "{}",
        option(&s, "@log")
    );
}

#[test]
fn two_signals_at_once_are_both_reported_or_counted_as_coalesced() {
    let s = TestServer::new();
    log_hook(&s, "burst");
    assert_eq!(tw(&s, &["hooks", "sync"]).code, Some(0));
    s.wait_until(&s.pane, "the listener", || listeners(&s).len() == 1);
    signal_and_see(&s, "burst", &[], 1);
    // Two signals back to back, in one tmux command list each, with no
    // pause between them.
    assert_eq!(tw(&s, &["signal", "burst", "--status", "1"]).code, Some(0));
    assert_eq!(tw(&s, &["signal", "burst", "--status", "2"]).code, Some(0));
    s.wait_until(&s.pane, "the reports", || {
        let log = option(&s, "@log");
        let e: Vec<&str> = log.trim_end_matches(',').split(',').skip(1).collect();
        // Each report counts itself plus what it coalesced.
        e.iter()
            .map(|x| {
                1 + x
                    .split(':')
                    .nth(1)
                    .and_then(|c| c.parse::<usize>().ok())
                    .unwrap_or(0)
            })
            .sum::<usize>()
            == 2
    });
}

#[test]
fn notify_shows_ok_and_failed_in_the_status_and_runs_nothing() {
    let s = TestServer::new();
    let marker = s.dir().join("pwned");
    s.tmux(&["set-option", "-g", "@tmux-wait-hook-build", "notify"]);
    assert_eq!(tw(&s, &["hooks", "sync"]).code, Some(0));
    s.wait_until(&s.pane, "the listener", || listeners(&s).len() == 1);
    let status = || option(&s, "@tmux_wait_status");
    // Wait for the listener to be armed: a first signal shows up.
    s.wait_until(&s.pane, "the listener to report", || {
        let _ = tw(&s, &["signal", "build", "--status", "0"]);
        status().starts_with('✓')
    });
    assert!(status().contains("build"), "{}", status());
    let hostile = format!("#(touch {m}) $(touch {m}) failed", m = marker.display());
    assert_eq!(
        tw(
            &s,
            &["signal", "build", "--status", "1", "--message", &hostile]
        )
        .code,
        Some(0)
    );
    s.wait_until(&s.pane, "✗ in the status", || status().starts_with('✗'));
    assert!(status().contains("##(touch"), "{}", status());
    assert_eq!(option(&s, "@tmux-wait-last-message"), hostile);
    let list = tw(&s, &["hooks", "list", "--json"]).json();
    assert_eq!(list[0]["channel"], "build");
    assert_eq!(list[0]["last"]["ok"], false);
    assert!(!marker.exists(), "a message was run");
}

#[test]
fn listeners_end_with_the_server_or_when_killed() {
    let s = TestServer::new();
    s.tmux(&["set-option", "-g", "@tmux-wait-hook-a", "notify"]);
    s.tmux(&["set-option", "-g", "@tmux-wait-hook-b", "notify"]);
    assert_eq!(tw(&s, &["hooks", "sync"]).code, Some(0));
    s.wait_until(&s.pane, "two listeners", || listeners(&s).len() == 2);
    // Both armed: their wait-for clients are running.
    s.wait_until(&s.pane, "armed listeners", || {
        let p = s.processes_using_socket();
        p.iter().any(|x| x.contains("wait-for -- a "))
            && p.iter().any(|x| x.contains("wait-for -- b "))
    });
    // A listener undoes its registration only when its client has been
    // waiting long enough to have surely registered (100 ms, see docs/design.md).
    s.wait_until(&s.pane, "the wait-for client to be 150 ms old", || {
        s.processes_using_socket()
            .iter()
            .find(|x| x.contains("wait-for -- a "))
            .and_then(|x| x.split(':').next()?.parse::<u32>().ok())
            .and_then(process_age)
            .is_some_and(|age| age > 0.15)
    });
    // SIGTERM one: it ends and undoes its wait-for registration, so a
    // signal with nobody waiting is still latched for the next waiter.
    let pid = listeners(&s)
        .into_iter()
        .find(|p| p.ends_with("listen a "))
        .and_then(|p| p.split(':').next().map(str::to_owned))
        .expect("listener a");
    let st = std::process::Command::new("kill")
        .arg(&pid)
        .status()
        .unwrap();
    assert!(st.success());
    s.wait_until(&s.pane, "one listener", || listeners(&s).len() == 1);
    s.tmux(&["wait-for", "-S", "a"]);
    assert_eq!(tw(&s, &["channel", "a", "--timeout", "5"]).code, Some(0));
    s.tmux(&["kill-server"]);
    s.wait_until(&s.pane, "no listeners", || listeners(&s).is_empty());
}

#[test]
fn signals_lost_to_a_cleared_latch_are_reported_as_coalesced() {
    // tmux keeps one unawaited signal; a second one clears it. Simulate two
    // tmux-wait signals lost that way while the listener re-arms: its hook
    // command bumps the channel's sequence by two, once, without signalling.
    let s = TestServer::new();
    let hex: String = "gap".bytes().map(|b| format!("{b:02x}")).collect();
    let q = format!("@tmux-wait-q-{hex}");
    s.tmux(&["set-option", "-g", "@bump", "1"]);
    s.tmux(&[
        "set-option",
        "-g",
        "@tmux-wait-hook-gap",
        &format!(
            "set-option -gaF @log '#{{@tmux-wait-last-seq}}:#{{@tmux-wait-last-coalesced}},' ; \
             if -F '#{{@bump}}' {{ set-option -gu @bump ; set-option -gF {q} '#{{e|+|:#{{{q}}},2}}' }}"
        ),
    ]);
    assert_eq!(tw(&s, &["hooks", "sync"]).code, Some(0));
    s.wait_until(&s.pane, "the listener", || listeners(&s).len() == 1);
    s.wait_until(&s.pane, "the listener to be armed", || {
        s.processes_using_socket()
            .iter()
            .any(|x| x.contains("wait-for -- gap "))
    });
    assert_eq!(tw(&s, &["signal", "gap", "--status", "0"]).code, Some(0));
    s.wait_until(&s.pane, "two reports", || {
        option(&s, "@log").matches(',').count() == 2
    });
    assert_eq!(option(&s, "@log"), "1:0,3:1,");
}
