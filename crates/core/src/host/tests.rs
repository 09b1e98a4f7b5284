//! The daemon host on real sockets: one process's lifecycle from `config.toml` to a closed
//! socket, with the configuration read from a test environment (a temporary home, port 0).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use super::*;
use crate::gateway::BindError;
use crate::testing::TestHome;
use crate::testing::environment;

/// How long the host gets to reach a state or to stop (generous: a loaded test machine).
const BOUND: Duration = Duration::from_secs(30);

/// The configuration source of `home` (Souz home and user home), `port`, nothing else.
fn source(home: &TestHome, port: &str) -> ConfigSource {
    let path = home.path().to_string_lossy().into_owned();
    ConfigSource::Lookup(environment(&[
        ("SOUZ_HOME", &path),
        ("HOME", &path),
        ("SOUZ_PORT", port),
    ]))
}

/// Waits (bounded) until the host is in `wanted`.
async fn reach(states: &mut watch::Receiver<HostState>, wanted: HostState) {
    tokio::time::timeout(BOUND, states.wait_for(|state| *state == wanted))
        .await
        .unwrap_or_else(|_| panic!("the host never reached {wanted:?}"))
        .expect("the host's state");
}

/// `GET /health` of the daemon at `url`: its status code and body.
async fn health(url: &str) -> (u16, Value) {
    let answer = reqwest::get(format!("{url}/health"))
        .await
        .expect("/health");
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON health"))
}

/// Serves `running` in a task until the returned sender fires.
fn serve(
    running: RunningDaemon,
) -> (
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), HostError>>,
) {
    let (stop, stopped) = oneshot::channel::<()>();
    let served = crate::tasks::spawn_in_test(running.serve_until(async move {
        let _ = stopped.await;
        "test".to_owned()
    }));
    (stop, served)
}

#[tokio::test]
async fn serves_restarts_in_place_on_the_same_port_and_stops_when_told() {
    let home = TestHome::new();
    let running = DaemonHost::builder(source(&home, "0"))
        .start()
        .await
        .expect("the host starts");
    let url = running.url().to_owned();
    let address = running.address();
    let token = running.token().expect("the operator token");
    let mut states = running.states();
    assert!(!running.is_recovering());
    let daemon_file = home.path().join("daemon.json");
    let announced = crate::runtime::discovery::read(&daemon_file).expect("daemon.json");
    assert_eq!(announced.url, url);
    let (stop, served) = serve(running);

    let (status, body) = health(&url).await;
    assert_eq!(status, 200, "{body}");
    let restart = reqwest::Client::new()
        .post(format!("{url}/v1/restart"))
        .bearer_auth(token.expose())
        .json(&json!({}))
        .send()
        .await
        .expect("POST /v1/restart");
    assert_eq!(restart.status(), 200);
    reach(&mut states, HostState::Restarting).await;
    reach(&mut states, HostState::Serving).await;
    // The same socket serves the next runtime: same address, and it answers.
    let (status, body) = health(&url).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        crate::runtime::discovery::read(&daemon_file).map(|info| info.url),
        Some(url.clone())
    );

    stop.send(()).expect("the host is serving");
    let ended = tokio::time::timeout(BOUND, served)
        .await
        .expect("the host stops within the bound")
        .expect("the serving task");
    assert!(ended.is_ok(), "{ended:?}");
    assert_eq!(*states.borrow(), HostState::Stopped);
    assert!(!daemon_file.exists(), "daemon.json is removed");
    assert!(
        tokio::net::TcpStream::connect(address).await.is_err(),
        "the socket is closed"
    );
}

#[tokio::test]
async fn an_invalid_config_serves_recovery_until_a_valid_save_then_the_runtime() {
    let home = TestHome::new();
    let bad = "[server]\nport = \"x\"\n";
    std::fs::write(home.path().join("config.toml"), bad).expect("config.toml");
    let host = DaemonHost::builder(source(&home, "0"))
        .load()
        .expect("recovery mode, not an error");
    assert_eq!(host.startup().problems().map(<[_]>::len), Some(1));
    let running = host.start().await.expect("recovery mode starts");
    assert!(running.is_recovering());
    assert!(
        !home.path().join("souz.db").exists(),
        "no database in recovery mode"
    );
    let (url, token) = (running.url().to_owned(), running.token().expect("token"));
    let mut states = running.states();
    assert_eq!(*states.borrow(), HostState::Recovering);
    let (stop, served) = serve(running);

    let (_, body) = health(&url).await;
    assert_eq!(body["status"], "recovery", "{body}");
    let http = reqwest::Client::new();
    let document: Value = http
        .get(format!("{url}/v1/config"))
        .bearer_auth(token.expose())
        .send()
        .await
        .expect("GET /v1/config")
        .json()
        .await
        .expect("the document");
    let saved = http
        .put(format!("{url}/v1/config"))
        .bearer_auth(token.expose())
        .json(&json!({"text": "[log]\nlevel = \"debug\"\n", "revision": document["revision"]}))
        .send()
        .await
        .expect("PUT /v1/config");
    assert_eq!(saved.status(), 200);
    reach(&mut states, HostState::Serving).await;
    let (status, body) = health(&url).await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["status"], "recovery", "{body}");

    stop.send(()).expect("the host is serving");
    let ended = tokio::time::timeout(BOUND, served)
        .await
        .expect("the host stops within the bound")
        .expect("the serving task");
    assert!(ended.is_ok(), "{ended:?}");
}

#[tokio::test]
async fn a_port_in_use_is_a_bind_error_and_nothing_is_written() {
    let home = TestHome::new();
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = taken.local_addr().expect("its address").port().to_string();

    let started = DaemonHost::builder(source(&home, &port)).start().await;

    assert!(
        matches!(started, Err(HostError::Bind(BindError::InUse { .. }))),
        "{:?}",
        started.err()
    );
    assert!(!home.path().join("daemon.json").exists());
    assert!(!home.path().join("souz.db").exists());
}

#[test]
fn problems_the_environment_brings_too_are_not_recoverable() {
    let home = TestHome::new();
    std::fs::write(home.path().join("config.toml"), "[server]\nport = \"x\"\n")
        .expect("config.toml");

    let loaded = DaemonHost::builder(source(&home, "not-a-port")).load();

    let Err(HostError::Unrecoverable(error)) = loaded else {
        panic!("expected an unrecoverable configuration");
    };
    assert!(error.to_string().contains("SOUZ_PORT"), "{error}");
}
