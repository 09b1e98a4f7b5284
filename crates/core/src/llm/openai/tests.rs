//! The Chat Completions client against a fake server speaking OpenAI's wire format.

use serde_json::json;
use souz_testkit::openai::{self, CHAT_PATH, EMBEDDINGS_PATH};
use souz_testkit::{FakeServer, Reply};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::llm::embeddings::{EmbeddingClient, OpenAiEmbeddings};
use crate::llm::openai_compatible::preset;
use crate::llm::tests::{common_stream_behaviour, drain, http, request, text_of};
use crate::llm::{Message, ToolDeclaration, collect};

fn official(server: &FakeServer) -> OpenAiClient {
    OpenAiClient::new(
        http(),
        OpenAiEndpoint::official(format!("{}/v1", server.url())),
        Some(ApiKey::new("sk-test-1234567890abcd")),
        1024,
    )
}

#[tokio::test]
async fn streams_text_and_usage_and_sends_the_official_request_shape() {
    let server = FakeServer::start().await;
    server.push(CHAT_PATH, openai::text(&["Hel", "lo", ", world"]));
    let client = official(&server);
    let mut chat = request();
    chat.temperature = Some(0.3);
    chat.tools = vec![ToolDeclaration {
        name: "ListFiles".into(),
        description: "Lists files".into(),
        parameters: json!({"type": "object", "properties": {"globs": {"type": "array"}}}),
    }];
    let events = drain(client.stream(chat, CancellationToken::new())).await;
    assert_eq!(text_of(&events), "Hello, world");
    let tail: Vec<_> = events.iter().rev().take(2).cloned().collect();
    assert_eq!(
        tail,
        [
            Ok(StreamEvent::Finish(FinishReason::Stop)),
            Ok(StreamEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 3,
                cached_input_tokens: 0
            })),
        ]
    );

    let sent = &server.requests_to(CHAT_PATH)[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-test-1234567890abcd")
    );
    let body = sent.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], 1024);
    assert!(
        body.get("temperature").is_none(),
        "official endpoint: model default temperature"
    );
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(body["tools"][0]["function"]["name"], "ListFiles");
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["properties"]["globs"]["items"],
        json!({}),
        "arrays get an items schema"
    );
    assert_eq!(body["tool_choice"], "auto");
}

#[tokio::test]
async fn tool_calls_split_across_chunks_are_assembled_in_order() {
    let server = FakeServer::start().await;
    server.push(
        CHAT_PATH,
        openai::tool_calls(
            &[
                ("call_1", "ReadFile", r#"{"path":"/tmp/a.txt","limit":10}"#),
                ("call_2", "ListFiles", r#"{"dir":"~/Documents"}"#),
            ],
            5,
        ),
    );
    let events = drain(official(&server).stream(request(), CancellationToken::new())).await;
    let deltas = events
        .iter()
        .filter(|event| matches!(event, Ok(StreamEvent::ToolCallDelta { .. })))
        .count();
    assert!(deltas >= 10, "arguments arrived in pieces: {deltas}");
    let response = collect(futures::StreamExt::boxed(futures::stream::iter(events)))
        .await
        .unwrap();
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.tool_calls,
        [
            ToolCall {
                id: "call_1".into(),
                name: "ReadFile".into(),
                arguments: r#"{"path":"/tmp/a.txt","limit":10}"#.into()
            },
            ToolCall {
                id: "call_2".into(),
                name: "ListFiles".into(),
                arguments: r#"{"dir":"~/Documents"}"#.into()
            },
        ]
    );
    assert_eq!(response.usage.unwrap().input_tokens, 20);
}

#[tokio::test]
async fn history_with_tool_calls_maps_to_tool_messages() {
    let server = FakeServer::start().await;
    server.push(CHAT_PATH, openai::text(&["done"]));
    let call = ToolCall {
        id: "call_9".into(),
        name: "ReadFile".into(),
        arguments: "{}".into(),
    };
    let mut chat = request();
    chat.messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![call.clone()],
    });
    chat.messages
        .push(Message::tool_result(&call, "{\"text\":\"x\"}"));
    collect(official(&server).stream(chat, CancellationToken::new()))
        .await
        .unwrap();
    let body = server.requests_to(CHAT_PATH)[0].json();
    assert_eq!(body["messages"][2]["content"], serde_json::Value::Null);
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "call_9");
    assert_eq!(body["messages"][2]["tool_calls"][0]["type"], "function");
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_9", "content": "{\"text\":\"x\"}"})
    );
}

#[tokio::test]
async fn retries_errors_disconnects_and_cancellation() {
    let server = FakeServer::start().await;
    let client = official(&server);
    common_stream_behaviour(
        &server,
        CHAT_PATH,
        &client,
        || openai::text_frames(&["partial"]),
        || openai::text(&["Hel", "lo"]),
        |status| openai::error(status, "fake failure"),
    )
    .await;
}

#[tokio::test]
async fn retry_after_in_seconds_is_waited_for() {
    let server = FakeServer::start().await;
    server.push(
        CHAT_PATH,
        openai::error(429, "slow down").header("retry-after", "1"),
    );
    server.push(CHAT_PATH, openai::text(&["ok"]));
    let began = std::time::Instant::now();
    let response = collect(official(&server).stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.content, "ok");
    assert!(
        began.elapsed() >= std::time::Duration::from_secs(1),
        "waited as asked"
    );
}

#[tokio::test]
async fn compatible_presets_send_their_dialect_and_local_servers_get_no_key() {
    let server = FakeServer::start().await;
    let base = format!("{}/v1", server.url());
    let qwen = OpenAiClient::new(
        http(),
        preset(ProviderId::Qwen).unwrap().endpoint(base.clone()),
        Some(ApiKey::new("dashscope-key-000000")),
        512,
    );
    server.push(CHAT_PATH, openai::text(&["a"]));
    let mut chat = request();
    chat.temperature = Some(0.2);
    chat.tools = vec![ToolDeclaration {
        name: "T".into(),
        description: "t".into(),
        parameters: json!({}),
    }];
    collect(qwen.stream(chat, CancellationToken::new()))
        .await
        .unwrap();
    let body = server.requests_to(CHAT_PATH)[0].json();
    assert!(body.get("stream_options").is_none());
    assert_eq!(body["max_tokens"], 512);
    // Sent as typed, not as the f32's binary value (0.20000000298023224).
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(
        body["tools"][0]["function"]["parameters"],
        json!({"type": "object", "properties": {}})
    );

    // Ollama: no key, and a server that ends after finish_reason without [DONE] is fine; a
    // call without an id gets one.
    server.clear_records();
    let ollama = OpenAiClient::new(
        http(),
        preset(ProviderId::Ollama).unwrap().endpoint(base),
        None,
        512,
    );
    server.push(
        CHAT_PATH,
        Reply::sse()
            .data(openai::chunk(json!({"tool_calls": [{"index": 0, "function": {"name": "Now", "arguments": "{}"}}]}), None))
            .data(openai::chunk(json!({}), Some("stop")))
            .end(),
    );
    let response = collect(ollama.stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(
        response.finish_reason,
        FinishReason::ToolCalls,
        "tool calls win over `stop`"
    );
    assert!(response.tool_calls[0].id.starts_with("call_"));
    assert_eq!(
        server.requests_to(CHAT_PATH)[0].header("authorization"),
        None
    );
}

#[tokio::test]
async fn an_error_object_inside_the_stream_is_a_provider_error() {
    let server = FakeServer::start().await;
    server.push(
        CHAT_PATH,
        openai::text_frames(&["x"])
            .data(
                json!({"error": {"message": "context too long", "type": "invalid_request_error"}}),
            )
            .end(),
    );
    let failure = collect(official(&server).stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert_eq!(
        failure,
        LlmError::Provider {
            provider: ProviderId::OpenAi,
            kind: Some("invalid_request_error".into()),
            message: "context too long".into(),
        }
    );
}

#[tokio::test]
async fn embeddings_come_back_in_input_order_and_mismatches_are_errors() {
    let server = FakeServer::start().await;
    let client = OpenAiEmbeddings::new(
        http(),
        ProviderId::OpenAi,
        format!("{}/v1", server.url()),
        Some(ApiKey::new("sk-embeddings-0000")),
    );
    server.push(
        EMBEDDINGS_PATH,
        openai::embeddings(&[vec![1.0, 0.0], vec![0.0, 1.0]]),
    );
    let vectors = client
        .embed(
            "text-embedding-3-small".into(),
            vec!["a".into(), "b".into()],
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(vectors, [vec![1.0, 0.0], vec![0.0, 1.0]]);
    let body = server.requests_to(EMBEDDINGS_PATH)[0].json();
    assert_eq!(body["input"], json!(["a", "b"]));
    assert_eq!(body["model"], "text-embedding-3-small");

    server.push(EMBEDDINGS_PATH, openai::embeddings(&[vec![1.0]]));
    let failure = client
        .embed(
            "m".into(),
            vec!["a".into(), "b".into()],
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        failure.to_string().contains("no embedding for input"),
        "{failure}"
    );

    server.push(EMBEDDINGS_PATH, Reply::json(200, json!({"data": []})));
    assert!(
        client
            .embed("m".into(), vec!["a".into()], CancellationToken::new())
            .await
            .is_err()
    );
    assert_eq!(
        client
            .embed("m".into(), vec![], CancellationToken::new())
            .await
            .unwrap(),
        Vec::<Vec<f32>>::new()
    );
}

#[tokio::test]
async fn a_key_echoed_in_an_error_body_never_reaches_the_error() {
    let server = FakeServer::start().await;
    // A key that looks like nothing in particular (no `sk-` prefix), so only knowing what
    // was sent can catch it, echoed the way some compatible servers do.
    let key = "q8LkQ2mZx7VbN4rT";
    server.push(
        CHAT_PATH,
        Reply::json(
            401,
            json!({"error": {"message": format!("invalid api key {key} for this endpoint")}}),
        ),
    );
    let client = OpenAiClient::new(
        http(),
        OpenAiEndpoint::official(format!("{}/v1", server.url())),
        Some(ApiKey::new(key)),
        1024,
    );
    let failure = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    let shown = format!("{failure} {failure:?}");
    assert!(!shown.contains(key), "{shown}");
    assert!(shown.contains("invalid api key [REDACTED]"), "{shown}");
}
