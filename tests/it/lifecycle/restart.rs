//! The tmux server restarting with the plugin, on the same socket: ended
//! cleanly, and killed. The old server's tmux-wait processes end with it
//! (none holds the new one's attention back), and the new server's
//! attention works as on the first day.

use super::Day;
use crate::attention_plugin::ask;
use crate::common::*;

/// The tmux-wait processes of the server (the test's own `any` aside).
fn helpers(s: &TestServer, any: u32) -> Vec<String> {
    s.processes_using_socket()
        .into_iter()
        .filter(|p| !p.starts_with(&format!("{any}:")))
        .filter(|p| p.contains("tmux-wait") && !p.contains(" wait-for "))
        .collect()
}

/// Start the server again on its socket with its config, as a person
/// does after `kill-server` (or a crash): `tmux new-session -d`.
fn start_again(s: &TestServer) {
    let out = s
        .tmux_cmd()
        .arg("-f")
        .arg(s.dir().join("tmux.conf"))
        .args(["new-session", "-d", "-s", "main", "-x", "100", "-y", "30"])
        .env("PATH", path_with_helper())
        .env("TMPDIR", s.dir())
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .expect("tmux");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_server_restarts_with_the_plugin() {
    let mut d = Day::start("");
    let q = d.window();
    ask(&d.s, &q, "Deploy? [y/N]");
    d.wait_segment(&q, "⚑1 main:1 asking");
    d.idle("a question");
    let old = d.watch_pid();
    let any = d.any.pid();

    for (how, hard) in [("kill-server", false), ("a SIGKILL of the server", true)] {
        if hard {
            d.s.kill_server_hard();
        } else {
            d.s.tmux(&["kill-server"]);
        }
        // Everything of the old server ends: its watch, its hub, `any`.
        d.s.wait_until(&d.s.pane, "the old server's helpers to end", || {
            helpers(&d.s, any).is_empty()
        });
        start_again(&d.s);
        d.s.wait_for_prompt("main:0");
        crate::lifecycle::wait_watching(&d.s);
        let new = d.watch_pid();
        assert!(!new.is_empty() && new != old, "{how}: watch {old} -> {new}");
        d.person = crate::common::outer::OuterClient::attach(&d.s, "main");
        d.person.press_a_key(&d.s);
        d.any = super::Listener::start(&d.s);
        // A question on the new server is marked and told.
        let p = d.window();
        let n = d.any.count();
        ask(&d.s, &p, "Again? [y/N]");
        d.wait_segment(&p, "⚑1 main:1 asking");
        d.any.wait(n, &p, "asking");
        d.idle(&format!("the server restarted after {how}"));
        d.s.tmux(&["kill-pane", "-t", &p]);
    }
}
