//! The in-process tmux client (`src/tmux/native.rs`) against real servers:
//! each kind of command tmux-wait sends gives exactly what a `tmux -u -S`
//! process gives (output, errors, exit status); it identifies itself as
//! that process does; it leaves a server of another protocol to tmux, is
//! bounded on a stopped server, and reads a server killed under a command
//! as tmux does. Its unit tests (framing, replies) are beside it.

use crate::common::*;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tmux_wait::error::Kind;
use tmux_wait::tmux::native::{self, Attempt};
use tmux_wait::tmux::{Finished, Runner, Socket, classify_failure, imsg};

fn socket(s: &TestServer) -> Socket {
    Socket::Path(s.socket.clone())
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run `args` through both runners; they must agree exactly.
fn same(sock: &Socket, args: &[&str]) -> Finished {
    let a = os(args);
    let p = sock.exec(&a, None, Runner::Process).expect("tmux process");
    let n = sock
        .exec(&a, None, Runner::NativeOnly)
        .expect("native client");
    assert_eq!(
        (p.success, text(&p.stdout), text(&p.stderr)),
        (n.success, text(&n.stdout), text(&n.stderr)),
        "process and native client differ on {args:?}"
    );
    n
}

/// The commands tmux-wait sends, one of each kind, read the same way.
#[test]
fn every_kind_of_command_gives_what_a_tmux_process_gives() {
    let s = TestServer::new();
    let sock = socket(&s);
    let p = s.pane.as_str();
    s.type_line(p, "printf 'caf\\303\\251 \\346\\227\\245\\tTAB $HOME\\n'");
    s.wait_until(p, "the line", || s.capture(p).contains("TAB $HOME"));
    let file = s.dir().join("piped");
    let pipe_cmd = format!("cat >> '{}'", file.display());
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "display-message",
            "-p",
            "#{pane_id} #{session_id} #{version} #{pid}",
        ],
        vec![
            "display-message",
            "-p",
            "-t",
            p,
            "#{pane_tty}\t#{cursor_x}\t#{pane_current_command}",
        ],
        vec![
            "display-message",
            "-p",
            "#{client_utf8}|#{client_termname}|#{socket_path}",
        ],
        vec!["capture-pane", "-p", "-t", p],
        vec![
            "capture-pane",
            "-p",
            "-e",
            "-J",
            "-t",
            p,
            "-S",
            "-",
            "-E",
            "-",
        ],
        vec!["show-options", "-g"],
        vec!["show-option", "-gqv", "history-limit"],
        vec!["show-option", "-gqv", "@tw-unset"],
        vec!["set-option", "-p", "-t", p, "@tw", "v \\$x;"],
        vec!["show-option", "-pqv", "-t", p, "@tw"],
        vec!["set-option", "-pu", "-t", p, "@tw"],
        vec!["wait-for", "-S", "tw-native-none"],
        vec![
            "if-shell",
            "-F",
            "-t",
            p,
            "#{pane_dead}",
            "display -p dead",
            "display -p alive",
        ],
        vec![
            "if-shell",
            "-F",
            "1",
            "display-message -p a ; display-message -p 'b c'",
        ],
        vec![
            "display-message",
            "-p",
            "x",
            ";",
            "display-message",
            "-p",
            "y",
        ],
        vec!["list-panes", "-a", "-F", "#{pane_id}\t#{pane_pipe}"],
        vec!["list-clients"],
        vec!["send-keys", "-t", p, "-l", ""],
        vec!["pipe-pane", "-t", p, &pipe_cmd],
        vec!["display-message", "-p", "-t", p, "#{pane_pipe}"],
        vec!["pipe-pane", "-t", p],
        vec!["display-message", "-p", "-t", p, "#{pane_pipe}"],
    ];
    for c in &cases {
        let f = same(&sock, c);
        assert!(f.success, "{c:?}: {}", text(&f.stderr));
    }
    let f = same(&sock, &["capture-pane", "-p", "-t", p]);
    let shown = text(&f.stdout);
    assert!(
        shown.contains("café 日") && shown.contains("TAB $HOME"),
        "{shown}"
    );
    let f = same(
        &sock,
        &[
            "if-shell",
            "-F",
            "1",
            "display-message -p a ; display-message -p 'b c'",
        ],
    );
    assert_eq!(text(&f.stdout), "a\nb c\n");
    // Through the seam tmux-wait uses: a command list with nonces.
    let replies = sock
        .batch(&[
            vec!["display-message".into(), "-p".into(), "one".into()],
            vec!["show-option".into(), "-gqv".into(), "@tw-unset".into()],
        ])
        .unwrap();
    assert_eq!(replies, vec![vec!["one".to_owned()], vec![]]);
}

/// Output of many frames (a 3000-line history) arrives whole.
#[test]
fn a_long_history_arrives_byte_for_byte() {
    let s = TestServer::with(Options {
        history_limit: 5000,
        ..Options::default()
    });
    s.type_line(&s.pane, "seq 1 3000 | sed 's/$/ é…/'");
    s.wait_until(&s.pane, "seq to end", || {
        s.capture(&s.pane).contains("3000 é…")
    });
    let f = same(
        &socket(&s),
        &["capture-pane", "-p", "-t", &s.pane, "-S", "-", "-E", "-"],
    );
    assert!(f.stdout.len() > imsg::MAX_MESSAGE, "{}", f.stdout.len());
    assert!(text(&f.stdout).contains("\n1 é…\n2 é…\n"));
}

/// tmux's errors come back as its text and status, and classify alike.
#[test]
fn errors_read_and_classify_the_same() {
    let s = TestServer::new();
    let sock = socket(&s);
    for (args, kind) in [
        (vec!["capture-pane", "-p", "-t", "%999"], Kind::NoPane),
        (vec!["no-such-command"], Kind::Tmux),
        (vec!["set-option", "-g", "no-such-option", "1"], Kind::Tmux),
        (vec!["if-shell", "-F", "1", "no-such-command x"], Kind::Tmux),
        (
            vec![
                "display-message",
                "-p",
                "ok",
                ";",
                "kill-pane",
                "-t",
                "%999",
            ],
            Kind::NoPane,
        ),
    ] {
        let f = same(&sock, &args);
        assert!(!f.success, "{args:?}");
        assert_eq!(
            classify_failure(&text(&f.stderr)).kind,
            kind,
            "{args:?}: {}",
            text(&f.stderr)
        );
    }
    let e = sock.run(["capture-pane", "-p", "-t", "%999"]).unwrap_err();
    assert_eq!(e.kind, Kind::NoPane, "{}", e.message);
}

/// A command list on standard input, and files tmux asks its client to
/// read and write (`source-file`, `save-buffer`, `load-buffer`).
#[test]
fn standard_input_and_files_by_path() {
    let s = TestServer::new();
    let sock = socket(&s);
    let f = sock
        .exec(
            &os(&["source-file", "-"]),
            Some("set -g @tw-in 'from stdin'\n"),
            Runner::NativeOnly,
        )
        .unwrap();
    assert!(f.success, "{}", text(&f.stderr));
    assert_eq!(
        sock.run(["show-option", "-gqv", "@tw-in"]).unwrap(),
        ["from stdin"]
    );
    let conf = s.dir().join("conf");
    std::fs::write(&conf, "set -g @tw-file 'from a file'\n").unwrap();
    let f = same(&sock, &["source-file", conf.to_str().unwrap()]);
    assert!(f.success);
    assert_eq!(
        sock.run(["show-option", "-gqv", "@tw-file"]).unwrap(),
        ["from a file"]
    );
    same(&sock, &["set-buffer", "-b", "tw", "buffer text"]);
    for (runner, name) in [(Runner::Process, "p"), (Runner::NativeOnly, "n")] {
        let out = s.dir().join(name);
        let f = sock
            .exec(
                &os(&["save-buffer", "-b", "tw", out.to_str().unwrap()]),
                None,
                runner,
            )
            .unwrap();
        assert!(f.success, "{runner:?}: {}", text(&f.stderr));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "buffer text",
            "{runner:?}"
        );
    }
    same(
        &sock,
        &[
            "load-buffer",
            "-b",
            "tw2",
            s.dir().join("n").to_str().unwrap(),
        ],
    );
    let f = same(&sock, &["show-buffer", "-b", "tw2"]);
    assert_eq!(text(&f.stdout), "buffer text");
    let missing = s.dir().join("missing");
    let f = same(&sock, &["source-file", missing.to_str().unwrap()]);
    assert!(!f.success);
}

/// No pane's process, no terminal: the person's client stays the current
/// client, and the native client is not listed among clients.
#[test]
fn it_is_never_the_current_client() {
    let s = TestServer::new();
    let person = PtyClient::attach(&s);
    let sock = socket(&s);
    let tty = s.tmux(&["list-clients", "-F", "#{client_tty}"]);
    let f = same(&sock, &["display-message", "-p", "#{client_tty}"]);
    assert_eq!(text(&f.stdout), tty);
    let f = same(&sock, &["list-clients", "-F", "#{client_tty}"]);
    assert_eq!(text(&f.stdout), tty);
    drop(person);
}

/// The messages it sends are those of a `tmux -u -S PATH` process with
/// stdin from /dev/null, message for message (a listener records both).
#[test]
fn it_identifies_itself_as_a_tmux_process_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake");
    let fake = FakeServer::start(&path, Answer::Record, 2);
    let args = ["display-message", "-p", "a;", "x y"];
    let out = Command::new(tmux_wait::tmux::tmux_binary())
        .arg("-u")
        .arg("-S")
        .arg(&path)
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("server exited unexpectedly"),
        "{out:?}"
    );
    match native::run(
        &Socket::Path(path.clone()),
        &os(&args),
        None,
        Some(DEADLINE),
    ) {
        Attempt::Finished(f) => assert_eq!(text(&f.stderr), "server exited unexpectedly\n"),
        other => panic!("{other:?}"),
    }
    let got = fake.finish();
    assert_eq!(got.len(), 2);
    let (tmux, ours) = (normalise(&got[0]), normalise(&got[1]));
    let kinds = |v: &[Frame]| v.iter().map(|f| f.0).collect::<Vec<_>>();
    assert_eq!(kinds(&tmux.0), kinds(&ours.0), "the identify sequence");
    for (a, b) in tmux.0.iter().zip(&ours.0) {
        match a.0 {
            imsg::msg::IDENTIFY_CLIENTPID => {}
            // A master (3.8) client also asks to acknowledge writes to
            // files (CLIENT_WRITE_ACK); ours does as 3.2a–3.7 clients
            // do, which every server takes.
            imsg::msg::IDENTIFY_LONGFLAGS => {
                let flags = |d: &[u8]| u64::from_ne_bytes(d.try_into().unwrap());
                assert_eq!(flags(&a.1) & !WRITE_ACK, flags(&b.1), "the flags");
            }
            _ => assert_eq!(a, b, "message {}", a.0),
        }
    }
    assert_eq!(
        tmux.1, ours.1,
        "the environment (TMUX and TMUX_PANE left out)"
    );
    assert!(
        !ours
            .1
            .iter()
            .any(|e| e.starts_with(b"TMUX=") || e.starts_with(b"TMUX_PANE="))
    );
}

/// `CLIENT_WRITE_ACK` (tmux master); the same bit was
/// `CLIENT_REDRAWSCROLLBARS`, a server-side flag, in 3.6 and 3.7.
const WRITE_ACK: u64 = 0x40_0000_0000;

/// A recorded conversation as comparable: messages in order without the
/// ones only some tmux releases send (the 32-bit flags of 3.2–3.4, the
/// second copy of the 64-bit flags of 3.5+), and the environment as a
/// sorted list.
fn normalise(frames: &[Frame]) -> (Vec<Frame>, Vec<Vec<u8>>) {
    let mut seq: Vec<Frame> = Vec::new();
    let mut env = Vec::new();
    for f in frames {
        match f.0 {
            imsg::msg::IDENTIFY_FLAGS => {}
            imsg::msg::IDENTIFY_ENVIRON => env.push(f.1.clone()),
            imsg::msg::IDENTIFY_LONGFLAGS if seq.last() == Some(f) => {}
            _ => seq.push(f.clone()),
        }
    }
    env.sort();
    (seq, env)
}

/// A server killed under a command: both clients say "server exited
/// unexpectedly", which is no server.
#[test]
fn a_server_killed_mid_command_reads_the_same_both_ways() {
    let s = TestServer::new();
    let (tx, rx) = mpsc::channel();
    for (tag, runner) in [("p", Runner::Process), ("n", Runner::NativeOnly)] {
        let sock = socket(&s);
        let job = s.dir().join(format!("job-{tag}"));
        let cmd = format!(
            "echo $$ > '{}.tmp'; mv '{0}.tmp' '{0}'; exec sleep 30",
            job.display()
        );
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send((tag, sock.exec(&os(&["run-shell", &cmd]), None, runner)));
        });
    }
    let jobs = [s.dir().join("job-p"), s.dir().join("job-n")];
    s.wait_until(&s.pane, "both run-shell jobs", || {
        jobs.iter().all(|j| j.exists())
    });
    s.kill_server_hard();
    for _ in 0..2 {
        let (tag, r) = rx.recv_timeout(DEADLINE).expect("a client did not end");
        let f = r.unwrap_or_else(|e| panic!("{tag}: {e:?}"));
        assert!(!f.success, "{tag}");
        assert_eq!(text(&f.stderr), "server exited unexpectedly\n", "{tag}");
        assert_eq!(classify_failure(&text(&f.stderr)).kind, Kind::NoServer);
    }
    for j in &jobs {
        signal(std::fs::read_to_string(j).unwrap().trim(), "KILL");
    }
}

/// A stopped server: the client gives up after its bound instead of
/// waiting for ever.
#[test]
fn a_stopped_server_is_an_error_after_the_bound() {
    struct Resume(String);
    impl Drop for Resume {
        fn drop(&mut self) {
            signal(&self.0, "CONT");
        }
    }
    let s = TestServer::new();
    let pid = s
        .tmux(&["display-message", "-p", "#{pid}"])
        .trim()
        .to_owned();
    signal(&pid, "STOP");
    let resume = Resume(pid);
    let t = Instant::now();
    let bound = Duration::from_millis(300);
    match native::run(
        &socket(&s),
        &os(&["display-message", "-p", "x"]),
        None,
        Some(bound),
    ) {
        Attempt::Failed(e) => assert!(e.message.contains("did not answer"), "{}", e.message),
        other => panic!("{other:?}"),
    }
    assert!(
        t.elapsed() >= bound && t.elapsed() < Duration::from_secs(5),
        "{:?}",
        t.elapsed()
    );
    drop(resume);
    assert_eq!(
        socket(&s).run(["display-message", "-p", "back"]).unwrap(),
        ["back"]
    );
}

/// A server that speaks another protocol answers MSG_VERSION and reads
/// nothing more: the command goes to tmux itself, which says what it says
/// (and this process asks that server natively no more).
#[test]
fn a_server_of_another_protocol_is_left_to_tmux() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other");
    let fake = FakeServer::start(&path, Answer::Version(7), 2);
    let sock = Socket::Path(path.clone());
    let args = os(&["display-message", "-p", "x"]);
    match native::run(&sock, &args, None, Some(DEADLINE)) {
        Attempt::NotRun(why) => assert!(why.contains("server 7"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(native::gave_way(&sock));
    let f = sock.exec(&args, None, Runner::Native).unwrap();
    assert!(!f.success);
    assert!(
        text(&f.stderr).contains("protocol version mismatch (client 8, server 7)"),
        "{}",
        text(&f.stderr)
    );
    let got = fake.finish();
    assert_eq!(got.len(), 2, "one native connection, then one tmux process");
}

/// No server: tmux itself says so, the same words as before.
#[test]
fn no_server_is_reported_by_tmux_itself() {
    let dir = tempfile::tempdir().unwrap();
    let sock = Socket::Path(dir.path().join("none"));
    let args = os(&["display-message", "-p", "x"]);
    assert!(matches!(
        native::run(&sock, &args, None, Some(DEADLINE)),
        Attempt::Unreachable(_)
    ));
    let p = sock.exec(&args, None, Runner::Process).unwrap();
    let n = sock.exec(&args, None, Runner::NativeOnly).unwrap();
    assert_eq!(p, n);
    assert_eq!(sock.run(&args).unwrap_err().kind, Kind::NoServer);
}

/// tmux-wait end to end with the native client alone, and with processes
/// alone (`TMUX_WAIT_NATIVE=0`), on a server named by `-L` (the socket
/// found as tmux finds it) and one given by `-S`.
#[test]
fn tmux_wait_runs_natively_and_without() {
    let s = TestServer::new();
    for native in ["only", "0"] {
        let out = run_bounded({
            let mut c = s.tw();
            c.env("TMUX_WAIT_NATIVE", native)
                .args(["run", "-t", &s.pane, "--json", "--", "echo hi"]);
            c
        });
        assert_eq!(out.code, Some(0), "{native}: {} {}", out.stdout, out.stderr);
        assert_eq!(out.json()["output"], serde_json::json!(["hi"]), "{native}");
    }
    // -L: a server in a TMUX_TMPDIR of our own.
    let tmp = tempfile::tempdir().unwrap();
    let name = unique("tw-native");
    let tmux = |args: &[&str]| {
        let mut c = Command::new("tmux");
        c.env("TMUX_TMPDIR", tmp.path())
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .arg("-L")
            .arg(&name)
            .args(args)
            .stdin(Stdio::null());
        c
    };
    let kill = KillOnDrop(tmux(&["kill-server"]));
    let st = tmux(&["-f", "/dev/null", "new-session", "-d"])
        .status()
        .unwrap();
    assert!(st.success());
    let ch = unique("ch");
    let mut waiter = tmux(&["wait-for", &ch]).spawn().unwrap();
    let mut signalled = Command::new(BIN);
    signalled
        .env("TMUX_TMPDIR", tmp.path())
        .env("TMUX_WAIT_NATIVE", "only")
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .args(["-L", &name, "signal", &ch]);
    let out = run_bounded(signalled);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let end = Instant::now() + DEADLINE;
    while waiter.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "the channel was not signalled");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(kill);
}

/// Runs its command when dropped (a kill-server that must happen).
struct KillOnDrop(Command);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

/// A message as a fake server read it: its type and data.
type Frame = (u32, Vec<u8>);

/// How a fake server answers a connection.
#[derive(Clone, Copy)]
enum Answer {
    /// Record everything up to the command, then close.
    Record,
    /// Answer the first message with MSG_VERSION from protocol N, read to
    /// the end.
    Version(u32),
}

/// A listener standing in for a tmux server, for `n` connections.
struct FakeServer {
    thread: Option<std::thread::JoinHandle<Vec<Vec<Frame>>>>,
}

impl FakeServer {
    fn start(path: &Path, answer: Answer, n: usize) -> FakeServer {
        let listener = UnixListener::bind(path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let thread = std::thread::spawn(move || {
            let end = Instant::now() + DEADLINE;
            let mut got = Vec::new();
            while got.len() < n && Instant::now() < end {
                match listener.accept() {
                    Ok((c, _)) => got.push(converse(c, answer)),
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            got
        });
        FakeServer {
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> Vec<Vec<Frame>> {
        self.thread.take().unwrap().join().unwrap()
    }
}

fn converse(mut c: UnixStream, answer: Answer) -> Vec<Frame> {
    c.set_nonblocking(false).unwrap();
    c.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 65536];
    let mut answered = false;
    loop {
        let n = match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        bytes.extend_from_slice(&buf[..n]);
        let frames = parse(&bytes);
        if let Answer::Version(v) = answer
            && !answered
            && !frames.is_empty()
        {
            let mut f = Vec::new();
            for w in [imsg::msg::VERSION, 16, v, 0] {
                f.extend_from_slice(&w.to_ne_bytes());
            }
            let _ = c.write_all(&f);
            answered = true;
        }
        if let Answer::Record = answer
            && frames.iter().any(|f| f.0 == imsg::msg::COMMAND)
        {
            return frames;
        }
    }
    parse(&bytes)
}

/// Whole frames in `bytes`, reading both shapes of the length field (a
/// 3.2–3.5 client marks a passed descriptor in the 16 bits after it).
fn parse(bytes: &[u8]) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut b = bytes;
    while b.len() >= 16 {
        let word = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
        let w = word(4) & 0x7fff_ffff;
        let len = if w as usize > imsg::MAX_MESSAGE {
            w & 0xffff
        } else {
            w
        } as usize;
        if len < 16 || b.len() < len {
            break;
        }
        out.push((word(0), b[16..len].to_vec()));
        b = &b[len..];
    }
    out
}
