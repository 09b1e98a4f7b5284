//! `/v1/channels/telegram` and the `telegram` service key through the router, with the fake
//! Bot API answering `getMe`.

use axum::http::StatusCode;
use serde_json::{Value, json};
use souz_testkit::telegram::FakeTelegram;

use crate::gateway::routes::test_requests::send;
use crate::testing::TestRuntime;

const TOKEN: &str = "4242:route-test-token-abcdef";

#[tokio::test]
async fn the_token_is_stored_checked_and_never_shown_and_codes_come_once() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let url = telegram.url().to_owned();
    let runtime = TestRuntime::builder()
        .with_config(move |config| config.channels.telegram.api_url = url)
        .start()
        .await;

    let (status, body, _) = send(&runtime, "GET", "/v1/channels/telegram", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["tokenConfigured"], false);
    assert_eq!(body["linked"], Value::Null);

    let put = json!({"apiKey": TOKEN});
    let (status, _, text) = send(
        &runtime,
        "PUT",
        "/v1/settings/service-keys/telegram",
        Some(put),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(!text.contains(TOKEN), "only a hint comes back: {text}");
    let (_, body, text) = send(&runtime, "GET", "/v1/channels/telegram", None).await;
    assert_eq!(body["tokenConfigured"], true, "{text}");
    let (_, body, text) = send(
        &runtime,
        "POST",
        "/v1/settings/service-keys/telegram/test",
        None,
    )
    .await;
    assert_eq!(body["ok"], true, "getMe answered: {text}");

    let wrong = json!({"apiKey": "4242:wrong-token-zzzzzz"});
    send(
        &runtime,
        "PUT",
        "/v1/settings/service-keys/telegram",
        Some(wrong),
    )
    .await;
    let (_, body, text) = send(
        &runtime,
        "POST",
        "/v1/settings/service-keys/telegram/test",
        None,
    )
    .await;
    assert_eq!(body["ok"], false, "{text}");
    assert!(
        !text.contains("wrong-token-zzzzzz"),
        "no token in the error: {text}"
    );

    let (status, first, _) = send(&runtime, "POST", "/v1/channels/telegram/link", None).await;
    assert_eq!(status, StatusCode::OK);
    let code = first["code"].as_str().unwrap().to_owned();
    assert_eq!(first["command"], format!("/start {code}"));
    let (_, second, _) = send(&runtime, "POST", "/v1/channels/telegram/link", None).await;
    assert_ne!(
        second["code"], first["code"],
        "a new code replaces the old one"
    );
    let (_, body, _) = send(&runtime, "GET", "/v1/channels/telegram", None).await;
    assert!(body["codeExpiresAt"].is_string());
    assert!(!body.to_string().contains(&code), "a code is shown once");

    let (status, body, _) = send(&runtime, "DELETE", "/v1/channels/telegram/link", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["linked"], Value::Null);
    assert_eq!(
        body["codeExpiresAt"],
        Value::Null,
        "unlinking drops a waiting code"
    );
    runtime.shutdown("test").await.unwrap();
}
