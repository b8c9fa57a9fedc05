//! A pane's whole life, all day, through a person's real client (inside
//! an outer tmux) with the plugin's attention on and the quiet time at
//! one second: every event a pane lives through (an exit, kept or not; a
//! respawn; kills; moves, swaps, links and renames; a job stopped and
//! resumed; `exec`; clients coming and going; a reload; attention off and
//! on; a watch's timeout; the server restarting; the machine asleep while
//! the wall clock jumps). After each, what the mark, the segment, the
//! menu and a running `any --ndjson` say is checked, and once the quiet
//! time has passed the tmux server, its clients and every tmux-wait
//! process of the server are measured from `/proc` for two seconds: back
//! at idle. A timer armed for a time already past re-fires at once and
//! burns a core; one that re-fires every few milliseconds does not show
//! in a test that ends in two seconds. What each event says is written
//! down in docs/lifecycle.md.

mod answers;
mod clients;
mod exits;
mod jobs;
mod moves;
mod phone;
mod restart;
mod sleep;
mod soak;

use crate::attention_plugin::{load_plugin, notifications, opt, segment, server_with};
use crate::common::outer::OuterClient;
use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The quiet time of these tests (`@tmux-wait-quiet-seconds`).
pub(crate) const QUIET: Duration = Duration::from_secs(1);
/// How long each process is measured, once the quiet time has passed.
const WINDOW: Duration = Duration::from_secs(2);
/// How many windows the idle check may take to find one at idle.
const WINDOWS: usize = 3;
/// At idle, in [`WINDOW`], each process uses at most this many clock
/// ticks (30 ms: a look or two at the kernel, a status-line redraw) and
/// wakes at most this often. A timer due for good uses them all (200);
/// one every 100 ms wakes 20 times.
const IDLE_TICKS: u64 = 3;
const IDLE_WAKEUPS: u64 = 12;

/// A day with the plugin: a server whose config loads it (so that a
/// reload and a restart load it again), attention on, `remain-on-exit`,
/// a person attached to `main`, and `any --server --ndjson` listening.
pub(crate) struct Day {
    pub s: TestServer,
    pub person: OuterClient,
    pub any: Listener,
    /// The figures of every idle check, for the test's output.
    costs: Vec<String>,
}

/// The config lines of a day: the plugin loaded by the config itself.
fn day_config(extra: &str) -> String {
    format!(
        "set -g remain-on-exit on\n\
         set -g @tmux-wait-attention on\n\
         set -g @tmux-wait-quiet-seconds {}\n\
         {extra}\n\
         run-shell '{}'",
        QUIET.as_secs(),
        root().join("tmux-wait.tmux").display()
    )
}

impl Day {
    pub(crate) fn start(extra: &str) -> Day {
        Self::start_with(server_with(&day_config(extra)))
    }

    /// A day on `s`, whose config is [`day_config`]'s.
    pub(crate) fn start_with(s: TestServer) -> Day {
        // (The config's run-shell ran before the first session existed:
        // the plugin's load is run again now that it does, as TPM runs
        // it on the next reload.)
        load_plugin(&s);
        wait_watching(&s);
        let person = OuterClient::attach(&s, "main");
        person.press_a_key(&s);
        let any = Listener::start(&s);
        Day {
            s,
            person,
            any,
            costs: Vec::new(),
        }
    }

    /// A new window in the background, its shell at its prompt.
    pub(crate) fn window(&self) -> String {
        crate::attention_plugin::window(&self.s)
    }

    /// A new window in the background running `command`.
    pub(crate) fn window_running(&self, command: &str) -> String {
        self.s
            .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}", command])
            .trim()
            .to_owned()
    }

    pub(crate) fn segment(&self) -> String {
        segment(&self.s)
    }

    /// Wait until the segment says `want`.
    pub(crate) fn wait_segment(&self, pane: &str, want: &str) {
        self.s
            .wait_until(pane, &format!("the segment to say {want:?}"), || {
                segment(&self.s) == want
            });
    }

    /// Wait until `pane`'s mark is `want`; on the deadline, fail with
    /// the pane, the watch and the processes of the server.
    pub(crate) fn wait_mark(&self, pane: &str, want: &str) {
        let end = Instant::now() + DEADLINE;
        while self.mark(pane) != want {
            if Instant::now() > end {
                panic!(
                    "{pane}'s mark never became {want:?} (it is {:?}); the watch {:?}, scope {:?}\nprocesses: {:#?}\npane:\n{}",
                    self.mark(pane),
                    self.watch_pid(),
                    opt(&self.s, &["-g", "@tmux-wait-attention-scope"]),
                    self.s.processes_using_socket(),
                    self.s.capture(pane)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pane's mark (empty: none).
    pub(crate) fn mark(&self, pane: &str) -> String {
        opt(&self.s, &["-p", "-t", pane, "@tmux-wait-attention-mark"])
    }

    /// The window mark of the window that holds `pane`.
    pub(crate) fn window_mark(&self, pane: &str) -> String {
        opt(&self.s, &["-w", "-t", pane, "@tmux-wait-attention-window"])
    }

    /// The place the server names a pane by (`session:window`).
    pub(crate) fn place(&self, pane: &str) -> String {
        self.s
            .tmux(&[
                "display-message",
                "-p",
                "-t",
                pane,
                "#{session_name}:#{window_index}",
            ])
            .trim()
            .to_owned()
    }

    pub(crate) fn notifications(&self) -> Vec<String> {
        notifications(&self.s)
    }

    /// The menu (`prefix M-w`) as the person sees it; closed again.
    pub(crate) fn menu(&self) -> String {
        self.person.prefixed(&self.s, "M-w");
        self.person.wait_for_screen("tmux-wait");
        let screen = self.person.screen();
        self.person.keys(&["q"]);
        let end = Instant::now() + DEADLINE;
        while self.person.screen().contains("─ tmux-wait ─") {
            assert!(Instant::now() < end, "the menu did not close");
            std::thread::sleep(Duration::from_millis(20));
        }
        screen
    }

    /// The person detaches (prefix d), then attaches again to `session`
    /// (a terminal of their own again, as after closing the window).
    pub(crate) fn reattach(&mut self, session: &str) {
        let name = self.person.name.clone();
        self.person.prefixed(&self.s, "d");
        self.s.wait_until(&self.s.pane, "the client to detach", || {
            !self
                .s
                .tmux(&["list-clients", "-F", "#{client_name}"])
                .lines()
                .any(|l| l == name)
        });
        self.person = OuterClient::attach(&self.s, session);
    }

    /// The pane the person's client shows.
    pub(crate) fn on_screen(&self) -> String {
        self.s
            .tmux(&["list-clients", "-F", "#{client_name} #{pane_id}"])
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{} ", self.person.name))
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }

    /// The attention watch's pid (empty: none runs).
    pub(crate) fn watch_pid(&self) -> String {
        opt(&self.s, &["-g", "@tmux-wait-attention-pid"])
    }

    /// Let the quiet time pass after `event`, then measure the tmux
    /// server, its clients and every tmux-wait process of the server: at
    /// idle, and `any` says nothing more meanwhile.
    pub(crate) fn idle(&mut self, event: &str) {
        // (Asked of tmux now: a command of the test's own in a window
        // would count as the server's.)
        let server = self.server_pid();
        // The quiet time, the looks the watch takes after it, and the
        // notification's hooks.
        std::thread::sleep(QUIET + Duration::from_millis(1500));
        // A window of WINDOW at idle, among the first WINDOWS: on a loaded
        // machine what follows an event may run late into the first one;
        // a timer that re-fires at once, or every few milliseconds, keeps
        // every window busy.
        let mut said = 0;
        let mut busy = Vec::new();
        let mut tries = Vec::new();
        let mut rows = Vec::new();
        for _ in 0..WINDOWS {
            said = self.any.count();
            let procs = self.processes_of(server);
            let before: Vec<Option<Cost>> = procs.iter().map(|(p, _)| cost(*p)).collect();
            std::thread::sleep(WINDOW);
            let after: Vec<Option<Cost>> = procs.iter().map(|(p, _)| cost(*p)).collect();
            rows.clear();
            busy.clear();
            for (((pid, name), a), b) in procs.iter().zip(&before).zip(&after) {
                let (Some(a), Some(b)) = (a, b) else {
                    continue; // it ended meanwhile
                };
                let ticks = b.ticks.saturating_sub(a.ticks);
                let wakeups = b.wakeups.saturating_sub(a.wakeups);
                rows.push(format!("{name} ({pid}): {ticks} ticks, {wakeups} wakeups"));
                if ticks > IDLE_TICKS || wakeups > IDLE_WAKEUPS {
                    busy.push(format!("{name} ({pid}): {ticks} ticks, {wakeups} wakeups"));
                }
            }
            tries.push(rows.join("; "));
            if busy.is_empty() {
                break;
            }
        }
        let line = format!("after {event}: {}", tries.join(" | then "));
        println!("{line}");
        self.costs.push(line);
        assert!(
            busy.is_empty(),
            "not at idle after {event}: {} (in each of {WINDOWS} windows of {WINDOW:?} from {:?} on; at most {IDLE_TICKS} ticks and {IDLE_WAKEUPS} wakeups)\nall: {tries:#?}\n`any`'s trace, the newest first:\n{}\nsegment: {:?}\nthe server's last messages:\n{}\npanes: {}",
            busy.join("; "),
            QUIET + Duration::from_millis(1500),
            self.any.trace_tail(60),
            self.segment(),
            self.s
                .tmux(&["show-messages"])
                .lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .join("\n"),
            self.s.tmux(&[
                "list-panes",
                "-a",
                "-F",
                "#{pane_id} #{session_name}:#{window_index} dead=#{pane_dead} cmd=#{pane_current_command} mark=#{@tmux-wait-attention-mark}"
            ])
        );
        let more = self.any.since(said);
        assert!(
            more.is_empty(),
            "`any` went on after {event}, while nothing happened: {more:?}"
        );
    }

    /// The tmux server, its clients, and every tmux-wait process of this
    /// server (the attention watch, the hub, `any`), by pid and name.
    pub(crate) fn processes(&self) -> Vec<(u32, String)> {
        self.processes_of(self.server_pid())
    }

    fn server_pid(&self) -> u32 {
        self.s
            .tmux(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .expect("the server's pid")
    }

    /// [`Day::processes`], the server's pid known: found in `/proc`
    /// alone, without a word to tmux.
    fn processes_of(&self, server: u32) -> Vec<(u32, String)> {
        let mut out = vec![(server, "tmux server".to_owned())];
        for p in self.s.processes_using_socket() {
            let (pid, cmd) = p.split_once(": ").unwrap_or((&p, ""));
            let Ok(pid) = pid.parse::<u32>() else {
                continue;
            };
            let name = if cmd.contains("attention serve") {
                "attention watch"
            } else if cmd.trim_end().ends_with(" hub") {
                "hub"
            } else if cmd.contains(" any ") {
                "any"
            } else if cmd.contains(" attach") {
                "tmux client"
            } else if cmd.contains(" wait-for ") || cmd.contains("display-message") {
                continue; // a command of the test's own, or a hook's
            } else {
                "tmux-wait"
            };
            out.push((pid, name.to_owned()));
        }
        out
    }
}

impl Drop for Day {
    fn drop(&mut self) {
        if !self.costs.is_empty() {
            println!("idle checks:\n  {}", self.costs.join("\n  "));
        }
    }
}

/// Attention is on and every pane watched.
pub(crate) fn wait_watching(s: &TestServer) {
    crate::attention_plugin::wait_watching(s);
}

/// What a process used so far: clock ticks (user and system) and context
/// switches of its threads, but the one that hears of new terminals on
/// the machine (`new-panes`): it wakes for every terminal any program
/// makes (the tests beside this one make them all the time), and looks
/// no further when the server holds none of them.
struct Cost {
    ticks: u64,
    wakeups: u64,
}

fn cost(pid: u32) -> Option<Cost> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if stat[stat.rfind(')')? + 2..].starts_with('Z') {
        return None;
    }
    let mut c = Cost {
        ticks: 0,
        wakeups: 0,
    };
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() == "new-panes" {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        if let Some(i) = stat.rfind(')') {
            let f: Vec<&str> = stat[i + 2..].split(' ').collect();
            let n = |k: usize| f.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            c.ticks += n(11) + n(12);
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for l in status.lines() {
            if let Some(v) = l
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                c.wakeups += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    Some(c)
}

/// `tmux-wait any --server --ndjson` over every state, as a script that
/// listens all day runs it: its lines, as they come.
pub(crate) struct Listener {
    child: Child,
    lines: Arc<Mutex<Vec<Value>>>,
    /// What it said on stderr, and its trace (shown when it fails).
    errors: tempfile::NamedTempFile,
    trace: tempfile::NamedTempFile,
}

impl Listener {
    pub(crate) fn start(s: &TestServer) -> Listener {
        let ready = unique("any-ready");
        let errors = tempfile::NamedTempFile::new().expect("a temporary file");
        let trace = tempfile::NamedTempFile::new().expect("a temporary file");
        let mut child = s
            .tw()
            .args([
                "any",
                "--server",
                "--ndjson",
                "--until",
                "working,prompt,asking,quiet,exited,bell",
                "--timeout",
                "3600",
                "--ready",
                &ready,
            ])
            .stdout(Stdio::piped())
            .env("TMUX_WAIT_TRACE", trace.path())
            .stderr(errors.reopen().expect("stderr"))
            .spawn()
            .expect("tmux-wait any");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let keep = lines.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&l) {
                    keep.lock().unwrap().push(v);
                }
            }
        });
        let mut sync = s
            .tmux_cmd()
            .args(["wait-for", &ready])
            .spawn()
            .expect("wait-for");
        let end = Instant::now() + DEADLINE;
        while !matches!(sync.try_wait(), Ok(Some(_))) {
            if Instant::now() > end || matches!(child.try_wait(), Ok(Some(_))) {
                let _ = sync.kill();
                let _ = sync.wait();
                panic!("`any --ndjson` was not armed");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Listener {
            child,
            lines,
            errors,
            trace,
        }
    }

    /// The last `n` lines of its trace, the newest first.
    pub(crate) fn trace_tail(&self, n: usize) -> String {
        let trace = std::fs::read_to_string(self.trace.path()).unwrap_or_default();
        let lines: Vec<&str> = trace.lines().rev().take(n).collect();
        lines.join("\n")
    }

    pub(crate) fn count(&self) -> usize {
        self.lines.lock().unwrap().len()
    }

    /// The lines after the first `n`.
    pub(crate) fn since(&self, n: usize) -> Vec<Value> {
        self.lines.lock().unwrap()[n..].to_vec()
    }

    /// Wait for a line after the first `n` about `pane` in `state`; it is
    /// returned.
    pub(crate) fn wait(&self, n: usize, pane: &str, state: &str) -> Value {
        let end = Instant::now() + DEADLINE;
        loop {
            if let Some(v) = self
                .since(n)
                .into_iter()
                .find(|v| v["pane_id"] == pane && v["state"] == state)
            {
                return v;
            }
            if Instant::now() >= end {
                let pid = self.child.id();
                let fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
                    .map(|d| {
                        d.flatten()
                            .filter_map(|e| std::fs::read_link(e.path()).ok())
                            .map(|t| t.to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                let threads: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
                    .map(|d| {
                        d.flatten()
                            .map(|e| {
                                let f = |n: &str| {
                                    std::fs::read_to_string(e.path().join(n)).unwrap_or_default()
                                };
                                format!("{}:{}", f("comm").trim(), f("wchan").trim())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let trace = self.trace_tail(80);
                panic!(
                    "`any` never said {pane} {state}; it said {:?}, and before: {:?}; it runs: {}; its stderr: {:?}; its descriptors: {fds:?}; its threads: {threads:?}\nits trace, the newest first:\n{}",
                    self.since(n),
                    self.since(0),
                    crate::common::process_alive_pub(pid),
                    std::fs::read_to_string(self.errors.path()).unwrap_or_default(),
                    trace
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid of the `any` process.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Stop or continue `pids` (SIGSTOP, SIGCONT).
pub(crate) fn signal_all(pids: &[u32], sig: &str) {
    for p in pids {
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), &p.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}
