//! Telling people: the status-line segment, messages on the clients, the
//! bell, desktop notifications and the user's hook command.
//!
//! Pane text is untrusted. Everything placed in a tmux format (the status
//! segment, `display-message`) has control characters removed and every `#`
//! doubled; nothing is ever spliced into a shell command: the hook gets the
//! result in environment variables, notifiers get it as arguments.

use crate::report::WatchOutcome;
use crate::state::{LastResult, Store};
use crate::tmux::Socket;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tmux option the plugin's status placeholder reads.
pub const STATUS_OPTION: &str = "@tmux_wait_status";

/// Text made safe for a tmux format: no control characters, `#` doubled,
/// at most `max` characters.
pub fn format_safe(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().filter(|c| !c.is_control()).enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c == '#' {
            out.push_str("##");
        } else {
            out.push(c);
        }
    }
    out
}

/// Text made safe for `display-message`, which also reads `%` as the
/// start of a time conversion (strftime): `%` doubled too.
pub fn message_safe(s: &str, max: usize) -> String {
    format_safe(s, max).replace('%', "%%")
}

/// User options read in one round trip; empty means "use the default".
#[derive(Debug, Default, Clone)]
pub struct Options {
    pub message: bool,
    pub message_ms: u64,
    pub bell: bool,
    pub desktop: bool,
    pub icon_running: String,
    pub icon_ok: String,
    pub icon_fail: String,
    pub icon_timeout: String,
    pub hook: String,
}

const OPTION_FORMAT: &str = "#{@tmux-wait-message}\t#{@tmux-wait-message-ms}\t#{@tmux-wait-bell}\t#{@tmux-wait-desktop}\t#{@tmux-wait-icon-running}\t#{@tmux-wait-icon-ok}\t#{@tmux-wait-icon-fail}\t#{@tmux-wait-icon-timeout}";

fn on(v: &str, default: bool) -> bool {
    match v {
        "" => default,
        "on" | "1" | "yes" | "true" => true,
        _ => false,
    }
}

fn or(v: &str, default: &str) -> String {
    if v.is_empty() { default } else { v }.to_owned()
}

impl Options {
    pub fn read(socket: &Socket) -> Options {
        let line = socket
            .run(["display-message", "-p", OPTION_FORMAT])
            .ok()
            .and_then(|l| l.into_iter().next())
            .unwrap_or_default();
        let f: Vec<&str> = line.split('\t').collect();
        let get = |i: usize| f.get(i).copied().unwrap_or("");
        let hook = socket
            .run(["show-option", "-gqv", "@tmux-wait-on-done"])
            .map(|l| l.join("\n"))
            .unwrap_or_default();
        Options {
            message: on(get(0), true),
            message_ms: get(1).parse().unwrap_or(5000),
            bell: on(get(2), false),
            desktop: on(get(3), false),
            icon_running: or(get(4), "⏳"),
            icon_ok: or(get(5), "✓"),
            icon_fail: or(get(6), "✗"),
            icon_timeout: or(get(7), "⌛"),
            hook,
        }
    }
}

/// Recompute the status segment from the store and push it to tmux: every
/// client redraws within milliseconds, nothing polls.
pub fn refresh_status(socket: &Socket, store: &Store, opts: &Options) {
    let running = store.watches().len();
    let mut parts = Vec::new();
    if running > 0 {
        parts.push(format!("{}{running}", format_safe(&opts.icon_running, 8)));
    }
    if let Some(last) = store.last() {
        let icon = if last.ok {
            &opts.icon_ok
        } else if last.outcome.is_timeout() {
            &opts.icon_timeout
        } else {
            &opts.icon_fail
        };
        if last.outcome == WatchOutcome::Signalled {
            // A channel hook: when it arrived, then the channel and message.
            parts.push(format!(
                "{} {} {}",
                format_safe(icon, 8),
                clock(last.finished),
                format_safe(&last.label, 40)
            ));
        } else {
            // How long it took, said so: not how long ago it was.
            parts.push(format!(
                "{} {} (took {})",
                format_safe(icon, 8),
                format_safe(&last.label, 24),
                took(last.elapsed_seconds)
            ));
        }
    }
    let value = parts.join(" ");
    let _ = socket.run(["set-option", "-g", STATUS_OPTION, &value]);
}

/// A duration in the status line: `4s`, `2m05s`, `1h02m`.
pub fn took(secs: f64) -> String {
    let s = if secs.is_finite() && secs > 0.0 {
        secs.round() as u64
    } else {
        0
    };
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// Local `HH:MM` of a time in seconds since the epoch.
fn clock(secs: u64) -> String {
    local_time(secs, false)
}

/// Local `HH:MM` (`with_seconds`: `HH:MM:SS`) of a time in seconds since
/// the epoch.
pub fn local_time(secs: u64, with_seconds: bool) -> String {
    // (libc deprecates the name on musl, where its width is to change;
    // localtime_r takes it all the same.)
    #[allow(deprecated)]
    let t = libc::time_t::try_from(secs).unwrap_or(0);
    // SAFETY: localtime_r writes only into the tm we pass.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return String::new();
    }
    if with_seconds {
        format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
    } else {
        format!("{:02}:{:02}", tm.tm_hour, tm.tm_min)
    }
}

/// What finished, for the messages and the hook.
#[derive(Debug, Clone)]
pub struct Done {
    pub last: LastResult,
    pub line: String,
    pub channel: String,
    pub exit_status: Option<i32>,
    pub pane_tty: String,
}

impl Done {
    fn text(&self, opts: &Options) -> String {
        let icon = if self.last.ok {
            &opts.icon_ok
        } else if self.last.outcome.is_timeout() {
            &opts.icon_timeout
        } else {
            &opts.icon_fail
        };
        let mut s = format!(
            "tmux-wait {} {} in {}: {} after {:.1}s",
            icon, self.last.label, self.last.pane_id, self.last.outcome, self.last.elapsed_seconds
        );
        if let Some(code) = self.exit_status {
            s.push_str(&format!(" (exit {code})"));
        }
        if !self.line.is_empty() {
            s.push_str(": ");
            s.push_str(&self.line);
        }
        s
    }
}

/// Send every notification the options ask for, then signal the channel.
pub fn announce(socket: &Socket, opts: &Options, done: &Done) {
    let text = done.text(opts);
    let env = [
        ("TMUX_WAIT_ID", done.last.id.clone()),
        ("TMUX_WAIT_PANE", done.last.pane_id.clone()),
        ("TMUX_WAIT_LABEL", done.last.label.clone()),
        ("TMUX_WAIT_OUTCOME", done.last.outcome.as_str().to_owned()),
        (
            "TMUX_WAIT_OK",
            if done.last.ok { "1" } else { "0" }.to_owned(),
        ),
        (
            "TMUX_WAIT_ELAPSED",
            format!("{:.3}", done.last.elapsed_seconds),
        ),
        ("TMUX_WAIT_LINE", done.line.clone()),
        ("TMUX_WAIT_CHANNEL", done.channel.clone()),
        (
            "TMUX_WAIT_EXIT_STATUS",
            done.exit_status.map(|c| c.to_string()).unwrap_or_default(),
        ),
    ];
    tell(socket, opts, &text, &done.pane_tty, &env);
    if !done.channel.is_empty() {
        let _ = socket.run(["wait-for", "-S", &done.channel]);
    }
}

/// Tell people `text` as the options ask: a message on every client, the
/// bell in the pane of terminal `pane_tty`, a desktop notification, the
/// user's hook with `env` in its environment.
pub fn tell(socket: &Socket, opts: &Options, text: &str, pane_tty: &str, env: &[(&str, String)]) {
    if opts.message {
        let safe = message_safe(text, 400);
        let ms = opts.message_ms.to_string();
        // tmux 3.2's display-message takes no client (its -c wants no
        // argument, and the client name is read as the message): there the
        // message goes once to the client tmux picks, the one used last.
        if let Ok(clients) = socket.run(["list-clients", "-F", "#{version}\t#{client_name}"]) {
            for (version, c) in clients.iter().filter_map(|l| l.split_once('\t')) {
                if c.is_empty() {
                    continue;
                }
                if crate::tmux::Version::parse(version) < crate::tmux::Version(3, 3) {
                    let _ = socket.run(["display-message", "-d", &ms, &safe]);
                    break;
                }
                let _ = socket.run(["display-message", "-c", c, "-d", &ms, &safe]);
            }
        }
    }
    if opts.bell {
        ring_bell(pane_tty);
    }
    if opts.desktop {
        desktop(text);
    }
    if !opts.hook.trim().is_empty() {
        run_hook(&opts.hook, env);
    }
}

/// A BEL written to the pane's terminal reaches tmux as the pane's output,
/// so the window's bell flag and `bell-action` apply as for any program.
pub fn ring_bell(tty: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    if !tty.starts_with("/dev/") {
        return;
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty)
    {
        let _ = f.write_all(b"\x07");
    }
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

fn desktop(text: &str) {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    let mut cmd = if on_path("notify-send") {
        let mut c = Command::new("notify-send");
        c.arg("tmux-wait").arg(&clean);
        c
    } else if on_path("osascript") {
        let mut c = Command::new("osascript");
        c.args([
            "-e",
            "on run argv",
            "-e",
            "display notification (item 1 of argv) with title \"tmux-wait\"",
            "-e",
            "end run",
            &clean,
        ]);
        c
    } else {
        return;
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    run_bounded(cmd, Duration::from_secs(5));
}

/// The user's hook: their own shell command from tmux.conf, run with the
/// result in `TMUX_WAIT_*` variables (never spliced into the command).
fn run_hook(hook: &str, env: &[(&str, String)]) {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(hook);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    run_bounded(cmd, Duration::from_secs(30));
}

/// Run a notifier, with the open-files limit tmux-wait started with; kill
/// it if it outlives `limit`. Always reaped.
fn run_bounded(mut cmd: Command, limit: Duration) {
    crate::sys::fds::restore_in_child(&mut cmd);
    let Ok(mut child) = cmd.spawn() else {
        return;
    };
    let end = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if Instant::now() >= end => {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn took_reads_as_a_duration() {
        assert_eq!(took(4.2), "4s");
        assert_eq!(took(125.0), "2m05s");
        assert_eq!(took(3720.0), "1h02m");
        assert_eq!(took(f64::NAN), "0s");
    }

    #[test]
    fn clock_is_hours_and_minutes() {
        let c = clock(1_700_000_000);
        assert_eq!(c.len(), 5);
        assert_eq!(&c[2..3], ":");
    }

    #[test]
    fn format_safe_doubles_hashes_and_drops_controls() {
        assert_eq!(
            format_safe("#(touch x) #{pane_id}", 100),
            "##(touch x) ##{pane_id}"
        );
        assert_eq!(format_safe("a\x1b[31mb\n", 100), "a[31mb");
        assert_eq!(format_safe("abcdef", 3), "abc…");
    }

    #[test]
    fn a_message_keeps_its_percent_signs() {
        assert_eq!(message_safe("(%40) 100%#", 100), "(%%40) 100%%##");
    }
}
