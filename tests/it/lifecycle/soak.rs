//! A day, compressed: one server with the plugin, the quiet time at one
//! second, every event of a pane's life many times over, panes made and
//! destroyed by the hundred (`TW_SOAK_PANES`, 200 here; `scripts/bench
//! --only soak` runs 1000). After each round, once the quiet time has
//! passed, the tmux server and every tmux-wait process are at idle; at
//! the end, their open descriptors and memory are what they were after
//! the first round, within 10 % (the tmux server's memory only with
//! tmux 3.2a: later ones keep what `if-shell -F` runs).

use super::Day;
use crate::attention_plugin::ask;
use std::time::Instant;

/// Panes made (and destroyed) in all.
fn panes_wanted() -> usize {
    std::env::var("TW_SOAK_PANES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// What the processes of one role (the tmux server, the attention watch,
/// the hub, `any`) hold: descriptors and resident memory (kB).
/// The files of `/proc` a look reads are kept open, up to 48 a thread
/// (`sys::procfs`): a cache whose fill follows the panes alive and which
/// thread looked last, bounded; they are counted apart.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    fds: usize,
    rss_kb: u64,
    /// Of `/proc`, kept open.
    proc_files: usize,
    /// What the cache may hold: 48 for each thread.
    proc_bound: usize,
}

/// `sys::procfs`'s `KEEP_OPEN`.
const PROC_FILES_A_THREAD: usize = 48;

fn held(pid: u32) -> Held {
    let (mut fds, mut proc_files) = (0, 0);
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let to = std::fs::read_link(e.path()).unwrap_or_default();
        if to.starts_with("/proc/") {
            proc_files += 1;
        } else {
            fds += 1;
        }
    }
    let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(1);
    let rss_kb = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    Held {
        fds,
        rss_kb,
        proc_files,
        proc_bound: PROC_FILES_A_THREAD * threads,
    }
}

fn roles(d: &Day) -> Vec<(String, Held)> {
    let mut out: Vec<(String, Held)> = Vec::new();
    for (pid, name) in d.processes() {
        if name == "tmux client" || name == "tmux-wait" {
            continue;
        }
        let h = held(pid);
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, x)) => {
                x.fds += h.fds;
                x.rss_kb += h.rss_kb;
                x.proc_files += h.proc_files;
                x.proc_bound += h.proc_bound;
            }
            None => out.push((name, h)),
        }
    }
    out
}

/// One round: `(panes made, events)`.
fn round(d: &mut Day, r: usize) -> usize {
    let s = &d.s;
    let mut made = 0;
    // Questions answered, their programs failing (kept dead), respawned
    // with a shell, then closed.
    let mut asked = Vec::new();
    for i in 0..4 {
        let p = d.window_running(&format!("read -p 'Round {r}.{i}? [y/N] ' x; exit 3"));
        made += 1;
        asked.push(p);
    }
    for p in &asked {
        d.wait_mark(p, "asking");
        s.tmux(&["send-keys", "-t", p, "y", "Enter"]);
    }
    for p in &asked {
        d.wait_mark(p, "exited");
    }
    for p in &asked[..2] {
        s.tmux(&["respawn-pane", "-t", p, "exec sleep 900"]);
        made += 1;
    }
    for p in &asked[..2] {
        d.wait_mark(p, "");
    }
    // Panes split, moved, swapped, joined, broken out, renamed; a job
    // stopped and resumed; then their window killed.
    let w = d.window();
    made += 1;
    let mut split = vec![w.clone()];
    for _ in 0..3 {
        let p = s
            .tmux(&["split-window", "-d", "-t", &w, "-P", "-F", "#{pane_id}"])
            .trim()
            .to_owned();
        made += 1;
        split.push(p);
    }
    for p in &split {
        s.wait_for_prompt(p);
    }
    ask(s, &split[1], "Moved? [y/N]");
    d.wait_mark(&split[1], "asking");
    s.tmux(&["break-pane", "-d", "-s", &split[1]]);
    // (Side by side: tmux 3.2a finds a fifth row of panes too small.)
    s.tmux(&["join-pane", "-h", "-d", "-s", &split[1], "-t", &w]);
    s.tmux(&["swap-pane", "-s", &split[1], "-t", &split[2]]);
    s.tmux(&[
        "move-window",
        "-d",
        "-s",
        &w,
        "-t",
        &format!("main:{}", 50 + r),
    ]);
    s.tmux(&["rename-window", "-t", &w, &format!("r{r}")]);
    s.type_line(&split[3], "sleep 900");
    s.wait_for_command(&split[3], "sleep");
    s.tmux(&["send-keys", "-t", &split[3], "C-z"]);
    d.wait_mark(&split[3], "prompt");
    s.type_line(&split[3], "fg");
    d.wait_mark(&split[3], "");
    s.tmux(&["kill-window", "-t", &w]);
    for p in &asked {
        let _ = s.tmux_cmd().args(["kill-pane", "-t", p]).status();
    }
    // Now and then: the person away and back, the config reloaded,
    // attention off and on.
    if r % 5 == 4 {
        d.reattach("main");
        let conf = d.s.dir().join("tmux.conf");
        d.s.tmux(&["source-file", &conf.to_string_lossy()]);
        // (The toggle's message says when it is done.)
        for word in ["off", "on"] {
            let said = format!("attention {word} for session main");
            let before = d.s.tmux(&["show-messages"]).matches(&said).count();
            d.person.prefixed(&d.s, "A");
            d.s.wait_until(&w, &said, || {
                d.s.tmux(&["show-messages"]).matches(&said).count() > before
            });
        }
        super::wait_watching(&d.s);
    }
    d.wait_segment(&w, "");
    made
}

#[test]
fn a_day_of_panes_leaves_the_server_and_tmux_wait_at_idle_and_flat() {
    let mut d = Day::start("");
    let want = panes_wanted();
    let start = Instant::now();
    // The first rounds fill what tmux keeps by design: its message log,
    // which holds every command a client sends, up to `message-limit`
    // (1000) lines. The figures are compared from there on.
    let limit: usize = crate::attention_plugin::opt(&d.s, &["-s", "message-limit"])
        .parse()
        .unwrap_or(1000);
    let logged = |d: &Day| d.s.tmux(&["show-messages"]).lines().count();
    let mut made = 0;
    let mut r = 0;
    loop {
        made += round(&mut d, r);
        d.idle(&format!("round {r} ({made} panes made)"));
        r += 1;
        if logged(&d) >= limit || r >= 10 {
            break;
        }
    }
    println!("soak: compared from round {r}, {made} panes made");
    // Each role's figures after each round from here on. The /proc files
    // a watch keeps open come and go with the processes it looks at: they
    // are held to their bound (48 a thread), the other descriptors to
    // within 10 %. The attention watch starts anew each time attention is
    // turned off and on: the most each held in the first rounds is
    // compared with the most in the last ones.
    let mut seen: Vec<Vec<(String, Held)>> = vec![roles(&d)];
    let target = made + want;
    while made < target {
        made += round(&mut d, r);
        d.idle(&format!("round {r} ({made} panes made)"));
        let now = roles(&d);
        let words: Vec<String> = now
            .iter()
            .map(|(n, h)| format!("{n} {} fds {} kB", h.fds, h.rss_kb))
            .collect();
        println!("soak: round {r}: {}", words.join(", "));
        seen.push(now);
        r += 1;
    }
    println!(
        "soak: {made} panes made and destroyed in {r} rounds, {:.0} s",
        start.elapsed().as_secs_f64()
    );
    // The attention log: every need and its end, in order, with how long
    // each waited; each round's four questions answered by keys typed.
    let log = super::answers::log(&d.s);
    let ends = super::answers::in_order(&log);
    let typed = log
        .iter()
        .filter(|e| e["event"] == "answered" && e["by"] == "keys")
        .count();
    println!(
        "soak: the log holds {} events, {ends} ends checked, {typed} answers typed",
        log.len()
    );
    assert!(typed >= 4 * r, "{typed} answers typed in {r} rounds");
    let k = (seen.len() / 4).max(1);
    let most = |rounds: &[Vec<(String, Held)>], name: &str| -> Held {
        let mut m = Held::default();
        for h in rounds
            .iter()
            .flat_map(|r| r.iter().filter(|(n, _)| n == name).map(|(_, h)| *h))
        {
            m.fds = m.fds.max(h.fds);
            m.rss_kb = m.rss_kb.max(h.rss_kb);
            m.proc_files = m.proc_files.max(h.proc_files);
            m.proc_bound = m.proc_bound.max(h.proc_bound);
        }
        m
    };
    // tmux 3.3a up to master never free the commands an `if-shell -F`
    // runs, which tmux-wait uses once for each pane it starts reading
    // (docs/limits.md): there the server's memory grows with every pane
    // whatever tmux-wait does, by 0.4 kB and the heap around it, and is
    // printed, not checked. 3.2a frees them; there it is checked, as it is
    // in CI with the same tmux-wait.
    let version = d.s.tmux(&["display-message", "-p", "#{version}"]);
    let version = version.trim();
    let server_checked = version == "3.2" || version == "3.2a";
    println!(
        "soak: tmux {version}: the server's memory is {} checked",
        if server_checked { "also" } else { "not" }
    );
    let mut over = Vec::new();
    for (name, _) in &seen[0] {
        let a = most(&seen[..k], name);
        let b = most(&seen[seen.len() - k..], name);
        println!(
            "soak: {name}: at most {} descriptors and {} kB in the first {k} rounds, {} and {} kB in the last (and of /proc kept open {} and {}, at most {})",
            a.fds, a.rss_kb, b.fds, b.rss_kb, a.proc_files, b.proc_files, b.proc_bound
        );
        if b.proc_files > b.proc_bound {
            over.push(format!(
                "{name}: {} files of /proc kept open, past {}",
                b.proc_files, b.proc_bound
            ));
        }
        // Within 10 % (and a descriptor: a handful is 10 % of nothing).
        if b.fds as f64 > (a.fds as f64 * 1.1).max(a.fds as f64 + 1.0) {
            over.push(format!("{name}: descriptors {} -> {}", a.fds, b.fds));
        }
        let checked = name != "tmux server" || server_checked;
        if checked && b.rss_kb as f64 > a.rss_kb as f64 * 1.1 {
            over.push(format!("{name}: memory {} -> {} kB", a.rss_kb, b.rss_kb));
        }
    }
    if !over.is_empty() {
        // What each holds, by kind (a number as N).
        for (pid, name) in d.processes() {
            let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
            for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let t = std::fs::read_link(e.path())
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let t: String = t
                    .split(|c: char| c.is_ascii_digit())
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join("N");
                *kinds.entry(t).or_default() += 1;
            }
            println!("soak: {name} ({pid}) holds {kinds:?}");
        }
    }
    assert!(over.is_empty(), "grew over {made} panes: {over:?}");
}
