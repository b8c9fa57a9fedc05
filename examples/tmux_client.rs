//! The cost of one tmux command: a `tmux` process against the in-process
//! client (`src/tmux/native.rs`), interleaved on one private server, so
//! that the machine's noise falls on both alike.
//!
//! `cargo run --release --example tmux_client [-- ROUNDS]` (default 200).
//! `TMUX_WAIT_TMUX` names the tmux to start the server with (and the
//! process runner's tmux).

use std::ffi::OsString;
use std::process::Command;
use std::time::Instant;
use tmux_wait::tmux::{Runner, Socket};

/// The server, killed (and its directory removed) on drop.
struct Server {
    dir: PathGuard,
    socket: Socket,
}

struct PathGuard(std::path::PathBuf);

impl Drop for PathGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new(tmux_wait::tmux::tmux_binary())
            .arg("-S")
            .arg(self.dir.0.join("s"))
            .arg("kill-server")
            .status();
    }
}

fn start() -> Server {
    let dir = std::env::temp_dir().join(format!("tw-client-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let sock = dir.join("s");
    let st = Command::new(tmux_wait::tmux::tmux_binary())
        .arg("-S")
        .arg(&sock)
        .args([
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "30",
        ])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .status()
        .expect("start tmux");
    assert!(st.success(), "tmux new-session failed");
    Server {
        dir: PathGuard(dir),
        socket: Socket::Path(sock),
    }
}

fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9))
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let server = start();
    let s = &server.socket;
    let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
    let commands: Vec<(&str, Vec<OsString>)> = vec![
        (
            "display-message -p",
            os(&["display-message", "-p", "#{pane_id}"]),
        ),
        ("capture-pane -p (30 rows)", os(&["capture-pane", "-p"])),
        (
            "a list of 3 (capture, display, show-options)",
            os(&[
                "capture-pane",
                "-p",
                "-S",
                "0",
                "-E",
                "0",
                ";",
                "display-message",
                "-p",
                "#{pane_id}\t#{session_id}\t#{pane_pid}\t#{version}",
                ";",
                "show-options",
                "-g",
                "history-limit",
            ]),
        ),
        (
            "set-option -p @x",
            os(&["set-option", "-p", "@tw_bench", "1"]),
        ),
        ("send-keys -l ''", os(&["send-keys", "-l", ""])),
    ];
    println!(
        "tmux-wait: one tmux command, process against in-process client ({rounds} rounds each, interleaved)"
    );
    println!(
        "| command | process median (ms) | p90 | native median (ms) | p90 | process / native |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, args) in &commands {
        // The same output both ways, before timing.
        let a = s.exec(args, None, Runner::Process).expect("process");
        let b = s.exec(args, None, Runner::NativeOnly).expect("native");
        assert_eq!(a, b, "{name}: the runners disagree");
        let mut p = Vec::with_capacity(rounds);
        let mut n = Vec::with_capacity(rounds);
        for i in 0..rounds {
            // Alternate which goes first.
            for k in [i % 2, 1 - i % 2] {
                let runner = if k == 0 {
                    Runner::Process
                } else {
                    Runner::NativeOnly
                };
                let t = Instant::now();
                let out = s.exec(args, None, runner).expect("tmux");
                let ms = t.elapsed().as_secs_f64() * 1e3;
                assert!(out.success);
                if k == 0 { p.push(ms) } else { n.push(ms) }
            }
        }
        let (pm, p9) = stats(p);
        let (nm, n9) = stats(n);
        println!(
            "| {name} | {pm:.3} | {p9:.3} | {nm:.3} | {n9:.3} | {:.1}x |",
            pm / nm
        );
    }
}
