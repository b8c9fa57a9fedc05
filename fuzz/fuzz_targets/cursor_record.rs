//! Cursor records read back from a pane option (which anything with access
//! to the server can set): no panic, and what parses formats back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tmux_wait::cursor::Record;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data)
        && let Some(r) = Record::parse(s)
    {
        assert_eq!(Record::parse(&r.format()), Some(r));
    }
});
