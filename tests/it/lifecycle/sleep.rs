//! The machine asleep and awake: every process of the server frozen (as
//! a suspend freezes them), the wall clock moved on meanwhile and later
//! set back (libfaketime in the server and everything it starts, the
//! monotonic clock left alone, as a suspend and a clock change leave
//! it), then woken.

use super::{Day, day_config, signal_all};
use crate::attention_plugin::{ask, server_options};
use crate::common::*;
use std::path::PathBuf;
use std::time::Duration;

/// libfaketime (Debian's `faketime`; .ci/run installs it).
fn libfaketime() -> PathBuf {
    let dirs = [
        "/usr/lib/x86_64-linux-gnu/faketime",
        "/usr/lib/aarch64-linux-gnu/faketime",
        "/usr/lib/faketime",
        "/usr/local/lib/faketime",
    ];
    dirs.iter()
        .map(|d| PathBuf::from(d).join("libfaketimeMT.so.1"))
        .find(|p| p.is_file())
        .expect("libfaketime is not installed (apt-get install faketime)")
}

/// `pid` and every process below it.
fn tree(pid: u32, out: &mut Vec<u32>) {
    out.push(pid);
    let kids =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for k in kids.split_whitespace().filter_map(|k| k.parse().ok()) {
        tree(k, out);
    }
}

/// Processes asleep, as a suspend puts them: frozen by the kernel's
/// cgroup freezer (root), where no signal reaches them, so that a shell
/// sees no job of its stop. Without it, the tmux server, its clients and
/// the tmux-wait processes are stopped with SIGSTOP (a shell whose child
/// is stopped by a signal takes its terminal back). Woken when dropped,
/// also on a panic.
enum Asleep {
    Frozen(PathBuf, Vec<u32>),
    Stopped(Vec<u32>),
}

const FREEZER: &str = "/sys/fs/cgroup/freezer";

impl Asleep {
    fn freeze(pids: &[u32]) -> Asleep {
        let dir = PathBuf::from(FREEZER).join(unique("tw-asleep"));
        if std::fs::create_dir(&dir).is_ok() {
            let moved = pids
                .iter()
                .all(|p| std::fs::write(dir.join("cgroup.procs"), p.to_string()).is_ok());
            if moved && std::fs::write(dir.join("freezer.state"), "FROZEN").is_ok() {
                let end = std::time::Instant::now() + DEADLINE;
                while std::fs::read_to_string(dir.join("freezer.state"))
                    .unwrap_or_default()
                    .trim()
                    != "FROZEN"
                {
                    assert!(std::time::Instant::now() < end, "not frozen");
                    std::thread::sleep(Duration::from_millis(10));
                }
                println!("asleep: {} processes frozen", pids.len());
                return Asleep::Frozen(dir, pids.to_vec());
            }
            Asleep::Frozen(dir, pids.to_vec()).wake();
        }
        let few: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| {
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd);
                cmd.contains("tmux")
            })
            .collect();
        println!(
            "asleep: {} processes stopped (no cgroup freezer)",
            few.len()
        );
        signal_all(&few, "STOP");
        Asleep::Stopped(few)
    }

    fn wake(&self) {
        match self {
            Asleep::Frozen(dir, pids) => {
                let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
                for p in pids {
                    let _ =
                        std::fs::write(PathBuf::from(FREEZER).join("cgroup.procs"), p.to_string());
                }
                let _ = std::fs::remove_dir(dir);
            }
            Asleep::Stopped(pids) => signal_all(pids, "CONT"),
        }
    }
}

impl Drop for Asleep {
    fn drop(&mut self) {
        self.wake();
    }
}

#[test]
fn the_machine_sleeps_and_the_wall_clock_jumps() {
    let clock = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(clock.path(), "+0\n").unwrap();
    // (libfaketime shares its state with the processes a faked one
    // starts, through memory the first tmux client makes and removes when
    // it exits: what the server starts goes without.)
    let mut o = server_options(&day_config("set-environment -gu FAKETIME_SHARED"));
    o.env = vec![
        (
            "LD_PRELOAD".into(),
            libfaketime().to_string_lossy().into_owned(),
        ),
        (
            "FAKETIME_TIMESTAMP_FILE".into(),
            clock.path().to_string_lossy().into_owned(),
        ),
        ("FAKETIME_NO_CACHE".into(), "1".into()),
        ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
    ];
    let mut d = Day::start_with(TestServer::with(o));
    let wall = |d: &Day| -> u64 {
        d.s.tmux(&["display-message", "-p", "#{t:start_time}#{start_time}"]);
        // (The server's own clock: a window made now is dated by it.)
        let w =
            d.s.tmux(&["new-window", "-d", "-P", "-F", "#{window_activity}"])
                .trim()
                .parse()
                .unwrap();
        d.s.tmux(&["kill-window", "-t", ":$"]);
        w
    };
    let t0 = wall(&d);
    let first = d.window();
    ask(&d.s, &first, "First? [y/N]");
    d.wait_segment(&first, "⚑1 main:1 asking");
    let silent = d.window();
    d.s.type_line(&silent, "sleep 900");
    d.s.wait_for_command(&silent, "sleep");
    d.idle("a question and a silent command");

    // Asleep for 3 s; the wall clock says 3 h.
    let server: u32 =
        d.s.tmux(&["display-message", "-p", "#{pid}"])
            .trim()
            .parse()
            .unwrap();
    let mut pids = Vec::new();
    tree(server, &mut pids);
    for p in d.s.processes_using_socket() {
        if let Some(pid) = p.split(':').next().and_then(|p| p.parse().ok()) {
            pids.push(pid);
        }
    }
    {
        let _asleep = Asleep::freeze(&pids);
        std::fs::write(clock.path(), "+3h\n").unwrap();
        std::thread::sleep(Duration::from_secs(3));
    }
    let t1 = wall(&d);
    assert!(t1 >= t0 + 3 * 3600, "the server's clock: {t0} then {t1}");
    d.idle("waking with the wall clock 3 h on");
    assert_eq!(d.segment(), "⚑1 main:1 asking");

    // A question after waking is told; the first still waited longest.
    let told = d.notifications().len();
    let second = d.window();
    ask(&d.s, &second, "Second? [y/N]");
    d.wait_segment(&second, "⚑2 main:1 asking");
    d.s.wait_until(&second, "the notification", || {
        d.notifications().len() > told
    });
    d.idle("a question after waking");

    // The clock set back 4 h (below where the day began): a third
    // question still comes after the first two.
    std::fs::write(clock.path(), "-1h\n").unwrap();
    let third = d.window();
    ask(&d.s, &third, "Third? [y/N]");
    d.s.wait_until(&third, "the third mark", || d.mark(&third) == "asking");
    d.wait_segment(&third, "⚑3 main:1 asking");
    d.idle("a question after the clock was set back");
    // Going to the one that waited longest goes to the first.
    d.person.prefixed(&d.s, "a");
    d.s.wait_until(&first, "the jump", || d.on_screen() == first);
}
