//! The door of `/mcp`: checks each POSTed message before rmcp sees it, so that protocol
//! problems get JSON-RPC errors (rmcp itself answers a body it cannot parse with a plain-text
//! 415) and the server keeps serving.
//!
//! - Not JSON → `-32700` (parse error), HTTP 400.
//! - A JSON array (a batch; MCP since 2025-06-18 sends one message per POST) → `-32600`, 400.
//! - Not a JSON-RPC 2.0 message → `-32600` with the request's id when it has one, 400.
//! - A request whose method is known but whose params do not fit → `-32602`, 400.
//! - An unknown method sent outside a session → `-32601` at once, HTTP 200, so clients that try
//!   something first fall back to `initialize`; inside a session rmcp answers it the same way.
//! - A bare `server/discover` (no 2026-07-28 protocol version in its `_meta`: a client probing
//!   for the newest protocol) → `-32601` at once, HTTP 200, in or out of a session (rmcp would
//!   answer it in a session with 400 `-32602`). A discover that names its protocol version is
//!   the real 2026-07-28 handshake and goes to rmcp.
//!
//! A plain `tools/call` in a session — most of what comes in — is read once here and answered
//! by the [`fast_path`](super::fast_path) when rmcp would have handed it to the session
//! unchanged. Everything
//! else — including GET (the server's event stream) and DELETE (end of session) — goes to rmcp
//! untouched, body bytes included.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta};
use serde_json::{Value, json};

use super::Endpoint;
use super::fast_path::{FastPath, plain_tools_call, shortcut};

/// JSON-RPC error codes used here.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const METHOD_NOT_FOUND: i32 = -32601;
const INVALID_PARAMS: i32 = -32602;

/// Client request methods rmcp has a typed form for, except `server/discover`: a discover
/// without the 2026-07-28 `_meta` is answered as unknown, so the client falls back to
/// `initialize`.
pub(crate) const TYPED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// Handles one request to `/mcp`.
pub(crate) async fn handle(endpoint: Arc<Endpoint>, request: Request) -> Response {
    // rmcp's own handling is boxed where it is awaited: its future is large, and every
    // request's future (moved into a box of its own by the router) would carry its size even
    // when the shortcut answers.
    let service = &endpoint.service;
    if endpoint.fast_path != FastPath::On {
        return Box::pin(service.handle(request)).await.into_response();
    }
    if request.method() == Method::DELETE {
        // rmcp answers a closed session with 202; clients expect 200 (or 204) there.
        let mut response = Box::pin(service.handle(request)).await.into_response();
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    if request.method() != Method::POST {
        return Box::pin(service.handle(request)).await.into_response();
    }
    let body_limit = endpoint.body_limit;
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, body_limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return error_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                Value::Null,
                INVALID_REQUEST,
                &format!("The message is larger than the {body_limit}-byte limit."),
            )
            .into_response();
        }
    };
    let in_session = parts.headers.contains_key("mcp-session-id");
    let parts = match plain_tools_call(&bytes) {
        Some(call) if in_session => match shortcut::answer(&endpoint, parts, call).await {
            Ok(response) => return response,
            Err(parts) => parts,
        },
        Some(_) => parts,
        None => {
            if let Err(rejection) = typed_check(&bytes, in_session) {
                return rejection.into_response();
            }
            parts
        }
    };
    let request = Request::from_parts(parts, Body::from(bytes));
    Box::pin(service.handle(request)).await.into_response()
}

/// What [`handle`] decides for one POSTed message: `Err` is the answer it sends instead of
/// passing the message on (the tests hold this to [`typed_check`]).
#[cfg(test)]
pub(crate) fn check(bytes: &Bytes, in_session: bool) -> Result<(), Rejection> {
    if plain_tools_call(bytes).is_some() {
        return Ok(());
    }
    typed_check(bytes, in_session)
}

/// [`check`] by the typed parse rmcp does.
pub(crate) fn typed_check(bytes: &Bytes, in_session: bool) -> Result<(), Rejection> {
    match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Ok(ClientJsonRpcMessage::Request(request)) => {
            let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
            let per_request_version = request.request.get_meta().protocol_version().is_some();
            // A discover probe without the 2026-07-28 `_meta` comes from a client that can
            // fall back to the handshake: tell it the method is not there, session or not.
            if matches!(request.request, ClientRequest::DiscoverRequest(_)) && !per_request_version
            {
                return Err(error_response(
                    StatusCode::OK,
                    id,
                    METHOD_NOT_FOUND,
                    "Method not found: server/discover. Start with `initialize`.",
                ));
            }
            let ClientRequest::CustomRequest(custom) = &request.request else {
                return Ok(());
            };
            // rmcp reads a known method whose params do not fit as a custom request.
            if TYPED_METHODS.contains(&custom.method.as_str()) {
                return Err(error_response(
                    StatusCode::BAD_REQUEST,
                    id,
                    INVALID_PARAMS,
                    &format!("Invalid params for {}.", custom.method),
                ));
            }
            if !in_session && !per_request_version {
                return Err(error_response(
                    StatusCode::OK,
                    id,
                    METHOD_NOT_FOUND,
                    &format!(
                        "Method not found: {}. Start with `initialize`.",
                        custom.method
                    ),
                ));
            }
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(error) => Err(diagnose(bytes, &error)),
    }
}

/// Why a message rmcp cannot read is wrong, as a JSON-RPC error.
fn diagnose(bytes: &Bytes, typed_error: &serde_json::Error) -> Rejection {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(error) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the body is not JSON ({error})."),
            );
        }
    };
    let Value::Object(object) = value else {
        let message = if value.is_array() {
            "Invalid Request: batches are not supported; send one JSON-RPC message per POST."
        } else {
            "Invalid Request: a JSON-RPC message is a JSON object."
        };
        return error_response(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            message,
        );
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return error_response(
            StatusCode::BAD_REQUEST,
            id,
            INVALID_REQUEST,
            "Invalid Request: `jsonrpc` must be \"2.0\".",
        );
    }
    match object.get("method") {
        Some(Value::String(method)) if !id.is_null() => error_response(
            StatusCode::BAD_REQUEST,
            id,
            INVALID_PARAMS,
            &format!("Invalid params for {method}: {typed_error}."),
        ),
        _ => error_response(
            StatusCode::BAD_REQUEST,
            id,
            INVALID_REQUEST,
            &format!("Invalid Request: {typed_error}."),
        ),
    }
}

/// A message refused at the door: the JSON-RPC error to answer with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rejection {
    /// HTTP status.
    pub status: StatusCode,
    /// The request's id, or `null`.
    pub id: Value,
    /// JSON-RPC error code.
    pub code: i32,
    /// What is wrong.
    pub message: String,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message },
        });
        let mut response = (self.status, body.to_string()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

fn error_response(status: StatusCode, id: Value, code: i32, message: &str) -> Rejection {
    Rejection {
        status,
        id,
        code,
        message: message.to_owned(),
    }
}
