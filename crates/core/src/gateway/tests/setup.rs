//! `/v1/setup`: the first-run state kept server-side, and the probe of local model servers.

use serde_json::json;

use super::*;

fn request(f: &Fixture, method: &str, path: &str, body: Option<Value>) -> Request<Body> {
    let builder = f.authed(path).method(method);
    match body {
        Some(body) => builder
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    }
}

#[tokio::test]
async fn setup_state_is_kept_and_can_be_reset() {
    let f = Fixture::new().await;
    let (status, state) = f.send(request(&f, "GET", "/v1/setup", None)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["completed"], false);
    assert!(state["completedAt"].is_null());

    let done = json!({"completed": true});
    let (status, state) = f
        .send(request(&f, "PUT", "/v1/setup", Some(done.clone())))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["completed"], true);
    let first = state["completedAt"].as_str().unwrap().to_owned();
    // Completing again keeps the first time; reading agrees.
    let (_, again) = f.send(request(&f, "PUT", "/v1/setup", Some(done))).await;
    assert_eq!(again["completedAt"], first.as_str());
    let (_, read) = f.send(request(&f, "GET", "/v1/setup", None)).await;
    assert_eq!(read["completed"], true);

    let (_, reset) = f
        .send(request(
            &f,
            "PUT",
            "/v1/setup",
            Some(json!({"completed": false})),
        ))
        .await;
    assert_eq!(reset["completed"], false);
    let (status, bad) = f
        .send(request(&f, "PUT", "/v1/setup", Some(json!({"done": 1}))))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
}

/// A loopback server answering `GET /v1/models` like Ollama's OpenAI-compatible endpoint.
async fn fake_ollama(models: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = Router::new().route(
        "/v1/models",
        axum::routing::get(move || {
            let models = models.clone();
            async move { axum::Json(models) }
        }),
    );
    crate::tasks::spawn_in_test(async move { axum::serve(listener, app).await });
    format!("http://{address}/v1")
}

/// A loopback port nothing listens on.
async fn closed_port() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{address}/v1")
}

#[tokio::test]
async fn local_servers_lists_those_answering_with_models() {
    let ollama =
        fake_ollama(json!({"object": "list", "data": [{"id": "llama3.2"}, {"id": "qwen3:8b"}]}))
            .await;
    let empty = fake_ollama(json!({"object": "list", "data": []})).await;
    let closed = closed_port().await;
    let f = Fixture::with(move |config| {
        config.llm.ollama_base_url = ollama;
        config.llm.lm_studio_base_url = empty;
        config.llm.llama_cpp_base_url = closed;
    })
    .await;
    let (status, list) = f
        .send(request(&f, "GET", "/v1/setup/local-servers", None))
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["provider"], "ollama");
    assert_eq!(items[0]["models"], json!(["llama3.2", "qwen3:8b"]));
}

#[tokio::test]
async fn local_servers_never_probes_a_remote_endpoint() {
    // Remote endpoints are left out before any request (`is_loopback`); the discard port on
    // loopback is probed and refuses.
    let f = Fixture::with(|config| {
        config.llm.ollama_base_url = "http://10.255.255.1:11434/v1".to_owned();
        config.llm.lm_studio_base_url = "https://example.com/v1".to_owned();
        config.llm.llama_cpp_base_url = "http://127.0.0.1:9/v1".to_owned();
    })
    .await;
    let (status, list) = f
        .send(request(&f, "GET", "/v1/setup/local-servers", None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn restart_is_refused_by_a_daemon_that_cannot_restart_itself() {
    // The test runtime is started without a restart switch (as an embedder that cannot
    // restart would): the route says so instead of pretending.
    let f = Fixture::new().await;
    let (status, answer) = f.send(request(&f, "POST", "/v1/restart", None)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer.to_string().contains("cannot restart itself"),
        "{answer}"
    );
}

#[tokio::test]
async fn bootstrap_says_the_mcp_server_is_served() {
    let f = Fixture::new().await;
    let (status, bootstrap) = f.send(request(&f, "GET", "/v1/bootstrap", None)).await;
    assert_eq!(status, StatusCode::OK, "{bootstrap}");
    assert_eq!(bootstrap["features"]["mcp"], true, "{bootstrap}");
}
