//! From the command line to validated requests: timeouts cut by their
//! limits (said once), targets, names and regexes checked, and the checks
//! that need tmux (a run aimed at its own pane, a pattern the plugin left
//! in a pane option).

use super::{OWN_PANE, note};
use crate::cli::{ChannelArgs, Engine, OutputArgs, OutputOpts, RunArgs, TextArgs, WatchArgs};
use crate::config::{Limit, ceiling_limit, clamp_timeout, parse_duration, validate_channel};
use crate::engine::EngineKind;
use crate::error::{Error, Kind, Result};
use crate::matcher::PatternList;
use crate::tmux::Socket;
use crate::waits::{channel, command, text, watch};
use std::time::Duration;

const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// A run's follower (started by `run`, not by people): it saves the
/// command's output as it comes and keeps its exit status; it prints and
/// clips nothing, so it takes no output options.
pub(super) fn follow_request(
    socket: Socket,
    a: &crate::cli::FollowRunArgs,
    clamps: &mut Clamps,
) -> Result<command::Common> {
    if a.id.len() > 64 || !a.id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(Error::usage("invalid run id"));
    }
    validate_target(&a.target)?;
    Ok(command::Common {
        socket,
        target: Some(a.target.clone()),
        cursor: "default".into(),
        timeout: clamps.timeout(&a.timeout, None)?,
        clip: crate::clip::ClipOptions::default(),
        save_to: a.save_to.clone(),
        prompt: None,
    })
}

pub(super) fn regex_arg(flag: &str, re: Option<&String>) -> Result<Option<regex::Regex>> {
    re.map(|r| {
        regex::RegexBuilder::new(r)
            .size_limit(crate::matcher::SIZE_LIMIT)
            .build()
            .map_err(|e| {
                let first = e.to_string().lines().last().unwrap_or("").to_owned();
                Error::new(
                    Kind::InvalidRegex,
                    format!("{flag}: invalid regex: {first}"),
                )
            })
    })
    .transpose()
}

/// Timeouts as enforced, and the notices of those a limit cut.
pub(super) struct Clamps {
    /// --timeout was given (else the notice speaks of the default).
    explicit: bool,
    notes: Vec<String>,
}

impl Clamps {
    /// `explicit`: --timeout was given on the command line.
    pub(super) fn new(explicit: bool) -> Clamps {
        Clamps {
            explicit,
            notes: Vec::new(),
        }
    }

    /// The timeout to enforce: `value` parsed, cut by
    /// `TMUX_WAIT_MAX_SECONDS` and by `cap`.
    pub(super) fn timeout(&mut self, value: &str, cap: Option<Limit>) -> Result<Duration> {
        let requested = duration("--timeout", value)?;
        let limits: Vec<Limit> = ceiling_limit()?.into_iter().chain(cap).collect();
        let (timeout, note) = clamp_timeout(requested, value, self.explicit, &limits);
        if let Some(n) = note
            && !self.notes.contains(&n)
        {
            self.notes.push(n);
        }
        Ok(timeout)
    }

    /// Say, once, on stderr, which timeouts were cut (the human form only:
    /// JSON has `effective_timeout`).
    pub(super) fn announce(&mut self, json: bool) {
        for n in std::mem::take(&mut self.notes) {
            if !json {
                note(&n);
            }
        }
    }

    /// For requests built only to be part of another one.
    pub(super) fn quiet() -> Clamps {
        Clamps {
            explicit: true,
            notes: Vec::new(),
        }
    }
}

pub(super) fn common(
    socket: Socket,
    target: &Option<String>,
    timeout: &str,
    cap: Option<Limit>,
    o: &OutputOpts,
    clamps: &mut Clamps,
) -> Result<command::Common> {
    if let Some(t) = target {
        validate_target(t)?;
    }
    crate::cursor::validate_name(&o.cursor)?;
    let timeout = clamps.timeout(timeout, cap)?;
    Ok(command::Common {
        socket,
        target: target.clone(),
        cursor: o.cursor.clone(),
        timeout,
        clip: crate::clip::ClipOptions {
            show: regex_arg("--show", o.show.as_ref())?,
            show_after: o.show_after.unwrap_or(0),
            last_lines: o.last_lines,
            max_lines: o.max_lines,
        },
        save_to: o.save_to.clone(),
        prompt: regex_arg("--prompt", o.prompt.as_ref())?,
    })
}

pub(super) fn run_request(
    socket: Socket,
    a: &RunArgs,
    clamps: &mut Clamps,
) -> Result<command::RunRequest> {
    Ok(command::RunRequest {
        common: common(socket, &a.target, &a.timeout, None, &a.opts, clamps)?,
        command: a.command.join(" "),
        force: a.force,
        history: a.history,
    })
}

/// `run` types into a pane's shell and waits for it: typed into the pane
/// tmux-wait itself runs in (the default inside tmux), it would wait for
/// its own end. Refused before anything is typed: when `$TMUX_PANE` is the
/// target and tmux-wait runs in the foreground of that pane's terminal (a
/// background job of the pane's shell may type into it).
pub(super) fn refuse_own_pane(socket: &Socket, target: Option<&str>) -> Result<()> {
    let Some(own) = std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    if !socket.is_current_server() {
        return Ok(());
    }
    let Some(terminal) = foreground_terminal() else {
        return Ok(());
    };
    // Pane ids name one pane each: no need to ask tmux about another one.
    if let Some(t) = target
        && t != own
        && t.strip_prefix('%').is_some_and(|n| {
            !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
        })
    {
        return Ok(());
    }
    let pane = crate::tmux::resolve_pane(socket, target)?;
    let same_terminal = match terminal {
        Some(dev) => tty_device(&pane.pane_tty) == Some(dev),
        None => true,
    };
    if pane.pane_id == own && same_terminal {
        return Err(Error::usage(OWN_PANE));
    }
    Ok(())
}

/// When this process runs in the foreground of its controlling terminal:
/// `Some(that terminal's device number)` where `/proc` tells it, `Some(None)`
/// elsewhere. `None` when it has no terminal or runs in the background.
pub(super) fn foreground_terminal() -> Option<Option<u64>> {
    if crate::pane::shell::proc_available() {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // pid (comm) state ppid pgrp session tty_nr tpgid ...; comm may
        // hold spaces and parentheses: fields follow the last ')'.
        let rest = stat.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let pgrp: i64 = f.get(2)?.parse().ok()?;
        let tty_nr: u64 = f.get(4)?.parse().ok()?;
        let tpgid: i64 = f.get(5)?.parse().ok()?;
        if tty_nr == 0 || tpgid != pgrp {
            return None;
        }
        // The kernel's encoding: minor in bits 0-7 and 20-31, major 8-19.
        let major = (tty_nr >> 8) & 0xfff;
        let minor = (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00);
        return Some(Some(libc::makedev(major as _, minor as _) as u64));
    }
    let tty = std::fs::File::open("/dev/tty").ok()?;
    use std::os::fd::AsRawFd;
    // SAFETY: plain queries on a descriptor we own.
    let (fg, own) = unsafe { (libc::tcgetpgrp(tty.as_raw_fd()), libc::getpgrp()) };
    (fg == own).then_some(None)
}

/// The device number of a terminal device file.
pub(super) fn tty_device(path: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.rdev())
}

pub(super) fn output_request(
    socket: Socket,
    a: &OutputArgs,
    clamps: &mut Clamps,
) -> Result<command::OutputRequest> {
    let cap = Limit {
        max: command::MAX_OUTPUT_TIMEOUT,
        name: format!(
            "output's ceiling of {}",
            crate::config::show_secs(command::MAX_OUTPUT_TIMEOUT)
        ),
    };
    Ok(command::OutputRequest {
        common: common(socket, &a.target, &a.timeout, Some(cap), &a.opts, clamps)?,
        until: regex_arg("--until", a.until.as_ref())?,
        ndjson: a.ndjson,
        until_finished: a.until_finished,
        ready: match &a.ready {
            Some(ch) => {
                validate_channel(ch)?;
                Some(ch.clone())
            }
            None => None,
        },
    })
}

pub(super) fn watch_request(
    socket: Socket,
    a: &WatchArgs,
    clamps: &mut Clamps,
) -> Result<watch::WatchRequest> {
    let timeout = clamps.timeout(&a.timeout, None)?;
    for ch in a.channel.iter().chain(&a.ready) {
        validate_channel(ch)?;
    }
    if let Some(t) = &a.target {
        validate_target(t)?;
    }
    let kind = if a.done {
        watch::WatchKind::Done
    } else if let Some(q) = &a.quiet {
        watch::WatchKind::Quiet(duration("--quiet", q)?)
    } else {
        let mut matching = a.matching.clone();
        if let Some(opt) = &a.pattern_option {
            matching
                .patterns
                .push(take_pane_option(&socket, a.target.as_deref(), opt)?);
        }
        if matching.patterns.is_empty() {
            return Err(Error::usage(
                "nothing to watch: give --pattern, --pattern-option, --done or --quiet",
            ));
        }
        let text_args = TextArgs {
            target: a.target.clone(),
            matching,
            timeout: a.timeout.clone(),
            interval: "50ms".into(),
            // Polling where another program pipes the pane (a logging
            // plugin), as a text wait does.
            engine: Engine::Auto,
            ready: a.ready.clone(),
            cursor: None,
            json: false,
        };
        let text = text_request(socket.clone(), &text_args, &mut Clamps::quiet())?;
        watch::WatchKind::Text(Box::new(text))
    };
    Ok(watch::WatchRequest {
        socket,
        target: a.target.clone(),
        kind,
        timeout,
        channel: a.channel.clone(),
        label: a.label.clone(),
        ready: a.ready.clone(),
    })
}

/// Read a pattern the plugin's prompt left in a pane option, and unset it.
/// The text travels as data (an option value), never through a shell.
pub(super) fn take_pane_option(
    socket: &Socket,
    target: Option<&str>,
    name: &str,
) -> Result<String> {
    let ok = name.len() > 1
        && name.len() <= 64
        && name.starts_with('@')
        && name[1..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(Error::usage(format!(
            "--pattern-option: '{}' is not a user option name (@name)",
            name.escape_debug()
        )));
    }
    let pane = crate::tmux::resolve_pane(socket, target)?;
    let value = socket.run(["show-option", "-pqv", "-t", &pane.pane_id, name])?;
    let _ = socket.run(["set-option", "-pu", "-t", &pane.pane_id, name]);
    let value = value.join("\n");
    if value.is_empty() {
        return Err(Error::usage("nothing to watch for: the text is empty"));
    }
    Ok(value)
}

pub(super) fn duration(flag: &str, value: &str) -> Result<Duration> {
    parse_duration(value).map_err(|e| Error::usage(format!("{flag}: {e}")))
}

pub(super) fn text_request(
    socket: Socket,
    a: &TextArgs,
    clamps: &mut Clamps,
) -> Result<text::TextRequest> {
    let timeout = clamps.timeout(&a.timeout, None)?;
    let interval = duration("--interval", &a.interval)?;
    if interval < MIN_INTERVAL {
        return Err(Error::usage(format!(
            "--interval: {} is below the minimum of 10ms",
            a.interval
        )));
    }
    let compile = |list: &[String], flag: &str| {
        PatternList::new(list, a.matching.regex, a.matching.match_case, flag)
            .map_err(|m| Error::new(Kind::InvalidRegex, m))
    };
    let patterns = compile(&a.matching.patterns, "--pattern")?;
    let stops = compile(&a.matching.stops, "--stop")?;
    if let Some(ch) = &a.ready {
        validate_channel(ch)?;
    }
    if let Some(t) = &a.target {
        validate_target(t)?;
    }
    Ok(text::TextRequest {
        socket,
        target: a.target.clone(),
        pattern_sources: a.matching.patterns.clone(),
        patterns,
        stops,
        timeout,
        engine: match a.engine {
            Engine::Auto => EngineKind::Auto,
            Engine::Stream => EngineKind::Stream,
            Engine::Poll => EngineKind::Poll,
        },
        interval,
        ready: a.ready.clone(),
        want_tail: a.json,
        cursor: match &a.cursor {
            Some(c) => {
                crate::cursor::validate_name(c)?;
                if a.engine == Engine::Poll {
                    return Err(Error::usage(
                        "--cursor reads the pane's output stream: it cannot go with --engine poll",
                    ));
                }
                Some(c.clone())
            }
            None => None,
        },
    })
}

/// Targets go to tmux as one argument, never through a shell; still refuse
/// what no tmux target contains, so errors are clear and early.
pub(super) fn validate_target(t: &str) -> Result<()> {
    if t.is_empty() || t.len() > 1024 || t.chars().any(char::is_control) {
        return Err(Error::new(
            Kind::NoPane,
            format!(
                "invalid target '{}'",
                t.chars().take(40).collect::<String>().escape_debug()
            ),
        ));
    }
    Ok(())
}

pub(super) fn channel_wait(
    socket: &Socket,
    a: &ChannelArgs,
    clamps: &mut Clamps,
) -> Result<crate::report::ChannelResult> {
    validate_channel(&a.name)?;
    let timeout = clamps.timeout(&a.timeout, None)?;
    clamps.announce(a.json);
    channel::wait(socket, &a.name, timeout)
}
