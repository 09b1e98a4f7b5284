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
    // Public endpoints are left out before any request (not local); the discard port on
    // loopback is probed and refuses.
    let f = Fixture::with(|config| {
        config.llm.ollama_base_url = "http://8.8.8.8:11434/v1".to_owned();
        config.llm.lm_studio_base_url = "http://169.254.169.254/v1".to_owned();
        config.llm.llama_cpp_base_url = "http://127.0.0.1:9/v1".to_owned();
    })
    .await;
    let (status, list) = f
        .send(request(&f, "GET", "/v1/setup/local-servers", None))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["items"], json!([]));
}

/// A loopback server answering `GET /v1/models` with `body` as LM Studio does (its models
/// `owned_by` the organization), every other path 404, and `/redirect/models` with a redirect
/// to `target`.
async fn fake_server(body: Value, target: Option<String>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = Router::new()
        .route(
            "/v1/models",
            axum::routing::get(move || {
                let body = body.clone();
                async move { axum::Json(body) }
            }),
        )
        .route(
            "/redirect/models",
            axum::routing::get(move || {
                let target = target.clone().unwrap_or_default();
                async move { axum::response::Redirect::temporary(&format!("{target}/models")) }
            }),
        )
        .route(
            "/big/models",
            axum::routing::get(|| async { "x".repeat(2 * 1024 * 1024) }),
        );
    crate::tasks::spawn_in_test(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// A loopback port that accepts connections and never answers.
async fn silent_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    crate::tasks::spawn_in_test(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{address}/v1")
}

async fn probe(f: &Fixture, base_url: &str) -> Value {
    let body = json!({ "baseUrl": base_url });
    let (status, answer) = f
        .send(request(
            f,
            "POST",
            "/v1/setup/local-servers/probe",
            Some(body),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

#[tokio::test]
async fn a_typed_server_address_is_probed_and_its_kind_told() {
    let listed = json!({"object": "list", "data": [
        {"id": "qwen2.5-7b-instruct", "owned_by": "organization_owner"},
        {"id": "gemma-3-4b", "owned_by": "organization_owner"},
    ]});
    let server = fake_server(listed, None).await;
    let f = Fixture::new().await;
    // Typed without `/v1`: the list is found there, and that is the address to save.
    let found = probe(&f, &format!("{server}/")).await;
    assert_eq!(found["baseUrl"], format!("{server}/v1"), "{found}");
    assert_eq!(found["provider"], "lm_studio", "{found}");
    assert_eq!(
        found["models"],
        json!(["qwen2.5-7b-instruct", "gemma-3-4b"])
    );
    assert!(found["problem"].is_null(), "{found}");
    // Typed with it, and by the name `localhost`.
    let port = server.rsplit(':').next().unwrap();
    let named = probe(&f, &format!("http://localhost:{port}/v1")).await;
    assert_eq!(named["models"].as_array().map(Vec::len), Some(2), "{named}");

    let (status, refused) = f
        .send(request(
            &f,
            "POST",
            "/v1/setup/local-servers/probe",
            Some(json!({"url": server})),
        ))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
}

#[tokio::test]
async fn a_typed_address_that_offers_no_model_says_why() {
    let empty = fake_server(json!({"object": "list", "data": []}), None).await;
    let models = fake_server(json!({"data": [{"id": "llama3.2"}]}), None).await;
    let redirecting = fake_server(json!({"data": []}), Some(format!("{models}/v1"))).await;
    let closed = closed_port().await;
    let silent = silent_server().await;
    let f = Fixture::new().await;
    let problem = |answer: &Value| answer["problem"].as_str().unwrap_or("none").to_owned();

    assert_eq!(
        problem(&probe(&f, &format!("{empty}/v1")).await),
        "no_models"
    );
    assert_eq!(problem(&probe(&f, &closed).await), "unreachable");
    // Something that answers, but not a model list: a 404, a redirect (never followed, even
    // to a real server) and a body past the limit.
    assert_eq!(
        problem(&probe(&f, &format!("{models}/nothing")).await),
        "not_model_server"
    );
    assert_eq!(
        problem(&probe(&f, &format!("{redirecting}/redirect")).await),
        "not_model_server"
    );
    assert_eq!(
        problem(&probe(&f, &format!("{models}/big")).await),
        "not_model_server"
    );
    // Public or metadata addresses are refused before any request; not a URL is said so.
    for remote in [
        "http://8.8.8.8:11434/v1",
        "http://169.254.169.254/latest",
        "http://[2001:4860:4860::8888]:8080/v1",
    ] {
        assert_eq!(problem(&probe(&f, remote).await), "not_local", "{remote}");
    }
    for bad in [
        "ftp://127.0.0.1/v1",
        "127.0.0.1:1234",
        "",
        "http://u:p@127.0.0.1/v1",
    ] {
        assert_eq!(problem(&probe(&f, bad).await), "invalid_url", "{bad}");
    }
    // A server that never answers is given up on in bounded time.
    let started = std::time::Instant::now();
    assert_eq!(problem(&probe(&f, &silent).await), "unreachable");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
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
