//! The output clipper on arbitrary lines and options: no panic, and the
//! reply never exceeds --max-lines (plus its one marker line).
#![no_main]
use libfuzzer_sys::fuzz_target;
use regex::Regex;
use tmux_wait::clip::{ClipOptions, clip};

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let text = String::from_utf8_lossy(&data[4..]);
    let lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let show = match data[0] % 4 {
        0 => None,
        1 => Some(Regex::new("error").unwrap()),
        2 => Some(Regex::new("^$").unwrap()),
        _ => Some(Regex::new(".").unwrap()),
    };
    let opts = ClipOptions {
        show,
        show_after: usize::from(data[1] % 8),
        last_lines: (data[2] % 3 != 0).then_some(usize::from(data[2] % 16)),
        max_lines: usize::from(data[3] % 40),
    };
    let c = clip(&lines, &opts);
    if opts.max_lines > 0 {
        assert!(
            c.lines.len() <= opts.max_lines + 1,
            "{} > {}",
            c.lines.len(),
            opts.max_lines
        );
    }
    assert!(c.summary <= c.lines.len());
    if opts.show.is_none() && opts.last_lines.is_none() && opts.max_lines == 0 {
        assert_eq!(c.lines, lines);
        assert_eq!(c.clipped, 0);
    }
});
