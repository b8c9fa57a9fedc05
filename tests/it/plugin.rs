//! The TPM plugin loaded into a real tmux server, with a real client
//! attached in a pseudo-terminal pressing the key bindings.

use crate::common::*;
use serde_json::Value;

const PREFIX: &[u8] = b"\x02";

fn load_plugin(s: &TestServer) {
    let entry = root().join("tmux-wait.tmux");
    s.tmux(&["run-shell", &entry.to_string_lossy()]);
}

fn watches(s: &TestServer) -> Vec<Value> {
    let mut c = s.tw();
    c.args(["list", "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    f.json().as_array().cloned().unwrap_or_default()
}

fn status(s: &TestServer) -> String {
    s.tmux(&["show-option", "-gqv", "@tmux_wait_status"])
        .trim()
        .to_owned()
}

#[test]
fn wait_for_text_from_the_key_binding() {
    let s = TestServer::new();
    let env_file = s.dir().join("hook.env");
    let touched = s.dir().join("pwned");
    s.tmux(&[
        "set-option",
        "-g",
        "@tmux-wait-on-done",
        &format!(
            "env | grep ^TMUX_WAIT_ > '{f}.tmp' && mv '{f}.tmp' '{f}'",
            f = env_file.display()
        ),
    ]);
    s.tmux(&["set-option", "-g", "status-right", "[#{tmux_wait_status}]"]);
    load_plugin(&s);
    let mut client = PtyClient::attach(&s);
    // prefix W, then the pattern at the prompt. It holds tmux format and
    // shell syntax, which must stay text all the way.
    let pattern = format!("DONE #(touch {})", touched.display());
    client.press_until_drawn(&s, b"\x02W", "wait for text:");
    client.keys(pattern.as_bytes());
    client.keys(b"\r");
    s.wait_until(&s.pane, "the watch to start", || watches(&s).len() == 1);
    let w = &watches(&s)[0];
    assert_eq!(w["pane_id"], s.pane.as_str());
    assert_eq!(w["label"], pattern.as_str());
    s.wait_until(&s.pane, "the status segment", || {
        status(&s).starts_with("⏳1")
    });
    // The pane prints the pattern (split in the typed line, so the echo
    // does not match). The watch is listed a moment before it follows the
    // pane (a line printed in between is before its start, and not seen):
    // print it again until the watch ends.
    let line = format!("echo 'DONE #(touch {})'", touched.display()).replace("DONE", "DO''NE");
    let mut last_typed: Option<std::time::Instant> = None;
    s.wait_until(&s.pane, "the watch to end", || {
        if watches(&s).is_empty() {
            return true;
        }
        if last_typed.is_none_or(|t| t.elapsed() > std::time::Duration::from_millis(700)) {
            s.type_line(&s.pane, &line);
            last_typed = Some(std::time::Instant::now());
        }
        false
    });
    s.wait_until(&s.pane, "the result in the status", || {
        status(&s).starts_with("✓")
    });
    // How long the watch took, said as such.
    assert!(status(&s).contains(" (took "), "{}", status(&s));
    assert!(
        status(&s).contains("##(touch"),
        "status not escaped: {}",
        status(&s)
    );
    s.wait_until(&s.pane, "the hook", || env_file.exists());
    let env = std::fs::read_to_string(&env_file).unwrap();
    assert!(env.contains("TMUX_WAIT_OUTCOME=matched"), "{env}");
    assert!(env.contains(&format!("TMUX_WAIT_PANE={}", s.pane)), "{env}");
    assert!(env.contains("TMUX_WAIT_LINE=DONE #(touch"), "{env}");
    let messages = s.tmux(&["show-messages"]);
    assert!(messages.contains("tmux-wait ✓"), "{messages}");
    // The status line shows the segment (placeholder replaced).
    assert_eq!(
        s.tmux(&["show-option", "-gv", "status-right"]).trim(),
        "[#{@tmux_wait_status}]"
    );
    assert!(!touched.exists(), "pane text was run");
    drop(client);
}

#[test]
fn done_binding_and_cancel_from_the_list() {
    let s = TestServer::new();
    load_plugin(&s);
    let mut client = PtyClient::attach(&s);
    s.type_line(&s.pane, "sleep 30");
    s.wait_for_command(&s.pane, "sleep");
    client.keys(PREFIX);
    client.keys(b"F");
    // Right after attaching the prefix may be lost: press again if needed.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while watches(&s).is_empty() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if watches(&s).is_empty() {
        client.keys(PREFIX);
        client.keys(b"F");
    }
    s.wait_until(&s.pane, "the done watch", || watches(&s).len() == 1);
    assert_eq!(watches(&s)[0]["kind"], "done");
    // The menu lists it; "a" cancels all.
    client.press_until_drawn(&s, b"\x02\x1bw", "Cancel all");
    client.keys(b"a");
    s.wait_until(&s.pane, "the watch to be cancelled", || {
        watches(&s).is_empty()
    });
    s.tmux(&["send-keys", "-t", &s.pane, "C-c"]);
    s.wait_until(&s.pane, "no helper processes", || {
        s.processes_using_socket()
            .iter()
            .all(|p| !p.contains("tmux-wait"))
    });
    drop(client);
}

#[test]
fn done_watch_reports_when_the_command_finishes() {
    let s = TestServer::new();
    s.type_line(&s.pane, "sleep 0.7");
    s.wait_for_command(&s.pane, "sleep");
    let mut c = s.tw();
    c.args([
        "watch",
        "-t",
        &s.pane,
        "--done",
        "--json",
        "--channel",
        "done-ch",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let v = f.json();
    assert_eq!(v["outcome"], "done");
    assert_eq!(v["channel"], "done-ch");
    // The command's own run time, from its process's start (Linux).
    if std::path::Path::new("/proc/self/stat").exists() {
        let ran = v["command_seconds"].as_f64().unwrap();
        assert!((0.6..5.0).contains(&ran), "{v}");
    }
    // At a prompt there is nothing to wait for.
    s.wait_for_prompt(&s.pane);
    let mut c = s.tw();
    c.args(["watch", "-t", &s.pane, "--done"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(2));
    assert!(f.stderr.contains("nothing is running"), "{}", f.stderr);
}

#[test]
fn quiet_watch_and_channel() {
    let s = TestServer::new();
    let mut c = s.tw();
    c.args(["watch", "-t", &s.pane, "--quiet", "300ms", "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(f.json()["outcome"], "quiet");
}

#[test]
fn loading_twice_leaves_one_binding_and_one_segment() {
    let s = TestServer::new();
    s.tmux(&["set-option", "-g", "status-left", "L #{tmux_wait_status} R"]);
    // (tmux 3.4 prints a $ before a word with a backslash: read back as
    // printed, this would be set again with one more.)
    s.tmux(&[
        "set-option",
        "-g",
        "status-right",
        "#(echo $USER) \\$1 \\$X #{tmux_wait_status};",
    ]);
    s.tmux(&["bind-key", "-T", "prefix", "Q", "display-message mine"]);
    load_plugin(&s);
    load_plugin(&s);
    let keys = s.tmux(&["list-keys", "-T", "prefix"]);
    assert_eq!(keys.matches("tmux-wait.sh").count(), 5, "{keys}");
    // The user's own binding is kept.
    assert!(keys.contains("display-message mine"));
    assert_eq!(
        s.tmux(&["show-option", "-gv", "status-left"]).trim(),
        "L #{@tmux_wait_status} R"
    );
    s.tmux(&[
        "set-option",
        "-g",
        "@check",
        "#(echo $USER) \\$1 \\$X #{@tmux_wait_status};",
    ]);
    assert_eq!(
        s.tmux(&["show-option", "-gv", "status-right"]),
        s.tmux(&["show-option", "-gv", "@check"]),
        "status-right"
    );
    let aliases = s.tmux(&["show-options", "-g", "command-alias"]);
    assert_eq!(aliases.matches("wait-text=").count(), 1, "{aliases}");
    // "none" disables a binding.
    let s2 = TestServer::new();
    s2.tmux(&["set-option", "-g", "@tmux-wait-key-text", "none"]);
    load_plugin(&s2);
    let keys = s2.tmux(&["list-keys", "-T", "prefix"]);
    assert_eq!(keys.matches("tmux-wait.sh").count(), 5, "{keys}");
    assert!(binding(&s2, "W").is_empty(), "{keys}");
}

#[test]
fn watches_end_cleanly_when_their_pane_or_server_goes() {
    let s = TestServer::new();
    let p2 = s.split();
    let spawn = |target: &str| {
        let mut c = s.tw();
        c.args(["watch", "-t", target, "--pattern", "never", "--json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    let a = spawn(&p2);
    let b = spawn(&p2);
    let c = spawn(&s.pane);
    s.wait_until(&s.pane, "three watches", || watches(&s).len() == 3);
    s.tmux(&["kill-pane", "-t", &p2]);
    for child in [a, b] {
        let f = finished(child.wait_with_output().unwrap());
        assert_eq!(f.code, Some(2), "{}", f.stdout);
        assert_eq!(f.json()["outcome"], "pane_died");
    }
    s.wait_until(&s.pane, "one watch left", || watches(&s).len() == 1);
    s.tmux(&["kill-server"]);
    let f = finished(c.wait_with_output().unwrap());
    assert_eq!(f.code, Some(2), "{}", f.stdout);
    s.wait_no_helpers();
}

/// Run the plugin's entry point as TPM does: a process with `TMUX` naming
/// the server (not through run-shell), `PATH` as given. It says nothing.
fn load_as_tpm(s: &TestServer, entry: &std::path::Path, path: &std::ffi::OsStr) {
    let f = run_entry(s, entry, path);
    assert_eq!(f.code, Some(0), "{f:?}");
    assert!(f.stdout.is_empty() && f.stderr.is_empty(), "{f:?}");
}

fn run_entry(s: &TestServer, entry: &std::path::Path, path: &std::ffi::OsStr) -> Finished {
    let pid = s.tmux(&["display-message", "-p", "#{pid}"]);
    run_bounded({
        let mut c = std::process::Command::new(entry);
        c.env("TMUX", format!("{},{},0", s.socket.display(), pid.trim()))
            .env_remove("TMUX_PANE")
            .env("PATH", path)
            .stdin(std::process::Stdio::null());
        c
    })
}

/// The prefix table's binding of `key` (as list-keys names it), or "".
/// Read from the whole table: tmux 3.7 shows `list-keys -T prefix KEY`,
/// a one-line listing, as a message instead of printing it.
fn binding(s: &TestServer, key: &str) -> String {
    s.tmux(&["list-keys", "-T", "prefix"])
        .lines()
        .find(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.iter()
                .position(|w| *w == "-T")
                .is_some_and(|i| f.get(i + 2) == Some(&key))
        })
        .unwrap_or_default()
        .to_owned()
}

/// What the server's message log holds besides the commands it ran.
fn logged_messages(s: &TestServer) -> Vec<String> {
    s.tmux(&["show-messages"])
        .lines()
        .filter(|l| !l.contains(" command: "))
        .map(str::to_owned)
        .collect()
}

/// A load leaves nothing in the server's messages: no "unknown key" for
/// keys it asks about, no notice; a second load neither. A default key
/// the user bound to something else is said once per server (its command
/// would otherwise be missing without a word); a key option that is no
/// key says so.
#[test]
fn loading_is_silent() {
    let s = TestServer::new();
    let _client = PtyClient::attach(&s);
    s.tmux(&["bind-key", "-T", "prefix", "Q", "display-message mine"]);
    let entry = root().join("tmux-wait.tmux");
    let mut before = logged_messages(&s);
    let start = std::time::Instant::now();
    load_as_tpm(&s, &entry, &path_with_helper());
    let first = logged_messages(&s);
    load_as_tpm(&s, &entry, &path_with_helper());
    let took = start.elapsed();
    let said: Vec<&String> = first.iter().filter(|m| !before.contains(m)).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(
            "prefix Q is bound already, so it does not watch for a pane to go quiet: \
             set @tmux-wait-key-quiet to another key (or to none)"
        ),
        "{said:?}"
    );
    before = first;
    assert_eq!(logged_messages(&s), before, "a second load left messages");
    let keys = s.tmux(&["list-keys", "-T", "prefix"]);
    assert_eq!(keys.matches("tmux-wait.sh").count(), 5, "{keys}");
    assert!(keys.contains("display-message mine"), "{keys}");
    // No table of ours is left behind.
    assert!(!s.tmux(&["list-keys"]).contains("tmux-wait-probe"));
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    // A key spelled otherwise than tmux lists it is still recognised as
    // taken: m-w is M-w.
    s.tmux(&["bind-key", "-T", "prefix", "M-x", "display-message mine2"]);
    s.tmux(&["set-option", "-g", "@tmux-wait-key-list", "m-x"]);
    load_as_tpm(&s, &entry, &path_with_helper());
    let m_x = binding(&s, "M-x");
    assert!(m_x.contains("display-message mine2"), "{m_x}");
    assert_eq!(logged_messages(&s), before, "a load left messages");
    // A build's notice left by an earlier load goes once the helper is here.
    s.tmux(&[
        "set-option",
        "-g",
        "@tmux_wait_status",
        "✗ tmux-wait: the helper did not build",
    ]);
    load_as_tpm(&s, &entry, &path_with_helper());
    s.wait_until(&s.pane, "the old notice to go", || status(&s).is_empty());
    // A key option that is no key: one message naming it.
    s.tmux(&["set-option", "-g", "@tmux-wait-key-list", "NoSuchKey"]);
    load_as_tpm(&s, &entry, &path_with_helper());
    let after = logged_messages(&s);
    assert!(
        after
            .iter()
            .any(|m| m.contains("@tmux-wait-key-list: 'NoSuchKey' is not a key tmux knows")),
        "{after:?}"
    );
}

/// With no helper of the plugin's version, loading the plugin builds one in
/// the background and shows it in the status segment; the W prompt says so
/// before the text is typed, and the watch starts once the helper is built.
#[test]
fn builds_the_helper_when_missing_and_says_so() {
    let s = TestServer::new();
    // A copy of the plugin whose version no tmux-wait has, and a stand-in
    // cargo that waits for the test's go-ahead and builds a stand-in
    // helper that records how it is called.
    let plugin = s.dir().join("plugin");
    std::fs::create_dir_all(plugin.join("scripts")).unwrap();
    for f in [
        "tmux-wait.tmux",
        "scripts/tmux-wait.sh",
        "scripts/helpers.sh",
        "scripts/variables.sh",
        "scripts/install-helper.sh",
    ] {
        copy_program(&root().join(f), &plugin.join(f));
    }
    std::fs::write(
        plugin.join("Cargo.toml"),
        "[package]\nname = \"tmux-wait\"\nversion = \"9.9.9\"\n",
    )
    .unwrap();
    let bin = s.dir().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let go = s.dir().join("go");
    let calls = s.dir().join("calls");
    write_exe(
        &bin.join("cargo"),
        format!(
            "#!/bin/sh\n# Waits for the test's go-ahead, 30 s at most.\n\
             for _ in $(seq 1 600); do [ -e '{go}' ] && break; sleep 0.05; done\n\
             mkdir -p target/release\n\
             printf '#!/bin/sh\\n[ \"$1\" = --version ] && exec echo tmux-wait 9.9.9\\necho \"$*\" >> {calls}\\n' > target/release/tmux-wait\n\
             chmod +x target/release/tmux-wait\n",
            go = go.display(),
            calls = calls.display()
        ),
    );
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        bin.display(),
        crate::common::tmux_dir().display()
    );
    s.tmux(&["set-environment", "-g", "PATH", &path]);
    s.tmux(&["set-option", "-g", "status", "on"]);
    s.tmux(&["set-option", "-g", "status-right", "[#{tmux_wait_status}]"]);
    // (No release to download: tests/it/install.rs has those.)
    s.tmux(&["set-option", "-g", "@tmux-wait-download", "off"]);
    let mut client = PtyClient::attach(&s);
    load_as_tpm(&s, &plugin.join("tmux-wait.tmux"), path.as_ref());
    // The status segment says it at once, and the client draws it.
    assert_eq!(status(&s), "⏳ tmux-wait: building the helper…");
    client.wait_for_drawn(&s, "building the helper…");
    let messages = || s.tmux(&["show-messages"]);
    s.wait_until(&s.pane, "the building message", || {
        messages().contains("building the helper (cargo build")
    });
    // W: the prompt says the helper is building before anything is typed.
    client.press_until_drawn(&s, b"\x02W", "the helper is still building");
    client.keys(b"HELLO");
    client.keys(b"\r");
    s.wait_until(&s.pane, "the arming message", || {
        messages().contains("the watch starts once the helper is there")
    });
    // F meanwhile says it is building.
    s.tmux(&[
        "run-shell",
        &format!(
            "'{}' done '{}'",
            plugin.join("scripts/tmux-wait.sh").display(),
            s.pane
        ),
    ]);
    s.wait_until(&s.pane, "the not-there-yet message", || {
        messages().contains("the helper is not there yet")
    });
    std::fs::write(&go, "").unwrap();
    s.wait_until(&s.pane, "the built message", || {
        messages().contains("helper built; ready")
    });
    // The text typed during the build is watched for now.
    s.wait_until(&s.pane, "the watch to start", || {
        std::fs::read_to_string(&calls)
            .is_ok_and(|c| c.contains("watch -t %0 --pattern-option @tmux-wait-pattern"))
    });
    assert_eq!(
        s.tmux(&["show-option", "-pqv", "-t", &s.pane, "@tmux-wait-pattern"])
            .trim(),
        "HELLO"
    );
    assert_eq!(status(&s), "");
    assert_eq!(
        s.tmux(&["show-option", "-gqv", "@tmux-wait-prompt-note"])
            .trim(),
        ""
    );
    assert!(plugin.join("target/release/tmux-wait").exists());
    assert!(!plugin.join("target/tmux-wait-build/lock").exists());
    drop(client);
}

/// `tmux-wait menu` on a real client: drawn with no watches (a disabled
/// line and "Clear the last result", which works), and with watches (one
/// item each, "Cancel all"; pressing an item's key cancels that watch).
/// The command returns once a choice is made.
#[test]
fn menu_with_and_without_watches() {
    let s = TestServer::new();
    let mut client = PtyClient::attach(&s);
    let menu = |client_name: Option<&str>| {
        let mut c = s.tw();
        c.arg("menu");
        if let Some(n) = client_name {
            c.args(["-c", n]);
        }
        c.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    let chosen = |child: std::process::Child| {
        let f = finished(child.wait_with_output().unwrap());
        assert_eq!(f.code, Some(0), "menu failed: {}", f.stderr);
        assert!(f.stderr.is_empty(), "{}", f.stderr);
    };
    // No watches: the menu is drawn (on the client tmux picks: the only
    // one), and "c" clears the last result.
    s.tmux(&["set-option", "-g", "@tmux_wait_status", "✓ stale"]);
    client.forget();
    let m = menu(None);
    client.wait_for_drawn(&s, "(no watches running)");
    client.wait_for_drawn(&s, "Clear the last result");
    client.keys(b"c");
    chosen(m);
    s.wait_until(&s.pane, "the status to be cleared", || {
        status(&s).is_empty()
    });
    // Two watches: an item each and "Cancel all".
    let spawn = |pattern: &str| {
        let mut c = s.tw();
        c.args(["watch", "-t", &s.pane, "--pattern", pattern])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c.spawn().unwrap()
    };
    let mut a = spawn("first never");
    s.wait_until(&s.pane, "one watch", || watches(&s).len() == 1);
    let mut b = spawn("second never");
    s.wait_until(&s.pane, "two watches", || watches(&s).len() == 2);
    // The attached terminal, not a waits' control-mode client.
    let clients = s.tmux(&[
        "list-clients",
        "-F",
        "#{client_control_mode} #{client_name}",
    ]);
    let name = clients
        .lines()
        .find_map(|l| l.strip_prefix("0 "))
        .expect("the terminal client")
        .to_owned();
    client.forget();
    let m = menu(Some(&name));
    client.wait_for_drawn(&s, "Cancel all");
    client.wait_for_drawn(&s, "first never");
    client.wait_for_drawn(&s, "second never");
    // "1" is the first watch listed.
    let first = watches(&s)[0]["label"].as_str().unwrap().to_owned();
    client.keys(b"1");
    chosen(m);
    s.wait_until(&s.pane, "that watch to be cancelled", || {
        let ws = watches(&s);
        ws.len() == 1 && ws[0]["label"] != first.as_str()
    });
    client.forget();
    let m = menu(Some(&name));
    client.wait_for_drawn(&s, "Cancel all");
    client.keys(b"a");
    chosen(m);
    s.wait_until(&s.pane, "all watches cancelled", || watches(&s).is_empty());
    for c in [&mut a, &mut b] {
        let st = c.wait().unwrap();
        assert_eq!(st.code(), Some(143));
    }
    drop(client);
}

/// Enter on an empty W prompt says there is nothing to watch for, in plain
/// words (not the option the prompt passes the text in).
#[test]
fn empty_text_at_the_prompt_says_so() {
    let s = TestServer::new();
    let entry = root().join("tmux-wait.tmux");
    let mut client = PtyClient::attach(&s);
    load_as_tpm(&s, &entry, &path_with_helper());
    client.press_until_drawn(&s, b"\x02W", "wait for text:");
    client.keys(b"\r");
    s.wait_until(&s.pane, "the message", || {
        logged_messages(&s)
            .iter()
            .any(|m| m.contains("tmux-wait: nothing to watch for: the text is empty"))
    });
    // (The log also lists the binding's commands: only messages count.)
    let shown: Vec<String> = logged_messages(&s)
        .into_iter()
        .filter(|m| m.contains(" message: "))
        .collect();
    assert!(
        shown.iter().all(|m| !m.contains("@tmux-wait-pattern")),
        "{shown:?}"
    );
    assert!(watches(&s).is_empty());
}

/// Keys as people spell them: tmux's own name for each is what counts,
/// whatever the version calls it (`^a` is `C-a`; `c-m-y` is `M-C-y` on
/// some versions and `C-M-y` on others), keys list-keys shows escaped
/// (`\\`, `\"`) are recognised, a key ending in `;` is a key, two options
/// on one key bind it once (and say so), and reloading binds nothing twice.
#[test]
fn keys_are_named_as_tmux_names_them() {
    let s = TestServer::new();
    let _client = PtyClient::attach(&s);
    let entry = root().join("tmux-wait.tmux");
    let set = |opt: &str, key: &str| s.tmux(&["set-option", "-g", opt, key]);
    set("@tmux-wait-key-text", "c-m-y");
    set("@tmux-wait-key-done", "^a");
    set("@tmux-wait-key-quiet", "\\");
    // tmux binds " (split-window) itself: kept.
    set("@tmux-wait-key-list", "\"");
    let split = binding(&s, "\\\"");
    assert!(split.contains("split-window"), "{split}");
    let before = logged_messages(&s);
    load_as_tpm(&s, &entry, &path_with_helper());
    load_as_tpm(&s, &entry, &path_with_helper());
    assert_eq!(logged_messages(&s), before, "a load left messages");
    assert_eq!(binding(&s, "\\\""), split);
    assert!(binding(&s, "C-a").contains("tmux-wait.sh' done"));
    assert!(binding(&s, "\\\\").contains("tmux-wait.sh' quiet"));
    let c_m_y = format!("{}{}", binding(&s, "C-M-y"), binding(&s, "M-C-y"));
    assert!(c_m_y.contains("tmux-wait.sh' text"), "{c_m_y}");
    let keys = s.tmux(&["list-keys", "-T", "prefix"]);
    assert_eq!(keys.matches("tmux-wait.sh").count(), 5, "{keys}");
    // A key that ends in ";" (tmux takes such an argument for the end of
    // a command unless escaped): bound when free, as itself.
    s.tmux(&["unbind-key", "-T", "prefix", "\\;"]);
    set("@tmux-wait-key-list", "\\;");
    load_as_tpm(&s, &entry, &path_with_helper());
    assert!(
        binding(&s, "\\;").contains("tmux-wait.sh' menu"),
        "{}",
        binding(&s, "\\;")
    );
    // Two options on one key: the first keeps it, the second says so.
    set("@tmux-wait-key-text", "C-a");
    load_as_tpm(&s, &entry, &path_with_helper());
    assert!(binding(&s, "C-a").contains("tmux-wait.sh' text"));
    let after = logged_messages(&s);
    assert!(
        after.iter().any(|m| m.contains(
            "@tmux-wait-key-done: '^a' is the key of @tmux-wait-key-text already; nothing bound"
        )),
        "{after:?}"
    );
    assert!(!s.tmux(&["list-keys"]).contains("tmux-wait-probe"));
}

/// With a single binding left in the whole server (tmux 3.7 shows a
/// one-line list-keys as a message), the load is still silent, and binds.
#[test]
fn loading_is_silent_with_almost_no_bindings() {
    let s = TestServer::new();
    let _client = PtyClient::attach(&s);
    // Every table, whichever this version has.
    let tables: std::collections::BTreeSet<String> = s
        .tmux(&["list-keys"])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let i = f.iter().position(|w| *w == "-T")?;
            f.get(i + 1).map(|t| (*t).to_owned())
        })
        .collect();
    for table in &tables {
        s.tmux(&["unbind-key", "-a", "-T", table]);
    }
    s.tmux(&["bind-key", "-T", "prefix", "x", "display-message mine"]);
    // (tmux reads "none" in any case.)
    for (opt, none) in [
        ("text", "none"),
        ("done", "NONE"),
        ("quiet", "None"),
        ("attention", "none"),
        ("attention-next", "none"),
    ] {
        s.tmux(&["set-option", "-g", &format!("@tmux-wait-key-{opt}"), none]);
    }
    let before = logged_messages(&s);
    let entry = root().join("tmux-wait.tmux");
    load_as_tpm(&s, &entry, &path_with_helper());
    load_as_tpm(&s, &entry, &path_with_helper());
    assert_eq!(logged_messages(&s), before, "a load left messages");
    assert!(binding(&s, "M-w").contains("tmux-wait.sh' menu"));
    assert!(binding(&s, "x").contains("display-message mine"));
    let all = s.tmux(&["list-keys"]);
    assert_eq!(all.lines().count(), 2, "{all}");
}

/// On a tmux older than 3.2 the plugin says so in one line, on the client
/// and to whoever runs it, and binds nothing. (No such tmux is here: a
/// `tmux` first on PATH runs the real one and reports its version as 3.1c.)
#[test]
fn older_tmux_is_refused_in_one_line() {
    let s = TestServer::new();
    let _client = PtyClient::attach(&s);
    let real = s.tmux(&["display-message", "-p", "#{version}"]);
    let real = real.trim();
    let bin = s.dir().join("oldtmux");
    std::fs::create_dir_all(&bin).unwrap();
    let tmux = crate::common::tmux_dir().join("tmux");
    write_exe(
        &bin.join("tmux"),
        format!(
            "#!/bin/sh\n# The real tmux, its version reported as 3.1c.\n\
             out=$('{tmux}' \"$@\") || exit\n\
             [ -z \"$out\" ] || printf '%s\\n' \"$out\" | sed 's/\\(^\\| \\){real}$/\\13.1c/'\n",
            tmux = tmux.display(),
            real = real.replace('.', "\\.")
        ),
    );
    let mut path = std::ffi::OsString::from(&bin);
    path.push(":");
    path.push(path_with_helper());
    let before = logged_messages(&s);
    let f = run_entry(&s, &root().join("tmux-wait.tmux"), &path);
    let line = "tmux 3.1c is older than 3.2 and not supported (3.2a is the oldest supported); nothing bound";
    assert_eq!(f.code, Some(0), "{f:?}");
    assert_eq!(f.stderr, format!("tmux-wait: {line}\n"), "{f:?}");
    let new: Vec<String> = logged_messages(&s)
        .into_iter()
        .filter(|m| !before.contains(m))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(
        new[0].ends_with(&format!("message: tmux-wait: {line}")),
        "{new:?}"
    );
    let keys = s.tmux(&["list-keys", "-T", "prefix"]);
    assert!(!keys.contains("tmux-wait"), "{keys}");
    let aliases = s.tmux(&["show-options", "-g", "command-alias"]);
    assert!(!aliases.contains("wait-"), "{aliases}");
}

/// What is typed at the W prompt is the watch's pattern exactly, on every
/// version: quotes, backslashes, $, ;, ~, # and % stay text (tmux 3.3
/// fills the prompt's template twice, and replaced a %% or %2 in the text
/// by the text again).
#[test]
fn typed_text_is_watched_for_as_typed() {
    type_and_check(r##"a"b'c\d$;e~f #{pane_id} %% %1 %2 %%% \"#;"##);
}

/// A $ before a word, typed at the W prompt, is text too. (tmux 3.4
/// prints such a $ with a backslash before it in show-options and
/// display-message, and the helper reads the typed text through them.)
#[test]
fn typed_dollar_word_is_watched_for_as_typed() {
    type_and_check("echo $HOME ${X} \\$Y");
}

fn type_and_check(typed: &str) {
    let s = TestServer::new();
    let entry = root().join("tmux-wait.tmux");
    let mut client = PtyClient::attach(&s);
    load_as_tpm(&s, &entry, &path_with_helper());
    client.press_until_drawn(&s, b"\x02W", "wait for text:");
    client.keys(typed.as_bytes());
    client.keys(b"\r");
    s.wait_until(&s.pane, "the watch to start", || watches(&s).len() == 1);
    assert_eq!(watches(&s)[0]["label"], typed);
    let mut c = s.tw();
    c.args(["cancel", "--all"]);
    assert_eq!(run_bounded(c).code, Some(0));
    s.wait_until(&s.pane, "the watch to end", || watches(&s).is_empty());
}

/// With C-a as the prefix, `bind a send-prefix` is usual: the jump key's
/// default is theirs, kept, and said once; set elsewhere, it binds there.
#[test]
fn a_c_a_prefix_keeps_its_send_prefix_and_is_told_where_the_jump_went() {
    let s = TestServer::new();
    let _client = PtyClient::attach(&s);
    s.tmux(&["set-option", "-g", "prefix", "C-a"]);
    s.tmux(&["bind-key", "-T", "prefix", "a", "send-prefix"]);
    let entry = root().join("tmux-wait.tmux");
    load_as_tpm(&s, &entry, &path_with_helper());
    assert!(
        binding(&s, "a").contains("send-prefix"),
        "{}",
        binding(&s, "a")
    );
    let said = logged_messages(&s);
    assert!(
        said.iter().any(|m| m.contains(
            "prefix a is bound already, so it does not go to the pane that needs you: \
             set @tmux-wait-key-attention-next to another key (or to none)"
        )),
        "{said:?}"
    );
    s.tmux(&["set-option", "-g", "@tmux-wait-key-attention-next", "N"]);
    load_as_tpm(&s, &entry, &path_with_helper());
    assert!(
        binding(&s, "N").contains("tmux-wait.sh' next"),
        "{}",
        binding(&s, "N")
    );
    assert!(binding(&s, "a").contains("send-prefix"));
}
