//! The door's shortcut for what most requests to `/mcp` are: a plain `tools/call` POSTed in a
//! session (part of the [`fast_path`](super), which says what it re-implements of rmcp and
//! which test holds it to rmcp). [`front`](super::super::front) has read it once (rmcp would read it again, through serde's
//! buffered content); when rmcp would hand it to the session unchanged, it is answered
//! [`direct`](super::direct)ly here, and its SSE response is written as rmcp writes one — the
//! same head, the same `data:` events, a `:` comment each keep-alive interval while it waits,
//! the end at shutdown — without rmcp's request path.
//!
//! The shortcut takes a request only when each check of rmcp's POST path holds in a form it
//! can tell for sure, and leaves anything else to rmcp, which answers it as before (errors
//! included):
//! - `Accept` lists `application/json` and `text/event-stream`, with no parameters and no
//!   quotes (rmcp weighs `q=`; such a header goes to it);
//! - `Content-Type` is `application/json`, parameters allowed (as rmcp reads it);
//! - no `Origin` header and an origin-form target: the perimeter has checked `Host` against
//!   the list rmcp has, but rmcp parses origins its own way;
//! - `MCP-Protocol-Version` absent or one of the versions with sessions (before 2026-07-28,
//!   which also need no SEP-2243 headers), once, and no protocol version in the call's `_meta`;
//! - rmcp has the session, and [`Direct`](super::direct::Direct) takes the call.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts};
use axum::response::Response;
use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, GetMeta, ProtocolVersion};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::PlainCall;
use super::direct::Answer;
use crate::mcp::server::Endpoint;

/// Protocol versions with sessions, which a session's requests may name in
/// `MCP-Protocol-Version` without rmcp asking more of them.
const SESSION_VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
];

/// Answers `call`, POSTed with `parts` in a session, when rmcp would have handed it to the
/// session unchanged; otherwise gives `parts` back, for rmcp.
pub(crate) async fn answer(
    endpoint: &Endpoint,
    parts: Parts,
    call: PlainCall,
) -> Result<Response, Parts> {
    if !takes(&parts) {
        return Err(parts);
    }
    let Some(session_id) = parts
        .headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
    else {
        return Err(parts);
    };
    let mut message = call.into_message();
    let ClientJsonRpcMessage::Request(request) = &mut message else {
        return Err(parts);
    };
    let meta = request.request.get_meta();
    if meta.protocol_version().is_some()
        || meta
            .missing_required_keys(&ProtocolVersion::V_2026_07_28)
            .is_empty()
    {
        return Err(parts);
    }
    // As rmcp does: the handler finds the HTTP request's parts (and the credential the
    // perimeter put there) in the message's extensions.
    request.request.extensions_mut().insert(parts);
    match endpoint
        .sessions
        .answer_directly(&session_id, message)
        .await
    {
        Ok(answer) => {
            let config = &endpoint.service.config;
            Ok(response(Events::new(
                answer,
                config.sse_keep_alive,
                config.cancellation_token.clone(),
            )))
        }
        Err(ClientJsonRpcMessage::Request(mut request)) => Err(request
            .request
            .extensions_mut()
            .remove::<Parts>()
            .unwrap_or_else(unreachable_parts)),
        Err(_) => Err(unreachable_parts()),
    }
}

/// Parts for rmcp when the message came back without its own (it never does): a request rmcp
/// refuses for want of a session, never one that runs.
fn unreachable_parts() -> Parts {
    let (parts, ()) = axum::http::Request::new(()).into_parts();
    parts
}

/// Whether the request's head passes rmcp's checks in a form the shortcut can tell for sure.
fn takes(parts: &Parts) -> bool {
    let headers = &parts.headers;
    parts.uri.authority().is_none()
        && !headers.contains_key(header::ORIGIN)
        && accepts_json_and_events(headers)
        && sends_json(headers)
        && names_a_session_version(headers)
}

/// `Accept` lists both media types, plainly.
fn accepts_json_and_events(headers: &HeaderMap) -> bool {
    let mut json = false;
    let mut events = false;
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains(['"', ';']) {
            return false;
        }
        for essence in value.split(',').map(str::trim) {
            json |= essence.eq_ignore_ascii_case("application/json");
            events |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

/// `Content-Type` is `application/json`, read as rmcp reads it.
fn sends_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// `MCP-Protocol-Version` is absent, or names a version with sessions, once.
fn names_a_session_version(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all("mcp-protocol-version").iter();
    match (values.next(), values.next()) {
        (None, _) => true,
        (Some(value), None) => value.to_str().is_ok_and(|value| {
            SESSION_VERSIONS
                .iter()
                .any(|version| version.as_str() == value)
        }),
        (Some(_), Some(_)) => false,
    }
}

/// The response head rmcp gives an SSE stream.
fn response(events: Events) -> Response {
    let mut response = Response::new(Body::from_stream(events));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// A direct answer as SSE bytes. The keep-alive timer and the shutdown watch are made the
/// first time the answer has nothing to send: most answers are complete by then.
struct Events {
    answer: Answer,
    keep_alive: Option<Duration>,
    shutdown: CancellationToken,
    waiting: Option<Waiting>,
}

/// What an answer that has nothing to send yet waits on besides itself.
struct Waiting {
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Events {
    fn new(answer: Answer, keep_alive: Option<Duration>, shutdown: CancellationToken) -> Self {
        Self {
            answer,
            keep_alive,
            shutdown,
            waiting: None,
        }
    }
}

/// The keep-alive comment rmcp's SSE body sends.
const KEEP_ALIVE: &[u8] = b":\n\n";

impl Stream for Events {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.answer.poll_next_unpin(context) {
            Poll::Ready(Some(message)) => {
                if let Some(waiting) = &mut this.waiting {
                    waiting.rest(this.keep_alive);
                }
                Poll::Ready(encode(&message).map(Ok))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let keep_alive = this.keep_alive;
                let shutdown = &this.shutdown;
                this.waiting
                    .get_or_insert_with(|| Waiting {
                        idle: keep_alive.map(|interval| Box::pin(tokio::time::sleep(interval))),
                        shutdown: Box::pin(shutdown.clone().cancelled_owned()),
                    })
                    .poll(keep_alive, context)
            }
        }
    }
}

impl Waiting {
    /// Restarts the keep-alive interval (an event just went out).
    fn rest(&mut self, keep_alive: Option<Duration>) {
        if let (Some(idle), Some(interval)) = (&mut self.idle, keep_alive) {
            idle.as_mut().reset(tokio::time::Instant::now() + interval);
        }
    }

    /// The stream's end at shutdown, a keep-alive comment when the interval has passed.
    fn poll(
        &mut self,
        keep_alive: Option<Duration>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Infallible>>> {
        if self.shutdown.as_mut().poll(context).is_ready() {
            return Poll::Ready(None);
        }
        let Some(idle) = &mut self.idle else {
            return Poll::Pending;
        };
        if idle.as_mut().poll(context).is_pending() {
            return Poll::Pending;
        }
        self.rest(keep_alive);
        Poll::Ready(Some(Ok(Bytes::from_static(KEEP_ALIVE))))
    }
}

/// One SSE event as rmcp writes it: `data:` (the message, or empty for a priming event),
/// `id:` and `retry:` when set, then the blank line. `None` (and an error in the log) when the
/// message cannot be written, which rmcp treats as a bug.
fn encode(message: &ServerSseMessage) -> Option<Bytes> {
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(b"data: ");
    if let Some(message) = &message.message
        && let Err(error) = serde_json::to_writer(&mut bytes, message.as_ref())
    {
        tracing::error!(%error, "could not write an MCP message");
        return None;
    }
    bytes.push(b'\n');
    if let Some(id) = &message.event_id {
        bytes.extend_from_slice(b"id: ");
        bytes.extend_from_slice(id.as_bytes());
        bytes.push(b'\n');
    }
    if let Some(retry) = message.retry {
        bytes.extend_from_slice(format!("retry: {}\n", retry.as_millis()).as_bytes());
    }
    bytes.push(b'\n');
    Some(Bytes::from(bytes))
}

#[cfg(test)]
mod tests {
    use rmcp::model::{RequestId, ServerJsonRpcMessage, ServerResult};

    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = axum::http::Request::post("/mcp");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let (parts, ()) = request
            .body(())
            .unwrap_or_else(|error| panic!("a request: {error}"))
            .into_parts();
        parts
    }

    const PLAIN: [(&str, &str); 2] = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut headers: Vec<_> = PLAIN
            .iter()
            .filter(|(name, _)| !extra.iter().any(|(other, _)| other == name))
            .copied()
            .collect();
        headers.extend_from_slice(extra);
        headers
    }

    #[test]
    fn only_heads_rmcp_passes_unchanged_are_taken() {
        assert!(takes(&parts(&PLAIN)));
        for taken in [
            with(&[("content-type", "application/json; charset=utf-8")]),
            with(&[("accept", "text/event-stream,application/json")]),
            with(&[("mcp-protocol-version", "2025-06-18")]),
            with(&[("mcp-protocol-version", "2024-11-05")]),
            with(&[("mcp-protocol-version", "2025-11-25")]),
        ] {
            assert!(takes(&parts(&taken)), "{taken:?}");
        }
        for left in [
            with(&[("accept", "application/json")]),
            with(&[("accept", "application/json;q=1, text/event-stream")]),
            with(&[("accept", "application/json, text/event-stream;q=0")]),
            with(&[("accept", "\"application/json\", text/event-stream")]),
            with(&[("content-type", "text/plain")]),
            with(&[("origin", "http://127.0.0.1:8383")]),
            with(&[("mcp-protocol-version", "2026-07-28")]),
            with(&[("mcp-protocol-version", "1999-01-01")]),
            vec![("accept", "application/json, text/event-stream")],
        ] {
            assert!(!takes(&parts(&left)), "{left:?}");
        }
        let mut twice = parts(&with(&[("mcp-protocol-version", "2025-06-18")]));
        twice.headers.append(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-06-18"),
        );
        assert!(!takes(&twice), "a version named twice");
        let absolute = axum::http::Request::post("http://127.0.0.1:8383/mcp")
            .header("accept", PLAIN[0].1)
            .header("content-type", PLAIN[1].1)
            .body(())
            .unwrap_or_else(|error| panic!("a request: {error}"))
            .into_parts()
            .0;
        assert!(!takes(&absolute), "an absolute-form target");
    }

    #[test]
    fn events_are_written_as_rmcp_writes_them() {
        let message = ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(3));
        let json = serde_json::to_string(&message).unwrap_or_default();
        let event = ServerSseMessage::from_message(message);
        assert_eq!(
            encode(&event).as_deref(),
            Some(format!("data: {json}\n\n").as_bytes())
        );
        let priming = ServerSseMessage::priming("0", Duration::from_millis(1500));
        assert_eq!(
            encode(&priming).as_deref(),
            Some(&b"data: \nid: 0\nretry: 1500\n\n"[..])
        );
    }
}
