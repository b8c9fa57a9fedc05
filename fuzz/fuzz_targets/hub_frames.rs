//! The hub's frame decoder on arbitrary bytes, in arbitrary pieces: no
//! panic, and every frame it returns encodes again.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tmux_wait::hub::Decoder;

fuzz_target!(|data: &[u8]| {
    let cut = data.first().copied().unwrap_or(1).max(1) as usize;
    let mut d = Decoder::default();
    let mut back = Vec::new();
    for piece in data.chunks(cut) {
        d.push(piece);
        loop {
            match d.next_frame() {
                Ok(Some(f)) => f.encode_into(&mut back),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    let _ = back;
});
