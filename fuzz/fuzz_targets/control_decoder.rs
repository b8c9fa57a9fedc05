//! The control-mode decoder on arbitrary client output: no panic, replies
//! framed by the same guard, %output unescaped to at most its input's size.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tmux_wait::tmux::protocol::{Decoder, Message, unescape};

fuzz_target!(|data: &[u8]| {
    let mut d = Decoder::new();
    for line in data.split(|b| *b == b'\n') {
        if let Some(Message::Output { data: out, .. }) = d.feed(line) {
            assert!(out.len() <= line.len());
        }
    }
    assert!(unescape(data).len() <= data.len());
});
