//! `tmux-wait channel` and `tmux-wait signal`: tmux `wait-for` channels with
//! a real timeout and an honest answer.
//!
//! `tmux wait-for` exits 0 both when its channel is signalled and when the
//! server shuts down (kill-server, last session gone), so the waiting client
//! runs `wait-for NAME ; display-message -p ...` as one command list: after
//! a real signal the same connection reports a server still serving
//! sessions; after a shutdown's flush the sessions are gone (or the display
//! never runs). One process, no extra round trip after the signal.
//!
//! tmux keeps a killed `wait-for` client registered until the channel is next
//! signalled (cmd-wait-for.c); that ghost takes the next signal if no live
//! waiter is present, so that signal is not latched for a later waiter.
//! tmux offers no way to withdraw a waiter, so a wait that gives up undoes
//! its ghost by signalling the channel once itself, but only when no other
//! process is waiting on a channel of that name (it would be woken too) and
//! the ghost exists: the client prints a line just before its `wait-for`,
//! which reaches us only once the registration is made (see `ARMED`).

use crate::engine::Event;
use crate::error::{Error, Kind, Result};
use crate::report::{ChannelOutcome, ChannelResult, seconds};
use crate::signals;
use crate::tmux::{Socket, classify_failure};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a signal sent by `tmux-wait signal` carries; a plain
/// `tmux wait-for -S` carries nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    pub status: Option<i32>,
    pub message: Option<String>,
    /// Seconds since the epoch.
    pub sent: f64,
}

/// Longest message a signal may carry.
pub const MAX_MESSAGE: usize = 4096;

/// The user options holding a channel's last result, its sequence number
/// (bumped by every `tmux-wait signal`) and the sequence number a waiter
/// last took. Channel names may hold `.` and `:`, which formats would
/// misread, so the name is hex-encoded.
pub fn option_names(name: &str) -> [String; 3] {
    let hex = crate::state::hex(name);
    [
        format!("@tmux-wait-r-{hex}"),
        format!("@tmux-wait-q-{hex}"),
        format!("@tmux-wait-s-{hex}"),
    ]
}

/// Printed by the waiting client just before its `wait-for`: tmux runs a
/// command list's commands in one pass and sends their output after it, so
/// by the time this line reaches us the registration exists. That tells a
/// cancelled wait whether it left a registration to undo.
const ARMED: &str = "tmux-wait-armed";

/// How long a cancelled wait lets its client finish registering.
const ARM_PATIENCE: Duration = Duration::from_millis(250);

/// One waiting `tmux wait-for` client, reaped by its own thread.
///
/// The client runs `wait-for NAME ; display-message -p ...` as one command
/// list: after the wake, the same connection reports whether the server
/// still serves sessions (it does not after a shutdown's flush) and the
/// channel's result options, all read in the same server loop pass as the
/// signal.
pub struct ChannelWaiter {
    name: String,
    pid: Pid,
    rx: mpsc::Receiver<Event>,
    done: mpsc::Receiver<(Option<i32>, String, String)>,
    reaper: Option<std::thread::JoinHandle<()>>,
    /// Gets a message once the client has registered (see `ARMED`).
    armed_rx: mpsc::Receiver<()>,
    finished: bool,
}

/// How a `ChannelWaiter::wait` ended.
pub enum Woke {
    /// Really signalled; the payload when a fresh one was there, and the
    /// channel's sequence number.
    Signalled(Option<Payload>, u64),
    /// The deadline passed; the client is still waiting.
    Deadline,
}

impl ChannelWaiter {
    pub fn spawn(socket: &Socket, name: &str) -> Result<ChannelWaiter> {
        let [r, q, seen] = option_names(name);
        let format = format!(
            "#{{pid}}\t#{{start_time}}\t#{{session_id}}\t#{{exit-empty}}\t#{{{q}}}\t#{{{seen}}}\t#{{{r}}}"
        );
        let mut cmd = socket.command();
        crate::tmux::die_with_parent(&mut cmd);
        let mut child = cmd
            .args([
                "display-message",
                "-p",
                ARMED,
                ";",
                "wait-for",
                "--",
                name,
                ";",
                "display-message",
                "-p",
                &format,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::io("cannot run tmux wait-for", e))?;
        let mut stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        // std's Child is reaped by the thread below; dropping it does not wait.
        drop(child);
        let (tx, rx) = mpsc::channel::<Event>();
        {
            let tx = tx.clone();
            signals::route_to(move |sig| {
                let _ = tx.send(Event::Signal(sig));
            });
        }
        let (done_tx, done) = mpsc::channel();
        let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let armed_flag = armed.clone();
        let (armed_tx, armed_rx) = mpsc::channel::<()>();
        let reaper = std::thread::spawn(move || {
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        raw.extend_from_slice(&buf[..n]);
                        if !armed_flag.load(std::sync::atomic::Ordering::SeqCst)
                            && raw.starts_with(ARMED.as_bytes())
                            && raw.get(ARMED.len()) == Some(&b'\n')
                        {
                            armed_flag.store(true, std::sync::atomic::Ordering::SeqCst);
                            let _ = armed_tx.send(());
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let out = String::from_utf8_lossy(&raw).into_owned();
            let mut err = String::new();
            let _ = stderr.read_to_string(&mut err);
            let code = match waitpid(pid, None) {
                Ok(WaitStatus::Exited(_, c)) => Some(c),
                _ => None,
            };
            // What follows the armed line is the wake's report.
            let out = match out.strip_prefix(ARMED) {
                Some(rest) => format!("{ARMED}\n{}", rest.trim_start_matches('\n')),
                None => out,
            };
            let _ = done_tx.send((code, out, err));
            let _ = tx.send(Event::Eof);
        });
        Ok(ChannelWaiter {
            name: name.to_owned(),
            pid,
            rx,
            done,
            reaper: Some(reaper),
            armed_rx,
            finished: false,
        })
    }

    /// Wait until signalled or `deadline` (None: no deadline).
    pub fn wait(&mut self, socket: &Socket, deadline: Option<Instant>) -> Result<Woke> {
        loop {
            if let Ok((code, out, err)) = self.done.try_recv() {
                self.finished = true;
                return self.outcome(socket, code, &out, &err);
            }
            let ev = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(Woke::Deadline);
                    }
                    self.rx.recv_timeout(d - now).ok()
                }
                None => self.rx.recv().ok(),
            };
            if let Some(Event::Signal(sig)) = ev {
                let _ = self.cancel(socket);
                return Err(Error::new(Kind::Interrupted(sig), "interrupted"));
            }
        }
    }

    fn outcome(&self, socket: &Socket, code: Option<i32>, out: &str, err: &str) -> Result<Woke> {
        match code {
            Some(0) => {}
            _ if err.contains("server exited") || err.contains("lost server") => {
                return Err(server_exited());
            }
            _ => return Err(classify_failure(err)),
        }
        let out = out
            .strip_prefix(ARMED)
            .map(|r| r.trim_start_matches('\n'))
            .unwrap_or(out);
        let Some(w) = parse_wake(out) else {
            return Err(server_exited());
        };
        let payload = match w.fresh {
            Some(result) => {
                let [_, _, seen] = option_names(&self.name);
                let _ = socket.run(["set-option", "-g", &seen, &w.seq.to_string()]);
                serde_json::from_str::<Payload>(result).ok()
            }
            None => None,
        };
        Ok(Woke::Signalled(payload, w.seq))
    }

    /// Stop waiting: kill the client (SIGKILL: tmux's client exits 0 on
    /// SIGTERM, which would look like a real signal), reap it, and undo the
    /// registration tmux keeps for it.
    /// Returns the wake when the signal came just before the kill.
    pub fn cancel(&mut self, socket: &Socket) -> Option<Result<Woke>> {
        if self.finished {
            return None;
        }
        // Let a client that is still starting register first: killed half
        // way, it may or may not leave a registration, and only a known one
        // can be undone. This takes a few milliseconds at most.
        let armed = self.armed_rx.recv_timeout(ARM_PATIENCE).is_ok();
        let _ = kill(self.pid, Signal::SIGKILL);
        let got = self.done.recv_timeout(Duration::from_secs(5)).ok();
        self.finished = true;
        if let Some(h) = self.reaper.take() {
            let _ = h.join();
        }
        match got {
            // Exit 0: it was signalled just before the kill, so no ghost.
            Some((Some(0), out, err)) => Some(self.outcome(socket, Some(0), &out, &err)),
            // Killed while waiting: registered only if it said so.
            Some((_, out, _)) if armed || out.starts_with(ARMED) => {
                undo_ghost(socket, &self.name);
                None
            }
            _ => None,
        }
    }
}

impl Drop for ChannelWaiter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = kill(self.pid, Signal::SIGKILL);
        }
        if let Some(h) = self.reaper.take() {
            let _ = h.join();
        }
    }
}

/// What the waiting client's `display-message` said after its wake.
struct Wake<'a> {
    seq: u64,
    /// The stored result, when no waiter has taken it yet.
    fresh: Option<&'a str>,
}

/// None when the server was not serving any more (a shutdown's flush):
/// it has no session while `exit-empty` is on, or the display never ran.
fn parse_wake(out: &str) -> Option<Wake<'_>> {
    let f: Vec<&str> = out.trim_end_matches('\n').splitn(7, '\t').collect();
    if f.len() != 7 || f[0].is_empty() || (f[2].is_empty() && f[3] == "1") {
        return None;
    }
    Some(Wake {
        seq: f[4].parse().unwrap_or(0),
        fresh: (!f[4].is_empty() && f[4] != f[5]).then_some(f[6]),
    })
}

pub fn wait(socket: &Socket, name: &str, timeout: Duration) -> Result<ChannelResult> {
    let start = Instant::now();
    let mut w = ChannelWaiter::spawn(socket, name)?;
    let result = |outcome, p: Option<Payload>| ChannelResult {
        channel: name.to_owned(),
        outcome,
        elapsed_seconds: seconds(start.elapsed()),
        effective_timeout: seconds(timeout),
        status: p.as_ref().and_then(|p| p.status),
        message: p.as_ref().and_then(|p| p.message.clone()),
        sent: p.as_ref().map(|p| p.sent),
    };
    match w.wait(socket, Some(start + timeout))? {
        Woke::Signalled(p, _) => Ok(result(ChannelOutcome::Signalled, p)),
        // The signal may have come just as the timeout did.
        Woke::Deadline => match w.cancel(socket) {
            Some(Ok(Woke::Signalled(p, _))) => Ok(result(ChannelOutcome::Signalled, p)),
            Some(Err(e)) => Err(e),
            _ => Ok(result(ChannelOutcome::Timeout, None)),
        },
    }
}

/// Our killed `tmux wait-for` stays registered in the server; signal the
/// channel once to clear it, when that cannot wake anyone else: no other
/// `tmux wait-for NAME` process is running on this machine (Linux /proc).
/// Called only when the client said it registered (see `ARMED`).
fn undo_ghost(socket: &Socket, name: &str) {
    if other_waiters(name) != Some(false) {
        return;
    }
    let _ = socket.run(["wait-for", "-S", "--", name]);
}

/// Whether another process is waiting on a channel called `name` (any
/// server: a conservative answer); None where /proc cannot be read.
fn other_waiters(name: &str) -> Option<bool> {
    let me = std::process::id().to_string();
    let entries = std::fs::read_dir("/proc").ok()?;
    for e in entries.flatten() {
        let pid = e.file_name();
        let pid = pid.to_string_lossy();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            continue;
        }
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = raw.split(|&b| b == 0).filter(|a| !a.is_empty()).collect();
        if is_waiter(&args, name.as_bytes()) {
            return Some(true);
        }
    }
    Some(false)
}

/// `tmux ... wait-for [flags] NAME` without -S, -L or -U.
fn is_waiter(args: &[&[u8]], name: &[u8]) -> bool {
    let Some(i) = args.iter().position(|a| *a == b"wait-for" || *a == b"wait") else {
        return false;
    };
    let rest: Vec<&&[u8]> = args[i + 1..].iter().take_while(|a| **a != b";").collect();
    let signals = rest
        .iter()
        .any(|a| a.starts_with(b"-") && a.iter().any(|c| matches!(c, b'S' | b'L' | b'U')));
    !signals && rest.last() == Some(&&name)
}

fn server_exited() -> Error {
    Error::new(
        Kind::ServerExited,
        "the tmux server exited during the wait (tmux wait-for returns as if signalled; it was not)",
    )
}

/// Signal a channel: wakes every waiter, or is latched once if none waits.
/// The result (`status`, `message`, the time) is stored with the server and
/// the channel's sequence number bumped in the same command list, so the
/// waiters it wakes read it, and a later signal never shows an old one.
pub fn signal(
    socket: &Socket,
    name: &str,
    status: Option<i32>,
    message: Option<&str>,
) -> Result<()> {
    if message.is_some_and(|m| m.len() > MAX_MESSAGE) {
        return Err(Error::usage(format!(
            "--message is longer than {MAX_MESSAGE} bytes"
        )));
    }
    let [r, q, _] = option_names(name);
    let sent = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let payload = serde_json::to_string(&Payload {
        status,
        message: message.map(str::to_owned),
        sent,
    })
    .expect("serialisable");
    // -F only on the counter: the payload itself is never expanded.
    let bump = format!("#{{e|+|:#{{{q}}},1}}");
    socket
        .run([
            "set-option",
            "-gF",
            &q,
            &bump,
            ";",
            "set-option",
            "-g",
            &r,
            &payload,
            ";",
            "wait-for",
            "-S",
            "--",
            name,
        ])
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_waiters() {
        let w = |a: &[&str]| {
            let v: Vec<&[u8]> = a.iter().map(|s| s.as_bytes()).collect();
            is_waiter(&v, b"ch")
        };
        assert!(w(&["tmux", "-S", "/s", "wait-for", "ch"]));
        assert!(w(&["tmux", "wait", "ch"]));
        assert!(!w(&["tmux", "wait-for", "-S", "ch"]));
        assert!(!w(&["tmux", "wait-for", "-L", "ch"]));
        assert!(!w(&["tmux", "wait-for", "other"]));
        assert!(!w(&["bash", "-c", "x"]));
        assert!(w(&[
            "tmux",
            "wait-for",
            "ch",
            ";",
            "display-message",
            "-p",
            "x"
        ]));
    }

    #[test]
    fn a_wake_needs_a_serving_server_and_takes_a_result_once() {
        let w = parse_wake("12\t1700\t$0\t1\t3\t2\t{\"sent\":1.0}\n").unwrap();
        assert_eq!((w.seq, w.fresh), (3, Some("{\"sent\":1.0}")));
        // Already taken: no payload.
        assert_eq!(parse_wake("12\t1700\t$0\t1\t3\t3\tx").unwrap().fresh, None);
        // Never signalled by tmux-wait: no payload.
        assert_eq!(parse_wake("12\t1700\t$0\t1\t\t\t").unwrap().fresh, None);
        // No session and exit-empty on: the server is shutting down.
        assert!(parse_wake("12\t1700\t\t1\t\t\t").is_none());
        assert!(parse_wake("12\t1700\t\t0\t\t\t").is_some());
        assert!(parse_wake("").is_none());
    }
}
