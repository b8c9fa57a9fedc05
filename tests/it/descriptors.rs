//! Hundreds of waits against the open-files limit, what tmux-wait's
//! processes hand on of it, and the files they leave beside the socket.
//!
//! The tmux server itself needs about two descriptors per pane: it runs
//! with the test process's limit, raised to the hard one, and only the
//! waits get the low limits. Linux only: it reads /proc and uses prlimit.
#![cfg(target_os = "linux")]

use crate::common::{DEADLINE, TestServer, alone};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Raise this test process's soft open-files limit to the hard one (the
/// servers it starts inherit it); false when the hard one is below `need`.
fn raise_own_limit(need: u64) -> bool {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on one rlimit of ours.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        if r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
    r.rlim_max >= need
}

/// The open-files limit of a process (soft, hard), from /proc.
fn limits_of(pid: &str) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_default()
        .to_owned();
    let f: Vec<&str> = line.split_whitespace().collect();
    (
        f.get(3).unwrap_or(&"").to_string(),
        f.get(4).unwrap_or(&"").to_string(),
    )
}

/// Descriptors a process holds.
fn fds_of(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// `n` panes of their own, each running `sleep` (cheap; their text comes
/// from writes to their terminal), made with one tmux command list.
fn panes(s: &TestServer, n: usize) -> Vec<(String, String)> {
    // In lists of 50 (a command must fit one tmux message).
    for chunk in 0..n.div_ceil(50) {
        let mut args: Vec<&str> = Vec::new();
        for _ in 0..(n - chunk * 50).min(50) {
            args.extend(["new-window", "-d", "exec sleep 1000", ";"]);
        }
        args.pop();
        s.tmux(&args);
    }
    s.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{pane_tty}"])
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(id, _)| *id != s.pane)
        .map(|(id, tty)| (id.to_owned(), tty.to_owned()))
        .collect()
}

/// `tmux-wait ARGS` with the open-files limit soft `soft`, hard `hard`
/// (None: left as it is). Niced: hundreds of them starting at once must
/// not slow the test running beside this one.
fn spawn_limited(s: &TestServer, soft: u64, hard: Option<u64>, args: &[&str]) -> Child {
    spawn_logged(s, soft, hard, None, args)
}

/// [`spawn_limited`], with the hub's debug log in `log` (for the hub that
/// this wait starts).
fn spawn_logged(
    s: &TestServer,
    soft: u64,
    hard: Option<u64>,
    log: Option<&std::path::Path>,
    args: &[&str],
) -> Child {
    let mut c = s.tw();
    if let Some(l) = log {
        c.env("TMUX_WAIT_HUB_LOG", l);
    }
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: setpriority and setrlimit are async-signal-safe.
    unsafe {
        c.pre_exec(move || {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
            r.rlim_cur = soft;
            if let Some(h) = hard {
                r.rlim_max = h;
            }
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.spawn().expect("spawn tmux-wait")
}

/// Write `text` to a pane's terminal, as a program in it would.
fn write_tty(tty: &str, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(tty)
        .unwrap_or_else(|e| panic!("open {tty}: {e}"));
    f.write_all(text.as_bytes()).unwrap();
}

/// A wait's end: exit code, JSON, stderr.
struct Ended {
    code: Option<i32>,
    json: Value,
    stderr: String,
    /// When it was seen to have ended.
    at: Instant,
}

/// Until every wait has either ended or has its pane piped (armed: the
/// hub started the pane's pipe with the wait's entry in the same tmux
/// command list, so what is written from now on is in its stream).
/// Returns the ended ones by index.
fn until_armed_or_ended(
    s: &TestServer,
    panes: &[(String, String)],
    waits: &mut [Option<Child>],
    within: Duration,
) -> Vec<(usize, Ended)> {
    let end = Instant::now() + within;
    let mut ended = Vec::new();
    loop {
        for (i, w) in waits.iter_mut().enumerate() {
            if let Some(c) = w
                && matches!(c.try_wait(), Ok(Some(_)))
            {
                let out = w.take().unwrap().wait_with_output().unwrap();
                ended.push((
                    i,
                    Ended {
                        code: out.status.code(),
                        json: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
                        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                        at: Instant::now(),
                    },
                ));
            }
        }
        let piped: std::collections::HashSet<String> = s
            .tmux(&["list-panes", "-a", "-F", "#{pane_id} #{pane_pipe}"])
            .lines()
            .filter_map(|l| l.strip_suffix(" 1").map(str::to_owned))
            .collect();
        let waiting = waits
            .iter()
            .enumerate()
            .filter(|(i, w)| w.is_some() && !piped.contains(&panes[*i].0))
            .count();
        if waiting == 0 {
            return ended;
        }
        assert!(
            Instant::now() < end,
            "{waiting} waits neither armed nor ended in {within:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Collect the waits still running (they have been given their markers).
fn collect(waits: &mut [Option<Child>], within: Duration) -> Vec<(usize, Ended)> {
    let end = Instant::now() + within;
    let mut out = Vec::new();
    for (i, w) in waits.iter_mut().enumerate() {
        let Some(mut c) = w.take() else { continue };
        while c.try_wait().unwrap().is_none() {
            if Instant::now() > end {
                let _ = c.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let o = c.wait_with_output().unwrap();
        out.push((
            i,
            Ended {
                code: o.status.code(),
                json: serde_json::from_slice(&o.stdout).unwrap_or(Value::Null),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
                at: Instant::now(),
            },
        ));
    }
    out
}

/// No hub, no wait, no tmux client of this server left, and no pane
/// piped.
fn until_all_gone(s: &TestServer) {
    s.wait_no_helpers();
    s.wait_until(&s.pane, "every pipe closed", || {
        !s.tmux(&["list-panes", "-a", "-F", "#{pane_pipe}"])
            .lines()
            .any(|l| l == "1")
    });
}

/// The files tmux-wait keeps beside the server's socket.
fn beside_socket(s: &TestServer) -> Vec<String> {
    std::fs::read_dir(s.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".s.tmux-wait-"))
        .collect()
}

const OUT_OF_FDS: &str = "tmux-wait's hub is out of file descriptors (limit ";

#[test]
fn three_hundred_waits_under_a_soft_limit_of_256() {
    if !raise_own_limit(4096) {
        eprintln!("skipped: the hard open-files limit is below 4096");
        return;
    }
    let _alone = alone();
    let s = TestServer::new();
    let t0 = Instant::now();
    let panes = panes(&s, 300);
    assert_eq!(panes.len(), 300);
    // 300 waits need 600 of the hub's descriptors, more than twice a soft
    // limit of 256. (The usual 1024 is passed the same way, by 600 waits
    // that take twice as long to arm, alone on the machine.)
    let (soft, n) = (256u64, 300);
    {
        let panes = &panes[..n];
        let marker = |i: usize| format!("FDS-{soft}-{i}-END");
        let mut waits: Vec<Option<Child>> = panes
            .iter()
            .enumerate()
            .map(|(i, (p, _))| {
                Some(spawn_limited(
                    &s,
                    soft,
                    None,
                    &[
                        "text",
                        "-t",
                        p,
                        "--pattern",
                        &marker(i),
                        // (Only a bound: arming 600 waits takes tens of
                        // seconds on a loaded machine.)
                        "--timeout",
                        "600",
                        "--json",
                    ],
                ))
            })
            .collect();
        let early = until_armed_or_ended(&s, panes, &mut waits, Duration::from_secs(300));
        assert!(
            early.is_empty(),
            "soft limit {soft}: {} waits ended before their marker, e.g. {} {}",
            early.len(),
            early[0].1.json,
            early[0].1.stderr
        );
        let hub = s.hub_pids().pop().expect("a hub");
        let held = fds_of(&hub);
        let (hub_soft, _) = limits_of(&hub);
        eprintln!(
            "soft limit {soft}: {n} waits armed at {:?}; the hub (soft limit {hub_soft}) holds {held} descriptors",
            t0.elapsed()
        );
        // One per wait (its connection), one per pane (its pipe), a few of
        // its own.
        assert!(held <= 2 * n + 20, "{held}");
        assert_ne!(hub_soft, soft.to_string(), "the hub kept the low limit");
        for (i, (_, tty)) in panes.iter().enumerate() {
            write_tty(tty, &format!("{}\n", marker(i)));
        }
        for (i, e) in collect(&mut waits, DEADLINE) {
            assert_eq!(
                (e.code, e.json["matched_lines"][0].as_str()),
                (Some(0), Some(marker(i).as_str())),
                "soft limit {soft}, pane {}: {} {}",
                panes[i].0,
                e.json,
                e.stderr
            );
        }
        until_all_gone(&s);
    }
    assert_eq!(beside_socket(&s), Vec::<String>::new());
    eprintln!("done at {:?}", t0.elapsed());
}

#[test]
fn waits_past_the_hubs_limit_fail_at_once_and_the_others_match() {
    if !raise_own_limit(1024) {
        eprintln!("skipped: the hard open-files limit is below 1024");
        return;
    }
    let _alone = alone();
    let s = TestServer::new();
    let panes = panes(&s, 150);
    // Hard and soft 128: the hub, started by one of these waits, cannot
    // raise its own past it.
    let marker = |i: usize| format!("HARD-{i}-END");
    let started = Instant::now();
    let mut waits: Vec<Option<Child>> = panes
        .iter()
        .enumerate()
        .map(|(i, (p, _))| {
            Some(spawn_limited(
                &s,
                128,
                Some(128),
                &[
                    "text",
                    "-t",
                    p,
                    "--pattern",
                    &marker(i),
                    "--timeout",
                    "600",
                    "--json",
                ],
            ))
        })
        .collect();
    let refused = until_armed_or_ended(&s, &panes, &mut waits, Duration::from_secs(300));
    let hub = s.hub_pids().pop().expect("a hub");
    assert_eq!(limits_of(&hub), ("128".into(), "128".into()));
    assert!(fds_of(&hub) <= 128);
    let armed = waits.iter().filter(|w| w.is_some()).count();
    eprintln!(
        "hard limit 128: {armed} waits armed, {} refused",
        refused.len()
    );
    assert!(armed >= 30, "only {armed} waits fit in 128 descriptors");
    assert!(!refused.is_empty(), "150 waits fit in 128 descriptors?");
    for (i, e) in &refused {
        assert_eq!(e.code, Some(2), "{}: {} {}", panes[*i].0, e.json, e.stderr);
        assert_eq!(e.json["error"]["kind"], "too_many_open_files", "{}", e.json);
        let msg = e.json["error"]["message"].as_str().unwrap();
        assert_eq!(
            msg,
            format!("{OUT_OF_FDS}128 open files); raise it with ulimit -n, or end some waits")
        );
        assert_eq!(e.stderr, format!("tmux-wait: error: {msg}\n"));
        // At once: not after a timeout of any kind.
        assert!(e.at - started < Duration::from_secs(30));
    }
    // The waits the hub took are whole: each matches its marker.
    for (i, (_, tty)) in panes.iter().enumerate() {
        if waits[i].is_some() {
            write_tty(tty, &format!("{}\n", marker(i)));
        }
    }
    for (i, e) in collect(&mut waits, DEADLINE) {
        assert_eq!(
            (e.code, e.json["matched_lines"][0].as_str()),
            (Some(0), Some(marker(i).as_str())),
            "{}: {} {}",
            panes[i].0,
            e.json,
            e.stderr
        );
    }
    until_all_gone(&s);
    assert_eq!(beside_socket(&s), Vec::<String>::new());
}

/// Past the hub's count (its limit lowered from outside), `accept` itself
/// fails: the connection is taken with the descriptor kept in reserve and
/// refused, the loop does not spin, the waits already there go on.
#[test]
fn a_hub_whose_accept_fails_refuses_new_waits_and_keeps_its_own() {
    let s = TestServer::new();
    let panes = panes(&s, 15);
    let log = s.dir().join("hub.log");
    let mut first: Vec<Option<Child>> = panes[..10]
        .iter()
        .map(|(p, _)| {
            Some(spawn_logged(
                &s,
                1024,
                None,
                Some(&log),
                &[
                    "text",
                    "-t",
                    p,
                    "--pattern",
                    "KEPT",
                    "--json",
                    "--timeout",
                    "30",
                ],
            ))
        })
        .collect();
    assert!(until_armed_or_ended(&s, &panes[..10], &mut first, DEADLINE).is_empty());
    // Each pipe's command has handed its socket to the hub (a pane is
    // piped a moment before that).
    s.wait_until(&s.pane, "the hub to hold every pipe", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches(" feed from ")
            .count()
            >= 10
    });
    let hub = s.hub_pids().pop().expect("a hub");
    let held = fds_of(&hub) as u64;
    let pid: libc::pid_t = hub.parse().unwrap();
    let low = libc::rlimit {
        rlim_cur: held,
        rlim_max: libc::RLIM_INFINITY,
    };
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit on a process of ours, with two rlimits of ours.
    assert_eq!(
        unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, std::ptr::null(), &mut old) },
        0
    );
    let low = libc::rlimit {
        rlim_max: old.rlim_max,
        ..low
    };
    // SAFETY: as above.
    assert_eq!(
        unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &low, std::ptr::null_mut()) },
        0
    );
    let cpu = || {
        let st = std::fs::read_to_string(format!("/proc/{hub}/stat")).unwrap();
        let f: Vec<u64> = st
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|x| x.parse().unwrap())
            .collect();
        f[0] + f[1]
    };
    let (cpu0, t0) = (cpu(), Instant::now());
    for (p, _) in &panes[10..] {
        let f = crate::common::done(spawn_limited(
            &s,
            1024,
            None,
            &[
                "text",
                "-t",
                p,
                "--pattern",
                "NEVER",
                "--json",
                "--timeout",
                "30",
            ],
        ));
        assert_eq!(f.code, Some(2), "{} {}", f.stdout, f.stderr);
        let j = f.json();
        assert_eq!(j["error"]["kind"], "too_many_open_files", "{j}");
        assert!(
            j["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{OUT_OF_FDS}{held} open files)")),
            "{j}"
        );
    }
    // Refusing is not a busy loop (ticks are 1/100 s).
    let ticks = cpu() - cpu0;
    let wall = t0.elapsed().as_secs_f64() * 100.0;
    assert!((ticks as f64) < wall * 0.5 + 5.0, "{ticks} ticks in {wall}");
    for (_, tty) in &panes[..10] {
        write_tty(tty, "KEPT\n");
    }
    for (i, e) in collect(&mut first, DEADLINE) {
        assert_eq!(e.code, Some(0), "{}: {} {}", panes[i].0, e.json, e.stderr);
    }
    until_all_gone(&s);
}

/// What tmux-wait starts gets the limit the user gave it, not the one the
/// hub raised for itself: the hub's `tmux` clients here (run as
/// processes, through a wrapper that writes down its limit).
#[test]
fn programs_tmux_wait_starts_get_the_users_limit() {
    let s = TestServer::new();
    let log = s.dir().join("limits.log");
    let wrapper = s.dir().join("tmux-wrapper");
    crate::common::write_exe(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$PPID $(ulimit -Sn)\" >> '{}'\nexec tmux \"$@\"\n",
            log.display()
        ),
    );
    let p = s.split();
    let mut c = s.tw();
    c.env("TMUX_WAIT_TMUX", &wrapper)
        .env("TMUX_WAIT_NATIVE", "0")
        .args(["text", "-t", &p, "--pattern", "LIMITS", "--json"])
        .args(["--timeout", "20"]);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
            r.rlim_cur = 200;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            Ok(())
        });
    }
    let w = s.start_wait_cmd(c, &[]);
    let hub = s.hub_pids().pop().expect("a hub");
    let (hub_soft, _) = limits_of(&hub);
    assert_ne!(hub_soft, "200", "the hub did not raise its limit");
    s.type_line(&p, "echo LIMITS");
    assert_eq!(w.finish(&s).code, Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    let from_hub: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{hub} ")))
        .collect();
    assert!(!from_hub.is_empty(), "no tmux client of the hub's: {text}");
    for l in text.lines() {
        assert!(
            l.ends_with(" 200"),
            "a child got another limit: {l}\n{text}"
        );
    }
    s.wait_no_helpers();
}

/// Locks and the hub's socket beside a server's socket are gone once the
/// server is: after waits, runs and a hub that was killed outright.
#[test]
fn no_file_is_left_beside_the_socket_of_a_gone_server() {
    let s = TestServer::new();
    let p = s.split();
    let f = crate::common::run_bounded({
        let mut c = s.tw();
        c.args(["run", "-t", &p, "--json", "--", "echo ran"]);
        c
    });
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let w = s.start_text(&["--pattern", "SEEN"]);
    s.type_line(&s.pane, "echo SEEN");
    assert_eq!(w.finish(&s).code, Some(0));
    s.wait_no_helpers();
    assert_eq!(beside_socket(&s), Vec::<String>::new());
    // A hub killed outright leaves its socket and its lock: the server
    // goes, and the next hub of any server in that directory sweeps them.
    let _w = s.start_text(&["--pattern", "NEVER", "--timeout", "30"]);
    let hub = s.hub_pids().pop().expect("a hub");
    // (The wait first: it would start a new hub, which leaves cleanly.)
    crate::common::signal(_w.pid(), "KILL");
    crate::common::signal(&hub, "KILL");
    s.kill_server_hard();
    s.wait_no_helpers();
    drop(_w);
    let mut left = beside_socket(&s);
    left.sort();
    assert!(
        left.contains(&".s.tmux-wait-hub.lock".to_owned()),
        "{left:?}"
    );
    let other = Command::new("tmux")
        .arg("-S")
        .arg(s.dir().join("t"))
        .args(["-f", "/dev/null", "new-session", "-d", "sleep 100"])
        .env_remove("TMUX")
        .status()
        .unwrap();
    assert!(other.success());
    let f = crate::common::run_bounded({
        let mut c = Command::new(crate::common::BIN);
        c.arg("-S").arg(s.dir().join("t"));
        c.args(["text", "--timeout", "0.2", "--json"])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        c
    });
    assert_eq!(f.code, Some(1), "{} {}", f.stdout, f.stderr);
    let _ = Command::new("tmux")
        .arg("-S")
        .arg(s.dir().join("t"))
        .arg("kill-server")
        .status();
    let end = Instant::now() + DEADLINE;
    loop {
        let left: Vec<String> = std::fs::read_dir(s.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmux-wait-"))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < end, "left: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
