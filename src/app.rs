//! From arguments to an exit code: parse, validate into a request, run the
//! wait, print the result. `main` only calls `run`.

use crate::cli::{
    ChannelArgs, Cli, Command, Engine, OutputArgs, OutputOpts, RunArgs, TextArgs, WatchArgs,
};
use crate::config::{Limit, ceiling_limit, clamp_timeout, parse_duration, validate_channel};
use crate::engine::EngineKind;
use crate::error::{Error, Kind, Result, exit};
use crate::matcher::PatternList;
use crate::report::error_json;
use crate::tmux::Socket;
use crate::waits::{channel, command, hooks, text, watch};
use clap::{CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// Run the program with these arguments; returns the exit code.
pub fn run(args: Vec<OsString>) -> i32 {
    let json = args.iter().any(|a| a == "--json");
    run_cli(args, json)
}

/// The subcommand's name: the first word that is not an option (or the
/// value of -L/-S).
pub fn subcommand(args: &[OsString]) -> Option<&str> {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let a = a.to_str()?;
        if a == "-L" || a == "-S" {
            it.next();
        } else if !a.starts_with('-') {
            return Some(a);
        }
    }
    None
}

fn run_cli(args: Vec<OsString>, json: bool) -> i32 {
    let parsed = Cli::command()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(x) => x,
        Err(e) => {
            use clap::error::ErrorKind as E;
            if matches!(
                e.kind(),
                E::DisplayHelp | E::DisplayVersion | E::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == E::DisplayHelpOnMissingArgumentOrSubcommand {
                    exit::ERROR
                } else {
                    exit::OK
                };
            }
            let text = e.to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut first = lines
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_owned();
            // "...were not provided:" names them on the next line.
            if first.ends_with(':')
                && let Some(next) = lines.next()
            {
                first = format!("{first} {next}");
            }
            let code = fail(
                &Error::usage(format!("{first} (see tmux-wait --help)")),
                json,
            );
            return match subcommand(&args) {
                Some("run") => crate::error::exit::of_failure(Kind::Usage, true),
                _ => code,
            };
        }
    };
    if let Err(e) = crate::signals::install() {
        return fail(&Error::io("cannot handle signals", e), json);
    }
    let socket = Socket::resolve(cli.socket_name.clone(), cli.socket_path.clone());
    // Timeouts cut by a limit say so, once, before the wait.
    let mut clamps = Clamps {
        explicit: matches.subcommand().is_some_and(|(_, m)| {
            m.try_contains_id("timeout").unwrap_or(false)
                && m.value_source("timeout") == Some(clap::parser::ValueSource::CommandLine)
        }),
        notes: Vec::new(),
    };
    match cli.command {
        Command::Text(a) => match text_request(socket, &a, &mut clamps).and_then(|r| {
            clamps.announce(a.json);
            text::run(&r)
        }) {
            Ok(r) => {
                let given = crate::report::TextPatterns {
                    patterns: &a.matching.patterns,
                    stops: &a.matching.stops,
                    regex: a.matching.regex,
                };
                show(a.json, &r, || r.human(&given));
                r.outcome.exit_code()
            }
            Err(e) => fail(&e, a.json),
        },
        Command::Channel(a) => match channel_wait(&socket, &a, &mut clamps) {
            Ok(r) => {
                show(a.json, &r, || r.human());
                match (r.outcome, r.status) {
                    (crate::report::ChannelOutcome::Timeout, _) => exit::TIMEOUT,
                    (_, Some(s)) if s != 0 => exit::SIGNALLED_FAILURE,
                    _ => exit::OK,
                }
            }
            Err(e) => fail(&e, a.json),
        },
        Command::Signal(a) => {
            let sent = validate_channel(&a.name)
                .and_then(|_| channel::signal(&socket, &a.name, a.status, a.message.as_deref()));
            match sent {
                Ok(()) => {
                    let sent = serde_json::json!({"channel": a.name, "status": a.status, "message": a.message});
                    show(a.json, &sent, String::new);
                    exit::OK
                }
                Err(e) => fail(&e, a.json),
            }
        }
        Command::Run(a) => match run_request(socket, &a, &mut clamps)
            .and_then(|r| refuse_own_pane(&r.common.socket, a.target.as_deref()).map(|_| r))
            .and_then(|r| {
                clamps.announce(a.json);
                command::run(&r)
            }) {
            Ok(r) => {
                show(a.json, &r, || r.human());
                if let Some(n) = r.note()
                    && !a.json
                {
                    note(&n);
                }
                r.exit_code()
            }
            Err(e) => {
                fail(&e, a.json);
                crate::error::exit::of_failure(e.kind, true)
            }
        },
        Command::Output(a) => {
            let json = a.json || a.ndjson;
            let ndjson = a.ndjson;
            let emit = |r: &crate::report::OutputResult| {
                print(&serde_json::to_string(r).expect("serialisable"));
            };
            match output_request(socket, &a, &mut clamps).and_then(|r| {
                clamps.announce(json);
                command::output(&r, emit)
            }) {
                Ok(r) => {
                    show(json, &r, || r.human());
                    if !json
                        && (r.finished
                            || r.timed_out
                            || r.lines_missed > 0
                            || r.history_cleared
                            || r.clipped_lines > 0
                            || r.prompt.is_some()
                            || r.unsubmitted_input.is_some())
                    {
                        note(&r.note());
                    }
                    let _ = ndjson;
                    r.exit_code()
                }
                Err(e) => fail(&e, json),
            }
        }
        Command::FollowRun(a) => {
            let opts = OutputOpts {
                show: None,
                show_after: None,
                last_lines: None,
                max_lines: 0,
                save_to: a.save_to.clone(),
                prompt: None,
                cursor: "default".into(),
            };
            let ok = a.id.len() <= 64 && a.id.bytes().all(|b| b.is_ascii_alphanumeric());
            let r = if ok {
                common(
                    socket,
                    &Some(a.target.clone()),
                    &a.timeout,
                    None,
                    &opts,
                    &mut clamps,
                )
                .and_then(|c| command::follow_run(&c, &a.id, a.mark.clone()))
            } else {
                Err(Error::usage("invalid run id"))
            };
            match r {
                Ok(()) => exit::OK,
                Err(e) => fail(&e, false),
            }
        }
        Command::Hub(_) => match crate::hub::serve(&socket) {
            Ok(()) => exit::OK,
            Err(e) => fail(&e, false),
        },
        Command::PipeFeed(a) => match crate::hub::pipe_feed(&socket, &a.token) {
            Ok(()) => exit::OK,
            Err(e) => fail(&e, false),
        },
        Command::Watch(a) => match watch_request(socket, &a, &mut clamps).and_then(|r| {
            clamps.announce(a.json);
            watch::watch(&r)
        }) {
            Ok(r) => {
                show(a.json, &r, || r.human());
                r.exit_code()
            }
            Err(e) => fail(&e, a.json),
        },
        Command::List(a) => match watch::list(&socket) {
            Ok(ws) => {
                show(a.json, &ws, || watch::list_human(&ws));
                exit::OK
            }
            Err(e) => fail(&e, a.json),
        },
        Command::Cancel(a) => {
            let sel = match (a.id, a.pane, a.all) {
                (Some(id), _, _) => watch::Selection::Id(id),
                (_, Some(p), _) => watch::Selection::Pane(p),
                _ => watch::Selection::All,
            };
            match watch::cancel(&socket, &sel) {
                Ok(ids) if ids.is_empty() => {
                    print("no watches to cancel");
                    exit::OK
                }
                Ok(ids) => {
                    print(&format!("cancelled {}", ids.join(" ")));
                    exit::OK
                }
                Err(e) => fail(&e, false),
            }
        }
        Command::Hooks(a) => match a.command {
            crate::cli::HooksCommand::Sync => match hooks::sync(&socket) {
                Ok(r) => {
                    if !r.started.is_empty() || !r.stopped.is_empty() {
                        print(&format!(
                            "listeners started: {}; stopped: {}",
                            r.started.join(" "),
                            r.stopped.join(" ")
                        ));
                    }
                    exit::OK
                }
                Err(e) => fail(&e, false),
            },
            crate::cli::HooksCommand::List { json } => match hooks::list(&socket) {
                Ok(h) => {
                    show(json, &h, || hooks::list_human(&h));
                    exit::OK
                }
                Err(e) => fail(&e, json),
            },
        },
        Command::Mcp => crate::mcp::run(socket),
        Command::Listen(a) => match hooks::listen(&socket, &a.name) {
            Ok(()) => exit::OK,
            Err(e) => fail(&e, false),
        },
        Command::Menu(a) => match watch::menu(&socket, a.client.as_deref()) {
            Ok(()) => exit::OK,
            Err(e) => fail(&e, false),
        },
        Command::ShellInit(a) => {
            print(shell_init(a.shell).trim_end());
            exit::OK
        }
        Command::Status(a) => match watch::status(&socket, a.clear) {
            Ok(v) => {
                print(&v);
                exit::OK
            }
            Err(e) => fail(&e, false),
        },
    }
}

/// The code `tmux-wait shell-init SHELL` prints (the files are checked by
/// shellcheck and the tests as they are).
pub fn shell_init(shell: crate::cli::Shell) -> &'static str {
    match shell {
        crate::cli::Shell::Bash => include_str!("../scripts/lib/shell-init.bash"),
        crate::cli::Shell::Zsh => include_str!("../scripts/lib/shell-init.zsh"),
        crate::cli::Shell::Fish => include_str!("../scripts/lib/shell-init.fish"),
    }
}

fn regex_arg(flag: &str, re: Option<&String>) -> Result<Option<regex::Regex>> {
    re.map(|r| {
        regex::RegexBuilder::new(r)
            .size_limit(1 << 22)
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
struct Clamps {
    /// --timeout was given (else the notice speaks of the default).
    explicit: bool,
    notes: Vec<String>,
}

impl Clamps {
    /// The timeout to enforce: `value` parsed, cut by
    /// `TMUX_WAIT_MAX_SECONDS` and by `cap`.
    fn timeout(&mut self, value: &str, cap: Option<Limit>) -> Result<Duration> {
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
    fn announce(&mut self, json: bool) {
        for n in std::mem::take(&mut self.notes) {
            if !json {
                note(&n);
            }
        }
    }

    /// For requests built only to be part of another one.
    fn quiet() -> Clamps {
        Clamps {
            explicit: true,
            notes: Vec::new(),
        }
    }
}

fn common(
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

fn run_request(socket: Socket, a: &RunArgs, clamps: &mut Clamps) -> Result<command::RunRequest> {
    Ok(command::RunRequest {
        common: common(socket, &a.target, &a.timeout, None, &a.opts, clamps)?,
        command: a.command.join(" "),
        force: a.force,
    })
}

/// What `run` says when it would type into the pane it runs in.
pub const OWN_PANE: &str = "run types into another pane, not the one it runs in: give -t PANE (for example -t '{last}', the pane you were in before)";

/// `run` types into a pane's shell and waits for it: typed into the pane
/// tmux-wait itself runs in (the default inside tmux), it would wait for
/// its own end. Refused before anything is typed: when `$TMUX_PANE` is the
/// target and tmux-wait runs in the foreground of that pane's terminal (a
/// background job of the pane's shell may type into it).
fn refuse_own_pane(socket: &Socket, target: Option<&str>) -> Result<()> {
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
fn foreground_terminal() -> Option<Option<u64>> {
    if crate::engine::shell::proc_available() {
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
fn tty_device(path: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.rdev())
}

fn output_request(
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
        ready: match &a.ready {
            Some(ch) => {
                validate_channel(ch)?;
                Some(ch.clone())
            }
            None => None,
        },
    })
}

fn watch_request(
    socket: Socket,
    a: &WatchArgs,
    clamps: &mut Clamps,
) -> Result<watch::WatchRequest> {
    let timeout = clamps.timeout(&a.timeout, None)?;
    if let Some(ch) = &a.channel {
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
            engine: Engine::Stream,
            ready: None,
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
    })
}

/// Read a pattern the plugin's prompt left in a pane option, and unset it.
/// The text travels as data (an option value), never through a shell.
fn take_pane_option(socket: &Socket, target: Option<&str>, name: &str) -> Result<String> {
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

fn duration(flag: &str, value: &str) -> Result<Duration> {
    parse_duration(value).map_err(|e| Error::usage(format!("{flag}: {e}")))
}

fn text_request(socket: Socket, a: &TextArgs, clamps: &mut Clamps) -> Result<text::TextRequest> {
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
    })
}

/// Targets go to tmux as one argument, never through a shell; still refuse
/// what no tmux target contains, so errors are clear and early.
fn validate_target(t: &str) -> Result<()> {
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

fn channel_wait(
    socket: &Socket,
    a: &ChannelArgs,
    clamps: &mut Clamps,
) -> Result<crate::report::ChannelResult> {
    validate_channel(&a.name)?;
    let timeout = clamps.timeout(&a.timeout, None)?;
    clamps.announce(a.json);
    channel::wait(socket, &a.name, timeout)
}

/// Print a result: its JSON with --json, else the text for people (if
/// any).
fn show<T: serde::Serialize>(json: bool, value: &T, human: impl FnOnce() -> String) {
    if json {
        print(&serde_json::to_string(value).expect("serialisable"));
    } else {
        let h = human();
        if !h.is_empty() {
            print(&h);
        }
    }
}

/// A line for people on stderr.
fn note(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Print a line on stdout; a closed stdout (EPIPE) is not an error.
fn print(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

/// Report an error: one line on stderr, the JSON object on stdout with
/// --json; returns its exit code.
fn fail(e: &Error, json: bool) -> i32 {
    if json {
        print(&error_json(e.kind.as_str(), &e.message));
    }
    let mut err = std::io::stderr().lock();
    let msg = crate::report::sanitize(&e.message);
    let _ = writeln!(err, "tmux-wait: error: {msg}");
    e.kind.exit_code()
}
