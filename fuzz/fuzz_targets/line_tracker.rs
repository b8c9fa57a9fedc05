//! The escape-to-text line assembler on arbitrary pane bytes, cut into
//! arbitrary chunks, in both views (text waits and command output), with
//! resizes: no panic, and the line under the cursor stays bounded.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, Instant};
use tmux_wait::pane::vt::{LineTracker, TrackerStart};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let width = usize::from(data[0] % 200) + 1;
    let entry = TrackerStart {
        width,
        row: "$ ".into(),
        cursor_x: usize::from(data[1] % 4),
        alternate_on: data[1] & 0x10 != 0,
        at_prompt: data[1] & 0x20 != 0,
    };
    let mut t = LineTracker::new(&entry);
    if data[1] & 0x40 != 0 {
        t = t.final_lines();
    }
    let cut = usize::from(data[2]).max(1);
    let mut now = Instant::now();
    for (i, chunk) in data[3..].chunks(cut).enumerate() {
        now += Duration::from_millis(u64::from(chunk[0] % 80));
        t.feed(chunk, now);
        match i % 5 {
            0 => drop(t.take(false)),
            1 => drop(t.take_items(true)),
            2 => t.set_width(usize::from(chunk[0]) % 300 + 1),
            3 => {
                let (a, b) = t.split_at_cursor();
                assert!(a.len() + b.len() < 8 * 1024 * 1024);
            }
            _ => assert!(t.current_line().len() < 8 * 1024 * 1024),
        }
    }
    let _ = t.take_items(true);
    let _ = t.prompts();
});
