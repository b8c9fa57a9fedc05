//! A marked pane moved, swapped, linked, renamed and killed with its
//! window and session: the segment and the windows' marks say where it
//! is now, and `any` says nothing (its state did not change).

use super::Day;
use crate::attention_plugin::ask;

#[test]
fn moves_swaps_links_renames_and_kills_keep_the_places_true() {
    let mut d = Day::start("");
    // A question in window 1.
    let q = d.window();
    ask(&d.s, &q, "Deploy? [y/N]");
    d.wait_segment(&q, "⚑1 main:1 asking");
    d.idle("a question");

    let n = d.any.count();
    d.s.tmux(&["rename-session", "-t", "main", "work"]);
    d.wait_segment(&q, "⚑1 work:1 asking");
    d.s.tmux(&["rename-window", "-t", &q, "api"]);
    d.idle("rename-session and rename-window");

    d.s.tmux(&["move-window", "-d", "-s", "work:1", "-t", "work:7"]);
    d.wait_segment(&q, "⚑1 work:7 asking");
    assert_eq!(d.window_mark(&q), "asking");
    d.idle("move-window");

    // Another window's pane swapped with it: the question is in window 2
    // now, and window 7's mark goes.
    let other = d.window();
    let w7 =
        d.s.tmux(&["display-message", "-p", "-t", &q, "#{window_id}"]);
    d.s.tmux(&["swap-pane", "-s", &q, "-t", &other]);
    d.wait_segment(&q, &format!("⚑1 {} asking", d.place(&q)));
    assert_eq!(d.window_mark(&q), "asking");
    assert_eq!(
        crate::attention_plugin::opt(
            &d.s,
            &["-w", "-t", w7.trim(), "@tmux-wait-attention-window"]
        ),
        ""
    );
    d.idle("swap-pane");

    // Joined into window 0 beside the person's pane (not on their
    // screen: the active pane is), then broken out again.
    d.s.tmux(&["join-pane", "-d", "-s", &q, "-t", "work:0"]);
    d.wait_segment(&q, "⚑1 work:0 asking");
    assert_eq!(d.window_mark(&q), "asking");
    d.idle("join-pane");
    d.s.tmux(&["break-pane", "-d", "-s", &q]);
    d.wait_segment(&q, &format!("⚑1 {} asking", d.place(&q)));
    d.s.wait_until(&q, "window 0's mark to go", || {
        crate::attention_plugin::opt(&d.s, &["-w", "-t", "work:0", "@tmux-wait-attention-window"])
            .is_empty()
    });
    d.idle("break-pane");

    // Linked into a second session, then unlinked: the pane is where it
    // was, marked once.
    d.s.tmux(&["new-session", "-d", "-s", "side"]);
    d.s.tmux(&["link-window", "-d", "-s", &q, "-t", "side:5"]);
    d.idle("link-window");
    assert!(d.segment().starts_with("⚑1 "), "{}", d.segment());
    d.s.tmux(&["unlink-window", "-t", "side:5"]);
    d.wait_segment(&q, &format!("⚑1 {} asking", d.place(&q)));
    d.idle("unlink-window");
    assert!(
        d.any.since(n).iter().all(|v| v["pane_id"] != q.as_str()),
        "`any` spoke of the moved pane: {:?}",
        d.any.since(n)
    );

    // Killed with its window, and a second question with its session.
    let n = d.any.count();
    d.s.tmux(&["kill-window", "-t", &q]);
    assert_eq!(d.any.wait(n, &q, "exited")["reason"], "pane_closed");
    d.wait_segment(&q, "");
    d.idle("kill-window");
    let r =
        d.s.tmux(&["new-window", "-d", "-t", "side", "-P", "-F", "#{pane_id}"])
            .trim()
            .to_owned();
    d.s.wait_for_prompt(&r);
    ask(&d.s, &r, "Ship? [y/N]");
    d.wait_segment(&r, &format!("⚑1 {} asking", d.place(&r)));
    let n = d.any.count();
    d.s.tmux(&["kill-session", "-t", "side"]);
    assert_eq!(d.any.wait(n, &r, "exited")["reason"], "pane_closed");
    d.wait_segment(&r, "");
    d.idle("kill-session");
}
