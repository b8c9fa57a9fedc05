//! The duration parser on arbitrary text: no panic; what it accepts is a
//! positive, finite duration.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tmux_wait::config::parse_duration;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data)
        && let Ok(d) = parse_duration(s)
    {
        assert!(!d.is_zero());
    }
});
