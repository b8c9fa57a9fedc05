//! Questions answered from the menu (`prefix M-w`) through the person's
//! real client, and by scripts (`tmux-wait answer`): a shell's `read -p`
//! `[y/N]`, apt-get's own `[Y/n]`; a question that changed, or whose
//! program changed, between the menu being drawn and the choice gets no
//! key; a password gets none (its item takes the person there); and the
//! attention log (`tmux-wait log`) says each, in order, with how long it
//! waited.

use super::Day;
use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The menu's items a person can choose, in order, as their terminal
/// shows them (separators and the disabled items left out).
fn choosable(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter_map(|l| {
            let inner = l.split('│').nth(1)?.trim();
            let ok = [
                "go to ",
                "answer ",
                "cancel ",
                "Cancel all",
                "Clear the last result",
            ]
            .iter()
            .any(|p| inner.starts_with(p));
            ok.then(|| inner.to_owned())
        })
        .collect()
}

/// Open the menu, wait until it shows `item` (the start of an item's
/// name, after `after` if given: the item under that pane's line), and
/// choose it with the arrow keys and Enter, as a person would. Returns
/// the menu as it was drawn.
fn choose(d: &Day, after: Option<&str>, item: &str) -> String {
    d.person.prefixed(&d.s, "M-w");
    let end = Instant::now() + DEADLINE;
    let (screen, at) = loop {
        let screen = d.person.screen();
        let items = choosable(&screen);
        let from = match after {
            Some(a) => items.iter().position(|i| i.starts_with(a)),
            None => Some(0),
        };
        if let Some(at) = from.and_then(|f| {
            items[f..]
                .iter()
                .position(|i| i.starts_with(item))
                .map(|k| k + f)
        }) {
            break (screen, at);
        }
        assert!(
            Instant::now() < end,
            "the menu never showed {item:?} (after {after:?}); the person sees:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // The first item is chosen as the menu opens; Down moves on.
    for _ in 0..at {
        d.person.keys(&["Down"]);
    }
    d.person.keys(&["Enter"]);
    let end = Instant::now() + DEADLINE;
    while d.person.screen().contains("─ tmux-wait ─") {
        assert!(Instant::now() < end, "the menu did not close");
        std::thread::sleep(Duration::from_millis(20));
    }
    screen
}

/// The messages the person was shown.
fn told(d: &Day) -> Vec<String> {
    d.s.tmux(&["show-messages"])
        .lines()
        .filter(|l| l.contains(" message: tmux-wait: "))
        .map(str::to_owned)
        .collect()
}

/// A bash script in the server's directory, run in a new window.
fn script_window(d: &Day, name: &str, text: &str) -> String {
    let path = d.s.dir().join(name);
    std::fs::write(&path, text).unwrap();
    d.window_running(&format!("exec bash '{}'", path.display()))
}

fn wait_told(d: &Day, pane: &str, what: &str) {
    d.s.wait_until(pane, &format!("the person to be told {what:?}"), || {
        told(d).iter().any(|m| m.contains(what))
    });
}

/// What `answer -t PANE --json` says of a pane now: its question and
/// offers, or the error of a refusal.
fn asked(s: &TestServer, pane: &str) -> Value {
    let out = s
        .tw()
        .args(["answer", "-t", pane, "--json"])
        .output()
        .expect("tmux-wait answer");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// The attention log, as `tmux-wait log --json` gives it.
pub(crate) fn log(s: &TestServer) -> Vec<Value> {
    let out = s
        .tw()
        .args(["log", "--json"])
        .output()
        .expect("tmux-wait log");
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("log --json");
    v["events"].as_array().cloned().unwrap_or_default()
}

/// Check that the log's events are in order, that each end follows a
/// need of its pane and says how long that need waited (the span between
/// them); an end whose need the log no longer keeps (rotated out) is left
/// aside. Returns how many ends were checked.
pub(crate) fn in_order(l: &[Value]) -> usize {
    let boot = |e: &Value| e["boot"].as_f64().expect("boot");
    assert!(
        l.windows(2).all(|w| boot(&w[0]) <= boot(&w[1])),
        "the log is out of order"
    );
    let mut checked = 0;
    for (i, e) in l.iter().enumerate().filter(|(_, e)| e["event"] != "needs") {
        let Some(need) = l[..i]
            .iter()
            .rfind(|n| n["event"] == "needs" && n["pane"] == e["pane"])
        else {
            continue;
        };
        let waited = e["waited"].as_f64().unwrap_or(-1.0);
        let span = boot(e) - boot(need);
        assert!(
            waited >= 0.0 && (waited - span).abs() < 0.05,
            "{e}: waited {waited}, but {span} s after its need {need}"
        );
        checked += 1;
    }
    checked
}

/// The events of `pane`, in order: `event`, and `by` or `how`.
fn events_of(s: &TestServer, pane: &str) -> Vec<String> {
    log(s)
        .iter()
        .filter(|e| e["pane"] == pane)
        .map(|e| {
            let mut w = format!(
                "{} {}",
                e["event"].as_str().unwrap_or(""),
                e["state"].as_str().unwrap_or("")
            );
            for k in ["by", "how", "choice"] {
                if let Some(x) = e[k].as_str() {
                    w.push_str(&format!(" {k}={x}"));
                }
            }
            w
        })
        .collect()
}

/// apt-get, the real one, with a configuration of its own in `dir`: a
/// status file listing one installed package (nothing of the system's),
/// no lock, and `/bin/true` as dpkg, so that `apt-get remove tw-fake`
/// asks its `[Y/n]` and nothing it does reaches the system.
fn apt_config(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    if !installed("apt-get") {
        return None;
    }
    for sub in [
        "state/lists/partial",
        "cache/archives/partial",
        "etc/apt.conf.d",
        "etc/preferences.d",
        "etc/sources.list.d",
        "log",
    ] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("etc/sources.list"), "").unwrap();
    std::fs::write(
        dir.join("state/status"),
        "Package: tw-fake\nStatus: install ok installed\nPriority: optional\n\
         Section: misc\nInstalled-Size: 1\nMaintainer: Nobody <nobody@example.com>\n\
         Architecture: all\nVersion: 1.0\nDescription: a package for a test\n",
    )
    .unwrap();
    let d = dir.display();
    let conf = dir.join("apt.conf");
    std::fs::write(
        &conf,
        format!(
            "Dir::State \"{d}/state\";\nDir::State::status \"{d}/state/status\";\n\
             Dir::Cache \"{d}/cache\";\nDir::Etc \"{d}/etc\";\nDir::Log \"{d}/log\";\n\
             Dir::Bin::dpkg \"/bin/true\";\nDebug::NoLocking \"true\";\n"
        ),
    )
    .unwrap();
    Some(conf)
}

#[test]
fn a_shell_question_and_apt_gets_are_answered_from_the_menu() {
    let mut d = Day::start("");
    // A shell's `read -p`, out of the person's sight.
    let a = d.window_running("read -p 'Deploy? [y/N] ' x; echo \"got [$x]\"; exec sleep 900");
    d.wait_mark(&a, "asking");
    let menu = choose(&d, Some(&format!("go to {a} ")), "answer y");
    assert!(
        menu.contains(&format!("go to {a} main:1 asking: Deploy? [y/N]")),
        "{menu}"
    );
    assert!(
        menu.contains("answer n: no (the default) (n Enter)"),
        "{menu}"
    );
    d.s.wait_until(&a, "the answer", || d.s.capture(&a).contains("got [y]"));
    wait_told(&d, &a, &format!("{a} main:1 answered y: it moved on"));
    d.wait_mark(&a, "");
    d.idle("a shell's question answered from the menu");

    // apt-get's own [Y/n], answered no.
    let dir = d.s.dir().join("apt");
    if let Some(conf) = apt_config(&dir) {
        let b = d.window_running(&format!(
            "APT_CONFIG='{}' apt-get remove tw-fake; exec sleep 900",
            conf.display()
        ));
        d.wait_mark(&b, "asking");
        // (apt-get writes its question in two pieces.)
        d.s.wait_until(&b, "the whole question", || {
            crate::attention_plugin::opt(&d.s, &["-p", "-t", &b, "@tmux-wait-attention-what"])
                .ends_with("[Y/n]")
        });
        let menu = choose(&d, Some(&format!("go to {b} ")), "answer n");
        assert!(
            menu.contains("Do you want to continue? [Y/n]"),
            "apt-get's question is not in the menu:\n{menu}"
        );
        assert!(menu.contains("answer y: yes (the default)"), "{menu}");
        d.s.wait_until(&b, "apt-get to stop", || d.s.capture(&b).contains("Abort."));
        wait_told(&d, &b, &format!("{b} main:2 answered n: it moved on"));
        d.idle("apt-get's question answered from the menu");
        // Its question's events. (Once in CI, with the question in two
        // pieces, the watch first told a need whose question was apt-get's
        // progress row, `Building dependency tree... 50%`, ended as
        // answered by keys when the real question came: docs/limits.md.)
        let ev: Vec<String> = log(&d.s)
            .iter()
            .filter(|e| {
                e["pane"] == b.as_str() && e["question"] == "Do you want to continue? [Y/n]"
            })
            .map(|e| {
                format!(
                    "{} by={}",
                    e["event"].as_str().unwrap_or(""),
                    e["by"].as_str().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(ev, ["needs by=-", "answered by=menu"], "{:#?}", log(&d.s));
    } else {
        println!("apt-get is not installed: its question was not asked");
    }
    // The log: the question, then the answer, from the menu, with how
    // long it waited.
    let ev = events_of(&d.s, &a);
    assert_eq!(ev, ["needs asking", "answered asking by=menu choice=y"]);
    let l = log(&d.s);
    let asked = l.iter().find(|e| e["pane"] == a.as_str()).unwrap();
    let answered = l.iter().rfind(|e| e["pane"] == a.as_str()).unwrap();
    assert_eq!(asked["question"], "Deploy? [y/N]");
    assert_eq!(answered["moved_on"], true);
    let waited = answered["waited"].as_f64().unwrap();
    let span = answered["boot"].as_f64().unwrap() - asked["boot"].as_f64().unwrap();
    assert!((waited - span).abs() < 0.05, "waited {waited}, span {span}");
    // For people too.
    let out = d.s.tw().args(["log", "--since", "1h"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "{a} main:1 needs you: asking (reads_line): Deploy? [y/N]"
        )) && text.contains(&format!("{a} main:1 answered y from the menu after ")),
        "{text}"
    );
}

#[test]
fn a_question_that_changed_after_the_menu_was_drawn_gets_no_key() {
    let mut d = Day::start("");
    // USR1 asks another question, in the same shell (its trap reads).
    let a = script_window(
        &d,
        "changes.sh",
        "trap 'echo; read -p \"Second? [y/N] \" x; echo \"got [$x] for the second\"; exec sleep 900' USR1\n\
         read -p 'First? [y/N] ' x\necho \"got [$x]\"\nexec sleep 900\n",
    );
    d.wait_mark(&a, "asking");
    let pid =
        d.s.tmux(&["display-message", "-p", "-t", &a, "#{pane_pid}"]);
    // The menu is drawn with the first question; the second comes; then
    // the person chooses.
    d.person.prefixed(&d.s, "M-w");
    d.person
        .wait_for_screen(&format!("go to {a} main:1 asking: First? [y/N]"));
    signal(pid.trim(), "USR1");
    d.s.wait_until(&a, "the second question", || {
        d.s.capture(&a).contains("Second? [y/N]")
    });
    let items = choosable(&d.person.screen());
    let at = items
        .iter()
        .position(|i| i.starts_with("answer y"))
        .unwrap();
    for _ in 0..at {
        d.person.keys(&["Down"]);
    }
    d.person.keys(&["Enter"]);
    wait_told(&d, &a, "nothing typed");
    // (The menu's `answer` has ended: a key it typed is in the terminal
    // before this one, and would show in what the question got.)
    d.s.tmux(&["send-keys", "-t", &a, "n", "Enter"]);
    d.s.wait_until(&a, "our own answer", || d.s.capture(&a).contains("got ["));
    let shown = d.s.capture(&a);
    assert!(
        shown.contains("got [n] for the second"),
        "a key reached the second question:\n{shown}"
    );
    d.idle("a menu's answer to a question that changed");

    // The same words, asked by another program than the one the menu saw.
    let b = script_window(
        &d,
        "other.sh",
        "trap 'echo; bash -c \"read -p \\\"Same? [y/N] \\\" y; echo child got [\\$y]\"; exec sleep 900' USR1\n\
         read -p 'Same? [y/N] ' x\necho \"got [$x]\"\nexec sleep 900\n",
    );
    d.wait_mark(&b, "asking");
    let pid =
        d.s.tmux(&["display-message", "-p", "-t", &b, "#{pane_pid}"]);
    d.person.prefixed(&d.s, "M-w");
    d.person
        .wait_for_screen(&format!("go to {b} main:2 asking: Same? [y/N]"));
    let first = asked(&d.s, &b)["pid"].clone();
    signal(pid.trim(), "USR1");
    d.s.wait_until(&b, "the child's question", || {
        d.s.capture(&b).matches("Same? [y/N]").count() == 2
    });
    d.s.wait_until(&b, "the child to read", || {
        let now = asked(&d.s, &b);
        now["outcome"] == "offers" && now["pid"] != first
    });
    let items = choosable(&d.person.screen());
    let from = items
        .iter()
        .position(|i| i.starts_with(&format!("go to {b} ")))
        .unwrap();
    let at = from
        + items[from..]
            .iter()
            .position(|i| i.starts_with("answer y"))
            .unwrap();
    for _ in 0..at {
        d.person.keys(&["Down"]);
    }
    d.person.keys(&["Enter"]);
    d.s.wait_until(&b, "the refusal", || {
        told(&d)
            .iter()
            .filter(|m| m.contains("nothing typed"))
            .count()
            >= 2
    });
    d.s.tmux(&["send-keys", "-t", &b, "n", "Enter"]);
    d.s.wait_until(&b, "our own answer", || d.s.capture(&b).contains("got ["));
    let shown = d.s.capture(&b);
    assert!(
        shown.contains("child got [n]"),
        "a key reached the other program:\n{shown}"
    );
    assert!(
        told(&d)
            .iter()
            .any(|m| m.contains("read by another program")),
        "{:?}",
        told(&d)
    );
    d.idle("a menu's answer to a question another program asks");
}

#[test]
fn a_password_gets_no_key_and_its_item_goes_there() {
    let mut d = Day::start("");
    // getpass reads /dev/tty, without echo.
    let a = d.window_running(
        "python3 -c 'import getpass; getpass.getpass(\"Password: \")'; exec sleep 900",
    );
    d.wait_mark(&a, "asking");
    let menu = choose(&d, None, &format!("go to {a} "));
    assert!(
        menu.contains(&format!("go to {a} main:1 password: Password:")),
        "{menu}"
    );
    let items = choosable(&menu);
    let at = items
        .iter()
        .position(|i| i.starts_with(&format!("go to {a} ")))
        .unwrap();
    assert!(
        items.get(at + 1).is_none_or(|i| !i.starts_with("answer")),
        "answers offered for a password: {items:?}"
    );
    d.s.wait_until(&a, "the person to be there", || d.on_screen() == a);
    // A script is refused too, with its own exit code, and types nothing.
    let out =
        d.s.tw()
            .args(["answer", "-t", &a, "--json", "y"])
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "password", "{v}");
    assert!(d.s.capture(&a).trim_end().ends_with("Password:"));
    // Back home; a question that turns into a password after the menu
    // was drawn: no key, and the person is taken there.
    d.person.prefixed(&d.s, "0");
    let b = script_window(
        &d,
        "unlock.sh",
        "trap 'echo; python3 -c \"import getpass; print(\\\"typed [\\\" + getpass.getpass(\\\"Passphrase: \\\") + \\\"]\\\")\"; exec sleep 900' USR1\n\
         read -p 'Unlock? [y/N] ' x\necho \"got [$x]\"\nexec sleep 900\n",
    );
    d.wait_mark(&b, "asking");
    let pid =
        d.s.tmux(&["display-message", "-p", "-t", &b, "#{pane_pid}"]);
    d.person.prefixed(&d.s, "M-w");
    d.person
        .wait_for_screen(&format!("go to {b} main:2 asking: Unlock? [y/N]"));
    signal(pid.trim(), "USR1");
    d.s.wait_until(&b, "the password prompt", || {
        d.s.capture(&b).contains("Passphrase:")
    });
    d.s.wait_until(&b, "python to read the password", || {
        asked(&d.s, &b)["error"]["kind"] == "password"
    });
    let items = choosable(&d.person.screen());
    let from = items
        .iter()
        .position(|i| i.starts_with(&format!("go to {b} ")))
        .unwrap();
    let at = from
        + items[from..]
            .iter()
            .position(|i| i.starts_with("answer y"))
            .unwrap();
    for _ in 0..at {
        d.person.keys(&["Down"]);
    }
    d.person.keys(&["Enter"]);
    d.s.wait_until(&b, "the person to be taken there", || d.on_screen() == b);
    wait_told(&d, &b, "reads a password");
    // (The refusal is told, not shown by run-shell in the pane.)
    let mode =
        d.s.tmux(&["display-message", "-p", "-t", &b, "#{pane_in_mode}"]);
    assert_eq!(mode.trim(), "0", "the pane was put in a mode");
    // (A key the menu's `answer` typed would come before these.)
    d.s.tmux(&["send-keys", "-t", &b, "-l", "secret"]);
    d.s.tmux(&["send-keys", "-t", &b, "Enter"]);
    d.s.wait_until(&b, "the password typed", || {
        d.s.capture(&b).contains("typed [")
    });
    let shown = d.s.capture(&b);
    assert!(
        shown.contains("typed [secret]") && !shown.contains("got ["),
        "a key reached the password prompt:\n{shown}"
    );
    d.idle("a menu's answer to a question that became a password");
}

#[test]
fn scripts_answer_only_the_question_they_name() {
    let mut d = Day::start("");
    let a = d.window_running("read -p 'Proceed? [y/N] ' x; echo \"got [$x]\"; exec sleep 900");
    d.wait_mark(&a, "asking");
    let tw = |args: &[&str]| {
        let out =
            d.s.tw()
                .args(["answer", "-t", &a])
                .args(args)
                .output()
                .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // What it offers.
    let (code, out) = tw(&["--json"]);
    assert_eq!(code, Some(0), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["question"], "Proceed? [y/N]");
    let offered: Vec<&str> = v["offers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["choice"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["y", "n"]);
    // Another question named, another program, an answer not offered:
    // refused (7), nothing typed.
    for args in [
        &["--question", "Delete? [y/N]", "y"][..],
        &["--pid", "1", "y"],
        &["--question-id", "0000000000000000", "y"],
        &["x"],
    ] {
        let (code, out) = tw(args);
        assert_eq!(code, Some(7), "{args:?}: {out}");
    }
    assert!(!d.s.capture(&a).contains("got ["));
    // The question named: typed, and it moved on.
    let id = v["question_id"].as_str().unwrap().to_owned();
    let (code, out) = tw(&["--question-id", &id, "--json", "y"]);
    assert_eq!(code, Some(0), "{out}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["outcome"], "moved_on", "{r}");
    assert_eq!(r["keys"], serde_json::json!(["y", "Enter"]));
    d.s.wait_until(&a, "the answer", || d.s.capture(&a).contains("got [y]"));
    // Asked nothing now: refused.
    let (code, _) = tw(&["y"]);
    assert_eq!(code, Some(7));
    d.idle("a script's answer");
    assert_eq!(
        events_of(&d.s, &a),
        ["needs asking", "answered asking by=script choice=y"]
    );
}

#[test]
fn the_log_lists_every_need_in_order_with_how_long_it_waited() {
    let mut d = Day::start("set -g @tmux-wait-attention-age on");
    let t0 = Instant::now();
    // Asked, then answered by keys typed into the pane itself.
    let a = d.window_running("read -p 'One? [y/N] ' x; echo \"got [$x]\"; exec sleep 900");
    d.wait_mark(&a, "asking");
    // The segment says how long the longest wait has lasted.
    d.wait_segment(&a, "⚑1 main:1 asking <1m");
    // Asked, then answered by a script.
    let b = d.window_running("read -p 'Two? [y/N] ' x; echo \"got [$x]\"; exec sleep 900");
    d.wait_mark(&b, "asking");
    d.s.tmux(&["send-keys", "-t", &a, "y", "Enter"]);
    d.s.wait_until(&a, "the typed answer", || {
        d.s.capture(&a).contains("got [y]")
    });
    d.wait_mark(&a, "");
    let out = d.s.tw().args(["answer", "-t", &b, "n"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    d.wait_mark(&b, "");
    // Asked, and the person goes there: seen; then its pane is closed
    // while another asks: closed with its mark.
    let c = d.window_running("read -p 'Three? [y/N] ' x; exec sleep 900");
    d.wait_mark(&c, "asking");
    let e = d.window_running("read -p 'Four? [y/N] ' x; exec sleep 900");
    d.wait_mark(&e, "asking");
    d.s.tmux(&["kill-pane", "-t", &e]);
    d.s.wait_until(&c, "the closed pane's end in the log", || {
        events_of(&d.s, &e).len() == 2
    });
    d.idle("the log's events");
    let took = t0.elapsed().as_secs_f64();

    assert_eq!(
        events_of(&d.s, &a),
        ["needs asking", "answered asking by=keys"]
    );
    assert_eq!(
        events_of(&d.s, &b),
        ["needs asking", "answered asking by=script choice=n"]
    );
    assert_eq!(
        events_of(&d.s, &e),
        ["needs asking", "gone asking how=closed"]
    );
    // c still waits: its need is open, and says for how long.
    let l = log(&d.s);
    let open: Vec<&Value> = l.iter().filter(|e| e["waiting"].is_number()).collect();
    assert_eq!(open.len(), 1, "{l:#?}");
    assert_eq!(open[0]["pane"], c.as_str());
    // In order, each of the three ends after its need.
    assert_eq!(in_order(&l), 3, "{l:#?}");
    assert!(
        l.iter()
            .all(|e| e["waited"].as_f64().is_none_or(|w| w <= took)),
        "{l:#?}"
    );
    // --since leaves the older out; the lines for people say the same.
    let out = d.s.tw().args(["log", "--since", "1h"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), l.len(), "{text}");
    assert!(
        lines.iter().any(|x| x.contains(&format!(
            "{a} main:1 answered (keys typed in the pane) after "
        ))),
        "{text}"
    );
    assert!(
        lines.iter().any(|x| x.contains(&format!(
            "{c} main:3 needs you: asking (reads_line): Three? [y/N] (still waiting: "
        ))),
        "{text}"
    );
    let out =
        d.s.tw()
            .args(["log", "--since", "1ms", "--json"])
            .output()
            .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["events"].as_array().map(Vec::len), Some(0), "{v}");
}
