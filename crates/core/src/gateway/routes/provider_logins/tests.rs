//! `/v1/me/provider-logins/codex` through the router, against a fake sign-in service: start
//! answers the code, the daemon polls in the background until signed in, GET tells the state,
//! DELETE signs out; a provider without an account and an unreachable service are clear errors.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::Value;
use souz_testkit::FakeServer;
use souz_testkit::codex::{self, DEVICE_TOKEN_PATH, TOKEN_PATH, USER_CODE_PATH};

use crate::gateway::routes::test_requests::send_as;
use crate::testing::TestRuntime;

const PATH: &str = "/v1/me/provider-logins/codex";

async fn send(runtime: &TestRuntime, method: &str, path: &str) -> (StatusCode, Value, String) {
    send_as(runtime, runtime.token(), method, path, None).await
}

#[tokio::test]
async fn start_poll_sign_in_and_sign_out() {
    let service = FakeServer::start().await;
    let url = service.url();
    let runtime = TestRuntime::builder()
        .flat_home()
        .with_config(move |config| config.llm.codex_auth_url = url)
        .start()
        .await;
    let (status, body, _) = send(&runtime, "GET", PATH).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["state"], "signed_out");

    service.push(USER_CODE_PATH, codex::user_code("dev", "ROUTE-42", 0));
    service.push(DEVICE_TOKEN_PATH, codex::pending());
    service.push(DEVICE_TOKEN_PATH, codex::authorized("code", "verifier"));
    let access = codex::access_token("t", "acct", chrono::Utc::now().timestamp() + 3600);
    service.push(
        TOKEN_PATH,
        codex::tokens(
            &codex::id_token("me@example.com", "acct"),
            &access,
            "rt-route",
        ),
    );
    let (status, body, text) = send(&runtime, "POST", PATH).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(body["provider"], "codex");
    assert_eq!(body["state"], "pending");
    assert_eq!(body["userCode"], "ROUTE-42");
    assert_eq!(
        body["verificationUrl"],
        format!("{}/codex/device", service.url())
    );
    assert!(body["expiresAt"].is_string());

    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (_, body, _) = send(&runtime, "GET", PATH).await;
        if body["state"] != "pending" {
            break body;
        }
        assert!(Instant::now() < deadline, "still pending");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(body["state"], "signed_in", "{body}");
    assert_eq!(body["account"], "me@example.com");
    let (_, keys, text) = send(&runtime, "GET", "/v1/me/provider-keys").await;
    assert_eq!(keys["items"], serde_json::json!([]), "{text}");
    assert!(!text.contains("rt-route"));

    let (status, _, _) = send(&runtime, "DELETE", PATH).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, body, _) = send(&runtime, "GET", PATH).await;
    assert_eq!(body["state"], "signed_out");
    // Idempotent.
    let (status, _, _) = send(&runtime, "DELETE", PATH).await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // No account to sign in to: a 400 naming the provider; a key cannot be stored for codex.
    let (status, _, text) = send(&runtime, "POST", "/v1/me/provider-logins/openai").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let (status, _, text) = send_as(
        &runtime,
        runtime.token(),
        "PUT",
        "/v1/me/provider-keys/codex",
        Some(serde_json::json!({"apiKey": "sk-not-for-codex"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert!(text.contains("souz login codex"), "{text}");

    // The service refusing: a conflict that says so.
    service.push(
        USER_CODE_PATH,
        souz_testkit::Reply::json(500, serde_json::json!({"error": "down"})),
    );
    let (status, _, text) = send(&runtime, "POST", PATH).await;
    assert_eq!(status, StatusCode::CONFLICT, "{text}");
    assert!(text.contains("sign-in service"), "{text}");
}
