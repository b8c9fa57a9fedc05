//! `any` and `panes` over several servers of this host and other hosts.
//! Each server is watched as `any` watches one, in a thread of its own;
//! each host through ssh, its tmux-wait's lines read in a thread of its
//! own (`host`). Their events meet in one channel: the first pane that
//! needs someone wins, `--all` waits for every pane of every source, and
//! `--ndjson` prints each as it comes. A server that goes away, or a host
//! that cannot be reached, is said, and the others go on.

mod host;
mod local;
mod servers;

use super::machine::What;
pub use super::report::{AnyResult, PaneReport, PanesResult, Pending, Problem};
use super::{AnyRequest, PanesRequest};
use crate::error::{Error, Kind, Result};
use crate::remote::{Host, Ssh};
use crate::report::seconds;
use crate::tmux::Socket;
pub use host::{HostEvent, HostWatch, report_of, word};
pub use local::LocalEvent;
pub use servers::live_servers;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{Sender, channel};
use std::time::Instant;

/// Where a wait looks: servers of this host, and hosts.
#[derive(Debug, Clone)]
pub struct Sources {
    pub servers: Vec<Socket>,
    /// The one server here was not named (`$TMUX`'s, or tmux's default):
    /// left out quietly when it does not run.
    pub implicit: bool,
    /// `--all-servers`: a server that starts during the wait is watched
    /// too.
    pub all_servers: bool,
    pub hosts: Vec<Host>,
    pub ssh: Option<Ssh>,
    /// The `--pattern`s as typed and `--regex`, for the hosts.
    pub patterns: Vec<String>,
    pub regex: bool,
}

impl Sources {
    /// The sources a command line names: `servers` (its `-L`/`-S`, in
    /// order; none: `current`), every live server with `all_servers`,
    /// and `hosts`. None when that is one server here: the plain wait.
    pub fn new(
        servers: &[Socket],
        current: &Socket,
        all_servers: bool,
        hosts: &[String],
        ssh_config: Option<PathBuf>,
    ) -> Result<Option<Sources>> {
        if servers.len() <= 1 && !all_servers && hosts.is_empty() {
            return Ok(None);
        }
        let mut list: Vec<Socket> = servers.to_vec();
        let implicit = list.is_empty() && !all_servers;
        if list.is_empty() && !all_servers {
            list.push(current.clone());
        }
        if all_servers {
            list.extend(live_servers());
        }
        let mut seen: Vec<PathBuf> = Vec::new();
        list.retain(|s| {
            let p = s.absolute().path();
            let new = !seen.contains(&p);
            seen.push(p);
            new
        });
        let hosts = hosts
            .iter()
            .map(|h| Host::parse(h))
            .collect::<Result<Vec<Host>>>()?;
        let mut names: Vec<&str> = Vec::new();
        for h in &hosts {
            if names.contains(&h.spec.as_str()) {
                return Err(Error::usage(format!("--host {} is given twice", h.spec)));
            }
            names.push(&h.spec);
        }
        if list.is_empty() && hosts.is_empty() {
            return Err(Error::new(
                Kind::NoServer,
                "--all-servers: no tmux server of yours runs on this host",
            ));
        }
        let ssh = if hosts.is_empty() {
            None
        } else {
            Some(Ssh::new(ssh_config)?)
        };
        Ok(Some(Sources {
            servers: list,
            implicit,
            all_servers,
            hosts,
            ssh,
            patterns: Vec::new(),
            regex: false,
        }))
    }

    fn count(&self) -> usize {
        self.servers.len() + self.hosts.len()
    }
}

/// How a server is named in lines for people: its name when its socket
/// is in tmux's directory (`-L NAME`), else its path.
pub fn server_label(path: &str) -> String {
    let dir = Socket::Name("x".into()).path();
    let p = std::path::Path::new(path);
    let name = match (p.parent(), dir.parent()) {
        (Some(a), Some(b)) if a == b => p.file_name().map(|n| n.to_string_lossy().into_owned()),
        _ => None,
    };
    crate::report::sanitize(&name.unwrap_or_else(|| path.to_owned()))
}

/// A pane's line for people when several servers or hosts are watched:
/// a remote pane is `HOST/%N`; a pane here is led by its server's name.
pub fn human(r: &PaneReport) -> String {
    match &r.host {
        Some(_) => r.human(),
        None => format!("{} {}", server_label(&r.server), r.human()),
    }
}

/// `any`'s result for people, over several sources.
pub fn human_result(r: &AnyResult) -> String {
    match (r.outcome, &r.pane, &r.panes) {
        ("attention", Some(p), _) => human(p),
        ("all", _, Some(ps)) => ps.iter().map(human).collect::<Vec<_>>().join("\n"),
        _ => {
            let mut r = r.clone();
            for p in &mut r.pending {
                if let Some(s) = p.server.take() {
                    p.pane_id = format!("{} {}", server_label(&s), p.pane_id);
                }
            }
            r.human()
        }
    }
}

/// Watch every pane of a server here until `deadline` (see `local`).
pub fn watch_server(
    socket: &Socket,
    req: &AnyRequest,
    deadline: Instant,
    sink: impl FnMut(LocalEvent) -> bool,
) {
    local::watch(socket, req, false, deadline, sink);
}

/// Watch a host until `deadline` (see `host`).
pub fn watch_host(
    h: &Host,
    ssh: &Ssh,
    w: &HostWatch,
    deadline: Instant,
    sink: impl FnMut(HostEvent) -> bool,
) {
    host::watch(h, ssh, w, deadline, sink);
}

enum Msg {
    Armed(usize),
    /// A host reached again after its connection dropped.
    Back(usize),
    Report(usize, PaneReport),
    State(usize, String, &'static str, bool),
    Problem(usize, Problem, bool),
    Failed(Error),
    Ended(usize),
    Signal(i32),
    /// A server may have started here (`--all-servers`).
    NewServers,
}

/// Start a thread per source; each ends by itself at `deadline` (and
/// with the process: the answer found, nobody waits for the others).
fn start(req: &AnyRequest, src: &Sources, tail: bool, deadline: Instant, tx: &Sender<Msg>) {
    for (i, s) in src.servers.iter().enumerate() {
        start_server(i, s, req, tail, deadline, tx);
    }
    if src.all_servers {
        let tx = tx.clone();
        servers::on_new_sockets(deadline, move || tx.send(Msg::NewServers).is_ok());
    }
    let base = src.servers.len();
    let w = HostWatch {
        until: req.until,
        now: req.now,
        quiet_after: req.quiet_after,
        patterns: src.patterns.clone(),
        regex: src.regex,
    };
    for (k, h) in src.hosts.iter().enumerate() {
        let i = base + k;
        let Some(ssh) = src.ssh.clone() else { continue };
        let (h, w, tx) = (h.clone(), w.clone(), tx.clone());
        let _ = std::thread::Builder::new()
            .name("any-host".into())
            .spawn(move || {
                host::watch(&h, &ssh, &w, deadline, |e| {
                    let m = match e {
                        HostEvent::Back => Msg::Back(i),
                        HostEvent::Armed => Msg::Armed(i),
                        HostEvent::Pane { report, counts } => {
                            let st = Msg::State(i, report.pane_id.clone(), report.state, false);
                            if What::of_name(report.state)
                                .is_some_and(|w| matches!(w, super::What::State(_)))
                                && tx.send(st).is_err()
                            {
                                return false;
                            }
                            if !counts {
                                return true;
                            }
                            Msg::Report(i, *report)
                        }
                        HostEvent::Problem(p) => Msg::Problem(i, p, false),
                        HostEvent::Fatal(p) => Msg::Problem(i, p, true),
                        HostEvent::Gone(pane) => Msg::State(i, pane, "exited", true),
                    };
                    tx.send(m).is_ok()
                });
                let _ = tx.send(Msg::Ended(i));
            });
    }
}

/// Watch server `s`, source `i`, in a thread of its own.
fn start_server(
    i: usize,
    s: &Socket,
    req: &AnyRequest,
    tail: bool,
    deadline: Instant,
    tx: &Sender<Msg>,
) {
    let (s, req, tx) = (s.clone(), req.clone(), tx.clone());
    let _ = std::thread::Builder::new()
        .name("any-server".into())
        .spawn(move || {
            local::watch(&s, &req, tail, deadline, |e| {
                let m = match e {
                    LocalEvent::Armed => Msg::Armed(i),
                    LocalEvent::Pane(r) => Msg::Report(i, r),
                    LocalEvent::State {
                        pane_id,
                        state,
                        gone,
                    } => Msg::State(i, pane_id, state, gone),
                    LocalEvent::Problem(p) => Msg::Problem(i, p, true),
                    LocalEvent::Failed(e) => Msg::Failed(e),
                };
                tx.send(m).is_ok()
            });
            let _ = tx.send(Msg::Ended(i));
        });
}

/// Each source's panes and their states, as the events said.
struct Panes {
    /// (pane id, state, gone) per source.
    of: Vec<Vec<(String, &'static str, bool)>>,
    /// Each source's socket path (here) or host.
    server: Vec<String>,
    /// Which sources are servers here (the others are hosts).
    local: Vec<bool>,
}

impl Panes {
    fn set(&mut self, i: usize, pane: String, state: &'static str, gone: bool) {
        let v = &mut self.of[i];
        match v.iter_mut().find(|p| p.0 == pane) {
            Some(p) => {
                p.1 = state;
                p.2 |= gone;
            }
            None => v.push((pane, state, gone)),
        }
    }

    /// Every pane but `except` and its state; a pane here names its
    /// server (a remote one's id names its host).
    fn pending(&self, except: Option<(usize, &str)>) -> Vec<Pending> {
        let mut out = Vec::new();
        for (i, v) in self.of.iter().enumerate() {
            for (p, st, _) in v {
                if except.is_some_and(|(j, q)| j == i && q == p) {
                    continue;
                }
                out.push(Pending {
                    pane_id: p.clone(),
                    state: st,
                    server: self.local[i].then(|| self.server[i].clone()),
                });
            }
        }
        out
    }
}

/// Say a problem: a line in `--ndjson`, else one on stderr (kept for
/// `--json`'s `problems`).
fn say(p: &Problem, ndjson: bool, json: bool, emit: &mut impl FnMut(&serde_json::Value)) {
    if ndjson {
        emit(&serde_json::to_value(p).expect("serialisable"));
    } else if !json {
        let mut err = std::io::stderr().lock();
        use std::io::Write;
        let _ = writeln!(err, "tmux-wait: {}", crate::report::sanitize(&p.message));
    }
}

/// `any` over `src`. `emit` prints each `--ndjson` line (a pane's report,
/// with `elapsed_seconds`, or a server's or host's event); `json`: the
/// result is printed as JSON (problems then go into it, not to stderr).
pub fn any(
    req: &AnyRequest,
    src: &Sources,
    json: bool,
    mut emit: impl FnMut(&serde_json::Value),
) -> Result<AnyResult> {
    let start_at = Instant::now();
    let deadline = start_at + req.timeout;
    let n = src.count();
    let (tx, rx) = channel::<Msg>();
    let mut server: Vec<String> = src
        .servers
        .iter()
        .map(|s| s.absolute().path().to_string_lossy().into_owned())
        .collect();
    server.extend(src.hosts.iter().map(|h| h.spec.clone()));
    let mut local = vec![true; src.servers.len()];
    local.resize(n, false);
    let mut panes = Panes {
        of: vec![Vec::new(); n],
        server,
        local,
    };
    // The servers here (those that start during the wait come last).
    let mut here: Vec<(usize, Socket)> = src.servers.iter().cloned().enumerate().collect();
    start(req, src, !req.ndjson, deadline, &tx);
    if src.servers.is_empty() {
        route_signals(&tx);
    }
    let mut armed = vec![false; n];
    let mut ended = vec![false; n];
    // A host tried once and not reached yet: the others need not wait
    // for it to say they are ready.
    let mut tried = vec![false; n];
    let mut ready_said = false;
    let mut problems: Vec<Problem> = Vec::new();
    let mut reached: HashMap<(usize, String), PaneReport> = HashMap::new();
    let done = |outcome, pane, all: Option<Vec<PaneReport>>, pending, problems| AnyResult {
        outcome,
        pane,
        panes: all,
        pending,
        elapsed_seconds: seconds(start_at.elapsed()),
        effective_timeout: seconds(req.timeout),
        problems,
    };
    loop {
        let now = Instant::now();
        let msg = if now >= deadline {
            None
        } else {
            rx.recv_timeout(deadline - now).ok()
        };
        let Some(msg) = msg else {
            let got = req
                .all
                .then(|| reached.values().cloned().collect::<Vec<_>>());
            return Ok(done("timeout", None, got, panes.pending(None), problems));
        };
        match msg {
            Msg::Signal(sig) => return Err(Error::new(Kind::Interrupted(sig), "interrupted")),
            Msg::Failed(e) => return Err(e),
            // (Said before what changed there meanwhile.)
            Msg::Back(i) if req.ndjson => {
                emit(&serde_json::json!({"event": "host_connected", "host": panes.server[i]}));
            }
            Msg::Back(_) => {}
            Msg::Armed(i) => {
                // (A server that started during the wait is said once
                // watched: what changes on it from now on counts.)
                let added = i >= src.count() && !armed[i];
                armed[i] = true;
                if added && req.ndjson {
                    emit(&serde_json::json!({"event": "server_added", "server": panes.server[i]}));
                }
            }
            Msg::State(i, pane, state, gone) => panes.set(i, pane, state, gone),
            Msg::Report(i, r) => {
                if req.ndjson {
                    let mut v = serde_json::to_value(&r).expect("serialisable");
                    v["elapsed_seconds"] = seconds(start_at.elapsed()).into();
                    emit(&v);
                } else if !req.all {
                    let pending = panes.pending(Some((i, &r.pane_id)));
                    return Ok(done("attention", Some(r), None, pending, problems));
                } else {
                    reached.entry((i, r.pane_id.clone())).or_insert(r);
                }
            }
            Msg::Problem(i, p, fatal) => {
                tried[i] = true;
                // An implicit server that does not run is no news.
                let quiet = fatal && i == 0 && src.implicit && !armed[0] && p.event == "no_server";
                if !quiet {
                    say(&p, req.ndjson, json, &mut emit);
                    problems.push(p);
                }
                if fatal {
                    ended[i] = true;
                    for pane in &mut panes.of[i] {
                        pane.2 = true;
                    }
                }
            }
            Msg::Ended(i) => ended[i] = true,
            Msg::NewServers => {
                for s in live_servers() {
                    let path = s.absolute().path();
                    if here.iter().any(|(_, h)| h.absolute().path() == path) {
                        continue;
                    }
                    let i = armed.len();
                    let path = path.to_string_lossy().into_owned();
                    armed.push(false);
                    ended.push(false);
                    tried.push(false);
                    panes.of.push(Vec::new());
                    panes.server.push(path);
                    panes.local.push(true);
                    start_server(i, &s, req, !req.ndjson, deadline, &tx);
                    here.push((i, s));
                }
            }
        }
        let n = armed.len();
        let settled = (0..n).all(|i| armed[i] || ended[i]);
        if !ready_said && (0..n).all(|i| armed[i] || ended[i] || tried[i]) {
            ready_said = true;
            if !src.servers.is_empty() {
                route_signals(&tx);
            }
            if let Some(ch) = &req.ready {
                let on = here
                    .iter()
                    .find(|(i, _)| armed[*i])
                    .map_or(&req.socket, |(_, s)| s);
                let _ = on.run(["wait-for", "-S", "--", ch]);
            }
        }
        if (0..n).all(|i| ended[i]) {
            if (0..n).all(|i| !armed[i]) {
                let e = problems.last().map_or_else(
                    || Error::new(Kind::NoServer, "no server or host could be watched"),
                    |p| Error::new(kind_of(p.event), p.message.clone()),
                );
                return Err(e);
            }
            if !req.all {
                return Ok(done("timeout", None, None, panes.pending(None), problems));
            }
        }
        if req.all && settled && !reached.is_empty() {
            let waiting = panes.of.iter().enumerate().any(|(i, v)| {
                !ended[i]
                    && v.iter()
                        .any(|(p, _, gone)| !gone && !reached.contains_key(&(i, p.clone())))
            });
            if !waiting {
                let mut all: Vec<((usize, String), PaneReport)> = reached.into_iter().collect();
                all.sort_by(|a, b| a.0.cmp(&b.0));
                let all = all.into_iter().map(|(_, r)| r).collect();
                return Ok(done("all", None, Some(all), Vec::new(), problems));
            }
        }
    }
}

fn kind_of(event: &str) -> Kind {
    match event {
        "host_unreachable" => Kind::HostUnreachable,
        "no_helper" => Kind::NoHelper,
        "server_gone" => Kind::ServerExited,
        _ => Kind::NoServer,
    }
}

fn route_signals(tx: &Sender<Msg>) {
    let tx = tx.clone();
    crate::signals::route_to(move |sig| {
        let _ = tx.send(Msg::Signal(sig));
    });
}

/// `panes` over several sources: every pane of each server here, and of
/// each host (its tmux-wait's `panes --json`), side by side.
pub fn panes(req: &PanesRequest, src: &Sources) -> Result<ManyPanes> {
    let mut results: Vec<(usize, std::result::Result<Vec<PaneReport>, Problem>)> = Vec::new();
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (i, s) in src.servers.iter().enumerate() {
            let r = PanesRequest {
                socket: s.clone(),
                targets: Vec::new(),
                server: true,
                ..req.clone()
            };
            handles.push(scope.spawn(move || (i, local_panes(&r))));
        }
        for (k, h) in src.hosts.iter().enumerate() {
            let ssh = src.ssh.as_ref();
            handles.push(scope.spawn(move || (src.servers.len() + k, remote_panes(h, ssh, req))));
        }
        for h in handles {
            if let Ok(r) = h.join() {
                results.push(r);
            }
        }
    });
    results.sort_by_key(|r| r.0);
    let mut out = ManyPanes {
        panes: Vec::new(),
        problems: Vec::new(),
    };
    for (i, r) in results {
        match r {
            Ok(ps) => out.panes.extend(ps),
            Err(p) if i == 0 && src.implicit && p.event == "no_server" => {}
            Err(p) => out.problems.push(p),
        }
    }
    if out.panes.is_empty()
        && let Some(p) = out.problems.last()
    {
        return Err(Error::new(kind_of(p.event), p.message.clone()));
    }
    Ok(out)
}

/// `panes` over several sources: the panes, and what could not be seen.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ManyPanes {
    pub panes: Vec<PaneReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
}

impl ManyPanes {
    /// The table of `panes`, a pane here led by its server's name (a
    /// remote one's id names its host), then what could not be seen.
    pub fn human(&self) -> String {
        let ids: Vec<String> = self
            .panes
            .iter()
            .map(|p| match p.host {
                Some(_) => crate::report::sanitize(&p.pane_id),
                None => format!("{} {}", server_label(&p.server), p.pane_id),
            })
            .collect();
        let w = ids
            .iter()
            .map(|i| i.chars().count())
            .max()
            .unwrap_or(0)
            .max(4);
        let mut ps = self.panes.clone();
        for p in &mut ps {
            p.pane_id.clear();
        }
        let table = PanesResult { panes: ps }.human();
        let mut out = String::new();
        for (n, line) in table.lines().enumerate() {
            // (Each line of the one-server table, its PANE column, 6 wide,
            // replaced.)
            let rest = line.get(7..).unwrap_or("");
            let id = if n == 0 { "PANE" } else { &ids[n - 1] };
            if n > 0 {
                out.push('\n');
            }
            out.push_str(&format!("{id:<w$} {rest}"));
        }
        for p in &self.problems {
            out.push_str(&format!("\n{}", crate::report::sanitize(&p.message)));
        }
        out
    }
}

/// One server's panes, each naming it.
pub fn local_panes(req: &PanesRequest) -> std::result::Result<Vec<PaneReport>, Problem> {
    let server = req.socket.absolute().path().to_string_lossy().into_owned();
    match super::snapshot::panes(req) {
        Ok(r) => Ok(r
            .panes
            .into_iter()
            .map(|mut p| {
                p.server.clone_from(&server);
                p
            })
            .collect()),
        Err(e) => Err(Problem {
            event: if e.kind == Kind::NoServer {
                "no_server"
            } else {
                "error"
            },
            server: Some(server.clone()),
            host: None,
            message: format!("{server}: {}", e.message),
        }),
    }
}

fn remote_panes(
    h: &Host,
    ssh: Option<&Ssh>,
    req: &PanesRequest,
) -> std::result::Result<Vec<PaneReport>, Problem> {
    let problem = |e: Error| Problem {
        event: match e.kind {
            Kind::HostUnreachable => "host_unreachable",
            Kind::NoHelper => "no_helper",
            _ => "error",
        },
        server: None,
        host: Some(h.spec.clone()),
        message: e.message,
    };
    let ssh = ssh.ok_or_else(|| problem(Error::usage("no ssh")))?;
    let r = ssh.preflight(h).map_err(problem)?;
    crate::remote::check_helper(h, &r).map_err(problem)?;
    let mut words = h.socket_args();
    words.extend([
        "panes".to_owned(),
        "--server".to_owned(),
        "--json".to_owned(),
        format!("--quiet-after={:.3}", req.quiet_after.as_secs_f64()),
    ]);
    let out = ssh
        .output(h, &crate::remote::ssh::helper_line(&words))
        .map_err(problem)?;
    let v: serde_json::Value = serde_json::from_str(out.trim()).map_err(|_| {
        problem(Error::new(
            Kind::Tmux,
            format!("{}: its tmux-wait answered no JSON", h.spec),
        ))
    })?;
    Ok(v["panes"]
        .as_array()
        .map(|ps| ps.iter().filter_map(|p| report_of(p, h)).collect())
        .unwrap_or_default())
}
