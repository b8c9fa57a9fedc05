//! From arguments to an exit code: parse, validate into a request, run the
//! wait, print the result. `main` only calls `run`.

use crate::cli::{Cli, Command, OutputArgs, RunArgs, TextArgs};
use crate::config::validate_channel;
use crate::error::{Error, Kind, Result, exit};
use crate::report::error_json;
use crate::tmux::Socket;
use crate::waits::{channel, command, hooks, text, watch};
use clap::{CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::io::Write;

mod attention;
mod remote;
mod requests;

use requests::{
    Clamps, channel_wait, follow_request, output_request, refuse_own_pane, run_request,
    text_request, watch_request,
};

/// Run the program with these arguments; returns the exit code.
pub fn run(args: Vec<OsString>) -> i32 {
    if let Some(code) = pipe_feed(&args) {
        return code;
    }
    // An agent's hook, on its path to asking the person: at once, and
    // never a failure the agent would show.
    if let [_, cmd, flag, agent] = args.as_slice()
        && cmd == "agent-event"
        && flag == "--agent"
    {
        crate::waits::agents::event(&agent.to_string_lossy());
        return exit::OK;
    }
    let json = args.iter().any(|a| a == "--json");
    run_cli(args, json)
}

/// The pipe's own command, as the hub writes it (`-S SOCKET pipe-feed
/// TOKEN`): run at once, without parsing a whole command line or setting
/// up signals. Every pane's pipe waits for this process before any byte
/// flows, so its start is on the path of a first call on a pane.
fn pipe_feed(args: &[OsString]) -> Option<i32> {
    match args {
        [_, s, path, cmd, token] if s == "-S" && cmd == "pipe-feed" => {
            let socket = Socket::Path(path.into());
            Some(done(crate::hub::pipe_feed(
                &socket,
                &token.to_string_lossy(),
            )))
        }
        _ => None,
    }
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
    let (cli, matches) = match parse(&args, json) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if let Err(e) = crate::signals::install() {
        return fail(&Error::io("cannot handle signals", e), json);
    }
    // -L and -S name one server, but for any and panes, which take
    // several (in the order given: names, then paths).
    let mut servers: Vec<Socket> = cli.socket_name.iter().cloned().map(Socket::Name).collect();
    servers.extend(cli.socket_path.iter().cloned().map(Socket::Path));
    if servers.len() > 1 && !matches!(cli.command, Command::Any(_) | Command::Panes(_)) {
        let code = fail(
            &Error::usage(
                "-L and -S name one server: they cannot be used with each other or repeated, but for any and panes (see tmux-wait --help)",
            ),
            json,
        );
        return match cli.command {
            Command::Run(_) => exit::of_failure(Kind::Usage, true),
            _ => code,
        };
    }
    let socket = Socket::resolve(
        cli.socket_name.first().cloned(),
        cli.socket_path.first().cloned(),
    );
    // Timeouts cut by a limit say so, once, before the wait.
    let explicit = matches.subcommand().is_some_and(|(_, m)| {
        m.try_contains_id("timeout").unwrap_or(false)
            && m.value_source("timeout") == Some(clap::parser::ValueSource::CommandLine)
    });
    let mut clamps = Clamps::new(explicit);
    dispatch(cli.command, socket, &servers, &mut clamps)
}

/// The command line, or the exit code of `--help`, `--version` or a usage
/// error (printed here).
fn parse(args: &[OsString], json: bool) -> std::result::Result<(Cli, clap::ArgMatches), i32> {
    let parsed = Cli::command()
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let e = match parsed {
        Ok(x) => return Ok(x),
        Err(e) => e,
    };
    use clap::error::ErrorKind as E;
    if matches!(
        e.kind(),
        E::DisplayHelp | E::DisplayVersion | E::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return Err(if e.kind() == E::DisplayHelpOnMissingArgumentOrSubcommand {
            exit::ERROR
        } else {
            exit::OK
        });
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
    Err(match subcommand(args) {
        Some("run") => exit::of_failure(Kind::Usage, true),
        _ => code,
    })
}

/// Run one command; returns its exit code.
fn dispatch(command: Command, socket: Socket, servers: &[Socket], clamps: &mut Clamps) -> i32 {
    match command {
        Command::Text(a) => text_command(socket, &a, clamps),
        Command::Channel(a) => match channel_wait(&socket, &a, clamps) {
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
        Command::Run(a) => run_command(socket, &a, clamps),
        Command::Output(a) => output_command(socket, &a, clamps),
        Command::FollowRun(a) => done(
            follow_request(socket, &a, clamps)
                .and_then(|c| command::follow_run(&c, &a.id, a.mark.clone())),
        ),
        Command::Hub(_) => done(crate::hub::serve(&socket)),
        Command::PipeFeed(a) => done(crate::hub::pipe_feed(&socket, &a.token)),
        Command::Watch(a) => match watch_request(socket, &a, clamps).and_then(|r| {
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
        Command::Hooks(a) => hooks_command(&socket, a.command),
        Command::Any(a) => attention::any_command(socket, servers, &a, clamps),
        Command::Panes(a) => attention::panes_command(socket, servers, &a),
        Command::Answer(a) => attention::answer_command(socket, &a, clamps),
        Command::Log(a) => attention::log_command(socket, &a),
        Command::Remote(a) => remote::remote_command(a),
        Command::Attention(a) => attention::attention_command(socket, a),
        Command::Mcp => crate::mcp::run(socket),
        Command::Listen(a) => done(hooks::listen(&socket, &a.name)),
        Command::Menu(a) => done(crate::waits::attention::plugin::menu(
            &socket,
            a.client.as_deref(),
        )),
        Command::ShellInit(a) => {
            print(shell_init(a.shell).trim_end());
            exit::OK
        }
        Command::Agents(a) => agents_command(a.command),
        Command::AgentEvent(a) => {
            crate::waits::agents::event(&a.agent);
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

/// `agents install|remove AGENT...`: one line per agent.
fn agents_command(c: crate::cli::AgentsCommand) -> i32 {
    use crate::cli::AgentsCommand;
    use crate::waits::agents;
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(&Error::io("cannot find tmux-wait itself", e), false),
    };
    let (names, install) = match c {
        AgentsCommand::Install { agents } => (agents, true),
        AgentsCommand::Remove { agents } => (agents, false),
    };
    for name in names {
        // (OpenCode takes a plugin file of ours, not a settings entry.)
        let r = match (name.as_str(), install) {
            ("opencode", true) => agents::opencode::install(&exe),
            ("opencode", false) => agents::opencode::remove(),
            (_, true) => agents::install(&name, &exe),
            (_, false) => agents::remove(&name),
        };
        match r {
            Ok(said) => print(&said),
            Err(e) => return fail(&e, false),
        }
    }
    exit::OK
}

/// The exit code of a command that prints nothing on success.
fn done(r: Result<()>) -> i32 {
    match r {
        Ok(()) => exit::OK,
        Err(e) => fail(&e, false),
    }
}

fn text_command(socket: Socket, a: &TextArgs, clamps: &mut Clamps) -> i32 {
    let r = text_request(socket, a, clamps).and_then(|r| {
        clamps.announce(a.json);
        text::run(&r)
    });
    match r {
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
    }
}

fn run_command(socket: Socket, a: &RunArgs, clamps: &mut Clamps) -> i32 {
    let r = run_request(socket, a, clamps)
        .and_then(|r| refuse_own_pane(&r.common.socket, a.target.as_deref()).map(|_| r))
        .and_then(|r| {
            clamps.announce(a.json);
            command::run(&r)
        });
    match r {
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
            exit::of_failure(e.kind, true)
        }
    }
}

fn output_command(socket: Socket, a: &OutputArgs, clamps: &mut Clamps) -> i32 {
    let json = a.json || a.ndjson;
    let emit = |r: &crate::report::OutputResult| {
        print(&serde_json::to_string(r).expect("serialisable"));
    };
    let r = output_request(socket, a, clamps).and_then(|r| {
        clamps.announce(json);
        command::output(&r, emit)
    });
    match r {
        Ok(r) => {
            show(json, &r, || r.human());
            if !json
                && (r.finished
                    || r.timed_out
                    || r.lines_missed > 0
                    || r.history_cleared
                    || r.clipped_lines > 0
                    || r.prompt.is_some()
                    || r.reason == crate::report::OutputReason::Idle
                    || r.unsubmitted_input.is_some()
                    || r.fallback.is_some())
            {
                note(&r.note());
            }
            r.exit_code()
        }
        Err(e) => fail(&e, json),
    }
}

fn hooks_command(socket: &Socket, command: crate::cli::HooksCommand) -> i32 {
    match command {
        crate::cli::HooksCommand::Sync => match hooks::sync(socket) {
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
        crate::cli::HooksCommand::List { json } => match hooks::list(socket) {
            Ok(h) => {
                show(json, &h, || hooks::list_human(&h));
                exit::OK
            }
            Err(e) => fail(&e, json),
        },
    }
}

/// The code `tmux-wait shell-init SHELL` prints (the files are checked by
/// shellcheck and the tests as they are).
pub fn shell_init(shell: crate::cli::Shell) -> &'static str {
    match shell {
        crate::cli::Shell::Bash => include_str!("../../scripts/lib/shell-init.bash"),
        crate::cli::Shell::Zsh => include_str!("../../scripts/lib/shell-init.zsh"),
        crate::cli::Shell::Fish => include_str!("../../scripts/lib/shell-init.fish"),
    }
}

/// What `run` says when it would type into the pane it runs in.
pub const OWN_PANE: &str = "run types into another pane, not the one it runs in: give -t PANE (for example -t '{last}', the pane you were in before)";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn only_the_pipes_own_command_line_skips_the_parser() {
        // Taken at once: a bad token is refused there, as the parser's
        // way refuses it.
        let code = pipe_feed(&args(&["tw", "-S", "/nonexistent/s", "pipe-feed", "zz"]));
        assert_eq!(code, Some(exit::of_failure(Kind::Usage, false)));
        // Anything else is parsed as usual.
        for other in [
            &["tw", "-S", "/s", "pipe-feed"][..],
            &["tw", "-L", "x", "pipe-feed", "ab"],
            &["tw", "-S", "/s", "output", "ab"],
            &["tw", "pipe-feed", "ab", "-S", "/s"],
        ] {
            assert_eq!(pipe_feed(&args(other)), None, "{other:?}");
        }
    }
}
