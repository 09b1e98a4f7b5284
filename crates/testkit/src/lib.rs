//! Fake LLM provider servers, a fake Telegram Bot API ([`telegram`]) and a fake model hub
//! ([`hub`]), for tests and benchmarks.
//!
//! A [`FakeServer`] listens on `127.0.0.1:0`, answers each path from a script of [`Reply`]s
//! (first in, first out; a path may also have a fallback reply, or a responder that builds
//! the reply from the request, for when its script is empty), and records every request it
//! receives (unless told not to: a soak sends more than memory should keep). The provider
//! modules ([`openai`], [`anthropic`], [`gigachat`], [`codex`]) build replies in each provider's real wire format: SSE chunks, tool calls
//! split across chunks, usage, errors with `Retry-After`, and broken streams (malformed
//! chunks, disconnects, streams that stall).
//!
//! ```no_run
//! # async fn example() {
//! use souz_testkit::{FakeServer, openai};
//! let server = FakeServer::start().await;
//! server.push("/v1/chat/completions", openai::text(&["Hel", "lo"]));
//! let base_url = format!("{}/v1", server.url());
//! // ... point a client at base_url, then:
//! let requests = server.requests();
//! # }
//! ```
//!
//! Nothing here reaches the network beyond loopback.

pub mod anthropic;
pub mod codex;
pub mod gigachat;
pub mod hub;
pub mod openai;
pub mod telegram;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::serve::ListenerExt;
use futures::StreamExt;

/// How a scripted SSE response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The body ends normally after the last frame.
    Complete,
    /// The connection is cut after the last frame (the body never terminates properly).
    Disconnect,
    /// The body stays open and silent after the last frame.
    Hang,
}

/// One piece of a streamed body and the pause before it.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Pause before sending it.
    pub delay: Duration,
    /// The raw bytes (for SSE: `data: ...\n\n`).
    pub bytes: Bytes,
}

/// A scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response.
    Full {
        /// HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Content type.
        content_type: String,
        /// Body.
        body: Bytes,
    },
    /// A streamed `text/event-stream` response.
    Stream {
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The frames.
        frames: Vec<Frame>,
        /// How it ends.
        ending: Ending,
    },
}

impl Reply {
    /// A JSON response.
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self::Full {
            status,
            headers: Vec::new(),
            content_type: "application/json".to_owned(),
            body: Bytes::from(body.to_string()),
        }
    }

    /// A plain-text response.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self::Full {
            status,
            headers: Vec::new(),
            content_type: "text/plain".to_owned(),
            body: Bytes::from(body.into()),
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        match &mut self {
            Self::Full { headers, .. } | Self::Stream { headers, .. } => {
                headers.push((name.to_owned(), value.to_owned()));
            }
        }
        self
    }

    /// Starts an SSE body.
    pub fn sse() -> SseBuilder {
        SseBuilder::default()
    }
}

/// Builds an SSE reply frame by frame.
#[derive(Debug, Clone, Default)]
pub struct SseBuilder {
    frames: Vec<Frame>,
    delay: Duration,
}

impl SseBuilder {
    /// Waits `delay` before each following frame.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// A `data:` event with this payload (JSON values are serialized compactly).
    pub fn data(self, payload: impl std::fmt::Display) -> Self {
        self.raw(format!("data: {payload}\n\n"))
    }

    /// A named event (`event: NAME` + `data:`).
    pub fn event(self, name: &str, payload: impl std::fmt::Display) -> Self {
        self.raw(format!("event: {name}\ndata: {payload}\n\n"))
    }

    /// Raw bytes, exactly as given.
    pub fn raw(mut self, text: impl Into<String>) -> Self {
        self.frames.push(Frame {
            delay: self.delay,
            bytes: Bytes::from(text.into()),
        });
        self
    }

    /// Ends the body normally.
    pub fn end(self) -> Reply {
        self.finish(Ending::Complete)
    }

    /// Cuts the connection after the frames so far.
    pub fn disconnect(self) -> Reply {
        self.finish(Ending::Disconnect)
    }

    /// Keeps the connection open and silent after the frames so far.
    pub fn hang(self) -> Reply {
        self.finish(Ending::Hang)
    }

    fn finish(self, ending: Ending) -> Reply {
        Reply::Stream {
            headers: Vec::new(),
            frames: self.frames,
            ending,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    /// Method.
    pub method: String,
    /// Path (no query).
    pub path: String,
    /// Query string, if any.
    pub query: Option<String>,
    /// Headers, names lower-case.
    pub headers: HashMap<String, String>,
    /// Raw body.
    pub body: Bytes,
}

impl CapturedRequest {
    /// The body as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// Builds a reply from the request it answers.
type Responder = Arc<dyn Fn(&CapturedRequest) -> Reply + Send + Sync>;

#[derive(Default)]
struct Script {
    queue: VecDeque<Reply>,
    fallback: Option<Reply>,
    responder: Option<Responder>,
}

#[derive(Default)]
struct Shared {
    scripts: Mutex<HashMap<String, Script>>,
    requests: Mutex<Vec<CapturedRequest>>,
    /// Requests are not recorded.
    forgetful: AtomicBool,
    dropped_early: AtomicUsize,
    first_bytes: Mutex<Vec<Instant>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A scripted HTTP server on loopback. Stops when dropped.
pub struct FakeServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("address", &self.address)
            .finish()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeServer {
    /// Starts a server on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If no loopback port can be bound (a broken test machine).
    #[allow(clippy::expect_used)]
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address");
        // Streaming providers send with TCP_NODELAY. Without it a small SSE frame written
        // after a pause waits for the client's delayed ACK (~40 ms on Linux loopback), and
        // latency measured against this server would measure the kernel.
        let listener = listener.tap_io(|stream| {
            let _ = stream.set_nodelay(true);
        });
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&shared));
        #[allow(
            clippy::disallowed_methods,
            reason = "the fake server's task is owned by the FakeServer (its handle), which aborts it when dropped"
        )]
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            address,
            shared,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The bound address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Queues `reply` for the next request to `path`.
    pub fn push(&self, path: &str, reply: Reply) {
        lock(&self.shared.scripts)
            .entry(path.to_owned())
            .or_default()
            .queue
            .push_back(reply);
    }

    /// Answers `path` with `reply` whenever its queue is empty.
    pub fn set_fallback(&self, path: &str, reply: Reply) {
        lock(&self.shared.scripts)
            .entry(path.to_owned())
            .or_default()
            .fallback = Some(reply);
    }

    /// Answers `path` with what `responder` makes of each request, whenever its queue is
    /// empty and it has no fallback reply (a provider whose usage counts the prompt it got).
    pub fn set_responder(
        &self,
        path: &str,
        responder: impl Fn(&CapturedRequest) -> Reply + Send + Sync + 'static,
    ) {
        lock(&self.shared.scripts)
            .entry(path.to_owned())
            .or_default()
            .responder = Some(Arc::new(responder));
    }

    /// Whether requests are recorded (the default); a long soak turns it off.
    pub fn record_requests(&self, record: bool) {
        self.shared.forgetful.store(!record, Ordering::SeqCst);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<CapturedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Requests received on `path`.
    pub fn requests_to(&self, path: &str) -> Vec<CapturedRequest> {
        lock(&self.shared.requests)
            .iter()
            .filter(|request| request.path == path)
            .cloned()
            .collect()
    }

    /// Streamed bodies the client stopped reading before they ended (cancelled or dropped).
    pub fn streams_dropped_early(&self) -> usize {
        self.shared.dropped_early.load(Ordering::SeqCst)
    }

    /// When each streamed body handed its first frame to the connection.
    pub fn first_byte_times(&self) -> Vec<Instant> {
        lock(&self.shared.first_bytes).clone()
    }

    /// Forgets recorded requests and timings (scripts are kept).
    pub fn clear_records(&self) {
        lock(&self.shared.requests).clear();
        lock(&self.shared.first_bytes).clear();
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 16 << 20)
        .await
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let captured = CapturedRequest {
        method: parts.method.to_string(),
        path: path.clone(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let reply = {
        let mut scripts = lock(&shared.scripts);
        scripts.get_mut(&path).and_then(|script| {
            script
                .queue
                .pop_front()
                .or_else(|| script.fallback.clone())
                .or_else(|| script.responder.as_ref().map(|make| make(&captured)))
        })
    };
    if !shared.forgetful.load(Ordering::SeqCst) {
        lock(&shared.requests).push(captured);
    }
    let Some(reply) = reply else {
        return respond(
            Reply::json(
                404,
                serde_json::json!({"error": {"message": format!("fake server: nothing scripted for {path}")}}),
            ),
            &shared,
        );
    };
    respond(reply, &shared)
}

fn respond(reply: Reply, shared: &Arc<Shared>) -> Response {
    let (status, headers, content_type, body) = match reply {
        Reply::Full {
            status,
            headers,
            content_type,
            body,
        } => (status, headers, content_type, Body::from(body)),
        Reply::Stream {
            headers,
            frames,
            ending,
        } => (
            200,
            headers,
            "text/event-stream".to_owned(),
            Body::from_stream(stream_body(frames, ending, Arc::clone(shared))),
        ),
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let response_headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response_headers.insert(axum::http::header::CONTENT_TYPE, value);
    }
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response_headers.insert(name, value);
        }
    }
    response
}

/// Counts the body as dropped early unless it was read to its end.
struct EndGuard {
    shared: Arc<Shared>,
    completed: bool,
}

impl EndGuard {
    fn mark_completed(&mut self) {
        self.completed = true;
    }
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if !self.completed {
            self.shared.dropped_early.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn stream_body(
    frames: Vec<Frame>,
    ending: Ending,
    shared: Arc<Shared>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let guard = EndGuard {
        shared: Arc::clone(&shared),
        completed: false,
    };
    let frames: VecDeque<Frame> = frames.into();
    futures::stream::unfold(
        (frames, guard, true, false),
        move |(mut frames, mut guard, first, ended)| async move {
            if ended {
                return None;
            }
            match frames.pop_front() {
                Some(frame) => {
                    if !frame.delay.is_zero() {
                        tokio::time::sleep(frame.delay).await;
                    }
                    if first {
                        lock(&guard.shared.first_bytes).push(Instant::now());
                    }
                    Some((Ok(frame.bytes), (frames, guard, false, false)))
                }
                None => match ending {
                    Ending::Complete => {
                        guard.mark_completed();
                        None
                    }
                    Ending::Disconnect => {
                        // Let the frames before it reach the client first, as on a real
                        // connection that breaks mid-answer.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        guard.mark_completed();
                        let error = std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            "fake server: scripted disconnect",
                        );
                        // hyper aborts the connection on a body error.
                        Some((Err(error), (frames, guard, false, true)))
                    }
                    Ending::Hang => {
                        futures::future::pending::<()>().await;
                        None
                    }
                },
            }
        },
    )
    .boxed()
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// The raw HTTP/1.1 response to a POST of `body` to `path`.
    async fn post(server: &FakeServer, path: &str, body: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(server.address())
            .await
            .expect("connect");
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: fake\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        response
    }

    #[tokio::test]
    async fn a_responder_answers_from_the_request_when_nothing_else_is_scripted() {
        let server = FakeServer::start().await;
        server.set_responder("/r", |request| {
            Reply::text(200, format!("got {} bytes", request.body.len()))
        });
        assert!(post(&server, "/r", "abcd").await.ends_with("got 4 bytes"));
        server.push("/r", Reply::text(200, "scripted"));
        assert!(post(&server, "/r", "abcdef").await.ends_with("scripted"));
        assert!(post(&server, "/r", "abcdef").await.ends_with("got 6 bytes"));
        server.set_fallback("/r", Reply::text(200, "fallback"));
        assert!(post(&server, "/r", "ab").await.ends_with("fallback"));
        let other = post(&server, "/other", "").await;
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");
        assert_eq!(server.requests().len(), 5);
    }

    #[tokio::test]
    async fn requests_are_not_kept_when_recording_is_off() {
        let server = FakeServer::start().await;
        server.set_fallback("/r", Reply::text(200, "ok"));
        assert!(post(&server, "/r", "one").await.ends_with("ok"));
        server.record_requests(false);
        assert!(post(&server, "/r", "two").await.ends_with("ok"));
        server.record_requests(true);
        assert!(post(&server, "/r", "three").await.ends_with("ok"));
        let bodies: Vec<String> = server
            .requests()
            .iter()
            .map(CapturedRequest::text)
            .collect();
        assert_eq!(bodies, ["one", "three"]);
    }
}
