//! `any`, `panes` and the plugin's `attention`: arguments to requests, and
//! the results printed.

use super::requests::{Clamps, duration, validate_target};
use super::{fail, print, show};
use crate::cli::{
    AnswerArgs, AnyArgs, AttentionArgs, AttentionCommand, LogArgs, ManyArgs, PanesArgs,
};
use crate::error::{Error, Kind, Result, exit};
use crate::matcher::PatternList;
use crate::tmux::Socket;
use crate::waits::attention::many::{self, Sources};
use crate::waits::attention::{self, AnyRequest, PanesRequest, Profiles, Until, What};

fn targets(ts: &[String]) -> Result<Vec<String>> {
    for t in ts {
        validate_target(t)?;
    }
    Ok(ts.to_vec())
}

fn quiet_after(v: &str) -> Result<std::time::Duration> {
    duration("--quiet-after", v)
}

fn profiles(file: Option<&std::path::Path>) -> Result<Profiles> {
    Profiles::load(file)
}

fn any_request(socket: Socket, a: &AnyArgs, clamps: &mut Clamps) -> Result<AnyRequest> {
    let patterns = PatternList::new(&a.patterns, a.regex, false, "--pattern")
        .map_err(|m| Error::new(Kind::InvalidRegex, m))?;
    let until = match &a.until {
        Some(u) => {
            let u = Until::parse(u).map_err(Error::usage)?;
            if !a.patterns.is_empty() && !u.has(What::Text) {
                return Err(Error::usage(
                    "--pattern reports the event text, which --until leaves out (add text to --until)",
                ));
            }
            u
        }
        None if a.ndjson => Until::everything(),
        None if !a.patterns.is_empty() => Until::needs_someone().with(What::Text),
        None => Until::needs_someone(),
    };
    if let Some(ch) = &a.ready {
        crate::config::validate_channel(ch)?;
    }
    Ok(AnyRequest {
        targets: targets(&a.targets)?,
        server: a.server,
        until,
        all: a.all,
        now: a.now,
        quiet_after: quiet_after(&a.quiet_after)?,
        patterns,
        timeout: clamps.timeout(&a.timeout, None)?,
        ndjson: a.ndjson,
        ready: a.ready.clone(),
        profiles: profiles(a.profiles.as_deref())?,
        socket,
    })
}

/// The servers and hosts of `any` or `panes`, when more than one server
/// here (None: the plain wait on `socket`).
fn sources(
    socket: &Socket,
    servers: &[Socket],
    m: &ManyArgs,
    targets: &[String],
) -> Result<Option<Sources>> {
    let s = Sources::new(
        servers,
        socket,
        m.all_servers,
        &m.hosts,
        m.ssh_config.clone(),
    )?;
    if s.is_some() && !targets.is_empty() {
        return Err(Error::usage(
            "-t names panes of one server: with several servers or --host, every pane of each is watched (drop -t)",
        ));
    }
    Ok(s)
}

pub(super) fn any_command(
    socket: Socket,
    servers: &[Socket],
    a: &AnyArgs,
    clamps: &mut Clamps,
) -> i32 {
    let json = a.json || a.ndjson;
    let emit = |pane: &attention::PaneReport, elapsed: f64| {
        let mut v = serde_json::to_value(pane).expect("serialisable");
        v["elapsed_seconds"] = elapsed.into();
        print(&v.to_string());
    };
    let many = sources(&socket, servers, &a.many, &a.targets);
    let r = any_request(socket, a, clamps).and_then(|r| match many? {
        Some(mut src) => {
            clamps.announce(json);
            src.patterns.clone_from(&a.patterns);
            src.regex = a.regex;
            many::any(&r, &src, a.json, |v| print(&v.to_string())).map(|r| (r, true))
        }
        None => {
            clamps.announce(json);
            if a.mark_armed {
                let within = match &a.input_within {
                    Some(v) => Some(duration("--input-within", v)?),
                    None => None,
                };
                end_with_input(within);
                attention::any_armed(&r, emit, || print(r#"{"event":"armed"}"#))
            } else {
                attention::any(&r, emit)
            }
            .map(|r| (r, false))
        }
    });
    match r {
        Ok((r, several)) => {
            show(json, &r, || {
                if several {
                    many::human_result(&r)
                } else {
                    r.human()
                }
            });
            r.exit_code()
        }
        Err(e) => fail(&e, json),
    }
}

/// A tmux-wait whose lines another host's tmux-wait reads (through ssh)
/// ends when its input ends: the reader, or the connection, went away.
/// With `within`, also when nothing came for that long: the reader sends
/// a byte now and then, and a connection gone dark where sshd cannot see
/// it (sshd's own keepalive is off by default) would otherwise keep this
/// one for hours.
fn end_with_input(within: Option<std::time::Duration>) {
    use std::time::Instant;
    let _ = std::thread::Builder::new()
        .name("input".into())
        .spawn(move || {
            let mut buf = [0u8; 256];
            let mut stdin = std::io::stdin().lock();
            let mut heard = Instant::now();
            loop {
                if let Some(w) = within {
                    let left = (heard + w).saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    let mut fds = [crate::sys::pollfd(0, libc::POLLIN)];
                    crate::sys::poll(&mut fds, Some(left));
                    if fds[0].revents == 0 {
                        continue;
                    }
                }
                match std::io::Read::read(&mut stdin, &mut buf) {
                    Ok(n) if n > 0 => heard = Instant::now(),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    _ => break,
                }
            }
            std::process::exit(exit::OK);
        });
}

pub(super) fn panes_command(socket: Socket, servers: &[Socket], a: &PanesArgs) -> i32 {
    let r = (|| {
        let many = sources(&socket, servers, &a.many, &a.targets)?;
        let req = PanesRequest {
            targets: targets(&a.targets)?,
            server: a.server,
            quiet_after: quiet_after(&a.quiet_after)?,
            profiles: profiles(a.profiles.as_deref())?,
            socket,
        };
        match many {
            Some(src) => many::panes(&req, &src).map(|r| (Some(r), None)),
            None => {
                let server = req.socket.absolute().path().to_string_lossy().into_owned();
                let mut r = attention::panes(&req)?;
                for p in &mut r.panes {
                    p.server.clone_from(&server);
                }
                Ok((None, Some(r)))
            }
        }
    })();
    match r {
        Ok((Some(r), _)) => {
            show(a.json, &r, || r.human());
            exit::OK
        }
        Ok((_, Some(r))) => {
            show(a.json, &r, || r.human());
            exit::OK
        }
        Ok((None, None)) => exit::OK,
        Err(e) => fail(&e, a.json),
    }
}

pub(super) fn attention_command(socket: Socket, a: AttentionArgs) -> i32 {
    use attention::plugin;
    let r = match a.command {
        AttentionCommand::Serve => plugin::serve(&socket),
        AttentionCommand::Toggle { target, client } => plugin::toggle(
            &socket,
            &target,
            client.as_deref().filter(|c| !c.is_empty()),
        ),
        AttentionCommand::Sync => plugin::sync(&socket),
        AttentionCommand::Visit => plugin::visit(&socket),
        AttentionCommand::Next { client } => {
            plugin::next(&socket, client.as_deref().filter(|c| !c.is_empty()))
        }
        AttentionCommand::Go { id, client } => {
            plugin::go(&socket, &id, client.as_deref().filter(|c| !c.is_empty()))
        }
    };
    match r {
        Ok(()) => exit::OK,
        Err(e) => fail(&e, false),
    }
}

pub(super) fn answer_command(socket: Socket, a: &AnswerArgs, clamps: &mut Clamps) -> i32 {
    use attention::answer::{self, AnswerRequest, By};
    let client = a.client.clone().filter(|c| !c.is_empty());
    let by = if a.from_menu {
        By::Menu {
            client: client.clone(),
        }
    } else {
        By::Script
    };
    let req = (|| {
        validate_target(&a.target)?;
        if a.question.is_some() && a.question_id.is_some() {
            return Err(Error::usage(
                "--question and --question-id name the same thing: give one",
            ));
        }
        if a.since.is_some_and(|s| !s.is_finite()) {
            return Err(Error::usage("--since: not a time"));
        }
        Ok(AnswerRequest {
            target: a.target.clone(),
            choice: a.choice.clone(),
            question: a.question.clone(),
            question_id: a.question_id.clone(),
            pid: a.pid,
            since: a.since,
            began: a.began.clone(),
            by: by.clone(),
            timeout: clamps.timeout(&a.timeout, None)?,
            quiet_after: attention::QUIET_AFTER,
            profiles: profiles(a.profiles.as_deref())?,
            socket: socket.clone(),
        })
    })();
    let r = req.and_then(|r| answer::answer(&r));
    if let By::Menu { client } = &by {
        attention::plugin::told(&socket, client.as_deref(), &a.target, &r);
    }
    match r {
        Ok(r) => {
            show(a.json, &r, || r.human());
            r.exit_code()
        }
        Err(e) => fail(&e, a.json),
    }
}

pub(super) fn log_command(socket: Socket, a: &LogArgs) -> i32 {
    let r = (|| {
        let since = match &a.since {
            Some(v) => Some(duration("--since", v)?),
            None => None,
        };
        attention::log::log(&attention::log::LogRequest { socket, since })
    })();
    match r {
        Ok(r) => {
            show(a.json, &r, || r.human());
            exit::OK
        }
        Err(e) => fail(&e, a.json),
    }
}
