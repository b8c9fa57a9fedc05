//! The panes elsewhere (other servers of this host, other hosts) that need
//! someone, as this server's options keep them: one global option, a line
//! each, that the segment counts with this server's marks and the menu
//! lists; and which hosts and servers are watched now.

use super::super::report::PaneReport;
use super::option;
use crate::tmux::Socket;

/// The other panes that need someone, a line each (see [`Other`]).
pub(super) const OTHERS: &str = "@tmux-wait-attention-others";
/// The hosts watched now (reached, their panes watched), space-separated.
pub(super) const REACHED: &str = "@tmux-wait-attention-hosts";
/// The other servers watched now (every pane armed), space-separated, as
/// `@tmux-wait-servers` names them.
pub(super) const REACHED_SERVERS: &str = "@tmux-wait-attention-servers";

/// A pane elsewhere that needs someone.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Other {
    /// `HOST/%N`, or `SERVER %N` (its socket's name or path).
    pub id: String,
    pub since: f64,
    pub mark: String,
    /// `session:window`.
    pub place: String,
    pub what: String,
    /// `h` (a host: `source` is its spec) or `s` (a server here: its
    /// socket's path).
    pub kind: char,
    pub source: String,
    pub session: String,
    pub pane: String,
}

impl Other {
    pub(super) fn line(&self) -> String {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect()
        };
        [
            clean(&self.id),
            format!("{:.3}", self.since),
            clean(&self.mark),
            clean(&self.place),
            clean(&self.what),
            self.kind.to_string(),
            clean(&self.source),
            clean(&self.session),
            clean(&self.pane),
        ]
        .join("\t")
    }

    pub(super) fn parse(l: &str) -> Option<Other> {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() != 9 {
            return None;
        }
        Some(Other {
            id: f[0].to_owned(),
            since: f[1].parse().ok()?,
            mark: f[2].to_owned(),
            place: f[3].to_owned(),
            what: f[4].to_owned(),
            kind: f[5].chars().next()?,
            source: f[6].to_owned(),
            session: f[7].to_owned(),
            pane: f[8].to_owned(),
        })
    }

    pub(super) fn of(r: &PaneReport, kind: char, source: &str, id: String) -> Other {
        let mut what = r.state.to_owned();
        if let Some(q) = r.question.as_ref().or(r.line.as_ref()) {
            what.push_str(": ");
            what.push_str(q);
        }
        let pane = r.pane_id.rsplit('/').next().unwrap_or("").to_owned();
        Other {
            id,
            since: crate::sys::clock::boot_secs(),
            mark: r.state.to_owned(),
            place: format!("{}:{}", r.session, r.window),
            what,
            kind,
            source: source.to_owned(),
            session: r.session.clone(),
            pane,
        }
    }
}

/// The other panes that need someone, the longest waiting first.
pub(super) fn others(socket: &Socket) -> Vec<Other> {
    let mut v: Vec<Other> = option(socket, OTHERS)
        .lines()
        .filter_map(Other::parse)
        .collect();
    v.sort_by(|a, b| a.since.total_cmp(&b.since));
    v
}

/// Attention is off: no pane elsewhere is marked, no host watched.
pub(super) fn clear(socket: &Socket) {
    let _ = socket.run([
        "set-option",
        "-gqu",
        OTHERS,
        ";",
        "set-option",
        "-gqu",
        REACHED,
        ";",
        "set-option",
        "-gqu",
        REACHED_SERVERS,
    ]);
}
