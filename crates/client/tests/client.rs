//! `souz-client` against small local servers: a fake daemon that proves its identity, serves
//! a few routes and an event stream that drops its clients, and a squatter that cannot prove.

#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a failed step is a failed test

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use souz_client::{ClientError, DaemonClient, EventStream, Home, Reconnect, StreamItem};
use souz_protocol::config::PauseState;
use souz_protocol::identity as proof;
use souz_protocol::{
    DaemonInfo, ErrorBody, ErrorCode, EventEnvelope, IdentityProof, RuntimeEvent, StreamControl,
};

const TOKEN: &str = "a-token-of-the-daemon-0123456789abcdef";

/// What a server saw: the `Authorization` headers sent to it and its WebSocket connections.
#[derive(Default)]
struct Seen {
    authorizations: Vec<String>,
    connections: u32,
}

type Shared = Arc<Mutex<Seen>>;

fn record(seen: &Shared, headers: &HeaderMap) {
    if let Some(value) = headers.get("authorization") {
        let value = value.to_str().unwrap_or_default().to_owned();
        seen.lock().unwrap().authorizations.push(value);
    }
}

async fn identity(
    State(seen): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    record(&seen, &headers);
    let host = headers
        .get("host")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let digest = proof::digest(TOKEN);
    if query.get("key") != Some(&proof::key_id(&digest)) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let nonce = query.get("nonce").cloned().unwrap_or_default();
    axum::Json(IdentityProof {
        proof: proof::prove(&digest, &nonce, host),
    })
    .into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

async fn pause(State(seen): State<Shared>, headers: HeaderMap) -> Response {
    record(&seen, &headers);
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    axum::Json(PauseState {
        paused: true,
        since: None,
    })
    .into_response()
}

async fn missing(State(seen): State<Shared>, headers: HeaderMap) -> Response {
    record(&seen, &headers);
    let body = ErrorBody::new(ErrorCode::OptionNotFound, "no such question");
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

/// Each connection: the replay's end, one event numbered by the connection, then closed.
async fn events(State(seen): State<Shared>, upgrade: WebSocketUpgrade) -> Response {
    let connection = {
        let mut seen = seen.lock().unwrap();
        seen.connections += 1;
        seen.connections
    };
    upgrade.on_upgrade(move |mut socket| async move {
        let live = serde_json::to_string(&StreamControl::Live { last_seq: 0 }).unwrap();
        let event = serde_json::to_string(&EventEnvelope {
            seq: i64::from(connection),
            at: chrono::Utc::now(),
            event: RuntimeEvent::DaemonResumed { via: "test".into() },
        })
        .unwrap();
        let _ = socket.send(Message::Text(live.into())).await;
        let _ = socket.send(Message::Text(event.into())).await;
        let _ = socket.send(Message::Close(None)).await;
    })
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    #[allow(
        clippy::disallowed_methods,
        reason = "the test's HTTP server, ended with the test's runtime"
    )]
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

async fn fake_daemon() -> (String, Shared) {
    let seen = Shared::default();
    let router = Router::new()
        .route("/v1/identity", get(identity))
        .route("/v1/pause", get(pause))
        .route("/v1/options/{id}", get(missing))
        .route("/v1/events", get(events))
        .with_state(Arc::clone(&seen));
    (serve(router).await, seen)
}

/// Answers everything with 200 and a made-up proof, and keeps what it was sent.
async fn squatter() -> (String, Shared) {
    let seen = Shared::default();
    let answer = |State(seen): State<Shared>, headers: HeaderMap| async move {
        record(&seen, &headers);
        axum::Json(serde_json::json!({"proof": "00", "paused": false}))
    };
    let router = Router::new().fallback(answer).with_state(Arc::clone(&seen));
    (serve(router).await, seen)
}

fn home_with(base: Option<&str>, token: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), format!("{token}\n")).unwrap();
    if let Some(base) = base {
        let info = DaemonInfo {
            pid: 1,
            url: base.to_owned(),
            version: "0".into(),
        };
        std::fs::write(
            dir.path().join("daemon.json"),
            serde_json::to_vec(&info).unwrap(),
        )
        .unwrap();
    }
    dir
}

#[tokio::test]
async fn discovery_reads_daemon_json_and_the_token_then_calls_with_the_token() {
    let (base, seen) = fake_daemon().await;
    let dir = home_with(Some(&base), TOKEN);
    let home = Home::new(dir.path());
    let client = DaemonClient::discover(&home, || unreachable!("daemon.json names the daemon"))
        .await
        .unwrap();
    assert_eq!(client.base(), base);
    assert!(client.pause_state().await.unwrap().paused);
    let sent = seen.lock().unwrap().authorizations.clone();
    assert_eq!(
        sent,
        [format!("Bearer {TOKEN}")],
        "the proof request carries no token"
    );
}

#[tokio::test]
async fn discovery_falls_back_to_the_configured_address_and_refuses_a_bad_token_file() {
    let (base, _) = fake_daemon().await;
    let dir = home_with(None, TOKEN);
    let client = DaemonClient::discover(&Home::new(dir.path()), || base.clone())
        .await
        .unwrap();
    assert_eq!(client.base(), base);

    let garbled = home_with(Some(&base), "short");
    let error = DaemonClient::discover(&Home::new(garbled.path()), String::new)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Token { .. }), "{error}");
}

#[tokio::test]
async fn a_squatter_gets_no_token() {
    let (base, seen) = squatter().await;
    let dir = home_with(Some(&base), TOKEN);
    let error = DaemonClient::discover(&Home::new(dir.path()), String::new)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::NotSouz { .. }), "{error}");
    assert!(
        error.to_string().contains("not sending the token"),
        "{error}"
    );
    assert!(seen.lock().unwrap().authorizations.is_empty());
}

#[tokio::test]
async fn nothing_listening_is_unreachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = DaemonClient::connect(&base, TOKEN).await.unwrap_err();
    assert!(matches!(error, ClientError::Unreachable { .. }), "{error}");
    assert!(error.to_string().contains("souz serve"), "{error}");
}

#[tokio::test]
async fn the_error_envelope_is_decoded_with_its_code() {
    let (base, _) = fake_daemon().await;
    let client = DaemonClient::connect(&base, TOKEN).await.unwrap();
    let error = client
        .get::<serde_json::Value>("/v1/options/nope")
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::OptionNotFound));
    assert_eq!(error.status(), Some(StatusCode::NOT_FOUND));
    assert_eq!(error.to_string(), "no such question (404 Not Found)");

    let error = client
        .get::<serde_json::Value>("/elsewhere")
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Status { .. }), "{error}");
    assert_eq!(error.code(), None);
}

#[tokio::test]
async fn a_follower_reconnects_after_the_daemon_drops_it() {
    let (base, seen) = fake_daemon().await;
    let client = DaemonClient::connect(&base, TOKEN).await.unwrap();
    let mut items = Vec::new();
    let reconnect = Reconnect {
        first: Duration::from_millis(1),
        max: Duration::from_millis(5),
    };
    client
        .follow(EventStream::Runtime, reconnect, |item| {
            let seq = match &item {
                StreamItem::Live => "live".to_owned(),
                StreamItem::Runtime(envelope) => envelope.seq.to_string(),
                StreamItem::Chat(_) => "chat".to_owned(),
                StreamItem::Disconnected(_) => "disconnected".to_owned(),
            };
            items.push(seq);
            if items.len() == 6 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await;
    assert_eq!(
        items,
        ["live", "1", "disconnected", "live", "2", "disconnected"]
    );
    assert_eq!(seen.lock().unwrap().connections, 2);
}

/// The daemon dies and a squatter takes its port (here: the same listener starts answering as
/// a squatter would): the follower's reconnects prove the listener first and never hand it the
/// token.
#[tokio::test]
async fn a_follower_never_reconnects_to_a_squatter_with_the_token() {
    let seen = Shared::default();
    let squatting = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let squatted = Shared::default();
    let router = {
        let (squatting, squatted) = (Arc::clone(&squatting), Arc::clone(&squatted));
        Router::new()
            .route("/v1/identity", get(identity))
            .route("/v1/events", get(events))
            .with_state(Arc::clone(&seen))
            .layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    let (squatting, squatted) = (Arc::clone(&squatting), Arc::clone(&squatted));
                    async move {
                        if squatting.load(std::sync::atomic::Ordering::SeqCst) {
                            record(&squatted, request.headers());
                            return axum::Json(serde_json::json!({"proof": "00"})).into_response();
                        }
                        next.run(request).await
                    }
                },
            ))
    };
    let base = serve(router).await;
    let client = DaemonClient::connect(&base, TOKEN).await.unwrap();

    let mut items = Vec::new();
    let reconnect = Reconnect {
        first: Duration::from_millis(1),
        max: Duration::from_millis(5),
    };
    client
        .follow(EventStream::Runtime, reconnect, |item| {
            if let StreamItem::Disconnected(reason) = &item {
                items.push(reason.clone());
                // The daemon is gone; from now on a squatter answers on its port.
                squatting.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            if items.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await;
    assert!(items[1].contains("not sending the token"), "{items:?}");
    assert_eq!(seen.lock().unwrap().connections, 1);
    let squatted = squatted.lock().unwrap();
    assert!(
        squatted
            .authorizations
            .iter()
            .all(|value| !value.contains(TOKEN)),
        "the squatter got the token: {:?}",
        squatted.authorizations
    );
}
