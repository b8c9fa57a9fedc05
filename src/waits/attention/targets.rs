//! Which panes a wait covers: panes, windows and sessions as given, or the
//! current session, or the whole server; and, as panes come and go, which
//! of the server's panes belong to them now.

use crate::error::{Error, Kind, Result};
use crate::tmux::{PaneInfo, Socket, Version};

/// What a target names, by id (a window or session keeps the panes that
/// appear in it later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Server,
    Session(String),
    Window(String),
    Pane(String),
}

/// A pane as the server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub pane_id: String,
    pub pane_pid: u32,
    pub dead: bool,
    pub tty: String,
    pub session_id: String,
    pub window_id: String,
    pub window_index: i64,
    pub session_name: String,
    /// The tmux server's own pid (the same on every row).
    pub server_pid: u32,
}

const ROW_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_tty}\t#{session_id}\t#{window_id}\t#{window_index}\t#{pid}\t#{session_name}";

impl Row {
    fn parse(line: &str) -> Option<Row> {
        // The session's name comes last: it is the one field that may hold
        // a tab.
        let f: Vec<&str> = line.splitn(9, '\t').collect();
        if f.len() != 9 || !f[0].starts_with('%') {
            return None;
        }
        Some(Row {
            pane_id: f[0].to_owned(),
            pane_pid: f[1].parse().unwrap_or(0),
            dead: f[2] == "1",
            tty: f[3].to_owned(),
            session_id: f[4].to_owned(),
            window_id: f[5].to_owned(),
            window_index: f[6].parse().unwrap_or(0),
            server_pid: f[7].parse().unwrap_or(0),
            session_name: f[8].to_owned(),
        })
    }

    pub fn info(&self, version: Version) -> PaneInfo {
        PaneInfo {
            pane_id: self.pane_id.clone(),
            session_id: self.session_id.clone(),
            pane_pid: self.pane_pid,
            pane_dead: self.dead,
            pane_tty: self.tty.clone(),
            version,
            server: None,
        }
    }

    fn within(&self, s: &Scope) -> bool {
        match s {
            Scope::Server => true,
            Scope::Session(id) => self.session_id == *id,
            Scope::Window(id) => self.window_id == *id,
            Scope::Pane(id) => self.pane_id == *id,
        }
    }
}

/// What kind of thing a target names, from how it is written: `%N` and
/// `window.pane` name a pane, `@N` and `session:window` a window, `$N`
/// and a bare name a session (tmux keeps `:` and `.` out of session
/// names).
fn kind_of(t: &str) -> char {
    if t.starts_with('%') || t.starts_with('{') {
        'p'
    } else if t.starts_with('@') {
        'w'
    } else if t.starts_with('$') || t.starts_with('=') && !t.contains(':') {
        's'
    } else if let Some((_, rest)) = t.split_once(':') {
        if rest.contains('.') { 'p' } else { 'w' }
    } else if t.contains('.') {
        'p'
    } else {
        's'
    }
}

/// The scopes `targets` name (checked against the server), or the
/// current session's when there are none (`server`: the whole server).
pub fn resolve(socket: &Socket, targets: &[String], server: bool) -> Result<Vec<Scope>> {
    if server {
        return Ok(vec![Scope::Server]);
    }
    if targets.is_empty() {
        let env = std::env::var("TMUX_PANE")
            .ok()
            .filter(|p| !p.is_empty() && socket.is_current_server());
        let mut args = vec!["display-message".to_owned(), "-p".to_owned()];
        if let Some(p) = env {
            args.extend(["-t".to_owned(), p]);
        }
        args.push("#{session_id}".into());
        let id = first(socket.run(&args)?);
        if !id.starts_with('$') {
            return Err(Error::new(
                Kind::NoPane,
                "tmux named no session (is there a session on this server?)",
            ));
        }
        return Ok(vec![Scope::Session(id)]);
    }
    let mut out = Vec::new();
    for t in targets {
        let not_found = |e: Error| match e.kind {
            Kind::NoPane | Kind::Tmux => Error::new(
                Kind::NoPane,
                format!(
                    "no pane, window or session matches target '{}' ({})",
                    t.escape_debug(),
                    e.message
                ),
            ),
            _ => e,
        };
        let scope = match kind_of(t) {
            'p' => Scope::Pane(
                crate::tmux::resolve_pane(socket, Some(t))
                    .map_err(not_found)?
                    .pane_id,
            ),
            'w' => Scope::Window(first(
                socket
                    .run(["list-panes", "-t", t, "-F", "#{window_id}"])
                    .map_err(not_found)?,
            )),
            _ => Scope::Session(first(
                socket
                    .run(["list-panes", "-s", "-t", t, "-F", "#{session_id}"])
                    .map_err(not_found)?,
            )),
        };
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    Ok(out)
}

fn first(lines: Vec<String>) -> String {
    lines
        .into_iter()
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Every pane of the server.
pub fn list(socket: &Socket) -> Result<Vec<Row>> {
    let lines = socket.run(["list-panes", "-a", "-F", ROW_FORMAT])?;
    crate::trace!("list-panes: {lines:?}");
    Ok(lines.iter().filter_map(|l| Row::parse(l)).collect())
}

/// The panes within `scopes`, each once, in the order the scopes were
/// given and then the server's.
pub fn select(rows: &[Row], scopes: &[Scope]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for s in scopes {
        for r in rows.iter().filter(|r| r.within(s)) {
            if !out.iter().any(|o| o.pane_id == r.pane_id) {
                out.push(r.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_target_names() {
        for (t, k) in [
            ("%3", 'p'),
            ("{last}", 'p'),
            ("api:1.2", 'p'),
            ("1.2", 'p'),
            ("@4", 'w'),
            ("api:1", 'w'),
            ("api:", 'w'),
            ("$2", 's'),
            ("api", 's'),
            ("=api", 's'),
        ] {
            assert_eq!(kind_of(t), k, "{t}");
        }
    }

    #[test]
    fn rows_and_scopes() {
        let r = Row::parse("%1\t42\t0\t/dev/pts/3\t$0\t@0\t1\t40\tmy\tsession").unwrap();
        assert_eq!(
            (r.session_name.as_str(), r.window_index, r.server_pid),
            ("my\tsession", 1, 40)
        );
        let r2 = Row::parse("%2\t43\t1\t/dev/pts/4\t$1\t@1\t0\t40\tother").unwrap();
        let rows = vec![r.clone(), r2.clone()];
        let sel = select(
            &rows,
            &[
                Scope::Pane("%2".into()),
                Scope::Session("$0".into()),
                Scope::Server,
            ],
        );
        assert_eq!(
            sel.iter().map(|r| r.pane_id.as_str()).collect::<Vec<_>>(),
            ["%2", "%1"]
        );
        assert!(Row::parse("garbage").is_none());
    }
}
