//! The line tracker's throughput: plain text, and output heavy with
//! escape sequences (colours, cursor moves), fed as a pane's stream comes
//! (chunks of 16 KiB). `cargo bench --bench tracker` prints MB/s per core
//! for each; CI builds it (`cargo bench --no-run`) but does not time it.
//! The third figure is a text wait's whose pattern the output never holds:
//! its tracker makes only the lines the pattern can hit. The last line is
//! a coding agent's screen redrawn in place, as the hub reads it for the
//! waits on it (`frame_run`, see `hub::sieve`).

use std::sync::Arc;
use std::time::{Duration, Instant};
use tmux_wait::matcher::{Needed, PatternList};
use tmux_wait::pane::vt::{LineTracker, TrackerStart};

fn entry() -> TrackerStart {
    TrackerStart::blank(120)
}

/// `lines` numbered lines of plain text, as `seq` or a log writes them.
fn plain(lines: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..lines {
        v.extend_from_slice(
            format!("2026-12-01 10:00:00 INFO request {i} served in 3ms\r\n").as_bytes(),
        );
    }
    v
}

/// `lines` short numbered lines, as `seq` writes them (a flood's worst
/// case: the most lines for its bytes).
fn short(lines: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..lines {
        v.extend_from_slice(format!("{}\r\n", 1_000_000 + i).as_bytes());
    }
    v
}

/// Coloured compiler-style output with cursor moves and erases, as a
/// build tool or a progress display writes it: every third line redraws
/// the line above (cursor up, erase, column moves).
fn escapes(lines: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..lines {
        v.extend_from_slice(
            format!(
                "\x1b[1m\x1b[32m   Compiling\x1b[0m crate-{i} v0.1.0\r\n\x1b[33mwarning\x1b[0m: unused \x1b[1mvariable\x1b[0m `x{i}`\r\n\x1b[2K\r[{:>3}%] \x1b[36m{}\x1b[0m\x1b[K\r\n\x1b[1A\x1b[2K\x1b[5G\x1b[1;34mBuilding\x1b[0m [{i}/60000]\x1b[10D\x1b[C.\r\n",
                i % 100,
                "#".repeat(i % 40)
            )
            .as_bytes(),
        );
    }
    v
}

/// `frames` frames of an agent's screen redrawn in place while it works
/// (as `scripts/bench --flood-kind redraw` draws them): home, then 40 rows
/// each cleared and written in colour with a spinner and a counter.
fn redraw(frames: usize) -> Vec<u8> {
    let spin: Vec<char> = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏".chars().collect();
    let mut v = Vec::new();
    for f in 0..frames {
        v.extend_from_slice(b"\x1b[H");
        for r in 0..40 {
            v.extend_from_slice(
                format!(
                    "\x1b[2K\x1b[38;5;{}m{}\x1b[0m working on step {f} of the plan, row {r} \x1b[1mbold\x1b[22m\r\n",
                    16 + (f + r) % 200,
                    spin[(f + r) % 10]
                )
                .as_bytes(),
            );
        }
    }
    v
}

/// MB/s of the hub's look for runs of a redrawn screen no pattern hits,
/// over `data` in 16 KiB chunks (each from its first run on, as the hub
/// asks again after a run).
fn frames_throughput(data: &[u8], re: &tmux_wait::matcher::Joined) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        for chunk in data.chunks(16 * 1024) {
            let mut at = 0;
            while let Some(run) = tmux_wait::pane::vt::frame_run(&chunk[at..], 120, re) {
                at += run.to;
            }
        }
        best = best.min(start.elapsed());
    }
    data.len() as f64 / best.as_secs_f64() / 1e6
}

/// MB/s of feeding `data` in 16 KiB chunks, the best of a few rounds;
/// with `needed`, only lines it can hit are wanted (the last 20 kept).
fn throughput(data: &[u8], final_lines: bool, needed: Option<&Arc<Needed>>) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let mut t = LineTracker::new(&entry());
        t.set_final_only(final_lines);
        t.set_needed(needed.cloned(), 20);
        let start = Instant::now();
        for chunk in data.chunks(16 * 1024) {
            t.feed(chunk, start);
            if final_lines {
                std::hint::black_box(t.take_items(false));
            } else {
                // As a text wait does: the batch's strings come back.
                let batch = std::hint::black_box(t.take(false));
                t.recycle(batch);
            }
        }
        best = best.min(start.elapsed());
    }
    data.len() as f64 / best.as_secs_f64() / 1e6
}

fn main() {
    let plain = plain(300_000);
    let esc = escapes(60_000);
    let short = short(2_000_000);
    let redraw = redraw(5_000);
    let none = PatternList::new(&[], false, false, "--stop").expect("no patterns");
    let never = PatternList::new(&["NEVER-THERE".to_owned()], false, false, "--pattern")
        .expect("a literal")
        .needed(&none)
        .map(Arc::new);
    for (name, data) in [
        ("plain text", &plain),
        ("short lines", &short),
        ("escape-heavy", &esc),
        ("redrawn", &redraw),
    ] {
        println!(
            "{name:>13}: {:>7.1} MB/s (text waits), {:>7.1} MB/s (command output), {:>7.1} MB/s (a text wait for a pattern not there), {} MB",
            throughput(data, false, None),
            throughput(data, true, None),
            throughput(data, false, never.as_ref()),
            data.len() / 1_000_000
        );
    }
    // The hub joins the waits' patterns as the sieve does.
    let re = never
        .as_ref()
        .and_then(|n| tmux_wait::matcher::Joined::new(&[(n.source().to_owned(), n.match_case())]))
        .expect("the joined patterns");
    println!(
        "{:>13}: {:>7.1} MB/s (the hub's look for frames no pattern hits)",
        "redrawn",
        frames_throughput(&redraw, &re)
    );
}
