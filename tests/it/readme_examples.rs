//! The examples of the README and the other docs, run as written in the
//! setting each names.
//!
//! Every ```sh and ```tmux block of README.md, CONTRIBUTING.md and
//! docs/*.md is preceded by a comment `<!-- example: SETTING -->` that says
//! where it runs; the blocks are read from the files themselves, so an
//! example cannot change without its test:
//!
//! - `script`: saved as a file and run with bash from a pane's prompt
//!   (TMUX and TMUX_PANE set as for a person); it must exit 0 (or as the
//!   comment says: "exits 0, or 3 ...").
//! - `second pane`: a transcript typed in the second pane of a window
//!   whose first pane (`{last}`) is at a bash prompt: each `$ ` line runs
//!   there, and what it prints must be the lines under it (pane ids and
//!   JSON's `elapsed_seconds` aside).
//! - `tmux.conf`: lines of a tmux configuration: `source-file` takes them.
//! - `~/.bashrc`, `~/.zshrc`, `~/.config/fish/config.fish`: the end of that
//!   shell's rc file; commands typed there then report their exit status.
//! - `none (why)`: not run here (the reason is given).
//!
//! The same files are checked for words of how tmux-wait was made, and for
//! links to files or headings that do not exist.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
struct Example {
    /// The file, relative to the repository.
    file: String,
    /// 1-based line of the opening fence.
    line: usize,
    setting: Option<String>,
    lang: String,
    body: String,
}

impl Example {
    /// Where it is, for messages: `docs/commands.md line 12`.
    fn at(&self) -> String {
        format!("{} line {}", self.file, self.line)
    }
}

/// The documentation files, relative to the repository: README.md,
/// CONTRIBUTING.md and every docs/*.md.
fn doc_files() -> Vec<String> {
    let mut files = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 5, "docs/: {docs:?}");
    files.extend(docs);
    files
}

fn read(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The fenced blocks of every doc file with the setting their comment names.
fn examples() -> Vec<Example> {
    doc_files()
        .iter()
        .flat_map(|f| examples_in(f, &read(f)))
        .collect()
}

fn examples_in(file: &str, text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut setting: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if let Some(rest) = t.strip_prefix("<!-- example:") {
            setting = Some(rest.trim_end_matches("-->").trim().to_owned());
        } else if let Some(lang) = t.strip_prefix("```") {
            let indent = lines[i].len() - t.len();
            let mut body = String::new();
            let start = i + 1;
            i += 1;
            while i < lines.len() && lines[i].trim() != "```" {
                let l = lines[i];
                body.push_str(l.get(indent.min(l.len())..).unwrap_or(""));
                body.push('\n');
                i += 1;
            }
            out.push(Example {
                file: file.to_owned(),
                line: start,
                setting: setting.take(),
                lang: lang.trim().to_owned(),
                body,
            });
        } else if !t.is_empty() {
            // A comment applies to the block right after it.
            setting = None;
        }
        i += 1;
    }
    out
}

fn with_setting(prefix: &str) -> Vec<Example> {
    let found: Vec<Example> = examples()
        .into_iter()
        .filter(|e| e.setting.as_deref().is_some_and(|s| s.starts_with(prefix)))
        .collect();
    assert!(!found.is_empty(), "no example in the setting {prefix:?}");
    found
}

#[test]
fn every_example_says_where_it_runs() {
    let all = examples();
    let known = [
        "script",
        "second pane",
        "tmux.conf",
        "~/.bashrc",
        "~/.zshrc",
        "~/.config/fish/config.fish",
        "none (",
    ];
    let mut marked = 0;
    for e in &all {
        match &e.setting {
            Some(s) => {
                assert!(
                    known.iter().any(|k| s.starts_with(k)),
                    "{}: unknown setting {s:?}",
                    e.at()
                );
                marked += 1;
            }
            None => assert!(
                !matches!(e.lang.as_str(), "sh" | "bash" | "zsh" | "fish" | "tmux"),
                "{}: a ```{} block without <!-- example: SETTING -->",
                e.at(),
                e.lang
            ),
        }
    }
    assert!(marked >= 10, "{marked} examples found");
}

/// The docs speak of the product, not of how it was made.
///
/// docs/benchmarks.md is left out: it is the record of one run of
/// `scripts/bench` and names the contenders as the script prints them.
/// One name of a thing in the repository is let through: the test module
/// `tests/it/peer_defects.rs`.
#[test]
fn docs_have_no_internal_words() {
    for file in doc_files() {
        if file == "docs/benchmarks.md" {
            continue;
        }
        let text = read(&file).to_lowercase().replace("peer_defects", "");
        for word in ["peer", "seed", "waitfortextresult", "issue #"] {
            if let Some(at) = text.find(word) {
                let line = text[..at].lines().count().max(1);
                panic!("{file} line {line} says {word:?}");
            }
        }
    }
}

/// The README stays short: the rest is in docs/.
#[test]
fn readme_is_under_300_lines() {
    let n = read("README.md").lines().count();
    assert!(n < 300, "README.md has {n} lines");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks), with
/// GitHub's `-1`, `-2` for repeats.
fn anchors(text: &str) -> Vec<String> {
    let mut bases: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut fenced = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(h) = l.strip_prefix('#').map(|h| h.trim_start_matches('#')) else {
            continue;
        };
        if fenced || !h.starts_with(' ') {
            continue;
        }
        let a = anchor(h);
        let n = bases.iter().filter(|b| **b == a).count();
        out.push(if n == 0 {
            a.clone()
        } else {
            format!("{a}-{n}")
        });
        bases.push(a);
    }
    out
}

/// Every relative link between the docs names a file that exists and, with
/// `#anchor`, a heading in it.
#[test]
fn links_between_docs_resolve() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut checked = 0;
    for file in doc_files() {
        let text = read(&file);
        let dir = Path::new(&file).parent().unwrap_or(Path::new(""));
        let mut fenced = false;
        for (n, l) in text.lines().enumerate() {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            for c in link.captures_iter(l) {
                let target = &c[1];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, frag) = target.split_once('#').unwrap_or((target, ""));
                let at = format!("{file} line {}", n + 1);
                let resolved = if path.is_empty() {
                    PathBuf::from(&file)
                } else {
                    dir.join(path)
                };
                let full = root().join(&resolved);
                assert!(full.exists(), "{at}: {target} names no file");
                if !frag.is_empty() {
                    let found = anchors(&std::fs::read_to_string(&full).unwrap());
                    assert!(
                        found.iter().any(|a| a == frag),
                        "{at}: {target}: no heading #{frag} in {} (it has {found:?})",
                        resolved.display()
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} links checked");
}

/// Type `line` at the prompt of `pane`, with stdout and stderr into one
/// file; return the exit status and what it printed, once it ended.
fn type_and_wait(s: &TestServer, pane: &str, line: &str) -> (Option<i32>, String) {
    let ch = unique("ex");
    let out = s.dir().join("example.out");
    let st = s.dir().join("example.st");
    let _ = std::fs::remove_file(&st);
    s.type_line(
        pane,
        &format!(
            "{line} >'{o}' 2>&1; echo $? >'{st}'; tmux wait-for -S {ch}",
            o = out.display(),
            st = st.display()
        ),
    );
    let mut w = s.tmux_cmd();
    w.args(["wait-for", &ch]);
    let f = run_bounded(w);
    assert_eq!(f.code, Some(0), "{f:?}");
    let code = std::fs::read_to_string(&st)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    (code, std::fs::read_to_string(&out).unwrap_or_default())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn script_examples_run_as_written() {
    for e in with_setting("script") {
        let s = TestServer::new();
        let script = write(s.dir(), "example.sh", &e.body);
        let (code, out) = type_and_wait(&s, &s.pane, &format!("bash '{}'", script.display()));
        let setting = e.setting.clone().unwrap_or_default();
        let allowed: &[i32] = if setting.contains("or 3") {
            &[0, 3]
        } else {
            &[0]
        };
        assert!(
            code.is_some_and(|c| allowed.contains(&c)),
            "{}: exit {code:?}, expected {allowed:?}; it printed:\n{out}\n---\n{}",
            e.at(),
            e.body
        );
        if code == Some(3) {
            println!("{}: exit 3 (port taken): {out}", e.at());
        }
    }
}

/// A transcript: each command and the lines it is shown to print.
fn transcript(body: &str) -> Vec<(String, Vec<String>)> {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for l in body.lines() {
        if let Some(cmd) = l.strip_prefix("$ ") {
            steps.push((cmd.to_owned(), Vec::new()));
        } else if let Some((_, expected)) = steps.last_mut() {
            // A JSON object shown over several lines is one line of output.
            match expected.last_mut() {
                Some(prev) if l.starts_with(' ') && prev.starts_with('{') => {
                    prev.push_str(l.trim())
                }
                _ => expected.push(l.to_owned()),
            }
        }
    }
    steps
}

/// Pane ids differ from server to server.
fn normalise(l: &str) -> String {
    regex::Regex::new(r"%[0-9]+")
        .unwrap()
        .replace_all(l, "%N")
        .into_owned()
}

fn same_line(expected: &str, actual: &str) -> bool {
    if let Ok(Value::Object(want)) = serde_json::from_str::<Value>(expected) {
        let Ok(Value::Object(got)) = serde_json::from_str::<Value>(actual) else {
            return false;
        };
        let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
        return keys(&want) == keys(&got)
            && want
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "elapsed_seconds" | "pane_id"))
                .all(|(k, v)| got.get(k) == Some(v));
    }
    normalise(expected) == normalise(actual)
}

/// The first pane is at its prompt, or runs a command (left by a run that
/// timed out): not in between.
fn settled(s: &TestServer, pane: &str) {
    s.wait_until(pane, "the first pane to settle", || {
        let info = s.tmux(&[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_current_command} #{cursor_x}",
        ]);
        let row = s.capture(pane);
        let last = row.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        !info.starts_with("bash ") || (info.trim().ends_with(" 2") && last.trim_end() == "$")
    });
}

#[test]
fn second_pane_examples_run_as_written() {
    for e in with_setting("second pane") {
        let s = TestServer::new();
        let first = s.pane.clone();
        // The person splits the window and works in the new pane; the
        // pane they were in is {last}.
        let out = s
            .tmux_cmd()
            .args(["split-window", "-P", "-F", "#{pane_id}"])
            .env("PATH", path_with_helper())
            .output()
            .unwrap();
        let second = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        s.wait_for_prompt(&second);
        for (n, (cmd, expected)) in transcript(&e.body).into_iter().enumerate() {
            settled(&s, &first);
            let step = write(s.dir(), &format!("step{n}.sh"), &format!("{cmd}\n"));
            let (_, printed) = type_and_wait(&s, &second, &format!("bash '{}'", step.display()));
            let got: Vec<&str> = printed.lines().collect();
            let ok = got.len() == expected.len()
                && expected.iter().zip(&got).all(|(w, g)| same_line(w, g));
            assert!(
                ok,
                "{}: `{cmd}` printed\n{printed}\n--- where the docs show\n{}\n--- the first pane shows\n{}",
                e.at(),
                expected.join("\n"),
                s.capture(&first)
            );
            s.wait_for_prompt(&second);
        }
    }
}

#[test]
fn tmux_conf_examples_load() {
    for e in with_setting("tmux.conf") {
        let s = TestServer::new();
        let conf = write(s.dir(), "example.conf", &e.body);
        let out = s
            .tmux_cmd()
            .args(["source-file"])
            .arg(&conf)
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{}: {}\n{}",
            e.at(),
            String::from_utf8_lossy(&out.stderr),
            e.body
        );
    }
}

#[test]
fn rc_file_examples_report_exit_status() {
    let rc_examples: Vec<Example> = examples()
        .into_iter()
        .filter(|e| e.setting.as_deref().is_some_and(|s| s.starts_with('~')))
        .collect();
    assert_eq!(rc_examples.len(), 3, "bash, zsh and fish");
    for e in rc_examples {
        let setting = e.setting.clone().unwrap_or_default();
        let s = TestServer::new();
        // The rc file of a person: a prompt, other settings, then the example.
        let shell = match setting.as_str() {
            "~/.bashrc" => "bash",
            "~/.zshrc" => "zsh",
            _ => "fish",
        };
        if !installed(shell) {
            println!("skipped {}: {shell} is not installed", e.at());
            continue;
        }
        let pane = s.shell_window(shell, &e.body);
        s.type_line(&pane, "sh -c 'sleep 0.5; exit 3'");
        s.wait_for_command_other_than(&pane, shell);
        let mut c = s.tw();
        c.args(["watch", "-t", &pane, "--done", "--json"]);
        let f = run_bounded(c);
        assert_eq!(f.code, Some(0), "{}: {f:?}", e.at());
        assert_eq!(
            f.json()["exit_status"],
            3,
            "{} ({setting}): {}\npane:\n{}",
            e.at(),
            f.stdout,
            s.capture(&pane)
        );
    }
}

/// The README's status and window-list lines, with the user's own config
/// around them and the plugin's line before or after them (without TPM:
/// `run-shell`), through a person's client: the segment shows the pane
/// that needs them, and the window list keeps tmux's own flags beside the
/// mark.
#[test]
fn the_readmes_status_lines_work_before_or_after_the_plugin() {
    let readme: Vec<Example> = with_setting("tmux.conf")
        .into_iter()
        .filter(|e| e.file == "README.md")
        .collect();
    let lines: String = readme
        .iter()
        .map(|e| e.body.as_str())
        .filter(|b| b.contains("status-right") || b.contains("window-status-format"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        lines.contains("status-right") && lines.contains("window-status-format"),
        "{lines}"
    );
    let plugin = format!("run-shell '{}'", root().join("tmux-wait.tmux").display());
    for plugin_first in [true, false] {
        let s = TestServer::with(Options {
            extra_config: "set -g status on\nset -g @tmux-wait-attention on".into(),
            ..Options::default()
        });
        let conf = if plugin_first {
            format!("{plugin}\n{lines}\n")
        } else {
            format!("{lines}\n{plugin}\n")
        };
        let conf = write(s.dir(), "user.conf", &conf);
        s.tmux(&["source-file", &conf.to_string_lossy()]);
        s.wait_until(&s.pane, "attention to watch", || {
            !s.tmux(&["show-option", "-gqv", "@tmux-wait-attention-scope"])
                .trim()
                .is_empty()
        });
        let person = crate::common::outer::OuterClient::attach(&s, "main");
        person.press_a_key(&s);
        // Window 1 is made and left: tmux flags it the last window (-).
        let p = s
            .tmux(&["new-window", "-P", "-F", "#{pane_id}"])
            .trim()
            .to_owned();
        s.wait_for_prompt(&p);
        s.wait_until(&p, "the watch to arm", || s.pane_watched(&p));
        s.tmux(&["select-window", "-t", ":0"]);
        s.type_line(&p, "true");
        let at = if plugin_first { "after" } else { "before" };
        person.wait_for_screen("⚑1 main:1 prompt");
        person.wait_for_screen("1:bash-⚑");
        println!("the README's lines {at} the plugin's: shown");
    }
}
