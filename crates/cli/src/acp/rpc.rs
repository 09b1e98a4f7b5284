//! JSON-RPC 2.0 over newline-delimited stdio, as the Agent Client Protocol carries it: one
//! JSON message per line, requests and notifications both ways, responses matched to requests
//! by id, and `$/cancel_request` to withdraw a request the agent sent.
//!
//! Invariants (the editor's input is untrusted):
//! - A line longer than [`MAX_LINE`] is refused with a JSON-RPC error and skipped; it is never
//!   held in memory beyond the limit.
//! - A line that is not JSON gets a parse error (-32700), a JSON value that is not a JSON-RPC
//!   message an invalid-request error (-32600); the connection goes on either way.
//! - A response whose id matches no open request (a late answer to a withdrawn request, or a
//!   made-up id) is ignored.
//! - Frames are written whole, one per line, in the order they were sent.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// The longest line read (8 MiB).
pub const MAX_LINE: usize = 8 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// The notification that withdraws a request.
pub const CANCEL_REQUEST: &str = "$/cancel_request";

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: &str, detail: Option<String>) -> Self {
        Self {
            code,
            message: message.to_owned(),
            data: detail.map(Value::String),
        }
    }

    pub fn parse_error(detail: impl ToString) -> Self {
        Self::new(PARSE_ERROR, "Parse error", Some(detail.to_string()))
    }

    pub fn invalid_request(detail: impl ToString) -> Self {
        Self::new(INVALID_REQUEST, "Invalid request", Some(detail.to_string()))
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            METHOD_NOT_FOUND,
            "Method not found",
            Some(method.to_owned()),
        )
    }

    pub fn invalid_params(detail: impl ToString) -> Self {
        Self::new(INVALID_PARAMS, "Invalid params", Some(detail.to_string()))
    }

    pub fn internal_error(detail: impl ToString) -> Self {
        Self::new(INTERNAL_ERROR, "Internal error", Some(detail.to_string()))
    }
}

/// Decodes a message's parameters; an invalid-params error when they do not fit.
pub fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(RpcError::invalid_params)
}

/// One message read from the editor.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
}

/// Classifies one line: the message, or the id (`null` when unknown) and error to answer.
pub fn decode(line: &[u8]) -> Result<Message, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|error| (Value::Null, RpcError::parse_error(error)))?;
    let Value::Object(mut object) = value else {
        return Err((
            Value::Null,
            RpcError::invalid_request("a message is a JSON object"),
        ));
    };
    let id = object.remove("id");
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id.unwrap_or(Value::Null),
            RpcError::invalid_request("\"jsonrpc\" must be \"2.0\""),
        ));
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(_), id) => Err((
            id.unwrap_or(Value::Null),
            RpcError::invalid_request("\"method\" must be a string"),
        )),
        (None, Some(id)) => {
            let outcome = match (object.remove("result"), object.remove("error")) {
                (_, Some(error)) => {
                    Err(serde_json::from_value(error).unwrap_or_else(RpcError::internal_error))
                }
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            Ok(Message::Response { id, outcome })
        }
        (None, None) => Err((
            Value::Null,
            RpcError::invalid_request("neither a request, a notification nor a response"),
        )),
    }
}

/// What [`read_line`] read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadLine {
    /// A line (without its newline) is in the buffer.
    Line,
    /// The line was longer than the limit: it was skipped, the buffer is empty.
    TooLong,
    /// The input ended.
    Eof,
}

/// Reads one line into `buffer`, holding at most `max` bytes of it.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buffer: &mut Vec<u8>,
    max: usize,
) -> io::Result<ReadLine> {
    buffer.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, any) {
                (true, _) => ReadLine::TooLong,
                (false, true) => ReadLine::Line,
                (false, false) => ReadLine::Eof,
            });
        }
        any = true;
        let (chunk, used, ended) = match available.iter().position(|byte| *byte == b'\n') {
            Some(end) => (&available[..end], end + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long {
            if buffer.len() + chunk.len() > max {
                too_long = true;
                buffer.clear();
                buffer.shrink_to(0);
            } else {
                buffer.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if ended {
            return Ok(if too_long {
                ReadLine::TooLong
            } else {
                ReadLine::Line
            });
        }
    }
}

/// Why a message could not be exchanged.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// The editor went away (stdin or stdout closed).
    #[error("the editor closed the connection")]
    Closed,
    /// The editor answered with an error.
    #[error("the editor answered with an error: {0}")]
    Rpc(RpcError),
    /// The message could not be encoded, or the answer decoded.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

type Answer = Result<Value, RpcError>;

struct Inner {
    frames: mpsc::UnboundedSender<String>,
    pending: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
    next_id: AtomicI64,
}

/// The sending side of the connection, shared by everything that talks to the editor.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

/// A request sent to the editor, waiting for its answer.
pub struct Outgoing {
    pub id: i64,
    answer: oneshot::Receiver<Answer>,
}

impl Outgoing {
    /// The editor's answer, decoded.
    pub async fn answer<T: DeserializeOwned>(self) -> Result<T, ConnectionError> {
        match self.answer.await {
            Ok(Ok(value)) => Ok(serde_json::from_value(value)?),
            Ok(Err(error)) => Err(ConnectionError::Rpc(error)),
            Err(_) => Err(ConnectionError::Closed),
        }
    }
}

impl Connection {
    /// A connection and the frames it sends (for [`write_frames`]).
    pub fn new() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (frames, receiver) = mpsc::unbounded_channel();
        let inner = Inner {
            frames,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
        };
        (
            Self {
                inner: Arc::new(inner),
            },
            receiver,
        )
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, oneshot::Sender<Answer>>> {
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, frame: &Value) -> Result<(), ConnectionError> {
        let line = serde_json::to_string(frame)?;
        self.inner
            .frames
            .send(line)
            .map_err(|_| ConnectionError::Closed)
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: &impl Serialize) -> Result<(), ConnectionError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Answers the request `id`.
    pub fn respond(
        &self,
        id: Value,
        outcome: Result<Value, RpcError>,
    ) -> Result<(), ConnectionError> {
        let frame = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.send(&frame)
    }

    /// Answers the request `id` with `result` encoded.
    pub fn respond_with(
        &self,
        id: Value,
        result: Result<impl Serialize, RpcError>,
    ) -> Result<(), ConnectionError> {
        let outcome = match result {
            Ok(result) => serde_json::to_value(result).map_err(RpcError::internal_error),
            Err(error) => Err(error),
        };
        self.respond(id, outcome)
    }

    /// Sends a request; its answer comes through the returned [`Outgoing`].
    pub fn request(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<Outgoing, ConnectionError> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        self.pending().insert(id, sender);
        let sent =
            self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        if let Err(error) = sent {
            self.pending().remove(&id);
            return Err(error);
        }
        Ok(Outgoing { id, answer })
    }

    /// Withdraws the request `id` (`$/cancel_request`): its answer, if one still comes, is
    /// ignored.
    pub fn withdraw(&self, id: i64) -> Result<(), ConnectionError> {
        if self.pending().remove(&id).is_none() {
            return Ok(());
        }
        self.notify(CANCEL_REQUEST, &json!({"requestId": id}))
    }

    /// Hands an answer to its open request; false when none is open under `id`.
    pub fn resolve(&self, id: &Value, outcome: Answer) -> bool {
        let Some(id) = id.as_i64() else {
            return false;
        };
        let Some(waiting) = self.pending().remove(&id) else {
            return false;
        };
        waiting.send(outcome).is_ok()
    }
}

/// Writes `frames` to `output`, one per line, until every sender is gone or the output fails.
pub async fn write_frames<W: AsyncWrite + Unpin>(
    mut frames: mpsc::UnboundedReceiver<String>,
    mut output: W,
) -> io::Result<()> {
    while let Some(frame) = frames.recv().await {
        output.write_all(frame.as_bytes()).await?;
        output.write_all(b"\n").await?;
        output.flush().await?;
    }
    Ok(())
}

/// Reads messages from `input` until it ends: answers to the agent's requests go to their
/// waiters, broken lines are answered with errors, and requests and notifications go to
/// `handle`. Returns when the input ends.
pub async fn read_frames<R: AsyncBufRead + Unpin>(
    mut input: R,
    connection: &Connection,
    mut handle: impl FnMut(Message),
) -> io::Result<()> {
    let mut line = Vec::new();
    loop {
        match read_line(&mut input, &mut line, MAX_LINE).await? {
            ReadLine::Eof => return Ok(()),
            ReadLine::TooLong => {
                let error = RpcError::invalid_request(format!(
                    "the message is longer than {} MiB",
                    MAX_LINE / (1024 * 1024)
                ));
                if connection.respond(Value::Null, Err(error)).is_err() {
                    return Ok(());
                }
            }
            ReadLine::Line => {
                if line.trim_ascii().is_empty() {
                    continue;
                }
                match decode(&line) {
                    Ok(Message::Response { id, outcome }) => {
                        connection.resolve(&id, outcome);
                    }
                    // The agent's own requests are not cancelled one by one: a turn ends
                    // through `session/cancel`.
                    Ok(Message::Notification { method, .. }) if method == CANCEL_REQUEST => {}
                    Ok(message) => handle(message),
                    Err((id, error)) => {
                        if connection.respond(id, Err(error)).is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        }
        // Do not keep a buffer grown by one large message.
        if line.capacity() > 64 * 1024 {
            line = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests;
