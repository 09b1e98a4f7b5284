//! Router tests through `oneshot`, plus real-socket tests for WebSockets and shutdown.

use std::net::SocketAddr;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tower::ServiceExt;

use super::*;
use crate::config::Config;
use crate::testing::TestRuntime;

const BOUND: &str = "127.0.0.1:8383";

mod attachments;
mod chat_manage;
mod chat_stream;
mod chat_tools;
mod chats;
mod clients;
mod history;
mod live_settings;
mod local_models;
mod memory;
mod options;
mod proxy;
mod recovery;
mod schedules;
mod settings;
mod setup;
mod speech;
mod speech_models;
mod turn_limits;

struct Fixture {
    runtime: TestRuntime,
    token: String,
}

impl Fixture {
    async fn new() -> Self {
        Self::with(|_| {}).await
    }

    async fn with(adjust: impl FnOnce(&mut Config) + 'static) -> Self {
        let runtime = TestRuntime::builder()
            .flat_home()
            .with_config(adjust)
            .start()
            .await;
        Self::on(runtime)
    }

    fn on(runtime: TestRuntime) -> Self {
        let token = runtime.token().to_owned();
        Self { runtime, token }
    }

    fn app(&self) -> Router {
        router(self.runtime.handle(), BOUND.parse().unwrap())
    }

    fn get(&self, path: &str) -> axum::http::request::Builder {
        Request::get(path).header(header::HOST, BOUND)
    }

    /// The stored runtime events whose type starts with `prefix`, as sent.
    async fn runtime_events(&self, prefix: &str) -> Vec<Value> {
        self.runtime
            .handle()
            .events()
            .replay(0, 1000)
            .await
            .unwrap()
            .into_iter()
            .map(|envelope| serde_json::to_value(envelope.event).unwrap())
            .filter(|event| {
                event["type"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with(prefix)
            })
            .collect()
    }

    fn authed(&self, path: &str) -> axum::http::request::Builder {
        self.get(path)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
    }

    async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        let response = self.app().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 22)
            .await
            .unwrap();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, json)
    }
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<none>")
}

#[tokio::test]
async fn v1_requires_the_exact_token() {
    let f = Fixture::new().await;
    let (status, body) = f
        .send(f.get("/v1/bootstrap").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(code(&body), "unauthorized");

    let wrong = f
        .get("/v1/bootstrap")
        .header(header::AUTHORIZATION, format!("Bearer {}x", f.token))
        .body(Body::empty())
        .unwrap();
    let (status, body) = f.send(wrong).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid")
    );

    let basic = f
        .get("/v1/bootstrap")
        .header(header::AUTHORIZATION, format!("Basic {}", f.token))
        .body(Body::empty())
        .unwrap();
    assert_eq!(f.send(basic).await.0, StatusCode::UNAUTHORIZED);

    let (status, body) = f
        .send(f.authed("/v1/bootstrap").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user"]["id"], "local");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(body["features"]["runtimeEvents"], true);
    assert_eq!(body["features"]["chats"], true);
    assert!(body["capabilities"]["tools"].as_array().unwrap().len() > 10);
    assert!(body["settings"]["contextSize"].is_u64());
}

#[tokio::test]
async fn unknown_v1_and_mcp_paths_need_the_token_before_anything_else() {
    let f = Fixture::new().await;
    for path in ["/mcp", "/v1/nothing-here", "/mcp/anything"] {
        let (status, _) = f.send(f.get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
    }
    for path in ["/v1/nothing-here", "/mcp/anything"] {
        let (status, body) = f.send(f.authed(path).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(code(&body), "not_found");
    }
    // `/mcp` itself is the MCP server: its event stream needs `Accept: text/event-stream`.
    let (status, _) = f.send(f.authed("/mcp").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
}

#[tokio::test]
async fn public_routes_need_no_token() {
    let f = Fixture::new().await;
    let (status, health) = f.send(f.get("/health").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["status"], "ok");
    assert_eq!(health["database"]["ok"], true);
    assert!(health["uptime_s"].is_u64());

    let (status, index) = f.send(f.get("/").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let endpoints: Vec<&str> = index["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    for expected in [
        "GET /health",
        "GET /v1/bootstrap",
        "GET /v1/events",
        "GET /docs/openapi.json",
    ] {
        assert!(
            endpoints.contains(&expected),
            "{expected} missing from {endpoints:?}"
        );
    }

    let response = f
        .app()
        .oneshot(f.get("/docs").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let html = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let html = String::from_utf8(html.to_vec()).unwrap();
    assert!(html.contains("/docs/openapi.json"));
    assert!(
        !html.contains("https://"),
        "the docs page must work offline"
    );
}

#[tokio::test]
async fn openapi_documents_every_route_the_router_serves() {
    let f = Fixture::new().await;
    let (status, doc) = f
        .send(f.get("/docs/openapi.json").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let (_, index) = f.send(f.get("/").body(Body::empty()).unwrap()).await;
    for endpoint in index["endpoints"].as_array().unwrap() {
        let (method, path) = endpoint.as_str().unwrap().split_once(' ').unwrap();
        let operation = &doc["paths"][path][method.to_ascii_lowercase()];
        assert!(
            operation.is_object(),
            "{endpoint} is not in the OpenAPI document"
        );
        // Every documented route is actually routed: no 404 from the fallback.
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
            .body(Body::empty())
            .unwrap();
        let (status, body) = f.send(request).await;
        let fallback = status == StatusCode::NOT_FOUND
            && body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("No route"));
        assert!(!fallback, "{endpoint} is documented but not routed");
    }
    let bootstrap = &doc["paths"]["/v1/bootstrap"]["get"];
    assert_eq!(
        bootstrap["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Bootstrap"
    );
    assert!(doc["components"]["schemas"]["Health"]["properties"]["uptime_s"].is_object());
}

/// The checked-in OpenAPI document (`docs/openapi.json`) is the one the daemon serves: the web
/// UI's typedefs are generated from it (`tests/ui`), so a renamed field fails here first. On a
/// difference the test rewrites the file (review it with `git diff`) and fails.
#[tokio::test]
async fn checked_in_openapi_document_is_current() {
    let f = Fixture::new().await;
    let (status, doc) = f
        .send(f.get("/docs/openapi.json").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    let rendered = serde_json::to_string_pretty(&doc).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    if stored != rendered {
        std::fs::write(&path, &rendered).unwrap();
        panic!(
            "{} was out of date and has been rewritten: review and commit it",
            path.display()
        );
    }
}

#[tokio::test]
async fn foreign_host_is_refused_everywhere() {
    let f = Fixture::new().await;
    for host in [
        "evil.example:8383",
        "127.0.0.1:9999",
        "localhost",
        "attacker.localhost:8383",
    ] {
        for path in ["/health", "/", "/v1/bootstrap", "/mcp", "/nope"] {
            let request = Request::get(path)
                .header(header::HOST, host)
                .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
                .body(Body::empty())
                .unwrap();
            let (status, body) = f.send(request).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{host} {path}");
            assert_eq!(code(&body), "forbidden_host");
        }
    }
    let no_host = Request::get("/health").body(Body::empty()).unwrap();
    assert_eq!(f.send(no_host).await.0, StatusCode::FORBIDDEN);
    let localhost = Request::get("/health")
        .header(header::HOST, "localhost:8383")
        .body(Body::empty())
        .unwrap();
    assert_eq!(f.send(localhost).await.0, StatusCode::OK);
}

#[tokio::test]
async fn foreign_origin_is_refused_allowed_origins_pass() {
    let f = Fixture::with(|config| {
        config.server.allowed_origins = vec!["https://app.example".into()];
    })
    .await;
    for origin in ["https://evil.example", "null", "http://127.0.0.1:8384"] {
        let request = f
            .authed("/v1/bootstrap")
            .header(header::ORIGIN, origin)
            .body(Body::empty())
            .unwrap();
        let (status, body) = f.send(request).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}");
        assert_eq!(code(&body), "forbidden_origin");
    }
    for origin in [
        "https://app.example",
        "http://127.0.0.1:8383",
        "http://localhost:8383",
    ] {
        let request = f
            .authed("/v1/bootstrap")
            .header(header::ORIGIN, origin)
            .body(Body::empty())
            .unwrap();
        assert_eq!(f.send(request).await.0, StatusCode::OK, "{origin}");
    }
}

fn upgrade(builder: axum::http::request::Builder) -> Request<Body> {
    builder
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .header(header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==")
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn websocket_upgrades_cross_the_same_perimeter() {
    let f = Fixture::new().await;
    let foreign_host = Request::get("/v1/events")
        .header(header::HOST, "evil.example:8383")
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token));
    let (status, body) = f.send(upgrade(foreign_host)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(code(&body), "forbidden_host");

    let foreign_origin = f
        .authed("/v1/events")
        .header(header::ORIGIN, "https://evil.example");
    let (status, body) = f.send(upgrade(foreign_origin)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(code(&body), "forbidden_origin");

    let (status, _) = f.send(upgrade(f.get("/v1/events"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, body) = f
        .send(f.authed("/v1/events").body(Body::empty()).unwrap())
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "plain GET is not an upgrade"
    );
    assert_eq!(code(&body), "invalid_request");

    let bad_query = f.authed("/v1/events?after_seq=-1");
    assert_eq!(f.send(upgrade(bad_query)).await.0, StatusCode::BAD_REQUEST);
    let garbage_query = f.authed("/v1/events?after_seq=abc");
    let (status, body) = f.send(upgrade(garbage_query)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), "invalid_request");
}

#[tokio::test]
async fn oversized_body_gets_413_before_it_is_read() {
    let f = Fixture::with(|config| config.server.body_limit = crate::config::ByteSize(4096)).await;
    let request = Request::post("/v1/bootstrap")
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
        .header(header::CONTENT_LENGTH, "5000")
        .body(Body::from(vec![b'x'; 5000]))
        .unwrap();
    let (status, body) = f.send(request).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(code(&body), "payload_too_large");
    // The limit applies before authentication: nobody gets to stream a huge body.
    let anonymous = Request::post("/v1/anything")
        .header(header::HOST, BOUND)
        .header(header::CONTENT_LENGTH, "999999999")
        .body(Body::empty())
        .unwrap();
    assert_eq!(f.send(anonymous).await.0, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn oauth_discovery_gets_json_404_without_a_token() {
    let f = Fixture::new().await;
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/mcp/.well-known/oauth-protected-resource",
        "/mcp/.well-known/oauth-authorization-server",
        "/.well-known/anything-else",
    ] {
        let (status, body) = f.send(f.get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(code(&body), "not_found", "{path}");
    }
}

#[tokio::test]
async fn the_mcp_oauth_callback_needs_no_token_but_a_login_this_daemon_started() {
    let f = Fixture::new().await;
    let path = "/v1/mcp/oauth/callback?code=stolen&state=not-a-login";
    let (status, body) = f.send(f.get(path).body(Body::empty()).unwrap()).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    let refused = "/v1/mcp/oauth/callback?error=access_denied&state=not-a-login";
    let (status, body) = f.send(f.get(refused).body(Body::empty()).unwrap()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    // The Host check applies here as everywhere.
    let foreign = Request::get(path)
        .header(header::HOST, "evil.example:8383")
        .body(Body::empty())
        .unwrap();
    let (status, body) = f.send(foreign).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "forbidden_host")
    );
}

#[tokio::test]
async fn unknown_routes_and_methods_get_the_envelope() {
    let f = Fixture::new().await;
    let (status, body) = f.send(f.get("/nope").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code(&body), "not_found");
    let delete = Request::delete("/health")
        .header(header::HOST, BOUND)
        .body(Body::empty())
        .unwrap();
    let (status, body) = f.send(delete).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(code(&body), "method_not_allowed");
}

#[tokio::test]
async fn health_degrades_when_the_database_is_gone() {
    let f = Fixture::new().await;
    f.runtime.handle().store().close().await.unwrap();
    let (status, health) = f.send(f.get("/health").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(health["status"], "degraded");
    assert_eq!(health["database"]["ok"], false);
}

/// A gateway serving on a real socket, stopped by dropping/sending on `stop`.
struct Served {
    address: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(f: &Fixture) -> Served {
    let mut server = f.runtime.handle().config().server.clone();
    server.port = 0;
    let gateway = Gateway::bind(&server).await.unwrap();
    let address = gateway.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = f.runtime.handle();
    let server = crate::tasks::spawn_in_test(gateway.serve(handle, async move {
        let _ = stopped.await;
        "test".to_owned()
    }));
    Served {
        address,
        stop,
        server,
    }
}

async fn next_json<S>(socket: &mut S) -> Value
where
    S: futures::Stream<Item = Result<tungstenite::Message, tungstenite::Error>> + Unpin,
{
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(5), socket.next())
            .await
            .expect("timed out waiting for a frame")
        {
            Some(Ok(tungstenite::Message::Text(text))) => {
                return serde_json::from_str(&text).unwrap();
            }
            Some(Ok(tungstenite::Message::Close(frame))) => {
                return serde_json::json!({"closed": frame.map(|f| u16::from(f.code))});
            }
            Some(Ok(_)) => continue,
            other => panic!("socket ended: {other:?}"),
        }
    }
}

#[tokio::test]
async fn events_websocket_replays_then_streams_live_and_closes_on_shutdown() {
    let f = Fixture::new().await;
    let served = serve(&f).await;
    let url = format!("ws://{}/v1/events?after_seq=0", served.address);

    let mut anonymous = url.clone().into_client_request().unwrap();
    anonymous.headers_mut().remove(header::AUTHORIZATION);
    match tokio_tungstenite::connect_async(anonymous).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 401),
        other => panic!("expected 401, got {other:?}"),
    }

    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert(
        header::AUTHORIZATION,
        format!("Bearer {}", f.token).parse().unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let first = next_json(&mut socket).await;
    assert_eq!(first["seq"], 1);
    assert_eq!(first["event"]["type"], "daemon.started");
    let live = next_json(&mut socket).await;
    assert_eq!(live, serde_json::json!({"type": "live", "last_seq": 1}));

    f.runtime
        .handle()
        .events()
        .publish(souz_protocol::RuntimeEvent::DaemonStarted {
            version: "again".into(),
            pid: 42,
        })
        .await
        .unwrap();
    let second = next_json(&mut socket).await;
    assert_eq!(second["seq"], 2);
    assert_eq!(second["event"]["pid"], 42);

    socket
        .send(tungstenite::Message::Ping(vec![1].into()))
        .await
        .unwrap();

    served.stop.send(()).unwrap();
    let stopping = next_json(&mut socket).await;
    assert_eq!(stopping["event"]["type"], "daemon.stopping");
    assert_eq!(stopping["event"]["reason"], "test");
    assert_eq!(next_json(&mut socket).await["closed"], 1001);
    tokio::time::timeout(std::time::Duration::from_secs(5), served.server)
        .await
        .expect("server did not stop")
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(served.address)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn graceful_shutdown_lets_an_in_flight_request_finish() {
    let f = Fixture::new().await;
    let served = serve(&f).await;
    let mut stream = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // Send the head and half the body of a request, then stop the server, then finish the
    // request: the handler only runs once the whole body is read, so the answer proves the
    // request was served after the stop.
    let body = r#"{"title":"written while stopping"}"#;
    let (first, rest) = body.split_at(12);
    let head = format!(
        "POST /v1/chats HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        served.address,
        body.len(),
        f.token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(first.as_bytes()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    served.stop.send(()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    // No new connection is accepted meanwhile.
    assert!(
        tokio::net::TcpStream::connect(served.address)
            .await
            .is_err()
    );
    stream.write_all(rest.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    assert!(
        response.contains(r#""title":"written while stopping""#),
        "{response}"
    );
    served.server.await.unwrap().unwrap();
}

#[tokio::test]
async fn port_in_use_is_a_clear_error() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = ServerConfig {
        port: taken.local_addr().unwrap().port(),
        ..ServerConfig::default()
    };
    let error = Gateway::bind(&server).await.err().unwrap();
    assert!(matches!(error, BindError::InUse { .. }));
    let message = error.to_string();
    assert!(message.contains(&format!(
        "port {} on 127.0.0.1 is already in use",
        server.port
    )));
    assert!(message.contains("SOUZ_PORT"));
}
