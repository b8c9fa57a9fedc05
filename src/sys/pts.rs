//! New terminals on the machine (`/dev/pts`), and whether a tmux server
//! made them.

use std::time::Duration;

/// Terminals made on the machine from the moment it is made: a watch
/// that lists the panes after making this misses none made meanwhile.
pub struct NewTerminals {
    #[cfg(target_os = "linux")]
    watch: Option<super::inotify::Inotify>,
}

impl NewTerminals {
    /// Start hearing of new terminals (inotify on `/dev/pts`, Linux).
    pub fn watch() -> NewTerminals {
        NewTerminals {
            #[cfg(target_os = "linux")]
            watch: super::inotify::Inotify::watch(
                std::path::Path::new("/dev/pts"),
                libc::IN_CREATE,
            ),
        }
    }

    /// Call `seen` (on a thread of its own, until it returns false) when
    /// a terminal device appears that `server` (a tmux server's pid) may
    /// have made for a pane; without inotify, every two seconds. A
    /// terminal whose master the server does not hold is another
    /// program's (an ssh login, a terminal window, another server's
    /// pane): not said, so that terminals made all day elsewhere cost
    /// nothing.
    pub fn on_each(self, server: Option<u32>, mut seen: impl FnMut() -> bool + Send + 'static) {
        let _ = std::thread::Builder::new()
            .name("new-panes".into())
            .spawn(move || {
                #[cfg(target_os = "linux")]
                if let Some(w) = self.watch {
                    // (What the server's children were at the last
                    // rescan asked for: None, none asked yet.)
                    let mut before: Option<Offspring> = None;
                    while let Some(mut made) = w.wait(None) {
                        // (Whose it is, at once: a pane that ends in a few
                        // milliseconds takes its master with it.)
                        made.extend(w.more(Duration::from_millis(1)));
                        let made: Vec<Option<u32>> =
                            made.iter().map(|e| e.name.parse().ok()).collect();
                        let now = server.and_then(Offspring::of);
                        let ours = server_made(server, &made, before.as_ref(), now.as_ref());
                        crate::trace!("new terminals {made:?}: the server's {ours}");
                        if !ours {
                            continue;
                        }
                        // (Taken before the rescan lists the panes.)
                        before = now;
                        // (tmux lists a pane before it makes its
                        // terminal, and answers a command only once the
                        // one that made it is done: no wait.)
                        if !seen() {
                            return;
                        }
                    }
                }
                #[cfg(not(target_os = "linux"))]
                let _ = (self, server);
                loop {
                    std::thread::sleep(Duration::from_secs(2));
                    if !seen() {
                        return;
                    }
                }
            });
    }
}

/// Whether the server may have made one of the terminals `made` (N of
/// `/dev/pts/N`; None, a name that is not a number, counts as maybe): yes
/// unless `/proc` shows the server's masters and none is one of them,
/// and each is still there (another program's, then) or the server has
/// started no process since `before` (its children at the last rescan;
/// `now`, its children now).
#[cfg(target_os = "linux")]
fn server_made(
    server: Option<u32>,
    made: &[Option<u32>],
    before: Option<&Offspring>,
    now: Option<&Offspring>,
) -> bool {
    let Some(masters) = server.and_then(super::procfs::pty_masters) else {
        return true;
    };
    // A terminal gone already may have been the server's: its master goes
    // with it (a pane whose program ended at once), and a terminal lasts
    // as long as its master. Yet a pane's terminal comes with its process,
    // a child of the server: a server whose children are as they were at
    // the last rescan made none since (terminals that other programs make
    // and close at once, all day, cost nothing).
    let gone = |n: u32| !std::path::Path::new(&format!("/dev/pts/{n}")).exists();
    let unknown = made.iter().any(|m| m.is_none_or(gone));
    made.iter().any(|m| m.is_some_and(|n| masters.contains(&n)))
        || (unknown && (before.is_none() || now.is_none() || before != now))
}

/// A process's children as `/proc` shows them: those it has now (running
/// or not reaped yet), and what those it reaped used (their page faults
/// and clock ticks, which grow at each reap of a child that ran). The same
/// twice: it started no process in between.
#[derive(Debug, PartialEq, Eq)]
struct Offspring {
    children: Vec<u32>,
    reaped: [u64; 4],
}

impl Offspring {
    #[cfg(target_os = "linux")]
    fn of(pid: u32) -> Option<Offspring> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // (After the name: state, ppid, pgrp, session, tty_nr, tpgid,
        // flags, minflt, cminflt, majflt, cmajflt, utime, stime, cutime,
        // cstime.)
        let f: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
        let reaped = [n(8)?, n(10)?, n(13)?, n(14)?];
        let mut children = Vec::new();
        for t in std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
        {
            let kids = std::fs::read_to_string(t.path().join("children")).ok()?;
            children.extend(
                kids.split_whitespace()
                    .filter_map(|k| k.parse::<u32>().ok()),
            );
        }
        children.sort_unstable();
        Some(Offspring { children, reaped })
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_of_another_program_is_not_the_servers() {
        let me = std::process::id();
        let ptmx = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/ptmx")
            .unwrap();
        let mine = super::super::procfs::pty_masters(me).unwrap();
        assert!(server_made(Some(me), &[Some(mine[0])], None, None));
        // Another program's terminal, still there: not the server's.
        let theirs = std::process::Command::new("python3")
            .args(["-c", "import os,sys,time; m,s=os.openpty(); print(os.ttyname(s), flush=True); time.sleep(30)"])
            .stdout(std::process::Stdio::piped())
            .spawn();
        if let Ok(mut child) = theirs {
            use std::io::BufRead;
            let mut line = String::new();
            let out = child.stdout.take().unwrap();
            let _ = std::io::BufReader::new(out).read_line(&mut line);
            let n: Option<u32> = line
                .trim()
                .strip_prefix("/dev/pts/")
                .and_then(|n| n.parse().ok());
            assert!(n.is_some(), "python3 opened no terminal: {line:?}");
            assert!(!server_made(Some(me), &[n], None, None));
            let _ = child.kill();
            let _ = child.wait();
        }
        // Gone already (its master closed at once), or unknown: maybe the
        // server's, unless it started no process since the last rescan.
        // (Other tests of this process start programs: two looks in a row
        // that agree.)
        let (before, again) = (0..100)
            .map(|_| (Offspring::of(me), Offspring::of(me)))
            .find(|(a, b)| a == b)
            .unwrap();
        assert!(before.is_some());
        assert!(server_made(
            Some(me),
            &[Some(u32::MAX)],
            None,
            again.as_ref()
        ));
        assert!(!server_made(
            Some(me),
            &[Some(u32::MAX)],
            before.as_ref(),
            again.as_ref()
        ));
        assert!(!server_made(
            Some(me),
            &[None],
            before.as_ref(),
            again.as_ref()
        ));
        assert!(server_made(
            None,
            &[Some(u32::MAX)],
            before.as_ref(),
            again.as_ref()
        ));
        drop(ptmx);
    }

    #[test]
    fn a_child_started_and_reaped_since_counts() {
        let me = std::process::id();
        let before = Offspring::of(me).unwrap();
        // A child still running, then the same child reaped: each time
        // not as before.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let running = Offspring::of(me).unwrap();
        assert_ne!(before, running);
        let _ = child.kill();
        let _ = child.wait();
        let reaped = Offspring::of(me).unwrap();
        assert_ne!(before, reaped, "{before:?} {reaped:?}");
        assert!(!reaped.children.contains(&child.id()));
        let gone = Some(u32::MAX);
        assert!(server_made(Some(me), &[gone], Some(&before), Some(&reaped)));
    }
}
