//! Many servers and many hosts: `any` and `panes` over several tmux
//! servers of this host and over other hosts through ssh. The hosts are
//! real sshds on 127.0.0.1 started here, each with its own HOME, tmux
//! servers and PATH (`remote/sshd.rs`); ssh reads only the tests' own
//! config file (`TMUX_WAIT_SSH_CONFIG`) and keeps its connections'
//! sockets in the tests' directory.

mod sshd;

use crate::common::*;
use serde_json::Value;
use sshd::{Keys, Sshd, Tmux};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// Skip (saying why) where there is no sshd to start.
macro_rules! need_sshd {
    () => {
        if let Some(why) = crate::remote::sshd::missing() {
            println!("skipped: {why}");
            return;
        }
    };
}

mod install;
mod outage;
mod plugin;

/// `tmux-wait` for these hosts: their ssh config, the connections'
/// sockets in the test's directory, this host's servers under `tmpdir`.
pub(crate) fn tw(keys: &Keys, tmpdir: &std::path::Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("TMUX_WAIT_SSH_CONFIG", &keys.config)
        .env("XDG_RUNTIME_DIR", keys.run_dir())
        .env("TMUX_TMPDIR", tmpdir)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("TMUX_WAIT_MAX_SECONDS")
        .stdin(Stdio::null());
    c
}

/// A tmux-wait in the background whose stdout lines arrive on a channel;
/// killed on drop.
struct Running {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(mut c: Command) -> Running {
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn tmux-wait");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        Running {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// The next line that `want` takes, within `within`.
    fn line(&mut self, what: &str, within: Duration, want: impl Fn(&Value) -> bool) -> Value {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if let Ok(v) = serde_json::from_str::<Value>(&l)
                        && want(&v)
                    {
                        return v;
                    }
                }
                Err(_) => panic!(
                    "no {what} in {within:?}; it printed:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn finish(mut self) -> Finished {
        let end = Instant::now() + DEADLINE;
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(Instant::now() < end, "tmux-wait did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut stdout: Vec<String> = std::mem::take(&mut self.seen);
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            stdout.push(l);
        }
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        Finished {
            code: self.child.wait().ok().and_then(|s| s.code()),
            stdout: stdout.join("\n"),
            stderr: err,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Established TCP connections to `port` on 127.0.0.1 (the client's
/// ends: one per ssh connection).
fn connections_to(port: u16) -> usize {
    let hex = format!(":{port:04X}");
    let mut n = 0;
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for l in std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let c: Vec<&str> = l.split_whitespace().collect();
            if c.len() > 3 && c[2].ends_with(&hex) && c[3] == "01" {
                n += 1;
            }
        }
    }
    n
}

/// CPU ticks (user + system) of `pid` and its children so far.
fn ticks(pid: u32) -> u64 {
    let mut all = sshd::descendants(pid);
    all.push(pid);
    all.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .map(|s| {
            let f: Vec<u64> = s
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            // (utime and stime: fields 14 and 15; after the name, 11 and 12.)
            f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0)
        })
        .sum()
}

/// `any` over this host's three servers and two hosts, 20 panes each:
/// the first pane that needs someone, with its server and host; then one
/// of this host's; `panes` lists all 100, each naming where it is.
#[test]
fn any_over_three_servers_and_two_hosts() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let servers: Vec<Tmux> = ["api", "web", "db"]
        .iter()
        .map(|n| Tmux::start(local.path(), n, 20))
        .collect();
    let a = Sshd::start(&keys, "hosta", true);
    let b = Sshd::start(&keys, "hostb", true);
    let (ta, tb) = (a.tmux(20), b.tmux(20));

    let mut c = tw(&keys, local.path());
    c.args(["any", "--all-servers", "--host", "hosta", "--host", "hostb"])
        .args(["--ready", "armed", "--json", "--timeout", "30"]);
    let mut run = Running::start(c);
    servers[0].wait_channel("armed", &mut run.child);
    let pane = tb.panes[7].clone();
    tb.type_line(&pane, "read -p 'Deploy? ' x");
    let f = run.finish();
    assert_eq!(f.code, Some(0), "{f:?}");
    let v: Value = serde_json::from_str(&f.stdout).unwrap();
    assert_eq!(v["outcome"], "attention", "{v}");
    assert_eq!(v["pane_id"], format!("hostb/{pane}"), "{v}");
    assert_eq!(v["host"], "hostb", "{v}");
    assert_eq!(v["server"], tb.socket(), "{v}");
    assert_eq!(v["state"], "asking", "{v}");
    assert_eq!(v["question"], "Deploy?", "{v}");
    assert_eq!(v["pending"].as_array().unwrap().len(), 99, "{v}");

    // A pane of this host's second server, in words for people.
    let mut c = tw(&keys, local.path());
    c.args(["any", "--all-servers", "--host", "hosta", "--host", "hostb"])
        .args(["--ready", "armed2", "--timeout", "30"]);
    let mut run = Running::start(c);
    servers[0].wait_channel("armed2", &mut run.child);
    let web = &servers[1];
    web.type_line(&web.panes[3], "read -p 'Ship? ' x");
    let f = run.finish();
    assert_eq!(f.code, Some(0), "{f:?}");
    let want = format!(
        "web {} main:3 asking (reads_line, bash): Ship?",
        web.panes[3]
    );
    assert_eq!(f.stdout.trim(), want, "{f:?}");

    let mut c = tw(&keys, local.path());
    c.args([
        "panes",
        "--all-servers",
        "--host",
        "hosta",
        "--host",
        "hostb",
        "--json",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    let v = f.json();
    let panes = v["panes"].as_array().unwrap();
    assert_eq!(panes.len(), 100, "{v}");
    let on = |host: Option<&str>, server: &str| {
        panes
            .iter()
            .filter(|p| p["host"].as_str() == host && p["server"] == server)
            .count()
    };
    for s in &servers {
        assert_eq!(on(None, &s.socket()), 20, "{}", s.name);
    }
    assert_eq!(on(Some("hosta"), &ta.socket()), 20);
    assert_eq!(on(Some("hostb"), &tb.socket()), 20);
    assert!(
        panes
            .iter()
            .any(|p| p["pane_id"] == format!("hostb/{pane}") && p["state"] == "asking"),
        "{v}"
    );
    for t in [&ta, &tb] {
        t.type_line(&t.panes[7], "");
    }
    web.type_line(&web.panes[3], "");
}

/// `--all-servers` takes a server that starts during the wait too: said
/// in `--ndjson` (`server_added`), its panes watched from then on.
#[test]
fn a_server_started_during_the_wait_is_watched() {
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let first = Tmux::start(local.path(), "first", 2);
    let mut c = tw(&keys, local.path());
    c.args(["any", "--all-servers", "--until", "asking", "--ndjson"])
        .args(["--ready", "armed", "--timeout", "30"]);
    let mut run = Running::start(c);
    first.wait_channel("armed", &mut run.child);
    let late = Tmux::start(local.path(), "late", 2);
    let added = run.line("server_added", DEADLINE, |v| v["event"] == "server_added");
    assert_eq!(added["server"], late.socket(), "{added}");
    late.type_line(&late.panes[1], "read -p 'Late? ' x");
    let v = run.line("the late server's question", DEADLINE, |v| {
        v["state"] == "asking"
    });
    assert_eq!(v["server"], late.socket(), "{v}");
    assert_eq!(v["pane_id"], late.panes[1], "{v}");
    assert_eq!(v["question"], "Late?", "{v}");
    // tmux-wait's own sockets (a hub's, hidden beside its server's) are
    // no server.
    assert!(
        !run.seen.iter().any(|l| l.contains("/.")),
        "{}",
        run.seen.join("\n")
    );
    late.type_line(&late.panes[1], "");
    drop(first);
}

/// A host whose sshd is killed mid-wait: said, the other host's panes
/// still reported, and back within 5 s of its sshd's return.
#[test]
fn a_host_whose_sshd_dies_comes_back() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let here = Tmux::start(local.path(), "here", 1);
    let mut a = Sshd::start(&keys, "hosta", true);
    let b = Sshd::start(&keys, "hostb", true);
    let (ta, tb) = (a.tmux(2), b.tmux(2));
    let mut c = tw(&keys, local.path());
    c.args(["-L", "here", "any", "--host", "hosta", "--host", "hostb"])
        .args(["--ready", "armed", "--ndjson", "--timeout", "40"]);
    let mut run = Running::start(c);
    here.wait_channel("armed", &mut run.child);

    a.kill();
    let v = run.line("host_unreachable", Duration::from_secs(15), |v| {
        v["event"] == "host_unreachable"
    });
    assert_eq!(v["host"], "hosta", "{v}");
    assert!(v["message"].as_str().unwrap().starts_with("hosta: "), "{v}");

    // The other host goes on.
    tb.type_line(&tb.panes[1], "read -p 'Still there? ' x");
    let pane_b = format!("hostb/{}", tb.panes[1]);
    run.line("hostb's question", Duration::from_secs(10), |v| {
        v["pane_id"] == pane_b.as_str() && v["state"] == "asking"
    });

    let back = Instant::now();
    a.restart();
    run.line("hosta again", Duration::from_secs(5), |v| {
        v["event"] == "host_connected" && v["host"] == "hosta"
    });
    println!("hosta back {:?} after its sshd", back.elapsed());
    ta.type_line(&ta.panes[0], "read -p 'Back? ' x");
    let pane_a = format!("hosta/{}", ta.panes[0]);
    let v = run.line("hosta's question", Duration::from_secs(10), |v| {
        v["pane_id"] == pane_a.as_str() && v["state"] == "asking"
    });
    assert_eq!(v["question"], "Back?", "{v}");
    assert_eq!(v["host"], "hosta", "{v}");
    drop(run);
    for t in [&ta, &tb] {
        for p in &t.panes {
            t.type_line(p, "");
        }
    }
}

/// A host without tmux-wait: one line that names the command that
/// installs it, the other hosts watched meanwhile; the install copies
/// this very binary there, and the host is watched.
#[test]
fn a_host_without_tmux_wait_is_told_how_to_install_it() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let bare = Sshd::start(&keys, "bare", false);
    let a = Sshd::start(&keys, "hosta", true);
    let (tbare, ta) = (bare.tmux(1), a.tmux(1));

    let mut c = tw(&keys, local.path());
    c.args(["panes", "--host", "bare"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert_eq!(
        f.stderr.trim(),
        "tmux-wait: error: bare: no tmux-wait there; install it with `tmux-wait remote install 'bare'`"
    );

    // Beside a host that has it: the wait goes on, the problem said.
    let mut c = tw(&keys, local.path());
    c.args([
        "any",
        "--host",
        "bare",
        "--host",
        "hosta",
        "--now",
        "--json",
        "--timeout",
        "20",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    let v = f.json();
    assert_eq!(v["host"], "hosta", "{v}");
    assert_eq!(v["problems"][0]["event"], "no_helper", "{v}");

    let mut c = tw(&keys, local.path());
    c.args(["remote", "install", "bare"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(bare.dir.join("home/.local/bin/tmux-wait").is_file());
    let mut c = tw(&keys, local.path());
    c.args(["remote", "check", "bare", "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.json()["ready"], true, "{f:?}");
    let mut c = tw(&keys, local.path());
    c.args(["panes", "--host", "bare", "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(
        f.json()["panes"][0]["pane_id"],
        format!("bare/{}", tbare.panes[0])
    );
    drop(ta);
}

/// Host names, sockets and targets with shell metacharacters: refused,
/// or quoted so that nothing runs, here or there.
#[test]
fn shell_metacharacters_never_run() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let a = Sshd::start(&keys, "hosta", true);
    let ta = a.tmux(1);
    let mark = keys.path().join("ran");
    let m = mark.display().to_string();
    for host in [
        format!("a;touch {m}"),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("-oProxyCommand=touch {m}"),
        format!("me@a|touch {m}"),
    ] {
        let mut c = tw(&keys, local.path());
        c.args(["panes", &format!("--host={host}")]);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(2), "{host}: {f:?}");
        assert_eq!(f.stderr.lines().count(), 1, "{host}: {f:?}");
        assert!(f.stderr.contains("--host"), "{host}: {f:?}");
    }
    // A socket and a target of the host's: quoted for its shell.
    let mut c = tw(&keys, local.path());
    c.args(["panes", "--host", &format!("hosta:x;touch {m}"), "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(2), "{f:?}");
    let mut c = tw(&keys, local.path());
    c.args([
        "remote",
        "exec",
        "hosta",
        "--",
        "panes",
        "-t",
        &format!("$(touch {m})'\"`touch {m}`"),
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(2), "{f:?}");
    assert!(f.stderr.contains("no pane"), "{f:?}");
    assert!(!mark.exists(), "a command ran");
    // And a command typed through it reaches the pane as it was given.
    let mut c = tw(&keys, local.path());
    c.args([
        "remote",
        "exec",
        "hosta",
        "--",
        "run",
        "-t",
        &ta.panes[0],
        "--json",
        "--",
    ])
    .arg("printf '%s\\n' \"it's $((6*7))\"");
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(f.json()["output"], serde_json::json!(["it's 42"]), "{f:?}");
}

/// While every host and server is quiet the wait costs nothing, and
/// however many calls go to a host, it has one ssh connection.
#[test]
fn quiet_hosts_cost_nothing_and_share_one_connection() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let here = Tmux::start(local.path(), "here", 2);
    let a = Sshd::start(&keys, "hosta", true);
    let b = Sshd::start(&keys, "hostb", true);
    let (_ta, _tb) = (a.tmux(3), b.tmux(3));
    let mut c = tw(&keys, local.path());
    c.args(["-L", "here", "any", "--host", "hosta", "--host", "hostb"])
        .args(["--ready", "armed", "--timeout", "60"]);
    let mut run = Running::start(c);
    here.wait_channel("armed", &mut run.child);
    // (The hosts' shells settle: their first looks are over.)
    std::thread::sleep(Duration::from_millis(500));
    let pid = run.child.id();
    let before = ticks(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let used = ticks(pid) - before;
    println!("{used} ticks in {:?} while quiet", t0.elapsed());
    assert!(used <= 1, "{used} ticks of CPU while nothing happened");

    // More calls, some at once: still one connection per host.
    let mut calls = Vec::new();
    for _ in 0..4 {
        let mut c = tw(&keys, local.path());
        c.args(["panes", "--host", "hosta", "--host", "hostb", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        calls.push(c.spawn().unwrap());
    }
    for c in calls {
        let f = finished(c.wait_with_output().unwrap());
        assert_eq!(f.code, Some(0), "{f:?}");
        assert_eq!(f.json()["panes"].as_array().unwrap().len(), 6, "{f:?}");
    }
    let mut c = tw(&keys, local.path());
    c.args(["remote", "check", "hosta", "hostb"]);
    assert_eq!(run_bounded(c).code, Some(0));
    assert_eq!(connections_to(a.port), 1, "connections to hosta");
    assert_eq!(connections_to(b.port), 1, "connections to hostb");
    drop(run);

    // --all over a server here and a host: every pane of both.
    let mut c = tw(&keys, local.path());
    c.args([
        "-L", "here", "any", "--host", "hosta", "--all", "--now", "--json",
    ])
    .args(["--until", "prompt", "--timeout", "20"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    let v = f.json();
    assert_eq!(v["outcome"], "all", "{v}");
    assert_eq!(v["panes"].as_array().unwrap().len(), 5, "{v}");
    // For people: a pane here led by its server, a remote one by its host.
    let mut c = tw(&keys, local.path());
    c.args(["-L", "here", "panes", "--host", "hosta"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    let lines: Vec<&str> = f.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{f:?}");
    assert!(lines[0].starts_with("PANE "), "{f:?}");
    assert!(lines[1].starts_with("here %0 "), "{f:?}");
    assert!(lines[3].starts_with("hosta/%0 "), "{f:?}");
    assert!(lines[3].contains(" main:0 "), "{f:?}");
}

/// MCP: the attention tools take hosts, and run_command a remote pane's
/// id, run there through the same connection.
#[test]
fn mcp_reaches_other_hosts() {
    need_sshd!();
    let keys = Keys::new();
    let local = tempfile::Builder::new()
        .prefix("tw-local")
        .tempdir()
        .unwrap();
    let a = Sshd::start(&keys, "hosta", true);
    let ta = a.tmux(1);
    let calls = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pane_states","arguments":{"hosts":["hosta"]}}}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"run_command","arguments":{{"pane_id":"hosta/{}","command":"echo remote-$((40+2))"}}}}}}"#,
            ta.panes[0]
        ),
    ];
    let mut c = tw(&keys, local.path());
    c.arg("mcp").stdin(Stdio::piped());
    let mut run = Running::start(c);
    {
        use std::io::Write;
        let mut input = run.child.stdin.take().unwrap();
        for l in &calls[..3] {
            writeln!(input, "{l}").unwrap();
        }
        let v = run.line("pane_states", DEADLINE, |v| v["id"] == 2);
        let panes = &v["result"]["structuredContent"]["panes"];
        assert_eq!(panes[0]["pane_id"], format!("hosta/{}", ta.panes[0]), "{v}");
        assert_eq!(panes[0]["host"], "hosta", "{v}");
        writeln!(input, "{}", calls[3]).unwrap();
        let v = run.line("run_command", DEADLINE, |v| v["id"] == 3);
        let r = &v["result"]["structuredContent"];
        assert_eq!(r["output"], serde_json::json!(["remote-42"]), "{v}");
        assert_eq!(r["exit_status"], 0, "{v}");
        assert_eq!(r["pane_id"], format!("hosta/{}", ta.panes[0]), "{v}");
    }
    let f = run.finish();
    assert_eq!(f.code, Some(0), "{f:?}");
}
