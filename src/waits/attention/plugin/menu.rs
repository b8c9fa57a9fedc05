//! `tmux-wait menu`: the plugin's menu, the running watches (choosing one
//! cancels it), the panes that need someone (choosing one goes there), the
//! answers each question offers (choosing one types it: `tmux-wait
//! answer`, which checks first that the question is still the one shown)
//! and the last events of the attention log.
//!
//! It sits with attention, above `watch`, because it shows both: attention
//! takes the watches from `watch`, never the other way round.

use super::super::super::watch;
use super::super::answer::{self, question_id};
use super::super::machine::State;
use super::marks::{Marked, counted, go_to};
use crate::error::{Error, Result};
use crate::notify;
use crate::state::WatchRecord;
use crate::tmux::Socket;
use crate::tmux::protocol::quote;

/// How many events of the log the menu shows, and for how many questions
/// it offers answers (a menu taller than the terminal is not shown).
const EVENTS: usize = 3;
const ANSWERED_PANES: usize = 4;

/// `tmux-wait menu`: a `display-menu` of the running watches; choosing one
/// cancels it. Labels are shown as data (every `#` doubled); the commands
/// hold only our own path, the socket path, pane ids, hex ids, numbers and
/// the answers' names (letters and digits).
pub fn menu(socket: &Socket, client: Option<&str>) -> Result<()> {
    let watches = watch::list(socket)?;
    let exe = std::env::current_exe().map_err(|e| Error::io("cannot find tmux-wait itself", e))?;
    let sock = socket
        .run(["display-message", "-p", "#{socket_path}"])?
        .first()
        .cloned()
        .unwrap_or_default();
    let base = format!("{} -S {}", quote(&exe.to_string_lossy()), quote(&sock));
    let run = |args: &str| {
        format!(
            "run-shell -b {}",
            quote(&format!("{base} {args} >/dev/null 2>&1"))
        )
    };
    // (An answer refused exits 7, which run-shell would show in the
    // pane as "returned 7", taking the keys typed next: its outcome is
    // told as a message instead.)
    let answer = |args: &str| {
        format!(
            "run-shell -b {}",
            quote(&format!("{base} {args} >/dev/null 2>&1 || :"))
        )
    };
    let mut marked = marked_items(socket, &answer);
    marked.extend(
        super::remote::menu_items(socket, &run)
            .into_iter()
            .map(|(n, c)| (n, String::new(), c)),
    );
    let events = event_items(socket);
    socket
        .run(menu_args(client, &watches, &marked, &events, run))
        .map(|_| ())
}

/// One item per marked pane (its name, and the tmux command that goes
/// there), and under a question the answers it offers now, each with the
/// command that types it: `answer` with what the menu saw (the
/// question's id, the process reading it, the mark's beginning). A
/// password is only gone to.
fn marked_items(socket: &Socket, run: &dyn Fn(&str) -> String) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut answered = 0;
    let rows = super::super::targets::list(socket).unwrap_or_default();
    let profiles = super::super::Profiles::load(super::user_profiles(socket).as_deref())
        .unwrap_or_else(|_| super::super::Profiles::shipped());
    let quiet = super::quiet_after(socket);
    for m in counted(socket) {
        let mut name = format!("go to {} {} {}", m.pane, m.place(), m.what());
        let mut answers = Vec::new();
        let row = rows.iter().find(|r| r.pane_id == m.pane);
        if m.mark == State::Asking.as_str()
            && answered < ANSWERED_PANES
            && let Some(row) = row
        {
            // The question as the watch judged it names the item (it
            // knows what was asked before a job was stopped and resumed,
            // where the screen's last line is the shell's echo); the
            // answers are those of the pane as it is now, which `answer`
            // checks again (the question's id is of what it will see).
            let s = answer::seen(socket, row, &profiles, quiet);
            if s.status.state == State::Asking {
                let q = s.status.question.clone().unwrap_or_default();
                if s.status.reason == "reads_password" {
                    name = format!("go to {} {} password: {q}", m.pane, m.place());
                } else {
                    answers = answer_items(&m, &q, s.reader, &answer::offers_of(&s), run);
                    answered += usize::from(!answers.is_empty());
                }
            }
        }
        out.push((
            notify::format_safe(&name, 60),
            String::new(),
            go_to(&m.pane),
        ));
        out.extend(answers);
    }
    out
}

/// The items that answer `m`'s question `q` (read by `pid`).
fn answer_items(
    m: &Marked,
    q: &str,
    pid: Option<u32>,
    offers: &[answer::Offer],
    run: &dyn Fn(&str) -> String,
) -> Vec<(String, String, String)> {
    let safe = |w: &str| {
        w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '%' | '.' | '-'))
    };
    if !safe(&m.pane) || !safe(&m.began) {
        return Vec::new();
    }
    offers
        .iter()
        .filter(|o| safe(&o.choice))
        .map(|o| {
            let keys: Vec<String> = o.keys.iter().map(answer::Key::word).collect();
            let name = notify::format_safe(
                &format!("   answer {}: {} ({})", o.choice, o.label, keys.join(" ")),
                60,
            );
            let mut args = format!(
                "answer -t {} --question-id {} --from-menu -c '#{{client_name}}'",
                m.pane,
                question_id(q),
            );
            if !m.began.is_empty() {
                args.push_str(&format!(" --began {}", m.began));
            }
            if let Some(p) = pid {
                args.push_str(&format!(" --pid {p}"));
            }
            args.push_str(&format!(" -- {}", o.choice));
            (name, String::new(), run(&args))
        })
        .collect()
}

/// The last events of the attention log, as disabled items.
fn event_items(socket: &Socket) -> Vec<String> {
    let Ok(store) = crate::waits::store::store_for(socket) else {
        return Vec::new();
    };
    let events = store.journal_events();
    events
        .iter()
        .rev()
        .take(EVENTS)
        .rev()
        .map(|e| {
            // (A name starting with `-` is shown disabled.)
            format!(
                "-{}",
                notify::format_safe(&super::super::log::line(e, true), 60)
            )
        })
        .collect()
}

/// The `display-menu` command line: flags, then `--` (an item whose name
/// starts with `-` is shown disabled, and must not be read as a flag), then
/// the items, three arguments each (name, key, command); a separator is one
/// empty argument, and never starts or ends the menu or follows another.
/// `marked`: the panes that need someone (attention), each a name and
/// the command that goes there.
/// `marked`: the panes that need someone (attention) and the answers they
/// offer, each a name, a key and a command; `events`: the log's last
/// lines, shown disabled.
fn menu_args(
    client: Option<&str>,
    watches: &[WatchRecord],
    marked: &[(String, String, String)],
    events: &[String],
    run: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut args: Vec<String> = vec!["display-menu".into()];
    if let Some(c) = client {
        args.extend(["-c".into(), c.to_owned()]);
    }
    args.extend([
        "-T".into(),
        "#[align=centre] tmux-wait ".into(),
        "--".into(),
    ]);
    if watches.is_empty() {
        args.extend(["-(no watches running)".into(), String::new(), String::new()]);
    }
    for (i, w) in watches.iter().enumerate() {
        let name = notify::format_safe(&format!("cancel {} {} {}", w.id, w.pane_id, w.label), 60);
        let key = if i < 9 {
            (i + 1).to_string()
        } else {
            String::new()
        };
        args.extend([name, key, run(&format!("cancel {}", w.id))]);
    }
    args.push(String::new());
    if !marked.is_empty() {
        for (name, key, cmd) in marked {
            args.extend([name.clone(), key.clone(), cmd.clone()]);
        }
        args.push(String::new());
    }
    if !events.is_empty() {
        for e in events {
            args.extend([e.clone(), String::new(), String::new()]);
        }
        args.push(String::new());
    }
    if !watches.is_empty() {
        args.extend(["Cancel all".into(), "a".into(), run("cancel --all")]);
    }
    args.extend([
        "Clear the last result".into(),
        "c".into(),
        run("status --clear"),
    ]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, label: &str) -> WatchRecord {
        WatchRecord {
            id: id.into(),
            pid: 1,
            pane_id: "%1".into(),
            kind: "text".into(),
            label: label.into(),
            started: 0,
            timeout_seconds: 1.0,
            channel: String::new(),
        }
    }

    /// The items after `--`: (name, key, command) triples and separators.
    fn items(args: &[String]) -> Vec<Vec<String>> {
        let start = args.iter().position(|a| a == "--").expect("--") + 1;
        let mut out = Vec::new();
        let mut i = start;
        while i < args.len() {
            if args[i].is_empty() {
                out.push(vec![]);
                i += 1;
            } else {
                assert!(i + 3 <= args.len(), "item cut short: {args:?}");
                out.push(args[i..i + 3].to_vec());
                i += 3;
            }
        }
        out
    }

    fn check(args: &[String]) -> Vec<Vec<String>> {
        let it = items(args);
        assert!(!it.first().unwrap().is_empty(), "leading separator");
        assert!(!it.last().unwrap().is_empty(), "trailing separator");
        for pair in it.windows(2) {
            assert!(
                !(pair[0].is_empty() && pair[1].is_empty()),
                "two separators in a row: {args:?}"
            );
        }
        // Every flag comes before "--".
        let dash = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(&args[..3], ["display-menu", "-c", "/dev/pts/1"]);
        assert_eq!(args[dash - 2], "-T");
        it
    }

    #[test]
    fn menu_with_panes_that_need_someone() {
        let marked = vec![(
            "go to %3 api:1 asking: ok?".to_owned(),
            String::new(),
            "switch-client -t '%3'".to_owned(),
        )];
        let events = vec!["-12:00 %3 api:1 needs you: asking".to_owned()];
        let args = menu_args(Some("/dev/pts/1"), &[], &marked, &events, |a| {
            format!("run {a}")
        });
        let it = check(&args);
        assert!(it[1].is_empty(), "{args:?}");
        assert_eq!(
            it[2],
            ["go to %3 api:1 asking: ok?", "", "switch-client -t '%3'"]
        );
        assert!(it[3].is_empty(), "{args:?}");
        assert_eq!(it[4][0], "-12:00 %3 api:1 needs you: asking");
        assert!(it[5].is_empty(), "{args:?}");
        assert_eq!(it[6][0], "Clear the last result");
    }

    #[test]
    fn menu_without_watches() {
        let args = menu_args(Some("/dev/pts/1"), &[], &[], &[], |a| format!("run {a}"));
        let it = check(&args);
        assert_eq!(it.len(), 3, "{args:?}");
        assert_eq!(it[0][0], "-(no watches running)");
        assert_eq!(it[2], ["Clear the last result", "c", "run status --clear"]);
    }

    #[test]
    fn menu_with_watches() {
        let ws: Vec<WatchRecord> = (0..11)
            .map(|i| {
                record(
                    &format!("{i:06x}"),
                    if i == 3 { "-x #{y}" } else { "READY" },
                )
            })
            .collect();
        let args = menu_args(Some("/dev/pts/1"), &ws, &[], &[], |a| format!("run {a}"));
        let it = check(&args);
        assert_eq!(it.len(), 11 + 3, "{args:?}");
        assert_eq!(it[0], ["cancel 000000 %1 READY", "1", "run cancel 000000"]);
        assert_eq!(it[3][0], "cancel 000003 %1 -x ##{y}");
        assert_eq!(it[9][1], "", "keys 1 to 9 only");
        assert!(it[11].is_empty());
        assert_eq!(it[12][..2], ["Cancel all", "a"]);
        assert_eq!(it[13][..2], ["Clear the last result", "c"]);
    }
}
