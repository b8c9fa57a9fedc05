//! tmux's command language, where tmux-wait has to write it (a command list
//! that `if-shell` parses, a pipe's shell command that `pipe-pane` expands
//! as a format), and a shell's (a hook's command, the line typed for `run`,
//! an ssh command line): quoting, so that no argument is ever read as
//! anything but itself.

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

/// One word of tmux's command language, and of a shell's: single-quoted,
/// with `'` and `\` put outside the quotes, escaped (tmux, like a POSIX
/// shell, takes a backslash outside quotes as an escape). POSIX sh reads
/// it as `s`, and so do fish and csh (a remote user's login shell, which
/// ssh hands its command line to), which take `\\` and `\'` as escapes
/// even inside single quotes.
pub fn quote(s: &str) -> String {
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
pub fn quote_words<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| quote(w.as_ref()))
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
        assert_eq!(quote(r"a\b"), r"'a'\\'b'");
        assert_eq!(quote(""), "''");
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
        let script = format!("printf '%s\\n' {}", quote_words(&words));
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
                .args(["-c", &format!("printf %s {}", quote(w))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), w, "{w:?}");
        }
    }
}
