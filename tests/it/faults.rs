//! Faults under every kind of wait: the server going away three
//! ways, the pane killed, respawned, resized, cleared, moved; the helper
//! interrupted or its stdout closed; four hundred waits in a row; a full disk.
//! Each ends at once with the documented error and exit code, never as
//! found or signalled, and leaves nothing behind.

use crate::common::*;
use std::process::Stdio;

/// Every wait kind armed, then the server goes: each ends with
/// `server_exited` and its documented code.
#[test]
fn the_server_going_away_ends_every_kind_of_wait() {
    for how in ["kill-server", "SIGTERM", "SIGKILL"] {
        let s = TestServer::new();
        let p2 = s.split();
        let p3 = s.split();
        let text: Waiter = s.start_wait(&["text", "-t", &s.pane, "--json", "--pattern", "never"]);
        let output = s.start_wait(&["output", "-t", &p2, "--json", "--timeout", "60"]);
        let channel = s.spawn(&["channel", &unique("ch"), "--timeout", "60", "--json"]);
        let watch = s.spawn(&["watch", "-t", &s.pane, "--pattern", "never", "--json"]);
        let go = unique("never");
        let run = s.spawn(&[
            "run",
            "-t",
            &p3,
            "--json",
            "--timeout",
            "60",
            "--",
            &format!("tmux wait-for {go}"),
        ]);
        s.wait_for_command(&p3, "tmux");
        // Every wait that reads a pane goes through the server's hub; none
        // attaches a client.
        s.wait_until(&s.pane, "the channel and watch to be armed", || {
            let procs = s.processes_using_socket();
            procs.iter().any(|p| p.contains("wait-for -- ch-")) && s.hub_waiters() == 4
        });
        assert_eq!(s.tmux(&["list-clients"]).trim(), "");
        let pid = s
            .tmux(&["display-message", "-p", "#{pid}"])
            .trim()
            .to_owned();
        match how {
            "kill-server" => drop(s.tmux(&["kill-server"])),
            "SIGTERM" => signal(&pid, "TERM"),
            _ => s.kill_server_hard(),
        }
        for (what, f, code) in [
            ("text", text.finish(&s), 2),
            ("output", output.finish(&s), 2),
            ("channel", done(channel), 2),
            ("watch", done(watch), 2),
            ("run", done(run), 125),
        ] {
            assert_eq!(
                f.code,
                Some(code),
                "{how} {what}: {} {}",
                f.stdout,
                f.stderr
            );
            let v = f.json();
            assert!(v.get("error").is_some(), "{how} {what}: {v}");
            let kind = v["error"]["kind"].as_str().unwrap().to_owned();
            assert!(
                kind == "server_exited" || (what == "watch" && kind == "pane_died"),
                "{how} {what}: {v}"
            );
        }
        s.wait_no_helpers();
    }
}

#[test]
fn a_killed_pane_ends_run_and_output_with_how_it_ended() {
    let s = TestServer::with(crate::common::Options {
        extra_config: "set -g remain-on-exit on".into(),
        ..Default::default()
    });
    // The command ends the shell: the pane's dead status is the status.
    let p = s.split();
    let mut c = s.tw();
    c.args(["run", "-t", &p, "--json", "--", "echo bye; exit 7"]);
    let f = run_bounded(c);
    assert_eq!(f.json()["exit_source"], "pane_dead", "{}", f.stdout);
    // tmux 3.3a itself now and then loses a dead pane's status (see the
    // docs/limits.md); then run says it does not know (125), never a wrong number.
    match f.json()["exit_status"].as_i64() {
        Some(st) => assert_eq!((st, f.code), (7, Some(7)), "{}", f.stdout),
        None => assert_eq!(f.code, Some(125), "{}", f.stdout),
    }
    // Killed under a run: 125, the pane closed.
    let p = s.split();
    let go = unique("go");
    let run = s.spawn(&[
        "run",
        "-t",
        &p,
        "--json",
        "--",
        &format!("tmux wait-for {go}"),
    ]);
    s.wait_for_command(&p, "tmux");
    s.tmux(&["kill-pane", "-t", &p]);
    let f = done(run);
    assert_eq!(f.code, Some(125), "{}", f.stdout);
    assert_eq!(f.json()["exit_source"], "pane_closed");
    assert_eq!(f.json()["finished"], true);
    // Killed or respawned under output: it returns how.
    for (how, source) in [("kill-pane", "pane_closed"), ("respawn-pane", "respawned")] {
        let p = s.split();
        let o = s.start_wait(&["output", "-t", &p, "--json", "--timeout", "30"]);
        if how == "kill-pane" {
            s.tmux(&["kill-pane", "-t", &p]);
        } else {
            s.tmux(&["respawn-pane", "-k", "-t", &p]);
        }
        let f = o.finish(&s);
        assert_eq!(f.code, Some(0), "{how}: {}", f.stdout);
        assert_eq!(f.json()["exit_source"], source, "{how}: {}", f.stdout);
    }
}

#[test]
fn resize_clear_move_and_rename_do_not_derail_output() {
    let s = TestServer::new();
    let p = s.split();
    let go = unique("go");
    let mut c = s.tw();
    c.args(["run", "-t", &p, "--json", "--timeout", "0.2", "--"])
        .arg(format!(
            "tmux wait-for {go}; echo after-resize; tmux wait-for {go}; echo after-move; tmux wait-for {go}; echo end"
        ));
    assert_eq!(run_bounded(c).code, Some(124));
    let step = |what: &str, act: &dyn Fn(), want: &str| {
        eprintln!("step: {what}");
        let o = s.start_wait(&[
            "output",
            "-t",
            &p,
            "--json",
            "--until",
            want,
            "--timeout",
            "10",
        ]);
        act();
        s.tmux(&["wait-for", "-S", &go]);
        let f = o.finish(&s);
        let v = f.json();
        assert_eq!(v["reason"], "until", "{what}: {v}");
        assert!(
            v["lines"].as_array().unwrap().iter().any(|l| l == want),
            "{what}: {v}"
        );
    };
    step(
        "resize",
        &|| drop(s.tmux(&["resize-pane", "-t", &p, "-x", "30"])),
        "after-resize",
    );
    step(
        "move to another session and rename it",
        &|| {
            s.tmux(&["new-session", "-d", "-s", "elsewhere"]);
            s.tmux(&["break-pane", "-d", "-s", &p, "-t", "elsewhere:"]);
            s.tmux(&["rename-session", "-t", "elsewhere", "renamed"]);
        },
        "after-move",
    );
    // The history cleared between calls: said, not guessed.
    s.tmux(&["clear-history", "-t", &p]);
    s.tmux(&["send-keys", "-t", &p, "C-l"]);
    s.tmux(&["wait-for", "-S", &go]);
    let mut got = Vec::new();
    for _ in 0..5 {
        let mut c = s.tw();
        c.args(["output", "-t", &p, "--json"]);
        let v = run_bounded(c).json();
        got.push(v.clone());
        if v["finished"] == true {
            return;
        }
    }
    panic!("the end was never reported: {got:?}");
}

#[test]
fn interrupting_run_and_output_cleans_up() {
    let s = TestServer::new();
    for (sig, code) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
        let o = s.start_wait(&["output", "-t", &s.pane, "--json", "--timeout", "30"]);
        signal(o.pid(), sig.trim_start_matches('-'));
        let f = o.finish(&s);
        assert_eq!(f.code, Some(code), "output {sig}: {}", f.stderr);
        assert_eq!(f.json()["error"]["kind"], "interrupted");
    }
    let go = unique("go");
    let run = s.spawn(&[
        "run",
        "-t",
        &s.pane,
        "--json",
        "--",
        &format!("tmux wait-for {go}; echo after; (exit 6)"),
    ]);
    s.wait_for_command(&s.pane, "tmux");
    signal(run.id(), "INT");
    let f = done(run);
    assert_eq!(f.code, Some(130), "{}", f.stderr);
    // The command went on; its end is not lost: `output` reports it.
    s.tmux(&["wait-for", "-S", &go]);
    s.wait_for_prompt(&s.pane);
    let mut c = s.tw();
    c.args(["output", "-t", &s.pane, "--json", "--timeout", "10"]);
    let v = run_bounded(c).json();
    assert_eq!(v["exit_status"], 6, "{v}");
    assert_eq!(v["lines"][0], "after", "{v}");
    s.wait_no_helpers();
    assert!(!s.pane_piped(&s.pane), "the pipe outlived its waits");
}

#[test]
fn a_closed_stdout_keeps_run_and_output_codes() {
    let s = TestServer::new();
    for args in [
        vec!["run", "-t", &s.pane, "--", "seq 1 20000; (exit 3)"],
        vec![
            "output",
            "-t",
            &s.pane,
            "--max-lines",
            "0",
            "--cursor",
            "fresh",
        ],
    ] {
        let mut c = s.tw();
        c.args(&args).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        drop(child.stdout.take());
        let st = child.wait().unwrap();
        let want = if args[0] == "run" { 3 } else { 0 };
        assert_eq!(st.code(), Some(want), "{args:?}");
    }
}

#[test]
fn save_to_a_full_disk_is_reported_and_the_wait_goes_on() {
    let s = TestServer::new();
    let mut c = s.tw();
    c.args([
        "run",
        "-t",
        &s.pane,
        "--json",
        "--save-to",
        "/dev/full",
        "--",
        "echo kept",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{}", f.stdout);
    let v = f.json();
    assert_eq!(v["output"][0], "kept");
    assert!(
        v["save_error"].as_str().unwrap().contains("/dev/full"),
        "{v}"
    );
}

fn server_fds(s: &TestServer) -> usize {
    let pid = s
        .tmux(&["display-message", "-p", "#{pid}"])
        .trim()
        .to_owned();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Four hundred waits in a row (a leak of one descriptor, process or
/// registration each would show hundreds of times) leak nothing: no process, no client, no
/// server file descriptor, no pane option (cursor aside), no channel.
#[test]
fn four_hundred_waits_in_a_row_leave_nothing() {
    let s = TestServer::new();
    // Warm up once so the cursor option exists before counting.
    let mut c = s.tw();
    c.args(["output", "-t", &s.pane, "--timeout", "1ms"]);
    run_bounded(c);
    s.wait_no_helpers();
    let fds = server_fds(&s);
    let opts = s.tmux(&["show-options", "-p", "-t", &s.pane]);
    for i in 0..400 {
        let mut c = s.tw();
        match i % 5 {
            0..=2 => c.args(["text", "-t", &s.pane, "--timeout", "1ms"]),
            3 => c.args([
                "output",
                "-t",
                &s.pane,
                "--until",
                "never",
                "--timeout",
                "1ms",
            ]),
            _ => c.args(["channel", "in-a-row", "--timeout", "1ms"]),
        };
        let f = run_bounded(c);
        assert_eq!(f.code, Some(1), "wait {i}: {}", f.stderr);
    }
    s.wait_no_helpers();
    assert_eq!(s.tmux(&["list-clients"]).trim(), "");
    // The server closes a departed client's socket on its next loop.
    s.wait_until(&s.pane, "the server's descriptors back to before", || {
        server_fds(&s) == fds
    });
    // (The cursor keeps when it was saved, its 11th field: that changes.)
    let unsaved = |o: String| {
        o.lines()
            .map(|l| {
                let mut f: Vec<&str> = l.split(':').collect();
                if l.ends_with(":end") && f.len() > 10 {
                    f.remove(10);
                }
                f.join(":")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        unsaved(s.tmux(&["show-options", "-p", "-t", &s.pane])),
        unsaved(opts)
    );
    // No timed-out channel waiter was left registered: a signal now is
    // latched for the next waiter instead of being swallowed.
    s.tmux(&["wait-for", "-S", "in-a-row"]);
    let mut c = s.tw();
    c.args(["channel", "in-a-row", "--timeout", "5"]);
    assert_eq!(run_bounded(c).code, Some(0));
}

/// Watch state is private: 0700 directories, 0600 files, and another user
/// can neither read it nor reach the server to cancel anything.
#[test]
fn state_is_private_to_its_user() {
    use std::os::unix::fs::PermissionsExt;
    let s = TestServer::new();
    let watch = s.spawn(&["watch", "-t", &s.pane, "--pattern", "never", "--json"]);
    let base = s.socket.parent().unwrap().join("tmux-wait");
    let mut files = Vec::new();
    s.wait_until(&s.pane, "the watch's record", || {
        files = walk(&base);
        files.iter().any(|f| f.to_string_lossy().contains("watch-")) && s.hub_waiters() == 1
    });
    let mode =
        |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&base), 0o700);
    for f in &files {
        let m = mode(f);
        let want = if f.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(m, want, "{}", f.display());
    }
    // SAFETY: getuid has no preconditions.
    if unsafe { libc_getuid() } == 0 {
        let record = files
            .iter()
            .find(|f| f.to_string_lossy().contains("watch-"))
            .unwrap();
        let as_nobody = |args: &[&std::ffi::OsStr]| {
            std::process::Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .args(args)
                .output()
                .unwrap()
        };
        let out = as_nobody(&["cat".as_ref(), record.as_os_str()]);
        assert!(
            !out.status.success(),
            "another user read {}",
            record.display()
        );
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_tmux-wait"));
        let out = as_nobody(&[
            bin.as_os_str(),
            "-S".as_ref(),
            s.socket.as_os_str(),
            "cancel".as_ref(),
            "--all".as_ref(),
        ]);
        assert!(!out.status.success(), "another user cancelled watches");
        // (At least: a pane's pipe handing itself to the hub is one more
        // connection for a moment.)
        assert!(s.hub_waiters() >= 1, "the watch still runs");
        assert!(
            files.iter().all(|f| f.exists()),
            "the watch's record is gone"
        );
        assert!(s.pane_piped(&s.pane), "the watch still runs");
    }
    s.tmux(&["kill-server"]);
    assert_eq!(done(watch).code, Some(2));
}

unsafe extern "C" {
    #[link_name = "getuid"]
    fn libc_getuid() -> u32;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
    }
    out
}

/// A run and an --until output under a flood keep bounded memory: the reply
/// is thinned to its ends and summary, --save-to still gets every line.
#[test]
fn run_and_output_stay_bounded_under_a_flood() {
    let s = TestServer::new();
    let save = s.dir().join("flood.txt");
    let release = unique("flood-done");
    let mut c = s.tw();
    c.args([
        "run",
        "-t",
        &s.pane,
        "--json",
        "--max-lines",
        "5",
        "--save-to",
    ])
    .arg(&save)
    .arg("--")
    .arg(format!(
        "seq 1 400000; echo 'error: in the middle'; seq 400001 800000; tmux wait-for {release}"
    ))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    s.wait_until(&s.pane, "the flood to end", || {
        std::fs::metadata(&save).map(|m| m.len()).unwrap_or(0) > 5_000_000
            && s.current_command(&s.pane) == "tmux"
    });
    let hwm_kb = peak_memory_kb(child.id());
    s.tmux(&["wait-for", "-S", &release]);
    let f = done(child);
    let v = f.json();
    assert_eq!(v["exit_status"], 0, "{}", f.stdout);
    assert_eq!(v["output"][0], "error: in the middle", "{v}");
    assert_eq!(v["output_truncated_lines"], 800_001 - 4, "{v}");
    assert!(hwm_kb > 0 && hwm_kb < 64 * 1024, "peak memory {hwm_kb} kB");
    let saved = std::fs::read_to_string(&save).unwrap();
    assert_eq!(saved.lines().count(), 800_001);
}

/// A helper killed with SIGKILL (no chance to clean up) takes its control
/// client and its wait-for client with it: nothing stays attached.
#[test]
fn a_helper_killed_outright_leaves_no_client() {
    let s = TestServer::new();
    let text = s.start_wait(&["text", "-t", &s.pane, "--pattern", "never"]);
    let channel = s.spawn(&["channel", &unique("ch"), "--timeout", "60"]);
    s.wait_until(&s.pane, "both waits", || {
        s.processes_using_socket()
            .iter()
            .any(|p| p.contains("wait-for -- ch-"))
            && s.pane_piped(&s.pane)
    });
    signal(text.pid(), "KILL");
    signal(channel.id(), "KILL");
    drop(done(channel));
    drop(text);
    s.wait_no_helpers();
    assert_eq!(s.tmux(&["list-clients"]).trim(), "");
}

// The server going away under a text wait, and many waits at once.

#[test]
fn kill_server_during_a_text_wait_is_server_exited() {
    for how in ["kill-server", "SIGKILL"] {
        let s = TestServer::new();
        let w = s.start_wait(&["text", "-t", &s.pane, "--json", "--pattern", "never"]);
        if how == "kill-server" {
            s.tmux(&["kill-server"]);
        } else {
            s.kill_server_hard();
        }
        let f = w.finish(&s);
        assert_eq!(f.code, Some(2), "{how}: {}", f.stdout);
        assert_eq!(f.json()["error"]["kind"], "server_exited", "{how}");
        s.wait_no_helpers();
    }
}

#[test]
fn killing_the_session_of_the_pane_is_pane_died() {
    let s = TestServer::new();
    let other = s.tmux(&["new-session", "-d", "-s", "other", "-P", "-F", "#{pane_id}"]);
    let other = other.trim().to_owned();
    s.wait_for_prompt(&other);
    let w = s.start_wait(&["text", "-t", &other, "--json", "--pattern", "never"]);
    s.tmux(&["kill-session", "-t", "other"]);
    let f = w.finish(&s);
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    assert_eq!(f.json()["error"]["kind"], "pane_died");
}

#[test]
fn many_panes_many_waits_all_found() {
    let s = TestServer::new();
    let mut panes = vec![s.pane.clone()];
    for _ in 0..19 {
        let p = s.tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"]);
        panes.push(p.trim().to_owned());
    }
    for p in &panes {
        s.wait_for_prompt(p);
    }
    let waits: Vec<(String, Waiter)> = panes
        .iter()
        .map(|p| {
            let marker = format!("FAN-{}", &p[1..]);
            let w = s.start_wait(&["text", "-t", p, "--json", "--pattern", &marker]);
            (marker, w)
        })
        .collect();
    for (p, (marker, _)) in panes.iter().zip(&waits) {
        let (a, b) = marker.split_at(3);
        s.type_line(p, &format!("echo {a}''{b}"));
    }
    for (marker, w) in waits {
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{marker}: {}", f.stdout);
        assert_eq!(f.json()["matched_lines"][0], marker.as_str());
    }
    s.wait_no_helpers();
    assert_eq!(s.tmux(&["list-clients"]).trim(), "");
}

#[test]
fn fifty_waits_on_one_pane_and_a_hundred_in_a_row() {
    let s = TestServer::new();
    // (Armed one after another, the first's clock runs while the other 49
    // arm: seconds on a loaded machine, past the default 8 s once in CI on
    // tmux 3.4. What is checked is that each gets the line.)
    let waits: Vec<Waiter> = (0..50)
        .map(|_| {
            s.start_wait(&[
                "text",
                "-t",
                &s.pane,
                "--json",
                "--timeout",
                "60",
                "--pattern",
                "SHARED-MARK",
            ])
        })
        .collect();
    s.type_line(&s.pane, "echo SHARED''-MARK");
    for w in waits {
        let f = w.finish(&s);
        assert_eq!(f.code, Some(0), "{}{}", f.stdout, f.stderr);
    }
    for _ in 0..100 {
        let mut c = s.tw();
        c.args(["text", "-t", &s.pane, "--timeout", "1ms", "--json"]);
        assert_eq!(run_bounded(c).code, Some(1));
    }
    s.wait_no_helpers();
    assert_eq!(s.tmux(&["list-clients"]).trim(), "");
}

#[test]
fn a_closed_stdout_keeps_the_exit_code() {
    let s = TestServer::new();
    let mut c = s.tw();
    c.args(["text", "-t", &s.pane, "--timeout", "200ms", "--json"]);
    c.stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    drop(child.stdout.take());
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(1));
}

#[test]
fn memory_stays_bounded_under_a_flood_and_an_endless_line() {
    let s = TestServer::with(Options {
        history_limit: 2000,
        ..Options::default()
    });
    let w = s.start_wait(&[
        "text",
        "-t",
        &s.pane,
        "--json",
        "--pattern",
        "NEVER-PRINTED",
        "--timeout",
        "60",
    ]);
    let done = unique("flood-done");
    s.type_line(
        &s.pane,
        &format!(
            "seq 1 500000; yes 0123456789 | head -c 8000000 | tr -d '\\n'; echo; tmux -S {} wait-for -S {done}",
            s.socket.display()
        ),
    );
    let mut sync = s.tmux_cmd();
    sync.args(["wait-for", &done]);
    assert_eq!(run_bounded(sync).code, Some(0));
    let hwm_kb = peak_memory_kb(w.pid());
    assert!(hwm_kb > 0 && hwm_kb < 64 * 1024, "peak memory {hwm_kb} kB");
    drop(w);
}
