//! A host away for a while: its sshd and every session killed (a crash,
//! a reboot), or only its connection's sshd process (the connection
//! dropped on the host's side). What changed there out of sight is told
//! once it is back, and nothing of tmux-wait is left behind or keeps
//! spinning.

use super::sshd::{Keys, Sshd, Tmux};
use super::{Running, ticks, tw};
use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// tmux-wait processes of a host's (this build's binary, with the host's
/// tmux directory in their environment or command line: what its sshd
/// ran, the hub they started, the pipes' feeds): pid and command line.
pub(super) fn host_processes(host: &Sshd) -> Vec<(u32, String)> {
    let bin = std::fs::canonicalize(BIN).unwrap();
    let dir = host.dir.join("tmux").display().to_string();
    let mark = format!("TMUX_TMPDIR={dir}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(e.path().join("exe")).ok().as_ref() != Some(&bin) {
            continue;
        }
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&dir) || env.split(|b| *b == 0).any(|v| v == mark.as_bytes()) {
            out.push((pid, cmd.trim_end().to_owned()));
        }
    }
    out
}

/// The host's `any` processes (what a watch from here runs there).
fn host_anys(host: &Sshd) -> Vec<(u32, String)> {
    host_processes(host)
        .into_iter()
        .filter(|(_, c)| c.contains(" any "))
        .collect()
}

/// Poll (with the deadline) until `ok` holds of the host's processes;
/// fails with what they were.
fn wait_processes(host: &Sshd, what: &str, ok: impl Fn(&[(u32, String)]) -> bool) {
    let end = Instant::now() + DEADLINE;
    loop {
        let now = host_processes(host);
        if ok(&now) {
            return;
        }
        assert!(Instant::now() < end, "never {what}; the host runs {now:#?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// CPU ticks of `pids` over 2 s, after which each should have used about
/// none: (ticks, what was measured).
pub(super) fn idle_ticks(pids: &[u32]) -> u64 {
    let before: u64 = pids.iter().map(|p| ticks(*p)).sum();
    std::thread::sleep(Duration::from_secs(2));
    let after: u64 = pids.iter().map(|p| ticks(*p)).sum();
    after.saturating_sub(before)
}

/// A window of the host made with `argv` (a shell at its prompt when
/// empty), its pane's id.
fn window(t: &Tmux, argv: &[&str]) -> String {
    let mut a = vec!["new-window", "-d", "-P", "-F", "#{pane_id}"];
    a.extend_from_slice(argv);
    t.run(&a).trim().to_owned()
}

/// `pane_dead pane_dead_status`.
fn dead_status(t: &Tmux, pane: &str) -> String {
    t.run(&[
        "display-message",
        "-p",
        "-t",
        pane,
        "#{pane_dead} #{pane_dead_status}",
    ])
    .trim()
    .to_owned()
}

/// Lines of `run` until one of each `want` (pane id, state) came, any
/// order, within `within`: each one's line.
fn lines_for(run: &mut Running, within: Duration, want: &[(String, &str)]) -> Vec<Value> {
    let end = Instant::now() + within;
    let mut got: Vec<Option<Value>> = vec![None; want.len()];
    while got.iter().any(Option::is_none) {
        let left = end.saturating_duration_since(Instant::now());
        let v = run.line("the panes changed while away", left, |v| {
            want.iter()
                .any(|(p, s)| v["pane_id"] == p.as_str() && v["state"] == *s)
        });
        for (k, (p, s)) in want.iter().enumerate() {
            if v["pane_id"] == p.as_str() && v["state"] == *s && got[k].is_none() {
                got[k] = Some(v.clone());
            }
        }
    }
    got.into_iter().map(Option::unwrap).collect()
}

/// `any --host --ndjson` over a host whose sshd dies with its sessions:
/// a question asked meanwhile in a pane it knew, and in a window made
/// meanwhile, and a window whose program ended meanwhile, are told once
/// the host is back, each with what it asks or how it ended; a new shell
/// at its prompt and a pane that did not change are not. The host's old
/// `any` ended with its connection; after it, one runs there, and the
/// watch here and there is back at idle. Then only the session's sshd is
/// killed: the host's `any` ends at once, and nothing is told again.
#[test]
fn a_question_asked_while_the_host_was_away_is_told_when_it_is_back() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let here = Tmux::start(local.path(), "here", 1);
    let mut a = Sshd::start(&keys, "hosta", true);
    let ta = a.tmux(2);
    // (An ended program's pane stays, with its status.)
    ta.run(&["set-option", "-g", "remain-on-exit", "on"]);
    let mut c = tw(&keys, local.path());
    c.args(["-L", "here", "any", "--host", "hosta"]).args([
        "--ready",
        "armed",
        "--ndjson",
        "--timeout",
        "90",
    ]);
    let mut run = Running::start(c);
    here.wait_channel("armed", &mut run.child);
    wait_processes(&a, "one any on the host", |p| {
        p.iter().filter(|(_, c)| c.contains(" any ")).count() == 1
    });
    let first_any = host_anys(&a)[0].0;

    a.kill();
    run.line("host_unreachable", Duration::from_secs(15), |v| {
        v["event"] == "host_unreachable" && v["host"] == "hosta"
    });
    // Its `any` went with its session (nothing of ours waits there on a
    // connection that is gone).
    wait_processes(&a, "the host's any ended", |p| {
        !p.iter().any(|(_, c)| c.contains(" any "))
    });

    // While it is away.
    let old = ta.panes[0].clone();
    ta.type_line(&old, "read -p 'While down? [y/N] ' x");
    ta.wait_for(&old, "its question", |row| row == "While down? [y/N]");
    let asks = window(&ta, &["bash", "-c", "read -p 'Made while down? ' x"]);
    ta.wait_for(&asks, "its question", |row| row == "Made while down?");
    let shell = window(&ta, &[]);
    ta.wait_for(&shell, "its prompt", |row| row == "$");
    let ended = window(&ta, &["sh", "-c", "exit 3"]);
    let end = Instant::now() + DEADLINE;
    while !dead_status(&ta, &ended).starts_with('1') {
        assert!(
            Instant::now() < end,
            "{ended}: {}",
            dead_status(&ta, &ended)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // (tmux 3.3a sometimes marks such a quick end dead without its
    // status: its pane's terminal closed before its SIGCHLD came.)
    let status = dead_status(&ta, &ended);

    let back = Instant::now();
    a.restart();
    let q = |p: &str| format!("hosta/{p}");
    let got = lines_for(
        &mut run,
        Duration::from_secs(15),
        &[
            (q(&old), "asking"),
            (q(&asks), "asking"),
            (q(&ended), "exited"),
        ],
    );
    println!("told {:?} after its sshd's return", back.elapsed());
    assert_eq!(got[0]["question"], "While down? [y/N]", "{}", got[0]);
    assert_eq!(got[0]["host"], "hosta", "{}", got[0]);
    assert_eq!(got[1]["question"], "Made while down?", "{}", got[1]);
    if status == "1 3" {
        assert_eq!(got[2]["exit_status"], 3, "{}", got[2]);
    }
    // Said back before what it found.
    let connected = run
        .seen
        .iter()
        .position(|l| l.contains("\"host_connected\""));
    let told = run.seen.iter().position(|l| l.contains(&q(&old)));
    assert!(
        connected.is_some() && connected < told,
        "{}",
        run.seen.join("\n")
    );

    // A question after it is told too, and it is the first word about
    // the new shell or the unchanged pane.
    let after = ta.panes[1].clone();
    ta.type_line(&after, "read -p 'After? ' x");
    let v = run.line("the question after", Duration::from_secs(10), |v| {
        v["pane_id"] == q(&after).as_str() && v["state"] == "asking"
    });
    assert_eq!(v["question"], "After?", "{v}");
    let about = |p: &str| {
        run.seen
            .iter()
            .filter(|l| l.contains(&format!("\"{}\"", q(p))))
            .count()
    };
    assert_eq!(about(&shell), 0, "{}", run.seen.join("\n"));
    // (The shell may be seen running `read` for a moment before it
    // reads: that is a line of its own; the question is told once.)
    let asked = run
        .seen
        .iter()
        .filter(|l| l.contains(&format!("\"{}\"", q(&after))) && l.contains("\"asking\""))
        .count();
    assert_eq!(asked, 1, "{}", run.seen.join("\n"));
    // Each told once.
    assert_eq!(about(&old), 1, "{}", run.seen.join("\n"));
    assert_eq!(about(&asks), 1, "{}", run.seen.join("\n"));

    // One any there, a new one; here and there, back at idle.
    let anys = host_anys(&a);
    assert_eq!(anys.len(), 1, "{anys:#?}");
    assert_ne!(anys[0].0, first_any);
    let mut pids: Vec<u32> = host_processes(&a).iter().map(|p| p.0).collect();
    pids.push(run.child.id());
    let used = idle_ticks(&pids);
    println!(
        "{used} ticks in 2 s after the return: this any and its ssh, and {:?}",
        host_processes(&a)
    );
    assert!(used <= 2, "{used} ticks of CPU while nothing happened");

    // The connection dropped on the host's side alone (its session's sshd
    // killed, not what it runs): the host's any reads the end of its
    // input and ends at once, long before a minute without the watch's
    // bytes; the watch here comes back, and one any runs there again.
    let second = anys[0].0;
    let cut = Instant::now();
    signal("-KILL", &a.sessions());
    wait_processes(&a, "the host's any ended with its session", |p| {
        !p.iter().any(|(pid, _)| *pid == second)
    });
    let gone_after = cut.elapsed();
    println!("the host's any ended {gone_after:?} after its session's sshd");
    assert!(gone_after < Duration::from_secs(10), "{gone_after:?}");
    let n = run.seen.len();
    run.line("hosta back after its session", DEADLINE, |v| {
        v["event"] == "host_connected"
    });
    assert!(
        run.seen[n..].iter().any(|l| l.contains("host_unreachable")),
        "{}",
        run.seen.join("\n")
    );
    wait_processes(&a, "one any on the host again", |p| {
        p.iter().filter(|(_, c)| c.contains(" any ")).count() == 1
    });
    // Nothing changed meanwhile: nothing told before a question asked
    // now.
    ta.type_line(&after, "");
    ta.type_line(&after, "read -p 'Last? ' x");
    run.line("the last question", Duration::from_secs(10), |v| {
        v["question"] == "Last?"
    });
    let told: Vec<&String> = run.seen[n..]
        .iter()
        .filter(|l| l.contains("\"pane_id\"") && !l.contains(&format!("\"{}\"", q(&after))))
        .collect();
    assert!(told.is_empty(), "{told:#?}");

    drop(run);
    for p in [&old, &asks, &after] {
        ta.type_line(p, "");
    }
    wait_processes(&a, "the host's any gone with this one", |p| {
        !p.iter().any(|(_, c)| c.contains(" any "))
    });
}

/// `kill -SIGNAL` each of `pids`.
fn signal(sig: &str, pids: &[u32]) {
    for p in pids {
        let _ = std::process::Command::new("kill")
            .args([sig, &p.to_string()])
            .status();
    }
}

/// The connection gone dark where the host's sshd cannot see it (its
/// session's sshd stopped, as behind a network that drops everything:
/// nothing comes, nothing is refused, and sshd's own keepalive is off by
/// default): the host's `any` hears nothing from here for a while and
/// ends by itself. Once the session is gone for good the connection comes
/// back, one `any` runs there, and a question asked meanwhile is told.
#[test]
fn the_hosts_any_ends_when_nothing_comes_from_here() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let here = Tmux::start(local.path(), "here", 1);
    let a = Sshd::start(&keys, "hosta", true);
    let ta = a.tmux(1);
    let mut c = tw(&keys, local.path());
    // (A byte every 0.5 s, so that the host gives up after 2 s of
    // nothing, not a minute.)
    c.env("TMUX_WAIT_ALIVE_EVERY", "0.5")
        .args(["-L", "here", "any", "--host", "hosta"])
        .args(["--ready", "armed", "--ndjson", "--timeout", "60"]);
    let mut run = Running::start(c);
    here.wait_channel("armed", &mut run.child);
    wait_processes(&a, "one any on the host", |p| {
        p.iter().filter(|(_, c)| c.contains(" any ")).count() == 1
    });
    let first = host_anys(&a)[0].0;

    let sessions = a.sessions();
    assert!(!sessions.is_empty());
    signal("-STOP", &sessions);
    let dark = Instant::now();
    wait_processes(&a, "the host's any ended by itself", |p| {
        !p.iter().any(|(pid, _)| *pid == first)
    });
    println!(
        "the host's any ended {:?} after its session went dark",
        dark.elapsed()
    );
    let pane = ta.panes[0].clone();
    ta.type_line(&pane, "read -p 'Meanwhile? ' x");
    ta.wait_for(&pane, "its question", |row| row == "Meanwhile?");

    // The session gone for good: the connection drops here too.
    signal("-KILL", &sessions);
    run.line("hosta again", DEADLINE, |v| {
        v["event"] == "host_connected" && v["host"] == "hosta"
    });
    let v = run.line("the question", Duration::from_secs(10), |v| {
        v["pane_id"] == format!("hosta/{pane}").as_str() && v["state"] == "asking"
    });
    assert_eq!(v["question"], "Meanwhile?", "{v}");
    let anys = host_anys(&a);
    assert_eq!(anys.len(), 1, "{anys:#?}");
    let mut pids: Vec<u32> = host_processes(&a).iter().map(|p| p.0).collect();
    pids.push(run.child.id());
    let used = idle_ticks(&pids);
    println!("{used} ticks in 2 s after the return, a byte every 0.5 s");
    assert!(used <= 2, "{used} ticks of CPU while nothing happened");
    drop(run);
    ta.type_line(&pane, "");
}
