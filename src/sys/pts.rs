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
                    while let Some(mut made) = w.wait(None) {
                        // (Whose it is, at once: a pane that ends in a few
                        // milliseconds takes its master with it.)
                        made.extend(w.more(Duration::from_millis(1)));
                        let made: Vec<Option<u32>> =
                            made.iter().map(|e| e.name.parse().ok()).collect();
                        let ours = server_made(server, &made);
                        crate::trace!("new terminals {made:?}: the server's {ours}");
                        if !ours {
                            continue;
                        }
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
/// unless `/proc` shows the server's masters, none is one of them, and
/// each is still there (another program's, then).
#[cfg(target_os = "linux")]
fn server_made(server: Option<u32>, made: &[Option<u32>]) -> bool {
    let Some(masters) = server.and_then(super::procfs::pty_masters) else {
        return true;
    };
    // A terminal gone already may have been the server's: its master goes
    // with it (a pane whose program ended at once), and a terminal lasts
    // as long as its master.
    let gone = |n: u32| !std::path::Path::new(&format!("/dev/pts/{n}")).exists();
    made.iter()
        .any(|m| m.is_none_or(|n| masters.contains(&n) || gone(n)))
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
        assert!(server_made(Some(me), &[Some(mine[0])]));
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
            assert!(!server_made(Some(me), &[n]));
            let _ = child.kill();
            let _ = child.wait();
        }
        // Gone already (its master closed at once): maybe the server's;
        // unknown: maybe.
        assert!(server_made(Some(me), &[Some(u32::MAX)]));
        assert!(server_made(Some(me), &[None]));
        assert!(server_made(None, &[Some(u32::MAX)]));
        drop(ptmx);
    }
}
