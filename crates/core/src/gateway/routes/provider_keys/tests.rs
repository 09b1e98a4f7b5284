//! `/v1/me/provider-keys` through the router.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::gateway::routes::test_requests::send_as;
use crate::testing::TestRuntime;

const SECRET: &str = "sk-route-test-SECRET-4242";

struct Fixture {
    runtime: TestRuntime,
    token: String,
}

impl Fixture {
    async fn new() -> Self {
        let runtime = TestRuntime::builder()
            .flat_home()
            .with_env("AITUNNEL_KEY", "tunnel-env-key-9876")
            .start()
            .await;
        let token = runtime.token().to_owned();
        Self { runtime, token }
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value, String) {
        send_as(&self.runtime, &self.token, method, path, body).await
    }
}

#[tokio::test]
async fn put_list_delete_with_hints_only() {
    let f = Fixture::new().await;
    let (status, body, _) = f.send("GET", "/v1/me/provider-keys", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["items"],
        json!([{"provider": "ai_tunnel", "configured": true, "keyHint": "...9876", "updatedAt": null, "source": "environment"}])
    );

    let (status, body, text) = f
        .send(
            "PUT",
            "/v1/me/provider-keys/OpenAI",
            Some(json!({"apiKey": SECRET})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(body["providerKey"]["provider"], "openai");
    assert_eq!(body["providerKey"]["keyHint"], "...4242");
    assert_eq!(body["providerKey"]["source"], "stored");
    assert!(body["providerKey"]["updatedAt"].is_string());
    assert!(!text.contains(SECRET), "the key never comes back");

    let (_, body, text) = f.send("GET", "/v1/me/provider-keys", None).await;
    let providers: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["provider"].as_str().unwrap())
        .collect();
    assert_eq!(providers, ["ai_tunnel", "openai"]);
    assert!(!text.contains(SECRET));
    assert_eq!(
        f.runtime
            .handle()
            .llm()
            .key(crate::llm::ProviderId::OpenAi)
            .await
            .unwrap()
            .unwrap()
            .expose(),
        SECRET
    );

    for _ in 0..2 {
        let (status, _, text) = f.send("DELETE", "/v1/me/provider-keys/openai", None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert!(text.is_empty());
    }
    let (_, body, _) = f.send("GET", "/v1/me/provider-keys", None).await;
    assert_eq!(body["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn invalid_requests_get_clear_messages() {
    let f = Fixture::new().await;
    for (path, body, expected) in [
        (
            "/v1/me/provider-keys/nosuch",
            json!({"apiKey": "k"}),
            "unknown provider `nosuch`",
        ),
        (
            "/v1/me/provider-keys/codex",
            json!({"apiKey": "k"}),
            "sign in with `souz login codex` instead",
        ),
        (
            "/v1/me/provider-keys/lm-studio",
            json!({"apiKey": "k"}),
            "does not use an API key",
        ),
        (
            "/v1/me/provider-keys/openai",
            json!({"apiKey": "  "}),
            "apiKey must not be blank.",
        ),
        (
            "/v1/me/provider-keys/openai",
            json!({"key": "x"}),
            "Invalid payload",
        ),
    ] {
        let (status, body, _) = f.send("PUT", path, Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(body["error"]["code"], "invalid_request");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{path}: {message}");
    }
    let (status, _, _) = f.send("DELETE", "/v1/me/provider-keys/nobody", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, body, _) = f.send("GET", "/v1/me/provider-keys", None).await;
    assert_eq!(body["items"].as_array().unwrap().len(), 1, "nothing stored");
}

#[tokio::test]
async fn a_replaced_key_file_is_reported_as_a_conflict_without_secrets() {
    let f = Fixture::new().await;
    let (status, _, _) = f
        .send(
            "PUT",
            "/v1/me/provider-keys/anthropic",
            Some(json!({"apiKey": SECRET})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    std::fs::write(f.runtime.home().path().join("provider-keys.key"), "garbage").unwrap();
    let (status, body, text) = f
        .send(
            "PUT",
            "/v1/me/provider-keys/qwen",
            Some(json!({"apiKey": "qwen-key-00000000"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "conflict");
    assert!(text.contains("provider-keys.key"));
    assert!(!text.contains(SECRET));
}
