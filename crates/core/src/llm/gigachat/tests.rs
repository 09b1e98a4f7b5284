//! The GigaChat client against a fake server speaking GigaChat's wire format, OAuth included.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use souz_testkit::FakeServer;
use souz_testkit::gigachat::{self, CHAT_PATH, OAUTH_PATH};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::llm::tests::{common_stream_behaviour, http, request};
use crate::llm::{ToolDeclaration, collect};

fn in_ms(from_now: Duration) -> u64 {
    (SystemTime::now() + from_now)
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn client(server: &FakeServer) -> GigaChatClient {
    let auth = Arc::new(GigaChatAuth::new(
        http(),
        format!("{}{OAUTH_PATH}", server.url()),
        "GIGACHAT_API_PERS",
    ));
    GigaChatClient::new(
        http(),
        auth,
        format!("{}/api/v1", server.url()),
        ApiKey::new("Z2lnYS1rZXk6c2VjcmV0"),
        1000,
    )
}

#[tokio::test]
async fn exchanges_the_key_for_a_token_and_caches_it() {
    let server = FakeServer::start().await;
    server.push(
        OAUTH_PATH,
        gigachat::token("access-1", in_ms(Duration::from_secs(1800))),
    );
    server.push(CHAT_PATH, gigachat::text(&["При", "вет"]));
    server.push(CHAT_PATH, gigachat::text(&["again"]));
    let client = client(&server);
    let response = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.content, "Привет");
    assert_eq!(
        response.usage,
        Some(Usage {
            input_tokens: 12,
            output_tokens: 2,
            cached_input_tokens: 2
        })
    );
    collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap();

    let oauth = server.requests_to(OAUTH_PATH);
    assert_eq!(oauth.len(), 1, "the token is cached");
    assert_eq!(
        oauth[0].header("authorization"),
        Some("Basic Z2lnYS1rZXk6c2VjcmV0")
    );
    assert_eq!(oauth[0].text(), "scope=GIGACHAT_API_PERS");
    assert_eq!(
        oauth[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let rquid = oauth[0].header("rquid").unwrap();
    assert!(
        uuid::Uuid::parse_str(rquid).is_ok(),
        "RqUID is a UUID: {rquid}"
    );
    let chats = server.requests_to(CHAT_PATH);
    assert!(
        chats
            .iter()
            .all(|chat| chat.header("authorization") == Some("Bearer access-1"))
    );
    let body = chats[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["update_interval"], 0);
    assert_eq!(body["max_tokens"], 1000);
}

#[tokio::test]
async fn a_token_near_expiry_is_refreshed_and_a_refused_token_is_replaced_once() {
    let server = FakeServer::start().await;
    // Expires within the refresh margin: the next call exchanges again.
    server.push(
        OAUTH_PATH,
        gigachat::token("short", in_ms(Duration::from_secs(30))),
    );
    server.push(
        OAUTH_PATH,
        gigachat::token("fresh", in_ms(Duration::from_secs(1800))),
    );
    server.push(CHAT_PATH, gigachat::text(&["one"]));
    server.push(CHAT_PATH, gigachat::text(&["two"]));
    let client = client(&server);
    collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    let chats = server.requests_to(CHAT_PATH);
    assert_eq!(chats[0].header("authorization"), Some("Bearer short"));
    assert_eq!(chats[1].header("authorization"), Some("Bearer fresh"));

    // The API refuses a cached token: it is dropped, a new one fetched, the call retried.
    server.clear_records();
    server.push(CHAT_PATH, gigachat::error(401, "Token has expired"));
    server.push(
        OAUTH_PATH,
        gigachat::token("renewed", in_ms(Duration::from_secs(1800))),
    );
    server.push(CHAT_PATH, gigachat::text(&["three"]));
    let response = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.content, "three");
    let chats = server.requests_to(CHAT_PATH);
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[1].header("authorization"), Some("Bearer renewed"));

    // A wrong authorization key: the OAuth error is reported, not retried forever.
    server.clear_records();
    let other = GigaChatClient::new(
        http(),
        Arc::clone(&client.auth),
        format!("{}/api/v1", server.url()),
        ApiKey::new("wrong-key-000000"),
        10,
    );
    server.push(
        OAUTH_PATH,
        gigachat::error(401, "Can't decode 'Authorization' header"),
    );
    let failure = collect(other.stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, LlmError::Status { status: 401, .. }),
        "{failure:?}"
    );
    assert!(server.requests_to(CHAT_PATH).is_empty());
}

#[tokio::test]
async fn function_calls_map_to_tool_calls_and_back() {
    let server = FakeServer::start().await;
    server.set_fallback(
        OAUTH_PATH,
        gigachat::token("t", in_ms(Duration::from_secs(1800))),
    );
    server.push(
        CHAT_PATH,
        gigachat::function_call(
            &["Смотрю"],
            "ReadFile",
            json!({"path": "/tmp/a.txt"}),
            "6f3b1c1e-state",
        ),
    );
    let response = collect(client(&server).stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.content, "Смотрю");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.tool_calls,
        [ToolCall {
            id: "6f3b1c1e-state".into(),
            name: "ReadFile".into(),
            arguments: r#"{"path":"/tmp/a.txt"}"#.into()
        }]
    );
    assert_eq!(response.usage.unwrap().input_tokens, 30);

    // The call and a plain-text result go back in GigaChat's shape.
    server.push(CHAT_PATH, gigachat::text(&["ok"]));
    let call = response.tool_calls[0].clone();
    let mut chat = request();
    chat.messages.push(Message::Assistant {
        content: "Смотрю".into(),
        tool_calls: vec![call.clone()],
    });
    chat.messages.push(Message::tool_result(&call, "file text"));
    chat.tools = vec![ToolDeclaration {
        name: "ReadFile".into(),
        description: "Reads".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    collect(client(&server).stream(chat, CancellationToken::new()))
        .await
        .unwrap();
    let body = server.requests_to(CHAT_PATH)[1].json();
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": "Смотрю", "function_call": {"name": "ReadFile", "arguments": {"path": "/tmp/a.txt"}}, "functions_state_id": "6f3b1c1e-state"})
    );
    assert_eq!(body["messages"][3]["role"], "function");
    assert_eq!(body["messages"][3]["name"], "ReadFile");
    assert_eq!(
        body["messages"][3]["content"],
        json!({"result": "file text"}).to_string()
    );
    assert_eq!(body["functions"][0]["name"], "ReadFile");
    assert_eq!(body["function_call"], "auto");
}

#[tokio::test]
async fn retries_errors_disconnects_and_cancellation() {
    let server = FakeServer::start().await;
    server.set_fallback(
        OAUTH_PATH,
        gigachat::token("t", in_ms(Duration::from_secs(1800))),
    );
    let client = client(&server);
    common_stream_behaviour(
        &server,
        CHAT_PATH,
        &client,
        || gigachat::text_frames(&["partial"]),
        || gigachat::text(&["Hel", "lo"]),
        |status| gigachat::error(status, "fake failure"),
    )
    .await;
}
