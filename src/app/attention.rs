//! `any`, `panes` and the plugin's `attention`: arguments to requests, and
//! the results printed.

use super::requests::{Clamps, duration, validate_target};
use super::{fail, print, show};
use crate::cli::{AnyArgs, AttentionArgs, AttentionCommand, PanesArgs};
use crate::error::{Error, Kind, Result, exit};
use crate::matcher::PatternList;
use crate::tmux::Socket;
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

pub(super) fn any_command(socket: Socket, a: &AnyArgs, clamps: &mut Clamps) -> i32 {
    let json = a.json || a.ndjson;
    let r = any_request(socket, a, clamps).and_then(|r| {
        clamps.announce(json);
        attention::any(&r, |pane, elapsed| {
            let mut v = serde_json::to_value(pane).expect("serialisable");
            v["elapsed_seconds"] = elapsed.into();
            print(&v.to_string());
        })
    });
    match r {
        Ok(r) => {
            show(json, &r, || r.human());
            r.exit_code()
        }
        Err(e) => fail(&e, json),
    }
}

pub(super) fn panes_command(socket: Socket, a: &PanesArgs) -> i32 {
    let r = (|| {
        let req = PanesRequest {
            targets: targets(&a.targets)?,
            server: a.server,
            quiet_after: quiet_after(&a.quiet_after)?,
            profiles: profiles(a.profiles.as_deref())?,
            socket,
        };
        attention::panes(&req)
    })();
    match r {
        Ok(r) => {
            show(a.json, &r, || r.human());
            exit::OK
        }
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
    };
    match r {
        Ok(()) => exit::OK,
        Err(e) => fail(&e, false),
    }
}
