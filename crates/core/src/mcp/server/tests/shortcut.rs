//! The door's [`shortcut`](super::super::fast_path::shortcut): which requests it answers itself (a plain
//! `tools/call` in a session rmcp has, with a head rmcp passes unchanged) and which it hands
//! back for rmcp.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::request::Parts;
use serde_json::{Value, json};

use super::super::fast_path::{PlainCall, plain_tools_call, shortcut};
use super::super::front;
use super::super::{Endpoint, Mount, endpoint};
use crate::testing::TestRuntime;
use crate::token::Credential;
use crate::token::clients::ClientIdentity;

const HOST: &str = "127.0.0.1:8383";

fn request(body: &Value, session: Option<&str>, extra: &[(&str, &str)]) -> Request {
    let mut builder = Request::post("/mcp")
        .header("host", HOST)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    let mut request = builder
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|error| panic!("a request: {error}"));
    request
        .extensions_mut()
        .insert(Credential::Client(ClientIdentity {
            id: "id-tester".into(),
            name: "tester".into(),
            scope: souz_protocol::ClientScope::Mcp,
        }));
    request
}

async fn text(response: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Opens a session through the door, as a client would; returns its id.
async fn open_session(endpoint: &Arc<Endpoint>) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "tester", "version": "1"}}});
    let response = front::handle(Arc::clone(endpoint), request(&initialize, None, &[])).await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_else(|| panic!("no session: {response:?}"))
        .to_owned();
    text(response).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = front::handle(
        Arc::clone(endpoint),
        request(&initialized, Some(&session), &[]),
    )
    .await;
    assert!(response.status().is_success(), "{response:?}");
    session
}

fn calculator(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "Calculator", "arguments": {"expression": "2 + 3 * 4"}}})
}

/// The request's parts and the call the door reads from it.
async fn read(request: Request) -> (Parts, PlainCall) {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let call = plain_tools_call(&bytes).unwrap_or_else(|| panic!("not a plain call"));
    (parts, call)
}

#[tokio::test]
async fn plain_calls_in_open_sessions_are_answered_and_the_rest_handed_back() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let mount = Mount {
        allowed_hosts: vec![HOST.to_owned()],
        allowed_origins: Vec::new(),
        body_limit: 1 << 20,
    };
    let endpoint = Arc::new(endpoint(runtime.handle(), &mount));
    let session = open_session(&endpoint).await;

    let (parts, call) = read(request(&calculator(2), Some(&session), &[])).await;
    let response = match shortcut::answer(&endpoint, parts, call).await {
        Ok(response) => response,
        Err(parts) => panic!("handed back: {parts:?}"),
    };
    let body = text(response).await;
    let data = body
        .strip_prefix("data: ")
        .and_then(|rest| rest.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("one event: {body:?}"));
    let message: Value = serde_json::from_str(data).unwrap_or_default();
    assert_eq!(message["id"], 2);
    assert_eq!(message["result"]["content"][0]["text"], "14");

    // Handed back, headers and all, for rmcp to answer.
    let with_meta = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "Calculator", "arguments": {"expression": "1"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    for (body, session, extra) in [
        (calculator(3), "no-such-session", vec![]),
        (
            calculator(3),
            session.as_str(),
            vec![("origin", "http://127.0.0.1:8383")],
        ),
        (
            calculator(3),
            session.as_str(),
            vec![("mcp-protocol-version", "2026-07-28")],
        ),
        (with_meta, session.as_str(), vec![]),
    ] {
        let (parts, call) = read(request(&body, Some(session), &extra)).await;
        match shortcut::answer(&endpoint, parts, call).await {
            Ok(response) => panic!("answered {body} in {session} with {extra:?}: {response:?}"),
            Err(parts) => {
                assert_eq!(
                    parts.headers.get("mcp-session-id").map(|v| v.as_bytes()),
                    Some(session.as_bytes())
                );
                assert!(
                    parts.extensions.get::<Credential>().is_some(),
                    "the credential stays"
                );
            }
        }
    }

    // A session that ended is rmcp's to refuse.
    let end = Request::delete("/mcp")
        .header("host", HOST)
        .header("mcp-session-id", &session)
        .body(Body::empty())
        .unwrap_or_else(|error| panic!("a request: {error}"));
    let ended = front::handle(Arc::clone(&endpoint), end).await;
    assert!(ended.status().is_success(), "{ended:?}");
    let (parts, call) = read(request(&calculator(4), Some(&session), &[])).await;
    assert!(shortcut::answer(&endpoint, parts, call).await.is_err());
}
