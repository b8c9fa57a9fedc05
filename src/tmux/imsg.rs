//! The bytes between a tmux client and its server: imsg frames and the
//! payloads of the messages a command client exchanges. Pure: no sockets,
//! so every frame and payload is unit-tested here; `native` does the I/O.
//!
//! Learnt from tmux's own source (`tmux-protocol.h`, `compat/imsg.c`,
//! `client.c`, `server-client.c`, `file.c`, 3.2a to master): a frame is a
//! 16-byte header (type, length, peer id, pid; host byte order) and its
//! data, at most `MAX_MESSAGE` bytes in all. The peer id's low byte is the
//! sender's `PROTOCOL_VERSION`, 8 on every release from 3.2a to master.
//!
//! The length field changed shape in 3.6 (a 16-bit length and 16-bit
//! flags before, one 32-bit length whose top bit marks a passed descriptor
//! after). Both read a frame the same way as long as it passes no
//! descriptor, and this client never passes one.

/// The protocol this client speaks (`PROTOCOL_VERSION` in tmux).
pub const PROTOCOL_VERSION: u32 = 8;
/// A frame's header: type, length, peer id, pid, 4 bytes each.
pub const HEADER: usize = 16;
/// The largest frame, header included (`MAX_IMSGSIZE`).
pub const MAX_MESSAGE: usize = 16384;
/// The bit tmux 3.6+ sets in the length of a frame that passes a
/// descriptor (`IMSG_FD_MARK`).
const FD_MARK: u32 = 0x8000_0000;

/// Message types (`enum msgtype` in tmux-protocol.h; tmux.h before 3.4).
pub mod msg {
    pub const VERSION: u32 = 12;
    pub const IDENTIFY_FLAGS: u32 = 100;
    pub const IDENTIFY_TERM: u32 = 101;
    pub const IDENTIFY_TTYNAME: u32 = 102;
    pub const IDENTIFY_STDIN: u32 = 104;
    pub const IDENTIFY_ENVIRON: u32 = 105;
    pub const IDENTIFY_DONE: u32 = 106;
    pub const IDENTIFY_CLIENTPID: u32 = 107;
    pub const IDENTIFY_CWD: u32 = 108;
    pub const IDENTIFY_FEATURES: u32 = 109;
    pub const IDENTIFY_STDOUT: u32 = 110;
    pub const IDENTIFY_LONGFLAGS: u32 = 111;
    pub const COMMAND: u32 = 200;
    pub const DETACH: u32 = 201;
    pub const DETACHKILL: u32 = 202;
    pub const EXIT: u32 = 203;
    pub const EXITED: u32 = 204;
    pub const EXITING: u32 = 205;
    pub const READY: u32 = 207;
    pub const SHELL: u32 = 209;
    pub const SHUTDOWN: u32 = 210;
    pub const OLDSTDERR: u32 = 211;
    pub const OLDSTDIN: u32 = 212;
    pub const OLDSTDOUT: u32 = 213;
    pub const FLAGS: u32 = 218;
    pub const READ_OPEN: u32 = 300;
    pub const READ: u32 = 301;
    pub const READ_DONE: u32 = 302;
    pub const WRITE_OPEN: u32 = 303;
    pub const WRITE: u32 = 304;
    pub const WRITE_READY: u32 = 305;
    pub const WRITE_CLOSE: u32 = 306;
    pub const READ_CANCEL: u32 = 307;
}

/// Client flags (`CLIENT_*` in tmux.h) this client sends.
pub mod flags {
    /// `-u`: the client's terminal takes UTF-8.
    pub const UTF8: u64 = 0x10000;
    /// The socket was found by name (`-L` or the default), not given by
    /// path (`-S`).
    pub const DEFAULT_SOCKET: u64 = 0x0800_0000;
}

/// One message as read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub kind: u32,
    /// The sender's protocol version is its low byte.
    pub peer_id: u32,
    pub data: Vec<u8>,
}

impl Message {
    /// The sender's protocol version.
    pub fn version(&self) -> u32 {
        self.peer_id & 0xff
    }
}

/// Append one frame of type `kind` with `data` to `out`, as tmux's
/// `proc_send` makes it (peer id: our protocol version; pid: -1, which
/// tmux sends and nobody reads). `None` if it would exceed `MAX_MESSAGE`.
pub fn encode(kind: u32, data: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let len = HEADER + data.len();
    if len > MAX_MESSAGE {
        return None;
    }
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&(len as u32).to_ne_bytes());
    out.extend_from_slice(&PROTOCOL_VERSION.to_ne_bytes());
    out.extend_from_slice(&u32::MAX.to_ne_bytes());
    out.extend_from_slice(data);
    Some(())
}

/// A frame that cannot be one: what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame(pub String);

/// Frames out of a byte stream that arrives in arbitrary pieces.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    start: usize,
}

impl Decoder {
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, `None` until one has arrived, an error for a
    /// length no frame can have (tmux's own client gives up there too).
    pub fn next_message(&mut self) -> Result<Option<Message>, BadFrame> {
        let b = &self.buf[self.start..];
        if b.len() < HEADER {
            return Ok(None);
        }
        let word = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let raw_len = word(4);
        if raw_len & FD_MARK != 0 {
            return Err(BadFrame("tmux passed a descriptor".into()));
        }
        let len = raw_len as usize;
        if !(HEADER..=MAX_MESSAGE).contains(&len) {
            return Err(BadFrame(format!("a frame of {len} bytes")));
        }
        if b.len() < len {
            return Ok(None);
        }
        let m = Message {
            kind: word(0),
            peer_id: word(8),
            data: b[HEADER..len].to_vec(),
        };
        self.start += len;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        Ok(Some(m))
    }

    /// Bytes of a frame begun and not finished.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }
}

fn int(data: &[u8], i: usize) -> Option<i32> {
    let b = data.get(i..i + 4)?;
    Some(i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

fn ints(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// A string message's data: the bytes and a NUL (tmux rejects a string
/// without one). `None` if the bytes hold a NUL themselves.
pub fn string(s: &[u8]) -> Option<Vec<u8>> {
    if s.contains(&0) {
        return None;
    }
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s);
    v.push(0);
    Some(v)
}

/// `MSG_COMMAND`'s data: `argc`, then each argument and a NUL
/// (`cmd_pack_argv`). `None` if an argument holds a NUL.
pub fn command(argv: &[&[u8]]) -> Option<Vec<u8>> {
    let mut v = ints(&[i32::try_from(argv.len()).ok()?]);
    for a in argv {
        v.extend(string(a)?);
    }
    Some(v)
}

/// `MSG_WRITE_READY` and `MSG_READ_DONE`: a stream and an errno (0: fine).
pub fn stream_status(stream: i32, error: i32) -> Vec<u8> {
    ints(&[stream, error])
}

/// `MSG_READ`: a stream and a piece of what was read.
pub fn read_data(stream: i32, bytes: &[u8]) -> Vec<u8> {
    let mut v = ints(&[stream]);
    v.extend_from_slice(bytes);
    v
}

/// The most a `MSG_READ` frame carries.
pub const MAX_READ_CHUNK: usize = MAX_MESSAGE - HEADER - 4;

/// What the server asks a client to open, for writing (`MSG_WRITE_OPEN`)
/// or reading (`MSG_READ_OPEN`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    pub stream: i32,
    /// The client's own descriptor to use (0, 1, 2) or -1 for `path`.
    pub fd: i32,
    /// open(2) flags (writing only).
    pub flags: i32,
    /// `-` when the message names none.
    pub path: Vec<u8>,
}

fn path_after(data: &[u8], at: usize) -> Vec<u8> {
    match data.get(at..) {
        None | Some([]) => b"-".to_vec(),
        Some(rest) => rest.split(|b| *b == 0).next().unwrap_or(b"").to_vec(),
    }
}

impl Open {
    /// `msg_write_open`: stream, fd, flags, then maybe a path.
    pub fn write(data: &[u8]) -> Option<Open> {
        Some(Open {
            stream: int(data, 0)?,
            fd: int(data, 4)?,
            flags: int(data, 8)?,
            path: path_after(data, 12),
        })
    }

    /// `msg_read_open`: stream, fd, then maybe a path.
    pub fn read(data: &[u8]) -> Option<Open> {
        Some(Open {
            stream: int(data, 0)?,
            fd: int(data, 4)?,
            flags: 0,
            path: path_after(data, 8),
        })
    }
}

/// `MSG_WRITE`: the stream and its bytes.
pub fn write_data(data: &[u8]) -> Option<(i32, &[u8])> {
    Some((int(data, 0)?, &data[4..]))
}

/// `MSG_WRITE_CLOSE` and `MSG_READ_CANCEL`: exactly a stream.
pub fn stream_only(data: &[u8]) -> Option<i32> {
    (data.len() == 4).then(|| int(data, 0)).flatten()
}

/// `MSG_EXIT` (and `MSG_SHUTDOWN`): maybe a status, maybe a message after
/// it. `None` for a size tmux's client rejects (1 to 3 bytes).
pub fn exit(data: &[u8]) -> Option<(Option<i32>, Option<String>)> {
    match data.len() {
        0 => Some((None, None)),
        1..=3 => None,
        4 => Some((int(data, 0), None)),
        _ => {
            // tmux's client ends the message at the last byte, whatever it is.
            let text = &data[4..data.len() - 1];
            let text = text.split(|b| *b == 0).next().unwrap_or(b"");
            Some((
                int(data, 0),
                Some(String::from_utf8_lossy(text).into_owned()),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u32, peer: u32, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&((HEADER + data.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&peer.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn a_frame_is_header_then_data() {
        let mut out = Vec::new();
        encode(msg::IDENTIFY_DONE, &[], &mut out).unwrap();
        encode(msg::COMMAND, &command(&[b"a", b"bc"]).unwrap(), &mut out).unwrap();
        assert_eq!(out.len(), 16 + 16 + 4 + 5);
        assert_eq!(&out[0..4], &106u32.to_ne_bytes());
        assert_eq!(&out[4..8], &16u32.to_ne_bytes());
        assert_eq!(&out[8..12], &8u32.to_ne_bytes());
        assert_eq!(&out[16 + 16..16 + 20], &2i32.to_ne_bytes());
        assert_eq!(&out[16 + 20..], b"a\0bc\0");
        let mut d = Decoder::default();
        d.feed(&out);
        assert_eq!(d.next_message().unwrap().unwrap().kind, msg::IDENTIFY_DONE);
        let m = d.next_message().unwrap().unwrap();
        assert_eq!((m.kind, m.version()), (msg::COMMAND, 8));
        assert_eq!(d.next_message().unwrap(), None);
    }

    #[test]
    fn frames_arrive_in_any_pieces() {
        let mut all = frame(msg::WRITE, 8, &read_data(1, b"hello"));
        all.extend(frame(msg::EXIT, 8, &0i32.to_ne_bytes()));
        for cut in 0..all.len() {
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for piece in [&all[..cut], &all[cut..]] {
                d.feed(piece);
                while let Some(m) = d.next_message().unwrap() {
                    got.push(m.kind);
                }
            }
            assert_eq!(got, vec![msg::WRITE, msg::EXIT], "cut at {cut}");
            assert_eq!(d.pending(), 0);
        }
    }

    #[test]
    fn impossible_lengths_are_errors_not_panics() {
        for len in [0u32, 15, 16385, u32::MAX, FD_MARK | 20] {
            let mut b = msg::EXIT.to_ne_bytes().to_vec();
            b.extend_from_slice(&len.to_ne_bytes());
            b.extend_from_slice(&[0; 8]);
            let mut d = Decoder::default();
            d.feed(&b);
            assert!(d.next_message().is_err(), "{len}");
        }
        // An old server's 16-bit flags with HASFD set read as a length
        // over the limit: an error too.
        let mut b = msg::EXIT.to_ne_bytes().to_vec();
        b.extend_from_slice(&(20u32 | 1 << 16).to_ne_bytes());
        b.extend_from_slice(&[0; 12]);
        let mut d = Decoder::default();
        d.feed(&b);
        assert!(d.next_message().is_err());
    }

    #[test]
    fn a_frame_over_the_limit_is_not_encoded() {
        let mut out = Vec::new();
        assert!(encode(msg::COMMAND, &vec![b'x'; MAX_MESSAGE - HEADER], &mut out).is_some());
        assert!(
            encode(
                msg::COMMAND,
                &vec![b'x'; MAX_MESSAGE - HEADER + 1],
                &mut out
            )
            .is_none()
        );
        assert!(command(&[b"a\0b"]).is_none());
        assert!(string(b"x\0").is_none());
        assert_eq!(string(b"").unwrap(), b"\0");
    }

    #[test]
    fn payloads_parse_and_short_ones_are_refused() {
        let mut w = ints(&[1, 1, 0]);
        assert_eq!(
            Open::write(&w).unwrap(),
            Open {
                stream: 1,
                fd: 1,
                flags: 0,
                path: b"-".to_vec()
            }
        );
        w = ints(&[5, -1, 0o1000]);
        w.extend_from_slice(b"/tmp/x\0");
        assert_eq!(Open::write(&w).unwrap().path, b"/tmp/x");
        assert_eq!(Open::write(&ints(&[1, 1])), None);
        assert_eq!(Open::read(&ints(&[3, 0])).unwrap().fd, 0);
        assert_eq!(Open::read(&[1, 0]), None);
        let mut d = ints(&[2]);
        d.extend_from_slice(b"err");
        assert_eq!(write_data(&d), Some((2, &b"err"[..])));
        assert_eq!(write_data(&[2, 0]), None);
        assert_eq!(stream_only(&ints(&[4])), Some(4));
        assert_eq!(stream_only(&ints(&[4, 0])), None);
        assert_eq!(exit(&[]), Some((None, None)));
        assert_eq!(exit(&[1, 0]), None);
        assert_eq!(exit(&ints(&[1])), Some((Some(1), None)));
        let mut e = ints(&[0]);
        e.extend_from_slice(b"detached\0");
        assert_eq!(exit(&e), Some((Some(0), Some("detached".into()))));
        // No NUL: the last byte is cut, as tmux's client does.
        let mut e = ints(&[0]);
        e.extend_from_slice(b"abc");
        assert_eq!(exit(&e).unwrap().1.unwrap(), "ab");
        assert_eq!(stream_status(2, 9), ints(&[2, 9]));
        assert_eq!(read_data(7, b"x"), [ints(&[7]), b"x".to_vec()].concat());
    }
}
