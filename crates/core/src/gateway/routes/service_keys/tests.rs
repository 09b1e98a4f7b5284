//! `/v1/settings/service-keys` through the router, against the Brave fixture of the web tests.

use axum::http::StatusCode;
use serde_json::json;

use crate::gateway::routes::test_requests::send;
use crate::testing::TestRuntime;
use crate::testing::web::{FIXTURE_BRAVE_KEY, FixtureSite};

async fn runtime_with(site: &FixtureSite) -> TestRuntime {
    let web = site.web_config();
    let allow = site.allow_entry();
    TestRuntime::builder()
        .with_config(move |config| {
            config.web = web;
            config.sandbox.network_allow_hosts = vec![allow];
        })
        .start()
        .await
}

#[tokio::test]
async fn the_brave_key_is_stored_listed_as_a_hint_tested_and_removed() {
    let site = FixtureSite::start().await;
    let runtime = runtime_with(&site).await;
    let base = "/v1/settings/service-keys";

    let (status, body, _) = send(&runtime, "GET", base, None).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"items": []})));
    let (status, body, _) = send(&runtime, "POST", &format!("{base}/brave/test"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("BRAVE_SEARCH_API_KEY"),
        "{body}"
    );

    // A wrong key: stored, and the test says Brave refused it.
    let (status, body, _) = send(
        &runtime,
        "PUT",
        &format!("{base}/Brave"),
        Some(json!({"apiKey": "wrong-key-0000"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["name"], "brave");
    assert_eq!(body["keyHint"], "...0000");
    assert_eq!(body["source"], "stored");
    let (status, body, _) = send(&runtime, "POST", &format!("{base}/brave/test"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["ok"], false, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("HTTP 401"),
        "{body}"
    );

    // The right key replaces it; the test reaches the fixture's Brave API.
    let searches = site.hits("/brave/");
    let (status, _, _) = send(
        &runtime,
        "PUT",
        &format!("{base}/brave"),
        Some(json!({"apiKey": FIXTURE_BRAVE_KEY})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body, _) = send(&runtime, "POST", &format!("{base}/brave/test"), None).await;
    assert_eq!(
        (status, &body["ok"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    assert_eq!(site.hits("/brave/"), searches + 1);
    let (_, _, listed) = send(&runtime, "GET", base, None).await;
    assert!(listed.contains("\"keyHint\":\"...-key\""), "{listed}");
    assert!(!listed.contains(FIXTURE_BRAVE_KEY), "{listed}");

    let (status, _, _) = send(&runtime, "DELETE", &format!("{base}/brave"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, body, _) = send(&runtime, "GET", base, None).await;
    assert_eq!(body, json!({"items": []}));
}

#[tokio::test]
async fn unknown_names_and_bad_keys_are_refused_and_change_nothing() {
    let site = FixtureSite::start().await;
    let runtime = runtime_with(&site).await;
    let base = "/v1/settings/service-keys";
    let (status, _, _) = send(
        &runtime,
        "PUT",
        &format!("{base}/brave"),
        Some(json!({"apiKey": "kept-key-1111"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    for (name, key) in [
        ("openai", "sk-1234"),
        ("mcp:files", "token-5678"),
        ("brave", " "),
        ("brave", "a\nb"),
    ] {
        let (status, body, _) = send(
            &runtime,
            "PUT",
            &format!("{base}/{name}"),
            Some(json!({"apiKey": key})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {body}");
    }
    let (status, _, _) = send(&runtime, "DELETE", &format!("{base}/nope"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, body, _) = send(&runtime, "GET", base, None).await;
    assert_eq!(body["items"][0]["keyHint"], "...1111", "{body}");
    assert_eq!(body["items"].as_array().unwrap().len(), 1);
}
