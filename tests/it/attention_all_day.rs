//! The plugin's attention lived with for a while, past its defaults: a
//! command that stays quiet longer than the quiet time costs the tmux
//! server and the watch nothing, measured from `/proc`; `top` and `watch`
//! redrawing every second for a minute change no mark, no segment and
//! tell nobody anything after their first state. Each runs a minute, on
//! purpose: a timer that re-fires at once, or a redraw taken for news, is
//! invisible to a test that ends in two seconds.

use crate::attention_plugin::{load_plugin, opt, segment, server_with, wait_watching};
use crate::common::outer::OuterClient;
use crate::common::*;
use std::time::{Duration, Instant};

/// The CPU a process used so far, in clock ticks (user and system, from
/// `/proc/PID/stat`).
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/stat: {e}"));
    // (The command name, in parentheses, may hold spaces.)
    let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100)
}

/// Attention on for every session with `extra` config, a person attached
/// to window 0; the server's pid and the watch's.
fn watched(extra: &str) -> (TestServer, OuterClient, String, String) {
    let s = server_with(&format!("set -g @tmux-wait-attention on\n{extra}"));
    load_plugin(&s);
    wait_watching(&s);
    let person = OuterClient::attach(&s, "main");
    person.press_a_key(&s);
    let server = s
        .tmux(&["display-message", "-p", "#{pid}"])
        .trim()
        .to_owned();
    let watch = opt(&s, &["-g", "@tmux-wait-attention-pid"]);
    assert!(!watch.is_empty());
    (s, person, server, watch)
}

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn a_command_quiet_past_the_quiet_time_costs_nothing_for_a_minute() {
    let (s, _person, server, watch) = watched("set -g @tmux-wait-quiet-seconds 2");
    let p = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&p);
    s.type_line(&p, "sleep 900");
    s.wait_for_command(&p, "sleep");
    // Past the quiet time (2 s), with room for the watch's last looks.
    std::thread::sleep(Duration::from_secs(4));
    let (s0, w0) = (cpu_ticks(&server), cpu_ticks(&watch));
    std::thread::sleep(MINUTE);
    let (s1, w1) = (cpu_ticks(&server), cpu_ticks(&watch));
    let hz = ticks_per_second();
    println!(
        "a quiet command, a minute: tmux server {} ticks, the watch {} ticks ({hz} a second)",
        s1 - s0,
        w1 - w0
    );
    // Flat: under 1 % of a core each (the fault this pins down cost the
    // server 40 % and the watch 20 %).
    assert!(
        s1 - s0 <= hz * 60 / 100,
        "the tmux server: {} ticks",
        s1 - s0
    );
    assert!(w1 - w0 <= hz * 60 / 100, "the watch: {} ticks", w1 - w0);
    assert_eq!(segment(&s), "", "a quiet command needs nobody");
    assert_eq!(s.current_command(&p), "sleep");
}

#[test]
fn top_and_watch_for_a_minute_change_nothing_after_their_first_state() {
    // Each notification also runs the user's hook: a record that the
    // server's message log (which also logs every command sent to it)
    // cannot keep for a minute.
    let told = tempfile::NamedTempFile::new().unwrap();
    let hook = format!(
        "set -g @tmux-wait-on-done 'echo \"$TMUX_WAIT_PANE $TMUX_WAIT_LABEL\" >> {}'",
        told.path().display()
    );
    let (s, _person, _server, watch) = watched(&hook);
    let told = || std::fs::read_to_string(told.path()).unwrap_or_default();
    let top = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    let clock = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    let bar = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&top);
    s.wait_for_prompt(&clock);
    s.wait_for_prompt(&bar);
    s.type_line(&top, "top -d 1");
    s.type_line(&clock, "watch -n 1 date");
    s.type_line(
        &bar,
        "python3 -c 'import sys,time\nfor i in range(100000): sys.stdout.write(\"\\r[%-20s] %d%%\" % (\"#\" * (i % 20), i % 100)); sys.stdout.flush(); time.sleep(0.1)'",
    );
    s.wait_until(&top, "top's screen", || {
        s.capture(&top).contains("load average")
    });
    s.wait_until(&clock, "watch's screen", || {
        s.capture(&clock).contains("Every 1")
    });
    // Their first states: each has redrawn a few times.
    std::thread::sleep(Duration::from_secs(4));
    let first = segment(&s);
    let before = told();
    let w0 = cpu_ticks(&watch);
    // And `any` over the three, for the minute, printing every change.
    let any = s.start_wait(&[
        "any",
        "-t",
        &top,
        "-t",
        &clock,
        "-t",
        &bar,
        "--ndjson",
        "--timeout",
        "60",
    ]);
    let end = Instant::now() + MINUTE;
    let mut seen = vec![first.clone()];
    while Instant::now() < end {
        let now = segment(&s);
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let w1 = cpu_ticks(&watch);
    println!(
        "top and watch, a minute: the watch used {} ticks; the segment was {first:?}",
        w1 - w0
    );
    assert_eq!(seen, vec![first.clone()], "the segment changed");
    assert_eq!(told(), before, "told again");
    // Live displays need nobody: no mark at all.
    assert_eq!(first, "", "top, watch or the bar is marked");
    let any = any.finish(&s);
    assert_eq!(any.code, Some(1), "{}", any.stdout);
    let lines: Vec<&str> = any.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "changes printed: {}", any.stdout);
    assert!(
        lines[0].contains("\"outcome\":\"timeout\""),
        "{}",
        any.stdout
    );
    assert!(s.capture(&top).contains("load average"));
}
