//! The plugin's attention beyond this server: `@tmux-wait-servers` (other
//! tmux servers of this host, by name or socket path) and
//! `@tmux-wait-hosts` (other hosts, `[user@]host[:socket]`, through ssh),
//! space-separated. Their panes that need someone are kept in one global
//! option of this server, `@tmux-wait-attention-others`, a line each, so
//! the segment counts them with this server's marks and the menu lists
//! them; choosing one opens (or goes back to) a window attached to that
//! pane's session there, with the pane selected.
//!
//! Such a pane's mark goes when it works again, or when it is chosen.

use super::super::AnyRequest;
use super::super::machine::{State, Until, What};
use super::super::many::{HostEvent, HostWatch, LocalEvent};
use super::super::report::PaneReport;
use super::others::{OTHERS, Other, REACHED, REACHED_SERVERS, clear, others};
use super::{Profiles, option, say};
use crate::error::{Error, Result};
use crate::matcher::PatternList;
use crate::notify::format_safe;
use crate::remote::{Host, Ssh};
use crate::tmux::Socket;
use crate::tmux::protocol::quote_words;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const HOSTS: &str = "@tmux-wait-hosts";
const SERVERS: &str = "@tmux-wait-servers";
const SSH_CONFIG: &str = "@tmux-wait-ssh-config";
/// The window option that says which remote session a window shows.
const ATTACHED: &str = "@tmux-wait-attached";

fn words(socket: &Socket, name: &str) -> Vec<String> {
    option(socket, name)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The options' words, for the running watch to tell a change of them.
pub(super) fn signature(socket: &Socket) -> String {
    format!(
        " hosts={} servers={}",
        words(socket, HOSTS).join(","),
        words(socket, SERVERS).join(",")
    )
}

/// ssh for the plugin: `@tmux-wait-ssh-config`, else
/// `$TMUX_WAIT_SSH_CONFIG`, else the user's own.
fn ssh_of(socket: &Socket) -> Result<Ssh> {
    let o = option(socket, SSH_CONFIG);
    let config = match o.trim() {
        "" => std::env::var_os("TMUX_WAIT_SSH_CONFIG")
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from),
        p => Some(p.into()),
    };
    Ssh::new(config)
}

/// The needs found elsewhere, kept and written into the option.
struct Book {
    socket: Socket,
    all: Mutex<Vec<Other>>,
    reached: Mutex<Vec<String>>,
    reached_servers: Mutex<Vec<String>>,
}

impl Book {
    /// `host` is watched now (or not): said in `@tmux-wait-attention-hosts`.
    fn reached(&self, host: &str, yes: bool) {
        self.say_reached(&self.reached, REACHED, host, yes);
    }

    /// The server `name` is watched now (or not): said in
    /// `@tmux-wait-attention-servers`.
    fn reached_server(&self, name: &str, yes: bool) {
        self.say_reached(&self.reached_servers, REACHED_SERVERS, name, yes);
    }

    fn say_reached(&self, list: &Mutex<Vec<String>>, option: &str, name: &str, yes: bool) {
        let Ok(mut r) = list.lock() else {
            return;
        };
        let had = r.iter().any(|h| h == name);
        if had == yes {
            return;
        }
        r.retain(|h| h != name);
        if yes {
            r.push(name.to_owned());
        }
        let _ = self.socket.run(["set-option", "-gq", option, &r.join(" ")]);
    }

    fn set(&self, o: Other) {
        let Ok(mut all) = self.all.lock() else { return };
        match all.iter_mut().find(|x| x.id == o.id) {
            Some(x) => {
                let since = x.since;
                *x = Other { since, ..o };
            }
            None => all.push(o),
        }
        self.write(&all);
    }

    fn drop_id(&self, id: &str) {
        let Ok(mut all) = self.all.lock() else { return };
        let n = all.len();
        all.retain(|x| x.id != id);
        if all.len() != n {
            self.write(&all);
        }
    }

    fn write(&self, all: &[Other]) {
        let text = all.iter().map(Other::line).collect::<Vec<_>>().join("\n");
        let _ = if text.is_empty() {
            self.socket.run(["set-option", "-gqu", OTHERS])
        } else {
            self.socket.run(["set-option", "-gq", OTHERS, &text])
        };
        super::marks::refresh(&self.socket);
    }
}

/// A change elsewhere: a need is marked; work, silence or a closed pane
/// clears the mark.
fn take(book: &Book, r: &PaneReport, counts: bool, kind: char, source: &str, id: String) {
    let what = What::of_name(r.state);
    let need = match what {
        Some(What::State(State::Exited)) => r.reason != "pane_closed",
        Some(What::State(s)) => s.needs_someone(),
        Some(What::Bell) => true,
        _ => false,
    };
    if need && counts {
        book.set(Other::of(r, kind, source, id));
    } else if !need && matches!(what, Some(What::State(_))) {
        book.drop_id(&id);
    }
}

/// Start watching the servers and hosts the options name, each in a
/// thread of its own for as long as this process lives.
pub(super) fn start(socket: &Socket, quiet_after: Duration, profiles: &Profiles) {
    let hosts = words(socket, HOSTS);
    let servers = words(socket, SERVERS);
    clear(socket);
    if hosts.is_empty() && servers.is_empty() {
        return;
    }
    let book = Arc::new(Book {
        socket: socket.clone(),
        all: Mutex::new(Vec::new()),
        reached: Mutex::new(Vec::new()),
        reached_servers: Mutex::new(Vec::new()),
    });
    let here = socket.absolute().path();
    let req = AnyRequest {
        socket: socket.clone(),
        targets: Vec::new(),
        server: true,
        until: Until::needs_someone(),
        all: false,
        now: false,
        quiet_after,
        patterns: PatternList::new(&[], false, false, "--pattern").expect("no patterns"),
        timeout: Duration::from_secs(86_400),
        ndjson: false,
        ready: None,
        profiles: profiles.clone(),
    };
    for s in servers {
        let other = if s.contains('/') {
            Socket::Path(s.clone().into())
        } else {
            Socket::Name(s.clone())
        };
        let path = other.absolute().path();
        if path == here {
            continue;
        }
        let (book, req) = (book.clone(), req.clone());
        let _ = std::thread::Builder::new()
            .name("attention-server".into())
            .spawn(move || {
                let source = path.to_string_lossy().into_owned();
                let label = super::super::many::server_label(&source);
                loop {
                    let deadline = Instant::now() + Duration::from_secs(86_400);
                    super::super::many::watch_server(&other, &req, deadline, |e| {
                        match e {
                            LocalEvent::Pane(r) => {
                                let id = format!("{label} {}", r.pane_id);
                                take(&book, &r, true, 's', &source, id);
                            }
                            LocalEvent::State {
                                pane_id,
                                state,
                                gone,
                            } => {
                                if gone || matches!(state, "working" | "quiet") {
                                    book.drop_id(&format!("{label} {pane_id}"));
                                }
                            }
                            LocalEvent::Armed => book.reached_server(&s, true),
                            LocalEvent::Problem(_) | LocalEvent::Failed(_) => {
                                book.reached_server(&s, false);
                            }
                        }
                        true
                    });
                    book.reached_server(&s, false);
                    // Gone (or not started yet): look again later.
                    std::thread::sleep(Duration::from_secs(10));
                }
            });
    }
    if hosts.is_empty() {
        return;
    }
    let ssh = match ssh_of(socket) {
        Ok(s) => s,
        Err(e) => {
            say(socket, &format!("tmux-wait: {}: {}", HOSTS, e.message));
            return;
        }
    };
    let w = HostWatch {
        until: Until::needs_someone(),
        now: false,
        quiet_after,
        patterns: Vec::new(),
        regex: false,
    };
    for spec in hosts {
        let host = match Host::parse(&spec) {
            Ok(h) => h,
            Err(e) => {
                say(socket, &format!("tmux-wait: {HOSTS}: {}", e.message));
                continue;
            }
        };
        let (book, ssh, w, socket) = (book.clone(), ssh.clone(), w.clone(), socket.clone());
        let _ = std::thread::Builder::new()
            .name("attention-host".into())
            .spawn(move || {
                let mut said: Option<&'static str> = None;
                loop {
                    let deadline = Instant::now() + Duration::from_secs(86_400);
                    super::super::many::watch_host(&host, &ssh, &w, deadline, |e| {
                        match e {
                            HostEvent::Pane { report, counts } => {
                                let id = report.pane_id.clone();
                                take(&book, &report, counts, 'h', &host.spec, id);
                            }
                            HostEvent::Problem(p) | HostEvent::Fatal(p) => {
                                book.reached(&host.spec, false);
                                // Said once per kind of trouble, not at every try.
                                if said != Some(p.event) {
                                    said = Some(p.event);
                                    say(&socket, &format!("tmux-wait: {}", p.message));
                                }
                            }
                            HostEvent::Back => {}
                            HostEvent::Armed => {
                                said = None;
                                book.reached(&host.spec, true);
                            }
                            // (Closed while the host was away.)
                            HostEvent::Gone(id) => book.drop_id(&id),
                        }
                        true
                    });
                    std::thread::sleep(Duration::from_secs(60));
                }
            });
    }
}

/// The menu's items for the panes elsewhere: their names, and the tmux
/// command that goes there (`run(args)` runs this helper with `args`).
pub fn menu_items(socket: &Socket, run: &dyn Fn(&str) -> String) -> Vec<(String, String)> {
    others(socket)
        .into_iter()
        .map(|o| {
            let name = format_safe(&format!("go to {} {} {}", o.id, o.place, o.what), 60);
            let cmd = run(&format!(
                "attention go {} -c '#{{client_name}}'",
                crate::state::hex(&o.id)
            ));
            (name, cmd)
        })
        .collect()
}

/// `attention go ID`: to the pane elsewhere that needs someone. The pane
/// is selected there, then a window of the client's session attached to
/// that pane's session (`ssh -t HOST tmux attach`, or a client of the
/// other server) is made, or the one made before is shown.
pub fn go(socket: &Socket, id_hex: &str, client: Option<&str>) -> Result<()> {
    let id = unhex(id_hex).ok_or_else(|| Error::usage("attention go: not an id"))?;
    let Some(o) = others(socket).into_iter().find(|o| o.id == id) else {
        return Err(Error::usage(format!(
            "{} needs nobody now",
            crate::report::sanitize(&id)
        )));
    };
    let select = |sock: Vec<String>| -> Vec<String> {
        let mut v = vec!["tmux".to_owned()];
        v.extend(sock);
        v.extend(
            [
                "select-window",
                "-t",
                &o.pane,
                ";",
                "select-pane",
                "-t",
                &o.pane,
            ]
            .map(String::from),
        );
        v
    };
    let attach = |sock: Vec<String>| -> Vec<String> {
        let mut v = vec!["tmux".to_owned()];
        v.extend(sock);
        v.extend([
            "attach-session".to_owned(),
            "-t".to_owned(),
            format!("={}", o.session),
        ]);
        v
    };
    let command: Vec<String> = if o.kind == 'h' {
        let host = Host::parse(&o.source)?;
        let ssh = ssh_of(socket)?;
        let sock = host.socket_args();
        ssh.output(&host, &quote_words(&select(sock.clone())))?;
        ssh.interactive_words(&host, &quote_words(&attach(sock)))
    } else {
        let other = Socket::Path(o.source.clone().into());
        other.run(&select(Vec::new())[1..])?;
        let mut v: Vec<String> = ["env", "-u", "TMUX", "-u", "TMUX_PANE"]
            .map(String::from)
            .to_vec();
        v.extend(attach(vec!["-S".to_owned(), o.source.clone()]));
        v
    };
    let session = match client {
        Some(c) => socket
            .run(["list-clients", "-F", "#{client_name}\t#{session_id}"])?
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{c}\t")).map(str::to_owned)),
        None => socket
            .run(["display-message", "-p", "#{session_id}"])?
            .into_iter()
            .next(),
    }
    .filter(|s| s.starts_with('$'))
    .ok_or_else(|| Error::usage("attention go: no client to show it on"))?;
    let key = format!("{}\t{}", o.source, o.session);
    let made = socket
        .run([
            "list-windows",
            "-t",
            &session,
            "-F",
            &format!("#{{window_id}}\t#{{{ATTACHED}}}"),
        ])?
        .into_iter()
        .find_map(|l| {
            let (w, k) = l.split_once('\t')?;
            (k == key.replace('\t', " ")).then(|| w.to_owned())
        });
    match made {
        Some(w) => {
            socket.run(["select-window", "-t", &w])?;
        }
        None => {
            let name = format_safe(
                &format!("{}:{}", o.id.split('/').next().unwrap_or(""), o.session),
                40,
            );
            let mut args: Vec<String> = ["new-window", "-P", "-F", "#{window_id}", "-t"]
                .map(String::from)
                .to_vec();
            args.push(format!("{session}:"));
            args.extend(["-n".to_owned(), name]);
            args.extend(command);
            let w = socket.run(&args)?.into_iter().next().unwrap_or_default();
            socket.run([
                "set-option",
                "-wq",
                "-t",
                &w,
                ATTACHED,
                &key.replace('\t', " "),
            ])?;
        }
    }
    if let Some(c) = client {
        let _ = socket.run(["switch-client", "-c", c, "-t", &session]);
    }
    // Chosen: seen.
    let rest: Vec<Other> = others(socket).into_iter().filter(|x| x.id != id).collect();
    let text = rest.iter().map(Other::line).collect::<Vec<_>>().join("\n");
    let _ = if text.is_empty() {
        socket.run(["set-option", "-gqu", OTHERS])
    } else {
        socket.run(["set-option", "-gq", OTHERS, &text])
    };
    super::marks::refresh(socket);
    Ok(())
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_the_option_round_trip() {
        let o = Other {
            id: "gpu/%3".into(),
            since: 12.5,
            mark: "asking".into(),
            place: "main:1".into(),
            what: "asking: ok?\tyes".into(),
            kind: 'h',
            source: "gpu".into(),
            session: "main".into(),
            pane: "%3".into(),
        };
        let back = Other::parse(&o.line()).unwrap();
        assert_eq!(back.what, "asking: ok? yes");
        assert_eq!(back.id, o.id);
        assert_eq!(
            unhex(&crate::state::hex("a b/%3")).as_deref(),
            Some("a b/%3")
        );
        assert_eq!(unhex("zz"), None);
    }
}
