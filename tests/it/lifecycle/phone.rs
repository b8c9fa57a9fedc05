//! Told on a phone or in a chat: the two `@tmux-wait-on-done` lines of
//! docs/commands.md ("On a phone or in a chat"), ntfy's and a webhook's,
//! as written there but for their URL, which points at a small HTTP
//! server of the test's own on 127.0.0.1. A pane that newly needs the
//! person sends one request, whose body holds the pane's question as it
//! was written (quotes, `$(...)` and backquotes are data: no command in
//! them runs).

use super::Day;
use crate::common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the server got: its request line, headers and body.
#[derive(Debug, Clone)]
struct Request {
    line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTP server on 127.0.0.1 that answers 200 to everything and keeps
/// what it got. Its thread waits in `accept` until the test process ends.
struct Http {
    port: u16,
    got: Arc<Mutex<Vec<Request>>>,
}

impl Http {
    fn start() -> Http {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = got.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.trim_end().split_once(':') {
                        headers.push((k.trim().to_owned(), v.trim().to_owned()));
                    }
                }
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                let _ = r.read_exact(&mut body);
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                keep.lock().unwrap().push(Request {
                    line: line.trim_end().to_owned(),
                    headers,
                    body: String::from_utf8_lossy(&body).into_owned(),
                });
            }
        });
        Http { port, got }
    }

    fn requests(&self) -> Vec<Request> {
        self.got.lock().unwrap().clone()
    }
}

/// The `tmux.conf` block of docs/commands.md's "On a phone or in a chat"
/// that holds `url`, with `url` swapped for `to`.
fn documented(url: &str, to: &str) -> String {
    let doc = std::fs::read_to_string(root().join("docs/commands.md")).unwrap();
    let from = doc
        .find("**On a phone or in a chat.**")
        .expect("the section in docs/commands.md");
    let block = doc[from..]
        .split("```tmux\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or(""))
        .find(|b| b.contains(url))
        .unwrap_or_else(|| panic!("no tmux block with {url} in the section"));
    assert!(installed("curl"), "curl is needed by the documented lines");
    block.replace(url, to)
}

/// A question a pane asks, hostile as pane text may be.
const QUESTION: &str = "Deploy \"$(touch PWNED)\" `touch PWNED` $HOME now? [y/N]";

/// A day whose on-done is `conf`; a pane asks [`QUESTION`] out of the
/// person's sight; the request it sends.
fn told(conf: &str, http: &Http) -> (Day, String, Request) {
    let d = Day::start(conf);
    let script = d.s.dir().join("ask.sh");
    std::fs::write(
        &script,
        format!(
            "printf '%s' '{}'\nread a\nexec sleep 900\n",
            QUESTION.replace('\'', "'\\''")
        ),
    )
    .unwrap();
    let a = d.window_running(&format!("cd '{}' && sh ask.sh", d.s.dir().display()));
    d.wait_mark(&a, "asking");
    let end = Instant::now() + DEADLINE;
    let r = loop {
        if let Some(r) = http.requests().into_iter().next() {
            break r;
        }
        assert!(
            Instant::now() < end,
            "no request reached 127.0.0.1:{}; the pane shows:\n{}",
            http.port,
            d.s.capture(&a)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        !d.s.dir().join("PWNED").exists(),
        "pane text ran as a command"
    );
    (d, a, r)
}

#[test]
fn ntfy_gets_the_question() {
    if !installed("curl") {
        println!("skipped: curl is not installed");
        return;
    }
    let http = Http::start();
    let conf = documented(
        "https://ntfy.sh/tmux-wait-3f9a6c1e",
        &format!("http://127.0.0.1:{}/tmux-wait-3f9a6c1e", http.port),
    );
    let (_d, a, r) = told(&conf, &http);
    assert_eq!(r.line, "POST /tmux-wait-3f9a6c1e HTTP/1.1", "{r:?}");
    assert_eq!(r.header("Title"), Some("tmux-wait attention"), "{r:?}");
    assert_eq!(r.body, format!("{a} asking: {QUESTION}"), "{r:?}");
}

#[test]
fn a_webhook_gets_the_question_as_json() {
    if !installed("curl") || !installed("jq") {
        println!("skipped: curl or jq is not installed");
        return;
    }
    let http = Http::start();
    let conf = documented(
        "https://hooks.example.com/services/T000/B000/XXXX",
        &format!("http://127.0.0.1:{}/hook", http.port),
    );
    let (_d, a, r) = told(&conf, &http);
    assert_eq!(r.line, "POST /hook HTTP/1.1", "{r:?}");
    assert_eq!(r.header("Content-Type"), Some("application/json"), "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.body).expect("JSON");
    assert_eq!(
        v,
        serde_json::json!({"text": format!("{a} asking: {QUESTION}")})
    );
}
