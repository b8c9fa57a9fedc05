//! A host as the command line names it, `[user@]host[:socket]`, checked
//! before anything reaches ssh (the words sent to its shell are quoted by
//! `tmux::protocol::quote`).
//!
//! ssh joins its command's words with spaces and hands the string to the
//! remote user's login shell, so every word is quoted here; a host name is
//! refused unless it is letters, digits and `. _ -` (ssh itself would put
//! it into a `ProxyCommand`'s shell line through `%h`).

use crate::error::{Error, Result};

/// A remote tmux server to reach through ssh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// As given: names the host in reports (`SPEC/%3`).
    pub spec: String,
    pub user: Option<String>,
    /// The host name or ssh config alias (an IPv6 address without its
    /// brackets).
    pub name: String,
    /// `-L NAME` (no `/`) or `-S PATH` on the host; None: its default.
    pub socket: Option<String>,
}

fn plain_word(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 253
        && !w.starts_with(['-', '.'])
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Host {
    /// `[user@]host[:socket]` (an IPv6 address in brackets: `[::1]:api`).
    pub fn parse(spec: &str) -> Result<Host> {
        let bad = |why: &str| {
            Error::usage(format!(
                "--host '{}': {why} (expected [user@]host[:socket])",
                spec.chars().take(80).collect::<String>().escape_debug()
            ))
        };
        if spec.starts_with('-') {
            return Err(bad("a host may not start with '-'"));
        }
        if spec.is_empty() || spec.len() > 512 || spec.chars().any(char::is_control) {
            return Err(bad("empty, too long, or holding control characters"));
        }
        let (user, rest) = match spec.split_once('@') {
            Some((u, r)) => (Some(u), r),
            None => (None, spec),
        };
        if let Some(u) = user
            && !plain_word(u)
        {
            return Err(bad("a user name is letters, digits and . _ -"));
        }
        let (name, socket) = if let Some(v6) = rest.strip_prefix('[') {
            let (addr, after) = v6.split_once(']').ok_or_else(|| bad("an unclosed '['"))?;
            if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
                return Err(bad("not an IPv6 address in brackets"));
            }
            let socket = match after {
                "" => None,
                s => Some(s.strip_prefix(':').ok_or_else(|| bad("text after ']'"))?),
            };
            (addr, socket)
        } else {
            match rest.split_once(':') {
                Some((h, s)) => (h, Some(s)),
                None => (rest, None),
            }
        };
        if !name.contains(':') && !plain_word(name) {
            return Err(bad("a host name is letters, digits and . _ -"));
        }
        if let Some(s) = socket
            && (s.is_empty() || s.starts_with('-') || s.len() > 200)
        {
            return Err(bad("a socket is a name or a path, not starting with '-'"));
        }
        Ok(Host {
            spec: spec.to_owned(),
            user: user.map(str::to_owned),
            name: name.to_owned(),
            socket: socket.map(str::to_owned),
        })
    }

    /// What ssh is given: `user@host`.
    pub fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.name),
            None => self.name.clone(),
        }
    }

    /// `-L NAME` or `-S PATH` for a tmux-wait on the host.
    pub fn socket_args(&self) -> Vec<String> {
        match &self.socket {
            None => Vec::new(),
            Some(s) if s.contains('/') => vec!["-S".into(), s.clone()],
            Some(s) => vec!["-L".into(), s.clone()],
        }
    }

    /// A pane of this host as reports name it: `SPEC/%3`.
    pub fn qualify(&self, pane: &str) -> String {
        format!("{}/{pane}", self.spec)
    }
}

/// A remote pane's id, `SPEC/%N`, as its host's spec and the pane's own
/// id; None for anything else (a local `%N`).
pub fn split_qualified(id: &str) -> Option<(&str, &str)> {
    let (spec, pane) = id.rsplit_once('/')?;
    let digits = pane.strip_prefix('%')?;
    (!spec.is_empty()
        && !digits.is_empty()
        && digits.len() <= 10
        && digits.bytes().all(|b| b.is_ascii_digit()))
    .then_some((spec, pane))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_as_ssh_takes_them() {
        let h = Host::parse("me@build.example:api").unwrap();
        assert_eq!(h.destination(), "me@build.example");
        assert_eq!(h.socket_args(), ["-L", "api"]);
        assert_eq!(h.qualify("%3"), "me@build.example:api/%3");
        let h = Host::parse("gpu:/tmp/tmux-1000/default").unwrap();
        assert_eq!(h.socket_args(), ["-S", "/tmp/tmux-1000/default"]);
        assert_eq!(h.user, None);
        let h = Host::parse("[::1]:x").unwrap();
        assert_eq!((h.name.as_str(), h.destination().as_str()), ("::1", "::1"));
        assert_eq!(
            Host::parse("box").unwrap().socket_args(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn names_that_could_run_something_are_refused() {
        for bad in [
            "-oProxyCommand=sh",
            "a;touch x",
            "$(reboot)",
            "a b",
            "`id`@h",
            "h\nx",
            "me@-h",
            "h:-x",
            "",
            "[::1",
            "a|b",
            "h'",
        ] {
            let e = Host::parse(bad).unwrap_err();
            assert_eq!(e.kind, crate::error::Kind::Usage, "{bad}");
            assert_eq!(e.message.lines().count(), 1, "{bad}");
        }
    }

    #[test]
    fn qualified_pane_ids() {
        assert_eq!(split_qualified("gpu/%3"), Some(("gpu", "%3")));
        assert_eq!(
            split_qualified("me@gpu:/tmp/s/x/%12"),
            Some(("me@gpu:/tmp/s/x", "%12"))
        );
        assert_eq!(split_qualified("%3"), None);
        assert_eq!(split_qualified("gpu/%"), None);
        assert_eq!(split_qualified("/%3"), None);
        assert_eq!(split_qualified("gpu/%3x"), None);
    }
}
