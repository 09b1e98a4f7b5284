//! The [`fast_path`](super::super::fast_path) held to rmcp: a corpus of requests — valid ones
//! of each kind the server answers, each kind of invalid one, batches, notifications, large and
//! unicode bodies — goes over real HTTP to an endpoint with the fast path (and the door in
//! front of rmcp) and to one without ([`FastPath::Off`]: rmcp's own path, Souz's handler
//! behind it), over the same runtime. The answers must agree in status, `Content-Type`,
//! whether an `Mcp-Session-Id` came back, and body bytes (session ids are the only thing
//! normalised: they are compared by presence). The differences allowed are listed in
//! [`allowed`], each with its reason, and rmcp's side of each is pinned, so an rmcp release
//! that changes its bytes fails here either way.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use reqwest::Method;
use serde_json::{Value, json};

use super::super::fast_path::FastPath;
use super::super::{Mount, endpoint_with, front};
use crate::runtime::RuntimeHandle;
use crate::testing::TestRuntime;
use crate::token::Credential;
use crate::token::clients::ClientIdentity;

/// The body limit both endpoints are mounted with.
const LIMIT: usize = 256 * 1024;

/// An endpoint served over HTTP on a loopback port; the perimeter's part (the credential on
/// each request) is done by the route.
async fn serve(handle: RuntimeHandle, fast_path: FastPath) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let mount = Mount {
        allowed_hosts: vec![address.to_string()],
        allowed_origins: vec![format!("http://{address}")],
        body_limit: LIMIT,
    };
    let endpoint = Arc::new(endpoint_with(handle, &mount, fast_path));
    let route = axum::routing::any(move |mut request: Request| {
        request
            .extensions_mut()
            .insert(Credential::Client(ClientIdentity {
                id: "id-tester".into(),
                name: "tester".into(),
                scope: souz_protocol::ClientScope::Mcp,
            }));
        front::handle(Arc::clone(&endpoint), request)
    });
    let app = axum::Router::new().route("/mcp", route);
    crate::tasks::spawn_in_test(async move { axum::serve(listener, app).await });
    address
}

/// Which session a request names.
#[derive(Debug, Clone, Copy)]
enum Session {
    None,
    Open,
    Unknown,
}

/// One request of the corpus.
struct Case {
    name: &'static str,
    method: Method,
    session: Session,
    /// Headers besides the usual `Accept` and `Content-Type`, which these replace (an empty
    /// value removes one).
    headers: Vec<(&'static str, &'static str)>,
    body: Vec<u8>,
}

fn post(name: &'static str, body: &Value) -> Case {
    raw(name, body.to_string().into_bytes())
}

fn raw(name: &'static str, body: Vec<u8>) -> Case {
    Case {
        name,
        method: Method::POST,
        session: Session::Open,
        headers: Vec::new(),
        body,
    }
}

impl Case {
    fn session(mut self, session: Session) -> Self {
        self.session = session;
        self
    }

    fn header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.push((name, value));
        self
    }

    fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }
}

/// What the comparison sees of an answer.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    status: u16,
    content_type: Option<String>,
    session_id: bool,
    body: String,
}

/// A client of one endpoint, with its session.
struct Client {
    http: reqwest::Client,
    address: SocketAddr,
    session: String,
}

impl Client {
    async fn send(&self, case: &Case) -> (Answer, Option<String>) {
        let mut request = self
            .http
            .request(case.method.clone(), format!("http://{}/mcp", self.address));
        let mut headers = vec![
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
        ];
        headers.retain(|(name, _)| !case.headers.iter().any(|(other, _)| other == name));
        headers.extend(case.headers.iter().filter(|(_, value)| !value.is_empty()));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        match case.session {
            Session::None => {}
            Session::Open => request = request.header("mcp-session-id", &self.session),
            Session::Unknown => request = request.header("mcp-session-id", "no-such-session"),
        }
        if case.method == Method::POST {
            request = request.body(case.body.clone());
        }
        let response = request.send().await.unwrap();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let (content_type, session_id) = (header("content-type"), header("mcp-session-id"));
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        let answer = Answer {
            status,
            content_type,
            session_id: session_id.is_some(),
            body,
        };
        (answer, session_id)
    }
}

async fn client(address: SocketAddr) -> (Client, Vec<(Answer, Answer)>) {
    let mut client = Client {
        http: reqwest::Client::builder().no_proxy().build().unwrap(),
        address,
        session: String::new(),
    };
    let (initialized, session) = client.send(&initialize().session(Session::None)).await;
    client.session = session.unwrap_or_else(|| panic!("no session: {initialized:?}"));
    let (notified, _) = client
        .send(&post(
            "notifications/initialized",
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ))
        .await;
    (client, vec![(initialized, notified)])
}

fn initialize() -> Case {
    post(
        "initialize",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "tester", "version": "1"}}}),
    )
}

fn call(id: Value, name: &str, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

fn request(id: u64, method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `1 + 1 + …` with `terms` terms.
fn sum(terms: usize) -> String {
    vec!["1"; terms].join(" + ")
}

/// The corpus, in the order it is sent (the session ends last).
fn corpus() -> Vec<Case> {
    [valid(), heads(), bodies()].into_iter().flatten().collect()
}

/// Valid requests of each kind, and `tools/call` bodies the fast path reads or leaves.
fn valid() -> Vec<Case> {
    vec![
        post("ping", &request(2, "ping", &json!({}))),
        post("tools/list", &request(3, "tools/list", &json!({}))),
        post("resources/list", &request(4, "resources/list", &json!({}))),
        post(
            "resources/templates/list",
            &request(5, "resources/templates/list", &json!({})),
        ),
        post("prompts/list", &request(6, "prompts/list", &json!({}))),
        post(
            "logging/setLevel",
            &request(7, "logging/setLevel", &json!({"level": "info"})),
        ),
        post(
            "tools/call",
            &call(json!(8), "Calculator", &json!({"expression": "2 + 3 * 4"})),
        ),
        post(
            "tools/call, string id",
            &call(
                json!("call-9"),
                "Calculator",
                &json!({"expression": "7 / 2"}),
            ),
        ),
        post(
            "tools/call, unicode",
            &call(
                json!("идентификатор-✓"),
                "Calculator",
                &json!({"expression": "２ + π ✓ 日本"}),
            ),
        ),
        post(
            "tools/call, unknown tool",
            &call(json!(10), "Инструмент", &json!({})),
        ),
        post(
            "tools/call, bad arguments",
            &call(json!(11), "Calculator", &json!({"expr": 5})),
        ),
        post(
            "tools/call, large",
            &call(json!(12), "Calculator", &json!({"expression": sum(60_000)})),
        ),
        post(
            "tools/call, progress token",
            &json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call",
            "params": {"name": "Calculator", "arguments": {"expression": "1"}, "_meta": {"progressToken": "p-1"}}}),
        ),
        post(
            "tools/call, extra field",
            &json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call",
            "params": {"name": "Calculator", "arguments": {"expression": "1"}}, "extra": true}),
        ),
        post(
            "tools/call, params not an object",
            &json!({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": 5}),
        ),
        post(
            "tools/call, name not a string",
            &json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": 5}}),
        ),
    ]
}

/// A `tools/call` with each kind of head: wrong media types, sessions, protocol versions, Origin.
fn heads() -> Vec<Case> {
    vec![
        post(
            "tools/call, Accept without events",
            &call(json!(17), "Calculator", &json!({"expression": "1"})),
        )
        .header("accept", "application/json"),
        post(
            "tools/call, Accept with weights",
            &call(json!(18), "Calculator", &json!({"expression": "1"})),
        )
        .header("accept", "application/json;q=1, text/event-stream"),
        post(
            "tools/call, no Accept",
            &call(json!(19), "Calculator", &json!({"expression": "1"})),
        )
        .header("accept", ""),
        post(
            "tools/call, Content-Type text/plain",
            &call(json!(20), "Calculator", &json!({"expression": "1"})),
        )
        .header("content-type", "text/plain"),
        post(
            "tools/call, Content-Type with charset",
            &call(json!(21), "Calculator", &json!({"expression": "1"})),
        )
        .header("content-type", "application/json; charset=utf-8"),
        post(
            "tools/call, no session",
            &call(json!(22), "Calculator", &json!({"expression": "1"})),
        )
        .session(Session::None),
        post(
            "tools/call, unknown session",
            &call(json!(23), "Calculator", &json!({"expression": "1"})),
        )
        .session(Session::Unknown),
        post(
            "tools/call, protocol 2025-06-18",
            &call(json!(24), "Calculator", &json!({"expression": "1"})),
        )
        .header("mcp-protocol-version", "2025-06-18"),
        post(
            "tools/call, protocol 1999-01-01",
            &call(json!(25), "Calculator", &json!({"expression": "1"})),
        )
        .header("mcp-protocol-version", "1999-01-01"),
        post(
            "tools/call, protocol 2026-07-28 without _meta",
            &call(json!(26), "Calculator", &json!({"expression": "1"})),
        )
        .header("mcp-protocol-version", "2026-07-28"),
        post(
            "tools/call, foreign Origin",
            &call(json!(27), "Calculator", &json!({"expression": "1"})),
        )
        .header("origin", "http://evil.example"),
    ]
}

/// Bodies that are not one valid message, notifications, other methods, and the session's end.
fn bodies() -> Vec<Case> {
    vec![
        raw(
            "tools/call, oversized",
            call(
                json!(28),
                "Calculator",
                &json!({"expression": sum(140_000)}),
            )
            .to_string()
            .into_bytes(),
        ),
        raw(
            "bad JSON",
            b"{\"jsonrpc\": \"2.0\", \"id\": 29, \"method\": ".to_vec(),
        ),
        raw("empty body", Vec::new()),
        post("JSON scalar", &json!(42)),
        post(
            "wrong jsonrpc version",
            &json!({"jsonrpc": "1.0", "id": 30, "method": "ping"}),
        ),
        post(
            "missing method",
            &json!({"jsonrpc": "2.0", "id": 31, "params": {}}),
        ),
        post(
            "unknown method in a session",
            &request(32, "tools/frobnicate", &json!({})),
        ),
        post(
            "unknown method outside a session",
            &request(33, "tools/frobnicate", &json!({})),
        )
        .session(Session::None),
        post(
            "bad params",
            &request(34, "resources/read", &json!({"uri": 7})),
        ),
        post(
            "server/discover without _meta",
            &request(35, "server/discover", &json!({})),
        ),
        post(
            "batch",
            &json!([
                request(36, "ping", &json!({})),
                request(37, "ping", &json!({}))
            ]),
        ),
        post(
            "batch of tools/call",
            &json!([call(json!(38), "Calculator", &json!({"expression": "1"}))]),
        ),
        post("empty batch", &json!([])),
        post(
            "notification: cancelled",
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 999, "reason": "test"}}),
        ),
        post(
            "notification: unknown",
            &json!({"jsonrpc": "2.0", "method": "notifications/frobnicated"}),
        ),
        post(
            "notification outside a session",
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .session(Session::None),
        post("GET, unknown session", &json!({}))
            .method(Method::GET)
            .session(Session::Unknown),
        post("PUT", &json!({})).method(Method::PUT),
        post("DELETE", &json!({})).method(Method::DELETE),
        post(
            "tools/call after DELETE",
            &call(json!(39), "Calculator", &json!({"expression": "1"})),
        ),
    ]
}

mod allowed;

#[tokio::test]
async fn the_fast_path_answers_every_request_as_rmcp_does() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let fast = serve(runtime.handle(), FastPath::On).await;
    let reference = serve(runtime.handle(), FastPath::Off).await;
    let (fast, fast_opening) = client(fast).await;
    let (reference, reference_opening) = client(reference).await;
    let mut differences = Vec::new();
    let opening = fast_opening.into_iter().zip(reference_opening);
    for ((fast_init, fast_note), (rmcp_init, rmcp_note)) in opening {
        differences.extend(allowed::compare("initialize", &fast_init, &rmcp_init));
        differences.extend(allowed::compare(
            "notifications/initialized",
            &fast_note,
            &rmcp_note,
        ));
    }
    for case in corpus() {
        let (fast_answer, _) = fast.send(&case).await;
        let (rmcp_answer, _) = reference.send(&case).await;
        differences.extend(allowed::compare(case.name, &fast_answer, &rmcp_answer));
    }
    assert!(
        differences.is_empty(),
        "the fast path and rmcp answer differently:\n{}",
        differences.join("\n")
    );
}
