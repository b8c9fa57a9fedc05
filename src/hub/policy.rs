//! What the hub asks tmux for a wait, and what it lets a wait ask.

/// The queries every fresh entry answers first, for pane `pane`: the state
/// ([`crate::tmux::PaneState`]), the visible rows, the visible rows with
/// wrapped rows joined.
pub fn entry_queries(pane: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        v(&[
            "display-message",
            "-p",
            "-t",
            pane,
            crate::tmux::PANE_STATE_FORMAT,
        ]),
        v(&["capture-pane", "-p", "-t", pane]),
        v(&["capture-pane", "-p", "-J", "-t", pane]),
    ]
}

/// How many replies of a fresh entry are [`entry_queries`]'.
pub const ENTRY_QUERIES: usize = 3;

/// A query the hub runs for a wait with a fresh entry: reading the pane
/// (display-message -p, capture-pane -p, show-options) or signalling a
/// channel. Nothing that changes what other programs see.
pub fn allowed(cmd: &[String]) -> bool {
    let word = |i: usize| cmd.get(i).map(String::as_str);
    match word(0) {
        Some("display-message") | Some("capture-pane") => cmd.iter().any(|a| a == "-p"),
        Some("show-options") => true,
        Some("wait-for") => word(1) == Some("-S") && cmd.len() == 3,
        _ => false,
    }
}

/// `%N`, nothing else.
pub fn valid_pane(p: &str) -> bool {
    p.len() > 1 && p.len() <= 11 && p.starts_with('%') && p[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_queries_pass() {
        let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(allowed(&v(&[
            "display-message",
            "-p",
            "-t",
            "%1",
            "#{pane_id}"
        ])));
        assert!(allowed(&v(&[
            "capture-pane",
            "-p",
            "-J",
            "-t",
            "%1",
            "-S",
            "-"
        ])));
        assert!(allowed(&v(&["show-options", "-pqv", "-t", "%1", "@x"])));
        assert!(allowed(&v(&["wait-for", "-S", "ready"])));
        assert!(!allowed(&v(&["wait-for", "ready"])));
        assert!(!allowed(&v(&["display-message", "hello"])));
        assert!(!allowed(&v(&["kill-server"])));
        assert!(!allowed(&v(&["switch-client", "-t", "$1"])));
        assert!(!allowed(&[]));
    }

    #[test]
    fn pane_ids() {
        assert!(valid_pane("%0"));
        assert!(valid_pane("%123"));
        for bad in ["", "%", "3", "%a", "%1;x", "%12345678901"] {
            assert!(!valid_pane(bad), "{bad}");
        }
    }
}
