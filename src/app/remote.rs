//! `tmux-wait remote check|install|exec`: other hosts through ssh.

use super::{fail, print};
use crate::cli::{RemoteArgs, RemoteCommand};
use crate::error::{Kind, Result, exit};
use crate::remote::{self, Host, Ssh};

pub(super) fn remote_command(a: RemoteArgs) -> i32 {
    let ssh = match Ssh::new(a.ssh_config.clone()) {
        Ok(s) => s,
        Err(e) => return fail(&e, false),
    };
    match a.command {
        RemoteCommand::Check { hosts, json } => {
            let hosts = match hosts
                .iter()
                .map(|h| Host::parse(h))
                .collect::<Result<Vec<_>>>()
            {
                Ok(h) => h,
                Err(e) => return fail(&e, json),
            };
            if remote::check(&ssh, &hosts, json) {
                exit::OK
            } else {
                exit::ERROR
            }
        }
        RemoteCommand::Install {
            host,
            from_release,
            release_url,
            signers,
        } => {
            let source = remote::release::Source {
                url: release_url,
                signers,
            };
            match Host::parse(&host).and_then(|h| remote::install(&ssh, &h, &source, from_release))
            {
                Ok(said) => {
                    print(&said);
                    exit::OK
                }
                Err(e) => fail(&e, false),
            }
        }
        RemoteCommand::Exec { host, args } => {
            let json = args.iter().any(|a| a == "--json" || a == "--ndjson");
            let mut line: Vec<std::ffi::OsString> = vec!["tmux-wait".into()];
            line.extend(args.iter().map(Into::into));
            let run = super::subcommand(&line) == Some("run");
            match Host::parse(&host).and_then(|h| remote::exec(&ssh, &h, &args)) {
                Ok(code) => code,
                Err(e) => {
                    let code = fail(&e, json);
                    if run {
                        exit::of_failure(Kind::Usage, true)
                    } else {
                        code
                    }
                }
            }
        }
    }
}
