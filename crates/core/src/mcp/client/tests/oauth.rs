//! OAuth against a mock authorization server and the MCP server it protects
//! ([`super::oauth_mock`]): discovery, dynamic registration, the PKCE code flow completed by
//! a test "browser" (a plain HTTP client following the authorization URL), calls through the
//! gate, an expired token refreshed without a new login, step-up to a wider scope, and a
//! revoked refresh token ending in `needs_login`.

use std::time::Duration;

use serde_json::json;
use souz_protocol::{McpOAuthCallback, McpServerStatus, ToolCallStatus, Verdict};

use super::oauth_mock::Mock;
use super::{decide_and_finish, runtime_with, start, text, wait_for_tool};
use crate::config::McpServerConfig;
use crate::testing::TestRuntime;

async fn status(runtime: &TestRuntime) -> McpServerStatus {
    runtime.handle().mcp_servers().await.servers.remove(0)
}

async fn wait_until(runtime: &TestRuntime, what: &str, ok: impl Fn(&McpServerStatus) -> bool) {
    for _ in 0..400 {
        if ok(&status(runtime).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("never {what}: {:?}", status(runtime).await);
}

/// Opens `url` as a browser would, and returns what it was redirected back with (not
/// followed: the daemon's callback route is tested at the gateway).
async fn browse(url: &str, expected_redirect: &str) -> McpOAuthCallback {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = browser.get(url).send().await.unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::FOUND, "{url}");
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(expected_redirect), "{location}");
    let location = reqwest::Url::parse(&location).unwrap();
    let get = |name: &str| {
        location
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    McpOAuthCallback {
        code: get("code"),
        state: get("state"),
        iss: get("iss"),
        ..McpOAuthCallback::default()
    }
}

async fn login(runtime: &TestRuntime, redirect: &str) -> String {
    let handle = runtime.handle();
    let login = handle.start_mcp_login("guarded").await.unwrap();
    let callback = browse(&login.authorization_url, redirect).await;
    assert_eq!(handle.finish_mcp_login(&callback).await.unwrap(), "guarded");
    // A redirect is good once.
    assert!(handle.finish_mcp_login(&callback).await.is_err());
    login.authorization_url
}

async fn call(runtime: &TestRuntime, tool: &str, text_arg: &str) -> crate::tools::gate::CallState {
    let mut call = start(runtime, tool, json!({"text": text_arg})).await;
    decide_and_finish(runtime, &mut call, Verdict::Approve).await
}

#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "one login's whole life: first login, refresh, step-up, revocation"
)]
async fn an_oauth_server_is_signed_in_refreshed_stepped_up_and_asks_again_when_revoked() {
    let mock = Mock::start().await;
    let runtime = runtime_with(vec![(
        "guarded",
        McpServerConfig {
            url: mock.url(),
            allow_private_network: true,
            oauth_scopes: vec!["read".into()],
            startup_timeout_seconds: 10,
            ..McpServerConfig::default()
        },
    )])
    .await;
    let handle = runtime.handle();
    let redirect = format!(
        "http://127.0.0.1:{}/v1/mcp/oauth/callback?",
        handle.config().server.port
    );
    wait_until(&runtime, "asked for a login", |s| {
        s.needs_login && !s.connected
    })
    .await;

    // Discovery, registration, PKCE: the URL is the mock's, with an S256 challenge.
    let url = login(&runtime, &redirect).await;
    assert!(
        url.starts_with(&format!("{}/authorize?", mock.base)),
        "{url}"
    );
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    wait_for_tool(&runtime, "mcp__guarded__echo").await;
    wait_until(&runtime, "connected", |s| s.connected && !s.needs_login).await;
    assert_eq!(mock.counts(), (1, 1, 1, 0));
    // The tokens are in the key store, sealed.
    let keys = handle.llm().key_store().clone();
    assert!(
        keys.get_secret("mcp-oauth:guarded")
            .await
            .unwrap()
            .is_some()
    );

    let done = call(&runtime, "mcp__guarded__echo", "hello").await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert_eq!(text(&done), "hello");

    // The access token stops working: refreshed, no new login.
    mock.expire_access_tokens();
    let done = call(&runtime, "mcp__guarded__echo", "again").await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert_eq!(text(&done), "again");
    let (_, authorizations, _, refreshes) = mock.counts();
    assert_eq!((authorizations, refreshes), (1, 1));
    assert!(!status(&runtime).await.needs_login);

    // A tool that needs a wider scope: refused, the server asks for a login with it.
    let refused = call(&runtime, "mcp__guarded__admin", "x").await;
    assert_eq!(refused.status, ToolCallStatus::Failed, "{refused:?}");
    assert!(text(&refused).contains("wider scope"), "{refused:?}");
    assert!(status(&runtime).await.needs_login);
    let url = login(&runtime, &redirect).await;
    let scope = reqwest::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .find(|(key, _)| key == "scope")
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default();
    assert!(
        scope.split(' ').any(|s| s == "write") && scope.split(' ').any(|s| s == "read"),
        "{scope}"
    );
    wait_until(&runtime, "connected after step-up", |s| {
        s.connected && !s.needs_login
    })
    .await;
    let done = call(&runtime, "mcp__guarded__admin", "x").await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert_eq!(text(&done), "admin: x");

    // The refresh token is revoked too: nothing left but a new login.
    mock.expire_access_tokens();
    mock.revoke_refresh_tokens();
    let failed = call(&runtime, "mcp__guarded__echo", "late").await;
    assert_eq!(failed.status, ToolCallStatus::Failed, "{failed:?}");
    wait_until(&runtime, "asked for a login again", |s| s.needs_login).await;
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_redirect_for_no_login_of_this_daemon_is_refused() {
    let runtime = runtime_with(Vec::new()).await;
    let handle = runtime.handle();
    let forged = McpOAuthCallback {
        code: Some("code".into()),
        state: Some("not-a-flow".into()),
        ..McpOAuthCallback::default()
    };
    // The refusal's mapping to 403 is the gateway's test; here: refused, and why.
    let refused = handle.finish_mcp_login(&forged).await.unwrap_err();
    assert!(
        refused.to_string().contains("unknown, used or expired"),
        "{refused}"
    );
    runtime.shutdown("test").await.unwrap();
}
