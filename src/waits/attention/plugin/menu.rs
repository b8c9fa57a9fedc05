//! `tmux-wait menu`: the plugin's menu, the running watches (choosing one
//! cancels it) and the panes that need someone (choosing one goes there).
//!
//! It sits with attention, above `watch`, because it shows both: attention
//! takes the watches from `watch`, never the other way round.

use super::super::super::watch;
use super::menu_items;
use crate::error::{Error, Result};
use crate::notify;
use crate::state::WatchRecord;
use crate::tmux::Socket;
use crate::tmux::protocol::quote;

/// `tmux-wait menu`: a `display-menu` of the running watches; choosing one
/// cancels it. Labels are shown as data (every `#` doubled); the commands
/// hold only our own path, the socket path and hex ids.
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
    let mut marked = menu_items(socket);
    marked.extend(super::remote::menu_items(socket, &run));
    socket
        .run(menu_args(client, &watches, &marked, run))
        .map(|_| ())
}

/// The `display-menu` command line: flags, then `--` (an item whose name
/// starts with `-` is shown disabled, and must not be read as a flag), then
/// the items, three arguments each (name, key, command); a separator is one
/// empty argument, and never starts or ends the menu or follows another.
/// `marked`: the panes that need someone (attention), each a name and
/// the command that goes there.
fn menu_args(
    client: Option<&str>,
    watches: &[WatchRecord],
    marked: &[(String, String)],
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
        for (name, cmd) in marked {
            args.extend([name.clone(), String::new(), cmd.clone()]);
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
            "switch-client -t '%3'".to_owned(),
        )];
        let args = menu_args(Some("/dev/pts/1"), &[], &marked, |a| format!("run {a}"));
        let it = check(&args);
        assert!(it[1].is_empty(), "{args:?}");
        assert_eq!(
            it[2],
            ["go to %3 api:1 asking: ok?", "", "switch-client -t '%3'"]
        );
        assert!(it[3].is_empty(), "{args:?}");
        assert_eq!(it[4][0], "Clear the last result");
    }

    #[test]
    fn menu_without_watches() {
        let args = menu_args(Some("/dev/pts/1"), &[], &[], |a| format!("run {a}"));
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
        let args = menu_args(Some("/dev/pts/1"), &ws, &[], |a| format!("run {a}"));
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
