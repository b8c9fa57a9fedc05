//! What `any` and `panes` say of the programs people run, each the real
//! program in a real pane, typed at a bash prompt as a person would:
//!
//! - prompts read from `/dev/tty`, not standard input: getpass, git's
//!   credential prompt (against a server on 127.0.0.1 that answers 401),
//!   ssh-keygen's passphrase, psql's password, gpg's passphrase (its
//!   loopback pinentry), sudo's password as a user who has one;
//! - a key at a time (`read -n1`) and a package manager's `[Y/n]`;
//! - live displays that redraw on their own: top, htop, watch, `less +F`,
//!   `tail -f`, a progress bar: working, whatever they redraw;
//! - a pager at a page (asking), and a REPL that owns its pane (asking at
//!   its prompt; its answers are output).
//!
//! A program that is not installed is skipped, and says so.

use crate::common::*;
use serde_json::Value;
use std::io::{Read, Write};

/// The pane's state as `panes --json` gives it.
fn state(s: &TestServer, pane: &str) -> Value {
    let mut c = s.tw();
    c.args(["panes", "-t", pane, "--json"]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    f.json()["panes"][0].clone()
}

/// Wait until `panes` says `want` (state and reason) of the pane; the
/// pane's state then. On the deadline, fail showing what it said.
fn until_state(s: &TestServer, pane: &str, want: (&str, &str)) -> Value {
    let mut last = Value::Null;
    s.wait_until(pane, &format!("{want:?}"), || {
        last = state(s, pane);
        (last["state"].as_str(), last["reason"].as_str()) == (Some(want.0), Some(want.1))
    });
    last
}

/// `any -t pane --until asking --now --json`: what it returned.
fn any_now(s: &TestServer, pane: &str) -> Value {
    let mut c = s.tw();
    c.args([
        "any",
        "-t",
        pane,
        "--until",
        "asking",
        "--now",
        "--json",
        "--timeout",
        "10",
    ]);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(0), "{f:?}");
    f.json()
}

/// A new window at a bash prompt.
fn window(s: &TestServer) -> String {
    let p = s
        .tmux(&["new-window", "-d", "-P", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    s.wait_for_prompt(&p);
    p
}

fn skip_unless(programs: &[&str]) -> bool {
    for p in programs {
        if !installed(p) {
            println!("skipped: {p} is not installed");
            return false;
        }
    }
    true
}

/// A password prompt that reads `/dev/tty`: asking, a password, with its
/// question, in `panes` and in `any`.
fn password(s: &TestServer, pane: &str, question: &str) {
    let v = until_state(s, pane, ("asking", "reads_password"));
    assert_eq!(v["question"], question, "{v}");
    let v = any_now(s, pane);
    assert_eq!(
        (v["state"].as_str(), v["reason"].as_str()),
        (Some("asking"), Some("reads_password")),
        "{v}"
    );
}

#[test]
fn getpass_ssh_keygen_and_psql_ask_for_a_password_on_dev_tty() {
    let s = TestServer::new();
    let a = s.pane.clone();
    s.type_line(
        &a,
        "python3 -c 'import getpass; getpass.getpass(\"Secret: \")'",
    );
    password(&s, &a, "Secret:");
    if skip_unless(&["ssh-keygen"]) {
        let b = window(&s);
        let key = s.dir().join("key");
        s.type_line(&b, &format!("ssh-keygen -q -f '{}'", key.display()));
        password(&s, &b, "Enter passphrase (empty for no passphrase):");
        // Answered: asked again (to confirm), a new question.
        s.type_line(&b, "");
        s.wait_until(&b, "the second question", || {
            s.capture(&b).contains("Enter same passphrase again:")
        });
        password(&s, &b, "Enter same passphrase again:");
        s.type_line(&b, "");
        s.wait_for_prompt(&b);
        assert!(key.exists());
    }
    if skip_unless(&["psql"]) {
        let c = window(&s);
        s.type_line(&c, "psql -W -h 127.0.0.1 -p 1 -U nobody postgres");
        password(&s, &c, "Password:");
        s.tmux(&["send-keys", "-t", &c, "C-c"]);
    }
    s.tmux(&["send-keys", "-t", &a, "C-c"]);
}

/// A server on 127.0.0.1 that answers every request 401 (Basic), for as
/// long as the test runs.
fn unauthorized_server() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { return };
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut buf = [0u8; 8192];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"r\"\r\n\
                  Content-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[test]
fn gits_credential_prompt_asks_for_a_username_then_a_password() {
    if !skip_unless(&["git"]) {
        return;
    }
    let s = TestServer::new();
    let p = s.pane.clone();
    let port = unauthorized_server();
    let to = s.dir().join("r");
    s.type_line(
        &p,
        &format!(
            "env -u GIT_ASKPASS -u SSH_ASKPASS GIT_CONFIG_NOSYSTEM=1 HOME='{}' \
             git -c credential.helper= clone http://127.0.0.1:{port}/r.git '{}'",
            s.dir().display(),
            to.display()
        ),
    );
    let v = until_state(&s, &p, ("asking", "reads_line"));
    assert_eq!(
        v["question"],
        format!("Username for 'http://127.0.0.1:{port}':"),
        "{v}"
    );
    let v = any_now(&s, &p);
    assert_eq!(v["reason"], "reads_line", "{v}");
    s.type_line(&p, "me");
    s.wait_until(&p, "the password question", || {
        s.capture(&p).contains("Password for")
    });
    password(
        &s,
        &p,
        &format!("Password for 'http://me@127.0.0.1:{port}':"),
    );
    s.type_line(&p, "nope");
    s.wait_for_prompt(&p);
}

#[test]
fn gpgs_passphrase_is_a_password_prompt() {
    if !skip_unless(&["gpg", "gpgconf"]) {
        return;
    }
    let s = TestServer::new();
    let p = s.pane.clone();
    let home = s.dir().join("gnupg");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(s.dir().join("file"), "x").unwrap();
    // (Its agent, started for the passphrase, ends with the test.)
    struct Agent(std::path::PathBuf);
    impl Drop for Agent {
        fn drop(&mut self) {
            let _ = std::process::Command::new("gpgconf")
                .args(["--kill", "gpg-agent"])
                .env("GNUPGHOME", &self.0)
                .status();
        }
    }
    let _agent = Agent(home.clone());
    s.type_line(
        &p,
        &format!(
            "chmod 700 '{h}'; GNUPGHOME='{h}' gpg -c --pinentry-mode loopback '{}'",
            s.dir().join("file").display(),
            h = home.display()
        ),
    );
    password(&s, &p, "Enter passphrase:");
    s.tmux(&["send-keys", "-t", &p, "C-c"]);
    s.wait_for_prompt(&p);
}

/// A user with a password, for sudo: made for the test, removed after.
struct User(String);

impl Drop for User {
    fn drop(&mut self) {
        let _ = std::process::Command::new("userdel")
            .args(["-r", &self.0])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_file(format!("/etc/sudoers.d/{}", self.0));
    }
}

#[test]
fn sudo_asks_for_the_users_password() {
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 || !skip_unless(&["sudo", "useradd", "su"]) {
        println!("skipped: making a user with a password needs root");
        return;
    }
    let name = format!("tw{}", std::process::id() % 100000);
    let st = std::process::Command::new("useradd")
        .args(["-m", "-s", "/bin/bash", &name])
        .status()
        .unwrap();
    assert!(st.success());
    let user = User(name.clone());
    let mut chpasswd = std::process::Command::new("chpasswd")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(chpasswd.stdin.take().unwrap(), "{name}:secret-{name}").unwrap();
    assert!(chpasswd.wait().unwrap().success());
    std::fs::write(
        format!("/etc/sudoers.d/{name}"),
        format!("{name} ALL=(ALL) ALL\n"),
    )
    .unwrap();
    let s = TestServer::new();
    let p = s.pane.clone();
    s.type_line(&p, &format!("su - {name}"));
    s.wait_until(&p, "the user's shell", || {
        s.current_command(&p) == "bash" && s.capture(&p).contains(&name)
            || s.capture(&p).trim_end().ends_with('$')
    });
    s.type_line(&p, "sudo -k true");
    password(&s, &p, &format!("[sudo] password for {name}:"));
    s.tmux(&["send-keys", "-t", &p, "C-c"]);
    // (Keys typed before the user's shell reads again go with Ctrl-C's
    // flush of the terminal's input.)
    s.wait_until(&p, "the user's prompt after Ctrl-C", || {
        let screen = s.capture(&p);
        screen.contains("a password is required") && screen.trim_end().ends_with('$')
    });
    s.type_line(&p, "exit");
    s.wait_for_prompt(&p);
    drop(user);
}

#[test]
fn a_key_at_a_time_and_a_package_managers_question_ask() {
    let s = TestServer::new();
    let p = s.pane.clone();
    s.type_line(&p, "read -n1 -p 'Continue? ' k; echo");
    let v = until_state(&s, &p, ("asking", "reads_line"));
    assert_eq!(v["question"], "Continue?", "{v}");
    s.tmux(&["send-keys", "-t", &p, "y"]);
    s.wait_for_prompt(&p);
    // SAFETY: getuid cannot fail.
    let root = unsafe { libc::getuid() } == 0;
    if root && skip_unless(&["apt-get", "htop"]) {
        // (Answered no: nothing is removed.)
        s.type_line(&p, "apt-get remove htop");
        let v = until_state(&s, &p, ("asking", "reads_line"));
        assert_eq!(v["question"], "Do you want to continue? [Y/n]", "{v}");
        s.type_line(&p, "n");
        s.wait_for_prompt(&p);
        assert!(s.capture(&p).contains("Abort."));
    }
}

#[test]
fn live_displays_are_working_pagers_and_repls_are_asking() {
    let s = TestServer::new();
    let file = s.dir().join("log");
    std::fs::write(
        &file,
        (1..=200).map(|n| format!("line {n}\n")).collect::<String>(),
    )
    .unwrap();
    let f = file.display().to_string();
    let mut working: Vec<(String, &str)> = Vec::new();
    for (program, line) in [
        ("top", "top -d 1".to_owned()),
        ("htop", "htop".to_owned()),
        ("watch", "watch -n 1 date".to_owned()),
        ("tail", format!("tail -f '{f}'")),
        ("less", format!("less +F '{f}'")),
        (
            "python3",
            "python3 -c 'import sys,time\nfor i in range(100000): sys.stdout.write(\"\\r[%-20s] %d%%\" % (\"#\" * (i % 20), i % 100)); sys.stdout.flush(); time.sleep(0.1)'".to_owned(),
        ),
    ] {
        if !skip_unless(&[program]) {
            continue;
        }
        let p = window(&s);
        s.type_line(&p, &line);
        working.push((p, program));
    }
    for (p, program) in &working {
        let v = until_state(
            &s,
            p,
            (
                "working",
                if *program == "top" || *program == "htop" {
                    "redrawing"
                } else {
                    "running"
                },
            ),
        );
        assert_eq!(v["command"], *program, "{v}");
    }
    // A pager at a page waits for a key.
    let pager = window(&s);
    s.type_line(&pager, &format!("less '{f}'"));
    until_state(&s, &pager, ("asking", "reads_keys"));
    // A REPL that owns its pane: asking at its prompt, and its answer is
    // output, not the echo of what was typed.
    let repl = s
        .tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "python3 -i -q",
        ])
        .trim()
        .to_owned();
    let v = until_state(&s, &repl, ("asking", "repl_prompt"));
    assert_eq!(v["command"], "python3", "{v}");
    let w = s.start_wait(&[
        "text",
        "-t",
        &repl,
        "--pattern",
        "MAGIC_42",
        "--json",
        "--timeout",
        "10",
    ]);
    s.type_line(&repl, "print('MAGIC_' + str(6*7))");
    let r = w.finish(&s);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    // Nobody is needed while they all run.
    let mut c = s.tw();
    let mut args = vec!["any".to_owned()];
    for (p, _) in &working {
        args.extend(["-t".to_owned(), p.clone()]);
    }
    args.extend(["--timeout", "4", "--json"].map(String::from));
    c.args(&args);
    let f = run_bounded(c);
    assert_eq!(f.code, Some(1), "{}", f.stdout);
    s.tmux(&["send-keys", "-t", &pager, "q"]);
}

/// A program that sets its title ten times a second (as coding agents do
/// while they work) rings no bell: not for a wait that starts its own
/// stream, nor for one that joins the stream of a wait already there
/// (whose kept line is a run of titles with no line feed), wherever in a
/// title either begins.
#[test]
fn a_title_set_ten_times_a_second_rings_no_bell() {
    let s = TestServer::new();
    let p = s.pane.clone();
    // (Past 4 KB of titles at once: the hub's kept line is cut.)
    s.type_line(
        &p,
        "for i in $(seq 400); do printf '\\033]0;%d title\\007' $i; done; \
         while :; do printf '\\033]0;%d title\\007' $RANDOM; sleep 0.1; done",
    );
    s.wait_for_command(&p, "sleep");
    let mut rang = Vec::new();
    let bells = |n: usize, rang: &mut Vec<String>| {
        for _ in 0..n {
            let mut c = s.tw();
            c.args([
                "any",
                "-t",
                &p,
                "--until",
                "bell",
                "--timeout",
                "0.1",
                "--json",
            ]);
            let f = run_bounded(c);
            if f.code != Some(1) {
                rang.push(f.stdout);
            }
        }
    };
    bells(40, &mut rang);
    // Joined: a wait holds the pane's stream meanwhile.
    let holder = s.start_wait(&[
        "any",
        "-t",
        &p,
        "--until",
        "text",
        "--pattern",
        "never-written",
        "--timeout",
        "60",
    ]);
    s.wait_until(&p, "the holder's stream", || s.hub_waiters() >= 1);
    bells(60, &mut rang);
    assert!(rang.is_empty(), "bells: {rang:?}");
    drop(holder);
}
