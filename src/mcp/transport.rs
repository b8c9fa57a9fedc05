//! The stdio transport: one JSON-RPC message per line on stdin and stdout.
//!
//! rmcp's own stdio transport drops a line that is not JSON without a word
//! and answers a well-formed message of the wrong shape with an id-less
//! error. This one answers both, as JSON-RPC asks: `-32700 Parse error` for
//! a line that is not JSON, `-32600 Invalid Request` (or `-32602 Invalid
//! params` for a known method) carrying the request's own id when it has
//! one; notifications are never answered. Nothing a client sends ends the
//! server except closing stdin, which is reported to the rest of the server
//! at once (so running waits end now, not after rmcp's drain delay).

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, JsonRpcRequest, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// Longest message accepted (as rmcp's default): a longer line is
/// discarded and answered with an error.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

type Writer = Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

pub struct LineTransport<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Dropping the rest of an over-long line.
    discarding: bool,
    write: Writer,
    /// Told once stdin is at its end.
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    pub fn new(
        read: R,
        write: impl AsyncWrite + Send + Unpin + 'static,
        on_eof: impl FnOnce() + Send + 'static,
    ) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(Box::new(write))),
            on_eof: Some(Box::new(on_eof)),
        }
    }

    /// One whole line into `self.line` (without its newline), or None at
    /// the end of input. Cancellation-safe: `receive` is polled in a
    /// `select!`, so a partial line stays in `self.line` for the next call.
    async fn read_line(&mut self) -> Option<Result<(), ()>> {
        loop {
            let (used, done) = {
                let buf = match self.read.fill_buf().await {
                    Ok(b) => b,
                    Err(e) => {
                        crate::mcp::log(&format!("cannot read stdin: {e}"));
                        return None;
                    }
                };
                if buf.is_empty() {
                    return None;
                }
                let nl = buf.iter().position(|b| *b == b'\n');
                let take = nl.map_or(buf.len(), |i| i + 1);
                if self.discarding {
                    if nl.is_some() {
                        self.discarding = false;
                    }
                    (take, None)
                } else if self.line.len() + take > MAX_LINE + 1 {
                    self.line.clear();
                    self.discarding = nl.is_none();
                    (take, Some(Err(())))
                } else {
                    self.line.extend_from_slice(&buf[..take]);
                    (take, nl.map(|_| Ok(())))
                }
            };
            self.read.consume(used);
            if let Some(r) = done {
                if r.is_ok() {
                    self.line.pop();
                    if self.line.last() == Some(&b'\r') {
                        self.line.pop();
                    }
                }
                return Some(r);
            }
        }
    }

    /// Answer a message that is not one we can serve. Written by a task
    /// of its own, whole, so a cancelled `receive` never cuts it short.
    fn reply_error(&self, id: Option<RequestId>, code: ErrorCode, message: String) {
        let msg = TxJsonRpcMessage::<RoleServer>::error(ErrorData::new(code, message, None), id);
        let write = self.write.clone();
        tokio::spawn(async move {
            let _ = write_message(&write, &msg).await;
        });
    }
}

async fn write_message(write: &Writer, msg: &TxJsonRpcMessage<RoleServer>) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut w = write.lock().await;
    w.write_all(&line).await?;
    w.flush().await
}

/// What to answer a line that did not parse as a message we serve: None
/// for a notification (never answered).
pub fn classify_bad_line(
    line: &[u8],
    e: &serde_json::Error,
) -> Option<(Option<RequestId>, ErrorCode, String)> {
    let value: serde_json::Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(pe) => {
            return Some((None, ErrorCode::PARSE_ERROR, format!("Parse error: {pe}")));
        }
    };
    let obj = value.as_object();
    let method = obj.and_then(|o| o.get("method")).and_then(|m| m.as_str());
    let id = obj.and_then(|o| o.get("id"));
    match (method, id) {
        // A notification (or something shaped like one): no answer.
        (Some(_), None) => None,
        (Some(m), Some(id)) => {
            let id = serde_json::from_value::<RequestId>(id.clone()).ok();
            if is_known_method(m) {
                Some((
                    id,
                    ErrorCode::INVALID_PARAMS,
                    format!("Invalid params for {m}: {e}"),
                ))
            } else {
                Some((
                    id,
                    ErrorCode::INVALID_REQUEST,
                    format!("Invalid Request: {e}"),
                ))
            }
        }
        (None, id) => {
            // A response of ours echoed back or garbage: an object without
            // a method that has a result or error is a response (ignored).
            if obj.is_some_and(|o| o.contains_key("result") || o.contains_key("error")) {
                return None;
            }
            let id = id.and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            Some((
                id,
                ErrorCode::INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC 2.0 request or notification".into(),
            ))
        }
    }
}

fn is_known_method(m: &str) -> bool {
    matches!(
        m,
        "initialize"
            | "ping"
            | "server/discover"
            | "tools/list"
            | "tools/call"
            | "logging/setLevel"
            | "prompts/list"
            | "prompts/get"
            | "resources/list"
            | "resources/read"
            | "resources/templates/list"
            | "completion/complete"
    )
}

impl<R: AsyncRead + Send + Unpin + 'static> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move { write_message(&write, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                None => {
                    if let Some(f) = self.on_eof.take() {
                        f();
                    }
                    return None;
                }
                Some(Err(())) => {
                    self.reply_error(
                        None,
                        ErrorCode::INVALID_REQUEST,
                        format!("Invalid Request: message longer than {MAX_LINE} bytes"),
                    );
                    continue;
                }
                Some(Ok(())) => {}
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                // A known method whose params are missing parses as a
                // custom request: say what is wrong with it.
                Ok(JsonRpcMessage::Request(JsonRpcRequest {
                    id,
                    request: ClientRequest::CustomRequest(c),
                    ..
                })) if is_known_method(&c.method) => {
                    self.reply_error(
                        Some(id),
                        ErrorCode::INVALID_PARAMS,
                        format!("Invalid params for {}: missing params", c.method),
                    );
                }
                Ok(msg) => return Some(msg),
                Err(e) => {
                    if let Some((id, code, message)) = classify_bad_line(text, &e) {
                        self.reply_error(id, code, message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut w = self.write.lock().await;
        w.flush().await
    }
}

/// The server's stdin and stdout. Pipes (what MCP clients give) are read
/// and written without blocking, right on the server's own thread: no
/// thread hand-off per message, and no read left blocked at exit. Anything
/// else (a terminal, a file) goes through tokio's blocking standard
/// streams.
pub fn stdio() -> (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let read: Box<dyn AsyncRead + Send + Unpin> = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(p) => Box::new(p),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let write: Box<dyn AsyncWrite + Send + Unpin> = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(p) => Box::new(p),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (read, write)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(line: &str) -> Option<(Option<RequestId>, ErrorCode, String)> {
        let e = serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line).unwrap_err();
        classify_bad_line(line.as_bytes(), &e)
    }

    #[test]
    fn garbage_is_a_parse_error() {
        let (id, code, _) = bad("{not json").unwrap();
        assert_eq!(id, None);
        assert_eq!(code, ErrorCode::PARSE_ERROR);
    }

    #[test]
    fn bad_params_of_a_known_method_keep_the_id() {
        let (id, code, msg) =
            bad(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"oops"}"#).unwrap();
        assert_eq!(id, Some(RequestId::Number(7)));
        assert_eq!(code, ErrorCode::INVALID_PARAMS);
        assert!(msg.contains("tools/call"), "{msg}");
    }

    #[test]
    fn a_bad_notification_is_not_answered() {
        assert!(
            bad(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#).is_none()
        );
    }

    #[test]
    fn not_a_request_is_invalid() {
        let (id, code, _) = bad(r#"[1,2]"#).unwrap();
        assert_eq!((id, code), (None, ErrorCode::INVALID_REQUEST));
        let (id, code, _) = bad(r#"{"jsonrpc":"2.0","id":"x"}"#).unwrap();
        assert_eq!(id, Some(RequestId::String("x".into())));
        assert_eq!(code, ErrorCode::INVALID_REQUEST);
    }
}
