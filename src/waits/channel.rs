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
//! the ghost surely exists (see `undo_ghost`).

use crate::error::{Error, Kind, Result};
use crate::report::{ChannelOutcome, ChannelResult, seconds};
use crate::signals;
use crate::tmux::control::Event;
use crate::tmux::{Socket, classify_failure};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;
use std::io::Read;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const IDENTITY_FORMAT: &str = "#{pid}\t#{start_time}\t#{session_id}\t#{exit-empty}";

/// Whether the server that answered the waiting client is still serving:
/// it has a session, or `exit-empty` is off (then no flush happens).
fn serving(display_output: &str) -> bool {
    let f: Vec<&str> = display_output.trim_end().split('\t').collect();
    f.len() == 4 && !f[0].is_empty() && (!f[2].is_empty() || f[3] != "1")
}

pub fn wait(socket: &Socket, name: &str, timeout: Duration) -> Result<ChannelResult> {
    let start = Instant::now();
    let mut child = socket
        .command()
        .args([
            "wait-for",
            name,
            ";",
            "display-message",
            "-p",
            IDENTITY_FORMAT,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io("cannot run tmux wait-for", e))?;
    let mut stderr = child.stderr.take().expect("piped stderr");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let (tx, rx) = mpsc::channel::<Event>();
    signals::route_to(tx.clone());
    let (done_tx, done_rx) = mpsc::channel::<Option<i32>>();
    let (out_tx, out_rx) = mpsc::channel::<String>();
    let reaper = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = out_tx.send(out);
        let code = match waitpid(pid, None) {
            Ok(WaitStatus::Exited(_, c)) => Some(c),
            _ => None,
        };
        let _ = done_tx.send(code);
        // Wake the main loop.
        let _ = tx.send(Event::Eof);
    });
    let deadline = start + timeout;
    let mut stop: Option<Result<ChannelResult>> = None;
    let code = loop {
        if let Ok(code) = done_rx.try_recv() {
            break code;
        }
        if stop.is_some() {
            // Ending the child: wait for the reaper (bounded by the kill).
            match done_rx.recv_timeout(Duration::from_secs(2)) {
                Ok(c) => break c,
                Err(_) => {
                    let _ = kill(pid, Signal::SIGKILL);
                    break done_rx.recv().ok().flatten();
                }
            }
        }
        let now = Instant::now();
        let ev = if now >= deadline {
            None
        } else {
            rx.recv_timeout(deadline - now).ok()
        };
        match ev {
            Some(Event::Signal(sig)) => {
                stop = Some(Err(Error::new(Kind::Interrupted(sig), "interrupted")));
                // SIGKILL, not SIGTERM: tmux's client exits 0 on SIGTERM,
                // which would look like a real signal.
                let _ = kill(pid, Signal::SIGKILL);
            }
            Some(_) => {}
            None if Instant::now() >= deadline => {
                stop = Some(Ok(ChannelResult {
                    channel: name.to_owned(),
                    outcome: ChannelOutcome::Timeout,
                    elapsed_seconds: seconds(start.elapsed()),
                    effective_timeout: seconds(timeout),
                }));
                let _ = kill(pid, Signal::SIGKILL);
            }
            None => {}
        }
    };
    let _ = reaper.join();
    // std's Child was reaped by the thread; forget it without waiting.
    drop(child);
    match stop {
        // The signal came just as the timeout did: it was received.
        Some(Ok(_)) if code == Some(0) => {}
        Some(r) => {
            if code != Some(0) {
                undo_ghost(socket, name, start.elapsed());
            }
            return r;
        }
        None => {}
    }
    let elapsed = start.elapsed();
    let mut err = String::new();
    let _ = stderr.read_to_string(&mut err);
    match code {
        Some(0) => {}
        _ if err.contains("server exited") || err.contains("lost server") => {
            return Err(server_exited());
        }
        _ => return Err(classify_failure(&err)),
    }
    let out = out_rx.try_recv().unwrap_or_default();
    if serving(&out) {
        Ok(ChannelResult {
            channel: name.to_owned(),
            outcome: ChannelOutcome::Signalled,
            elapsed_seconds: seconds(elapsed),
            effective_timeout: seconds(timeout),
        })
    } else {
        Err(server_exited())
    }
}

/// Our killed `tmux wait-for` stays registered in the server; signal the
/// channel once to clear it, when that cannot wake anyone else: no other
/// `tmux wait-for NAME` process is running on this machine (Linux /proc),
/// and the wait lasted long enough that its client surely registered (else
/// the signal would be latched for the next waiter instead).
fn undo_ghost(socket: &Socket, name: &str, waited: Duration) {
    const REGISTERED_AFTER: Duration = Duration::from_millis(100);
    if waited < REGISTERED_AFTER || other_waiters(name) != Some(false) {
        return;
    }
    let _ = socket.run(["wait-for", "-S", name]);
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
pub fn signal(socket: &Socket, name: &str) -> Result<()> {
    socket.run(["wait-for", "-S", name]).map(|_| ())
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
    fn serving_needs_a_session_or_exit_empty_off() {
        assert!(serving("12\t1700\t$0\t1\n"));
        assert!(serving("12\t1700\t\t0\n"));
        assert!(!serving("12\t1700\t\t1\n"));
        assert!(!serving(""));
    }
}
