//! tmux's command language, where tmux-wait has to write it (a command list
//! that `if-shell` parses, a pipe's shell command that `pipe-pane` expands
//! as a format): quoting, so that no argument is ever read as anything but
//! itself.

/// Quote `arg` as one word of tmux's command language: single quotes, a
/// quote inside as `'\''` (tmux takes a backslash outside quotes as an
/// escape, as a POSIX shell does).
pub fn quote(arg: &str) -> String {
    let mut s = String::with_capacity(arg.len() + 2);
    s.push('\'');
    for c in arg.chars() {
        if c == '\'' {
            s.push_str("'\\''");
        } else {
            s.push(c);
        }
    }
    s.push('\'');
    s
}

/// `cmds` as one command list in tmux's language (`a ; b`), each argument
/// quoted.
pub fn command_list(cmds: &[Vec<String>]) -> String {
    cmds.iter()
        .map(|c| c.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" ; ")
}

/// Protect a shell command that tmux expands as a format before running it
/// (`pipe-pane`, `run-shell`): `#` and `%` (strftime) doubled.
pub fn format_escape(s: &str) -> String {
    s.replace('#', "##").replace('%', "%%")
}

/// POSIX single quoting for `sh -c`: `'` becomes `'\''`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("#{pane_id};x"), "'#{pane_id};x'");
        let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            command_list(&[
                v(&["display-message", "-p", "x y"]),
                v(&["wait-for", "-S", "c"])
            ]),
            "'display-message' '-p' 'x y' ; 'wait-for' '-S' 'c'"
        );
        assert_eq!(format_escape("/tmp/a%b#c"), "/tmp/a%%b##c");
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
    }
}
