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

/// One word for a shell: single-quoted, with `'` and `\` put outside the
/// quotes, escaped. POSIX sh reads it as `s`, and so do fish and csh (a
/// remote user's login shell, which ssh hands its command line to), which
/// take `\\` and `\'` as escapes even inside single quotes.
pub fn sh_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            '\\' => out.push_str("'\\\\'"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Words for a shell, each quoted, joined by spaces.
pub fn sh_words<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| sh_quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
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
        assert_eq!(sh_quote(r"a\b"), r"'a'\\'b'");
        assert_eq!(sh_quote(""), "''");
    }

    /// Every word comes back whole from a real `sh -c`, whatever it holds.
    #[test]
    fn shell_quoting_survives_a_real_shell() {
        let words = [
            "plain",
            "",
            "a b",
            "it's",
            "''",
            "$(touch /nonexistent/x)",
            "`id`",
            "$HOME ${x:-y} $((1+1))",
            "back\\slash",
            "\\'",
            "'\\",
            "\"dq\" \\\"",
            "semi;colon && echo no | cat > /nonexistent/y",
            "glob*?[x]",
            "~root",
            "%3 #{pane_id}",
            "-L",
            "tab\there",
            "two\nlines\n",
            "\n",
            "ünï",
            "!!",
        ];
        let script = format!("printf '%s\\n' {}", sh_words(&words));
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        let got = String::from_utf8(out.stdout).unwrap();
        let want: String = words.iter().map(|w| format!("{w}\n")).collect();
        assert_eq!(got, want);
        // One word, as `sh -c` takes its script: a command's text typed
        // or passed whole.
        for w in words {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s {}", sh_quote(w))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), w, "{w:?}");
        }
    }
}
