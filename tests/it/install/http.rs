//! A small HTTP/1.1 file server on 127.0.0.1 for the download tests: it
//! serves a directory (404 for what is not there), logs every request, and
//! can misbehave on purpose: answer late, accept and then say nothing, or
//! cut the connection in the middle of a file. It stops, and ends every
//! connection it holds, when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How the server answers requests for archives (`*.tar.gz`); the small
/// files are always answered at once.
#[derive(Clone, Debug, Default)]
pub enum Archive {
    #[default]
    Whole,
    /// Answer once the test says so (`Http::go`).
    Held,
    /// Read the request, then say nothing until the client gives up.
    Stall,
    /// Send the headers (with the whole length) and half the body, then
    /// close the connection.
    Cut,
}

pub struct Http {
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
    archive: Arc<Mutex<Archive>>,
    go: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
}

impl Http {
    /// Serve `root` on a free port of 127.0.0.1.
    pub fn serve(root: &Path) -> Http {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let archive = Arc::new(Mutex::new(Archive::Whole));
        let stop = Arc::new(AtomicBool::new(false));
        let go = Arc::new(AtomicBool::new(false));
        let threads: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = {
            let (root, log, archive, go, stop, threads) = (
                root.to_path_buf(),
                Arc::clone(&log),
                Arc::clone(&archive),
                Arc::clone(&go),
                Arc::clone(&stop),
                Arc::clone(&threads),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let conn = Conn {
                                root: root.clone(),
                                log: Arc::clone(&log),
                                archive: archive.lock().unwrap().clone(),
                                go: Arc::clone(&go),
                                stop: Arc::clone(&stop),
                            };
                            let t = std::thread::spawn(move || conn.answer(stream));
                            threads.lock().unwrap().push(t);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Http {
            port,
            log,
            archive,
            go,
            stop,
            threads,
            accept: Some(accept),
        }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/releases/download", self.port)
    }

    /// The requests so far: `GET /path` each.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    pub fn set_archive(&self, a: Archive) {
        *self.archive.lock().unwrap() = a;
    }

    /// Let held archives go.
    pub fn go(&self) {
        self.go.store(true, Ordering::SeqCst);
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        for t in self.threads.lock().unwrap().drain(..) {
            let _ = t.join();
        }
    }
}

struct Conn {
    root: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    archive: Archive,
    go: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Conn {
    fn answer(self, mut stream: TcpStream) {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let Some(path) = read_request(&mut stream) else {
            return;
        };
        self.log.lock().unwrap().push(format!("GET {path}"));
        let file = (!path.contains(".."))
            .then(|| self.root.join(path.trim_start_matches('/')))
            .filter(|f| f.is_file());
        let Some(file) = file else {
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        };
        let body = std::fs::read(&file).unwrap_or_default();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let archive = if path.ends_with(".tar.gz") {
            self.archive.clone()
        } else {
            Archive::Whole
        };
        match archive {
            Archive::Whole => {}
            Archive::Held => {
                while !self.go.load(Ordering::SeqCst) && !self.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            Archive::Stall => {
                // Until the client closes, or the test ends.
                let _ = stream.set_read_timeout(Some(Duration::from_millis(20)));
                let mut b = [0u8; 64];
                while !self.stop.load(Ordering::SeqCst) {
                    match stream.read(&mut b) {
                        Ok(0) => return,
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) => {}
                        Err(_) => return,
                    }
                }
                return;
            }
            Archive::Cut => {
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body[..body.len() / 2]);
                let _ = stream.flush();
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&body);
    }
}

/// The path of a GET request (its headers read and dropped).
fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut b = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut b).ok()?;
        if n == 0 || buf.len() > 16 * 1024 {
            return None;
        }
        buf.extend_from_slice(&b[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let mut first = text.lines().next()?.split_whitespace();
    (first.next()? == "GET").then_some(())?;
    first.next().map(str::to_owned)
}
