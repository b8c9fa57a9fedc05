//! The answers a question offers, read from its words and from the rows
//! around it: what a person could choose, and the exact keys that choose
//! it. Pure: the screen comes in as text, keys go out as values.
//!
//! - `[y/N]`, `[Y/n]`, `(y/n)`, `[yes/no]`, `(yes/no/[fingerprint])`:
//!   `y` and `n` (typed as the question spells them: `yes` for a
//!   `[yes/no]` question), then Enter;
//! - `(Y)es/(N)o/(D)on't ask again` (aider): each letter, then Enter;
//! - a list of numbered options with a pointer on one of them (`❯ 1. Yes`,
//!   `› 1. Yes, proceed (y)`: Claude Code, Codex, Copilot CLI): each
//!   number, alone: these lists take a digit as the choice (checked on
//!   Claude Code 2.1.332 and Codex 0.171.0). A numbered list with no
//!   pointer is text (Claude Code's "Security notes: 1. ... 2. ..."), not
//!   options;
//! - `[y] Approve   [n] Deny` (Cline): each letter, alone (a key reader);
//! - `Press Enter to continue` and the like: Enter.
//!
//! A password is never offered anything: its answer is the person's to
//! type.

use regex::Regex;
use std::sync::LazyLock;

/// A key to send: text typed as it is (`send-keys -l`), or a key by its
/// tmux name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Text(String),
    Enter,
}

impl Key {
    /// How `send-keys` takes it: `-l TEXT`, or the key's name.
    pub fn send_args(&self) -> Vec<String> {
        match self {
            Key::Text(t) => vec!["-l".into(), t.clone()],
            Key::Enter => vec!["Enter".into()],
        }
    }

    /// For people and JSON: the text, or `Enter`.
    pub fn word(&self) -> String {
        match self {
            Key::Text(t) => t.clone(),
            Key::Enter => "Enter".into(),
        }
    }
}

/// One answer a question offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// What names it on the command line and in the menu: `y`, `n`, `1`,
    /// `enter`.
    pub choice: String,
    /// What it says: `yes`, `No, and tell Codex what to do differently`.
    pub label: String,
    pub keys: Vec<Key>,
}

/// The rows looked at below and around a question: an agent's options sit
/// under it, its key legend under them.
const ROWS: usize = 20;

static YES_NO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[\[(]\s*(y|yes)\s*/\s*(n|no)\s*(?:/[^\])]*)?[\])]").expect("valid")
});
static LETTERED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\(([A-Za-z])\)([\w'’][\w'’ ]*)").expect("valid"));
static NUMBERED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[\s│┃║|]*([❯›>▶→●◉▸➤]\s*)?([1-9])[.)]\s+(\S.*?)[\s│┃║|]*$").expect("valid")
});
static BRACKETED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[([A-Za-z0-9])\]\s+([A-Za-z][\w'’]*(?: [\w'’]+)*)").expect("valid")
});
static ENTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(press|hit)\s+(enter|return|any key)\b(\s+to\s+continue)?").expect("valid")
});

/// The answers `question` offers, with `screen` its pane's rows (the
/// options an agent draws under its question). Empty when none can be
/// told. A typed answer ends with Enter whether the program reads a line
/// or key by key: the line editors of prompts (prompt_toolkit, inquirer)
/// wait for it too.
pub fn offers(question: &str, screen: &[String]) -> Vec<Offer> {
    let near = near_rows(question, screen);
    // (Below the question, else anywhere in the last rows: a question
    // taken from the key legend under the options.)
    let numbered = match numbered(&near) {
        n if n.is_empty() => numbered(&last_rows(screen)),
        n => n,
    };
    if !numbered.is_empty() {
        return numbered;
    }
    let enter_after = |text: &str| vec![Key::Text(text.to_owned()), Key::Enter];
    if let Some(c) = YES_NO.captures(question) {
        let (y, n) = (c[1].to_lowercase(), c[2].to_lowercase());
        // The default is the capital one, where the question says so.
        let said = |word: &str, raw: &str| {
            if raw.len() == 1 && raw.chars().all(char::is_uppercase) {
                format!("{word} (the default)")
            } else {
                word.to_owned()
            }
        };
        return vec![
            Offer {
                choice: "y".into(),
                label: said("yes", &c[1]),
                keys: enter_after(&y),
            },
            Offer {
                choice: "n".into(),
                label: said("no", &c[2]),
                keys: enter_after(&n),
            },
        ];
    }
    let lettered: Vec<Offer> = LETTERED
        .captures_iter(question)
        .map(|c| {
            let letter = c[1].to_lowercase();
            Offer {
                label: format!("{}{}", &c[1], c[2].trim_end()),
                keys: enter_after(&letter),
                choice: letter,
            }
        })
        .collect();
    if lettered.len() >= 2 && distinct(&lettered) {
        return lettered;
    }
    for row in near.iter().rev() {
        let b: Vec<Offer> = BRACKETED
            .captures_iter(row)
            .map(|c| Offer {
                choice: c[1].to_lowercase(),
                label: c[2].to_owned(),
                keys: vec![Key::Text(c[1].to_owned())],
            })
            .collect();
        if b.len() >= 2 && distinct(&b) {
            return b;
        }
    }
    if ENTER.is_match(question) || near.iter().rev().take(3).any(|r| ENTER.is_match(r)) {
        return vec![Offer {
            choice: "enter".into(),
            label: "Enter".into(),
            keys: vec![Key::Enter],
        }];
    }
    Vec::new()
}

fn distinct(o: &[Offer]) -> bool {
    o.iter()
        .enumerate()
        .all(|(i, a)| o[..i].iter().all(|b| b.choice != a.choice))
}

/// The rows an agent's options may be on: from the question's row (its
/// last appearance) to the bottom, else the last [`ROWS`] non-blank rows.
fn near_rows(question: &str, screen: &[String]) -> Vec<String> {
    let rows: Vec<&String> = screen.iter().filter(|r| !r.trim().is_empty()).collect();
    let q = question.trim().trim_end_matches('…');
    let from = (!q.is_empty())
        .then(|| rows.iter().rposition(|r| r.contains(q)))
        .flatten();
    match from {
        Some(i) => rows[i..]
            .iter()
            .take(ROWS)
            .map(|r| r.trim_end().to_owned())
            .collect(),
        None => last_rows(screen),
    }
}

/// The last [`ROWS`] non-blank rows.
fn last_rows(screen: &[String]) -> Vec<String> {
    let rows: Vec<&String> = screen.iter().filter(|r| !r.trim().is_empty()).collect();
    rows[rows.len().saturating_sub(ROWS)..]
        .iter()
        .map(|r| r.trim_end().to_owned())
        .collect()
}

/// Numbered options, `1.` to `N.` one a row in order, with a pointer on
/// one of them: each chosen by its digit.
fn numbered(rows: &[String]) -> Vec<Offer> {
    let mut best: Vec<Offer> = Vec::new();
    let mut run: Vec<Offer> = Vec::new();
    let mut pointer = false;
    let close = |run: &mut Vec<Offer>, pointer: &mut bool, best: &mut Vec<Offer>| {
        if *pointer && run.len() >= 2 && best.is_empty() {
            *best = std::mem::take(run);
        }
        run.clear();
        *pointer = false;
    };
    for row in rows {
        let Some(c) = NUMBERED.captures(row) else {
            // A wrapped option's second row, indented: the run goes on.
            if !run.is_empty() && row.starts_with("    ") {
                continue;
            }
            close(&mut run, &mut pointer, &mut best);
            continue;
        };
        let n: usize = c[2].parse().unwrap_or(0);
        if n != run.len() + 1 {
            close(&mut run, &mut pointer, &mut best);
            if n != 1 {
                continue;
            }
        }
        pointer |= c.get(1).is_some();
        run.push(Offer {
            choice: n.to_string(),
            label: c[3].to_owned(),
            keys: vec![Key::Text(n.to_string())],
        });
    }
    close(&mut run, &mut pointer, &mut best);
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    fn choices(o: &[Offer]) -> Vec<(&str, Vec<String>)> {
        o.iter()
            .map(|o| (o.choice.as_str(), o.keys.iter().map(Key::word).collect()))
            .collect()
    }

    #[test]
    fn yes_or_no_questions() {
        for (q, y, n) in [
            ("Deploy? [y/N] ", "y", "n"),
            ("Do you want to continue? [Y/n] ", "y", "n"),
            ("Overwrite (y/n)? ", "y", "n"),
            ("Really delete? [yes/no] ", "yes", "no"),
            (
                "Are you sure you want to continue connecting (yes/no/[fingerprint])? ",
                "yes",
                "no",
            ),
        ] {
            let o = offers(q, &rows(q));
            assert_eq!(
                choices(&o),
                [
                    ("y", vec![y.into(), "Enter".into()]),
                    ("n", vec![n.into(), "Enter".into()])
                ],
                "{q}"
            );
        }
        let o = offers("Do you want to continue? [Y/n]", &[]);
        assert_eq!(o[0].label, "yes (the default)");
        assert_eq!(o[1].label, "no");
    }

    #[test]
    fn aiders_lettered_answers() {
        let q = "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:";
        let o = offers(q, &rows(q));
        assert_eq!(
            choices(&o),
            [
                ("y", vec!["y".into(), "Enter".into()]),
                ("n", vec!["n".into(), "Enter".into()]),
                ("d", vec!["d".into(), "Enter".into()])
            ]
        );
        assert_eq!(o[2].label, "Don't ask again");
    }

    #[test]
    fn claude_codes_numbered_options() {
        let screen = rows(
            " Bash command\n touch mock-file.txt && echo mock-done\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to /tmp/p from this project\n   3. No\n\n Esc to cancel · Tab to amend\n",
        );
        let o = offers("Do you want to proceed?", &screen);
        assert_eq!(
            choices(&o),
            [
                ("1", vec!["1".into()]),
                ("2", vec!["2".into()]),
                ("3", vec!["3".into()])
            ]
        );
        assert_eq!(o[2].label, "No");
    }

    #[test]
    fn codexs_numbered_options_under_its_legend_question() {
        let screen = rows(
            "  Would you like to run the following command?\n  $ touch x\n› 1. Yes, proceed (y)\n  2. Yes, and don't ask again for commands that start with `touch x` (p)\n  3. No, and tell Codex what to do differently (esc)\n  Press enter to confirm or esc to cancel",
        );
        // (Its question, as judged without a profile, may be the legend.)
        for q in [
            "Would you like to run the following command?",
            "Press enter to confirm or esc to cancel",
        ] {
            let o = offers(q, &screen);
            assert_eq!(o.len(), 3, "{q}: {o:?}");
            assert_eq!(o[0].label, "Yes, proceed (y)");
        }
    }

    #[test]
    fn a_numbered_list_without_a_pointer_is_text() {
        let screen = rows(
            " Security notes:\n 1. Claude can make mistakes.\n 2. Due to prompt injection risks, only use it with code you trust\n Press Enter to continue",
        );
        let o = offers("Press Enter to continue", &screen);
        assert_eq!(choices(&o), [("enter", vec!["Enter".into()])]);
    }

    #[test]
    fn clines_bracketed_keys() {
        let screen = rows(
            "Cline needs permission\nApprove tool call?\nrun_commands(touch x)\n[y] Approve   [n] Deny\nAuto-approve all disabled (Shift+Tab)",
        );
        let o = offers("Approve tool call?", &screen);
        assert_eq!(
            choices(&o),
            [("y", vec!["y".into()]), ("n", vec!["n".into()])]
        );
        assert_eq!(o[0].label, "Approve");
    }

    #[test]
    fn nothing_to_offer() {
        assert!(offers("Password: ", &rows("Password: ")).is_empty());
        assert!(offers("Your name? ", &rows("Your name? ")).is_empty());
        // Two options that are the same letter are no choice.
        assert!(offers("(A)dd/(A)bort", &[]).is_empty());
    }
}
