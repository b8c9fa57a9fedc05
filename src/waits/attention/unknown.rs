//! Rules for a coding agent no profile names (one released tomorrow), from
//! what agents' screens have in common (checked on the releases of
//! profiles/agents.json with their profiles switched off):
//!
//! - a question's own words (`Do you want to`, `Allow?`, `Permission
//!   required`, `[y/N]`, ...) say it asks, also while a spinner keeps
//!   turning under it (pi and Cline);
//! - a busy row of the common forms (`esc interrupt`, `esc to interrupt`,
//!   `esc to cancel`, `ctrl+c to interrupt`, a spinner glyph that changes)
//!   says it works;
//! - an empty input box (a prompt glyph alone, a placeholder such as `Ask
//!   anything`, an empty row between two rules) says it waits for its next
//!   instruction;
//! - a footer or status row (key hints, a path, a version, a model's
//!   usage, a rule) is never the question.
//!
//! Which program it is: its executable, or the package its script comes
//! from when an interpreter (node, python) runs it ([`identity`]). Only a
//! program that looks like an agent (run from an npm or Python package, or
//! by an interpreter) is judged by these rules: a pager or an editor is not.

use super::profiles::{Proc, Says, clean_row};
use regex::Regex;
use std::sync::LazyLock;

/// The last non-blank rows looked at (as for a profile).
const ROWS: usize = 20;

static BUSY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\besc(ape)?\s+(to\s+)?(interrupt|cancel|stop)\b|\bctrl\+c\s+to\s+(interrupt|cancel|stop)\b|\besc esc interrupt\b",
    )
    .expect("valid")
});

static QUESTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(do you want to|would you like to|do you trust|shall i|may i)\b.*\?",
        r"|\b(allow|approve|proceed|continue|confirm)\b[^?]{0,40}\?",
        r"|\bpermission required\b|\bneeds (your )?permission\b|\bdangerous command\b",
        r"|\[(y/n|y/N|Y/n)\]|\(Y\)es/\(N\)o|\(y/n\)",
        r"|\bpress enter to\b",
    ))
    .expect("valid")
});

/// A yes/no question answered in a transcript: the answer typed after it.
static ANSWERED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\]:|\]\s*\?|\(y/n\)\s*[?:]?)\s*\S{1,12}\s*$").expect("valid")
});

static IDLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)^[\s│┃|]*[❯>›»$][\s\u{a0}]*$|^\s*\w+>\s*$",
        r"|\b(ask anything|type your message|what can i do for you|how can i help|send a message)\b",
    ))
    .expect("valid")
});

static STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(ctrl|shift|alt|cmd)\+\w+|\b(tab|esc|enter)\s+(to\s+)?\w+\s*·|[·•]\s*\?\s+(for\s+)?(help|shortcuts)",
        r"|/ commands|\?\s+for shortcuts|\bopen sidebar\b|auto-approve|\bapproval\b.*\bmode\b",
        r"|^\s*[~/][\w./~-]*(\s*[(\[].*[)\]])?(\s{2,}.*)?$",
        r"|\s\d+\.\d+\.\d+\s*$|\d+(\.\d+)?%|\$\d+\.\d\d|\b\d+(\.\d+)?k?\s+tokens\b",
        // (An agent's and model's row: short items between dots.)
        r"|^[^?]{1,60}\s·\s[^?]{1,60}$",
    ))
    .expect("valid")
});

/// Spinner glyphs agents draw at the start of their busy row.
fn spinner(c: char) -> bool {
    matches!(c, '\u{2800}'..='\u{28ff}') || "◐◓◑◒◴◷◶◵◉◎○●✢✳✶✻✽".contains(c)
}

/// A row that is only a rule or a box's frame.
fn rule(row: &str) -> bool {
    let t = row.trim();
    !t.is_empty()
        && t.chars()
            .all(|c| "─━═▀▄█╭╮╰╯┌┐└┘│┃╹╻-_=".contains(c) || c.is_whitespace())
}

/// A footer or status row: never the question.
pub fn status_row(row: &str) -> bool {
    rule(row) || STATUS.is_match(row)
}

/// A busy row of the common forms, as it goes by in the stream or on the
/// screen: `esc to interrupt` and the like after something (a spinner, a
/// time: a row that starts with them is a legend of keys, as pi's help),
/// or a spinner glyph before a word in -ing (`⠴ Thinking...`, `◉
/// Working`).
pub fn busy_row(row: &str) -> bool {
    let t = row.trim_start();
    if BUSY.find_iter(t).any(|m| m.start() > 0) {
        return true;
    }
    let mut it = t.chars();
    let Some(c) = it.next() else { return false };
    // (A Braille glyph is never a bullet: a spinner before any text.)
    if matches!(c, '\u{2800}'..='\u{28ff}') && spinner_glyph(t).is_some() {
        return true;
    }
    let word: String = it
        .as_str()
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphabetic())
        .collect();
    spinner(c) && word.chars().count() > 4 && word.ends_with("ing")
}

/// The spinner glyph a row starts with (spaces before it), if any, with
/// some text after it: a busy row whose glyph changes from one look to the
/// next.
pub fn spinner_glyph(row: &str) -> Option<char> {
    let t = row.trim_start();
    let mut it = t.chars();
    let c = it.next()?;
    let rest: String = it.collect();
    (spinner(c) && rest.starts_with(' ') && rest.trim().chars().any(char::is_alphabetic))
        .then_some(c)
}

/// What the screen's last rows say by the common forms: a question beats
/// a busy row (a spinner may turn under it), which beats an empty input
/// box; the lowest of each counts.
pub fn screen(rows: &[String]) -> Option<Says> {
    let rows: Vec<&str> = rows.iter().map(|r| r.trim_end()).collect();
    let nonblank: Vec<usize> = (0..rows.len())
        .filter(|&i| !rows[i].trim().is_empty())
        .collect();
    let keep = &nonblank[nonblank.len().saturating_sub(ROWS)..];
    let lowest = |f: &dyn Fn(&str) -> bool| keep.iter().rev().find(|&&i| f(rows[i])).copied();
    let idle = lowest(&|r| IDLE.is_match(r));
    // (An answered question above the next prompt is over.)
    let question = lowest(&|r| QUESTION.is_match(r) && !ANSWERED.is_match(r));
    if let Some(i) = question
        && idle.is_none_or(|j| j < i)
    {
        return Some(Says::Asking(clean_row(rows[i])));
    }
    if lowest(&|r| busy_row(r)).is_some() {
        return Some(Says::Working);
    }
    if let Some(i) = idle {
        return Some(Says::Idle(clean_row(rows[i])));
    }
    // An empty input box: two rules with only blank rows between them.
    let rules: Vec<usize> = (0..rows.len()).filter(|&i| rule(rows[i])).collect();
    if rules
        .windows(2)
        .any(|w| w[1] > w[0] + 1 && (w[0] + 1..w[1]).all(|i| rows[i].trim().is_empty()))
    {
        return Some(Says::Idle(String::new()));
    }
    None
}

/// The question of a program that reads key by key and says none of
/// these: its lowest row that is no footer, status row or rule.
pub fn question_row(rows: &[String]) -> Option<String> {
    rows.iter()
        .rev()
        .map(|r| r.trim())
        .find(|r| !r.is_empty() && !status_row(r))
        .map(clean_row)
}

const INTERPRETERS: &[&str] = &["node", "nodejs", "bun", "deno", "python", "ruby", "perl"];

fn interpreter(name: &str) -> bool {
    let n = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&n)
}

/// Which program this is, by its package or its executable, and whether
/// it looks like a coding agent: installed from an npm or Python package
/// (its executable, or the script an interpreter runs, lies in one), or an
/// interpreter's process that renamed itself (pi, run by node, is `pi`).
/// `None` for any other program (a pager, an editor, `python3 app.py`).
pub fn identity(procs: &[Proc]) -> Option<String> {
    let leader = procs.first()?;
    let in_package = |p: &str| {
        p.contains("node_modules/")
            || p.contains("/site-packages/")
            || p.contains("/dist-packages/")
    };
    let exe_name = leader.exe.rsplit('/').next().unwrap_or("");
    if !interpreter(&leader.comm) {
        let packaged = procs
            .iter()
            .any(|p| in_package(&p.exe) || p.args.iter().any(|a| in_package(a)));
        return (packaged || interpreter(exe_name)).then(|| leader.comm.clone());
    }
    // An interpreter: the script it runs, from a package, names it.
    let script = leader
        .args
        .iter()
        .skip(1)
        .find(|a| !a.starts_with('-') && a.contains('/'))?;
    let real = std::fs::canonicalize(script)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| script.clone());
    if !in_package(script) && !in_package(&real) {
        return None;
    }
    // (A `.bin` link is named as its command.)
    if script.contains("/.bin/") {
        return script.rsplit('/').next().map(str::to_owned);
    }
    if let Some((_, after)) = real.rsplit_once("node_modules/") {
        let mut parts = after.split('/');
        let first = parts.next()?;
        return Some(if first.starts_with('@') {
            format!("{first}/{}", parts.next().unwrap_or(""))
        } else {
            first.to_owned()
        });
    }
    let base = script.rsplit('/').next()?;
    Some(base.trim_end_matches(".py").to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    fn proc(comm: &str, args: &[&str], exe: &str) -> Proc {
        Proc {
            comm: comm.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            exe: exe.into(),
        }
    }

    /// The screens of the releases checked, judged without their profiles.
    #[test]
    fn the_common_forms_on_the_agents_screens() {
        // OpenCode at rest: its footer is no question.
        let oc = rows(
            "  ┃  Ask anything… \"Fix a TODO in the codebase\"\n  ┃  Build · Mock Model Mock\n   tab agents  ctrl+p commands\n  /tmp/x/proj:master                         1.18.33",
        );
        assert!(matches!(screen(&oc), Some(Says::Idle(_))));
        assert!(status_row(
            "  /tmp/x/proj:master                         1.18.33"
        ));
        let busy = rows(
            "  ┃  Build · Mock\n   ■■⬝⬝⬝⬝⬝⬝  esc interrupt          tab agents  ctrl+p commands",
        );
        assert_eq!(screen(&busy), Some(Says::Working));
        // pi's question with its spinner turning above it.
        let pi = rows(
            " ⠧ Working...\n────\n ⚠️ Dangerous command:\n   rm -rf x\n Allow?\n → Yes\n   No\n────\n↑20 ↓20 0.0%/128k (auto)        mock-model",
        );
        assert_eq!(screen(&pi), Some(Says::Asking("Allow?".into())));
        // pi idle: an empty editor between two rules.
        let pi_idle = rows(
            " ends here.\n────\n\n────\n/tmp/x/pproj (master)\n↑10 ↓10 0.0%/128k (auto)   mock-model",
        );
        assert_eq!(screen(&pi_idle), Some(Says::Idle(String::new())));
        // Cline: its last rows are status rows.
        let cline = rows(
            " ⠴ Thinking... (esc to cancel)\n────\n❯ Ask anything...\n────\n mock-model (0) $0.00     ○ Plan ● Act (Tab)\n clproj\n Auto-approve all disabled (Shift+Tab)",
        );
        assert_eq!(screen(&cline), Some(Says::Working));
        assert!(status_row(" Auto-approve all disabled (Shift+Tab)"));
        let cline_q = rows(
            " ⠴ Thinking... (esc to cancel)\n Cline needs permission\n Approve tool call?\n  [y] Approve   [n] Deny\n mock-model (0) $0.00\n clproj\n Auto-approve all disabled (Shift+Tab)",
        );
        assert_eq!(
            screen(&cline_q),
            Some(Says::Asking("Approve tool call?".into()))
        );
        // Copilot's busy row.
        let cop = rows("────\n❯\n────\n ◉ Working · 12 B esc esc interrupt      mock-model");
        assert_eq!(screen(&cop), Some(Says::Working));
        assert_eq!(spinner_glyph(" ⠴ Thinking..."), Some('⠴'));
        // Copilot's busy row says no "esc to interrupt" at first; pi's
        // help legend is no busy row.
        assert!(busy_row(" ◉ Working esc esc edit prompt      mock-model"));
        assert!(!busy_row(
            " escape interrupt · ctrl+c/ctrl+d clear/exit · / commands"
        ));
        assert!(busy_row("   ■■⬝⬝⬝⬝⬝⬝  esc interrupt"));
        assert!(!busy_row(" ● The command finished."));
        assert!(busy_row(" ⠦ Slow answer begins: after a long think"));
        // aider's transcript: answered questions above its prompt.
        let aider = rows(
            "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:\nRunning touch x\nAdd command output to the chat? (Y)es/(N)o [Yes]: n\n────\ndiff>",
        );
        assert!(matches!(screen(&aider), Some(Says::Idle(_))));
        let asks = rows(
            "Added .aider* to .gitignore\n────\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
        );
        assert!(matches!(screen(&asks), Some(Says::Asking(_))));
        assert_eq!(spinner_glyph(" ⠴"), None);
        assert_eq!(
            question_row(&rows(
                "Pick one:\n  a) x\n  b) y\n ctrl+p commands\n ~/proj"
            )),
            Some("b) y".into())
        );
    }

    #[test]
    fn a_program_by_its_package_or_executable() {
        let copilot = [proc(
            "node",
            &["node", "/p/node_modules/.bin/copilot"],
            "/usr/bin/node",
        )];
        assert_eq!(identity(&copilot).as_deref(), Some("copilot"));
        let gemini = [proc(
            "node",
            &[
                "/usr/bin/node",
                "--max-old-space-size=1",
                "/p/node_modules/@google/gemini-cli/dist/index.js",
            ],
            "/usr/bin/node",
        )];
        assert_eq!(identity(&gemini).as_deref(), Some("@google/gemini-cli"));
        let oc = [proc(
            "opencode",
            &["opencode"],
            "/p/node_modules/opencode-linux-x64/bin/opencode",
        )];
        assert_eq!(identity(&oc).as_deref(), Some("opencode"));
        let pi = [proc("pi", &["pi"], "/usr/bin/node")];
        assert_eq!(identity(&pi).as_deref(), Some("pi"));
        let cline = [proc(
            "cline",
            &["cline", "-i"],
            "/p/node_modules/@cline/cli-linux-x64/bin/cline",
        )];
        assert_eq!(identity(&cline).as_deref(), Some("cline"));
        assert_eq!(
            identity(&[proc("less", &["less", "x"], "/usr/bin/less")]),
            None
        );
        assert_eq!(
            identity(&[proc("vim", &["vim"], "/usr/bin/vim.basic")]),
            None
        );
        // A script of one's own, or code on the command line, is no agent.
        let script = [proc(
            "python3",
            &["python3", "/tmp/agent.py"],
            "/usr/bin/python3.11",
        )];
        assert_eq!(identity(&script), None);
        let code = [proc(
            "python3",
            &["python3", "-c", "input('Proceed? [y/N] ')"],
            "/usr/bin/python3",
        )];
        assert_eq!(identity(&code), None);
        // aider, a Python package's console script.
        let aider = [proc(
            "aider",
            &["/v/bin/python3", "/v/bin/aider", "--model"],
            "/usr/bin/python3.11",
        )];
        assert_eq!(identity(&aider).as_deref(), Some("aider"));
    }
}
