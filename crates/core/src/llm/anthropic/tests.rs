//! The Messages API client against a fake server speaking Anthropic's wire format.

use serde_json::json;
use souz_testkit::FakeServer;
use souz_testkit::anthropic::{self, MESSAGES_PATH};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::llm::tests::{common_stream_behaviour, drain, http, request, text_of};
use crate::llm::{ToolDeclaration, collect};

fn client(server: &FakeServer) -> AnthropicClient {
    AnthropicClient::new(
        http(),
        format!("{}/v1", server.url()),
        ApiKey::new("sk-ant-test-0000wxyz"),
        2048,
    )
}

#[tokio::test]
async fn streams_text_with_usage_and_sends_the_messages_shape() {
    let server = FakeServer::start().await;
    server.push(MESSAGES_PATH, anthropic::text(&["Hel", "lo"]));
    let call = ToolCall {
        id: "toolu_1".into(),
        name: "ReadFile".into(),
        arguments: r#"{"path":"a"}"#.into(),
    };
    let other = ToolCall {
        id: "toolu_2".into(),
        name: "ReadFile".into(),
        arguments: String::new(),
    };
    let mut chat = request();
    chat.messages.push(Message::Assistant {
        content: "Reading.".into(),
        tool_calls: vec![call.clone(), other.clone()],
    });
    chat.messages.push(Message::tool_result(&call, "A"));
    chat.messages.push(Message::Tool {
        tool_call_id: other.id.clone(),
        name: other.name.clone(),
        content: "boom".into(),
        is_error: true,
    });
    chat.tools = vec![ToolDeclaration {
        name: "ReadFile".into(),
        description: "Reads".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }];
    let events = drain(client(&server).stream(chat, CancellationToken::new())).await;
    assert_eq!(text_of(&events), "Hello");
    assert_eq!(
        events[events.len() - 2],
        Ok(StreamEvent::Usage(Usage {
            input_tokens: 30,
            output_tokens: 2,
            cached_input_tokens: 5
        }))
    );
    assert_eq!(
        events.last(),
        Some(&Ok(StreamEvent::Finish(FinishReason::Stop)))
    );

    let sent = &server.requests_to(MESSAGES_PATH)[0];
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test-0000wxyz"));
    assert_eq!(sent.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(sent.header("authorization"), None);
    let body = sent.json();
    assert_eq!(body["max_tokens"], 2048);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "user, assistant, one user turn with both results"
    );
    assert_eq!(
        messages[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "ReadFile", "input": {"path": "a"}})
    );
    assert_eq!(messages[1]["content"][2]["input"], json!({}));
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"})
    );
    assert_eq!(messages[2]["content"][1]["is_error"], true);
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        body["tools"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
}

#[tokio::test]
async fn tool_use_input_split_across_deltas_is_assembled() {
    let server = FakeServer::start().await;
    let sse = anthropic::text_block(anthropic::start_frames(), 0, &["Let me look."]);
    let read = anthropic::ToolUse {
        id: "toolu_a",
        name: "ReadFile",
        input_json: r#"{"path":"/tmp/notes.md","lines":[1,2]}"#,
    };
    let sse = anthropic::tool_use_block(sse, 1, read, 6);
    let now = anthropic::ToolUse {
        id: "toolu_b",
        name: "Now",
        input_json: "",
    };
    let sse = anthropic::tool_use_block(sse, 2, now, 1);
    server.push(MESSAGES_PATH, anthropic::finish(sse, "tool_use", 40));
    let response = collect(client(&server).stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.content, "Let me look.");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.tool_calls,
        [
            ToolCall {
                id: "toolu_a".into(),
                name: "ReadFile".into(),
                arguments: r#"{"path":"/tmp/notes.md","lines":[1,2]}"#.into()
            },
            ToolCall {
                id: "toolu_b".into(),
                name: "Now".into(),
                arguments: "{}".into()
            },
        ]
    );
    assert_eq!(response.usage.unwrap().output_tokens, 40);
}

#[tokio::test]
async fn an_error_event_mid_stream_is_a_provider_error() {
    let server = FakeServer::start().await;
    server.push(
        MESSAGES_PATH,
        anthropic::start_frames()
            .event("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
            .end(),
    );
    let failure = collect(client(&server).stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert_eq!(
        failure,
        LlmError::Provider {
            provider: ProviderId::Anthropic,
            kind: Some("overloaded_error".into()),
            message: "Overloaded".into()
        }
    );
}

#[tokio::test]
async fn retries_errors_disconnects_and_cancellation() {
    let server = FakeServer::start().await;
    let client = client(&server);
    common_stream_behaviour(
        &server,
        MESSAGES_PATH,
        &client,
        || {
            anthropic::start_frames()
                .event("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
                .event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "partial"}}))
        },
        || anthropic::text(&["Hel", "lo"]),
        |status| anthropic::error(status, "api_error", "fake failure"),
    )
    .await;
    // 529 (overloaded) is retried like a 5xx.
    server.push(
        MESSAGES_PATH,
        anthropic::error(529, "overloaded_error", "Overloaded"),
    );
    server.push(MESSAGES_PATH, anthropic::text(&["ok"]));
    assert_eq!(
        collect(client.stream(request(), CancellationToken::new()))
            .await
            .unwrap()
            .content,
        "ok"
    );
}

#[tokio::test]
async fn attached_images_go_before_the_text_as_base64_blocks() {
    let server = FakeServer::start().await;
    server.push(MESSAGES_PATH, anthropic::text(&["A cat."]));
    let mut chat = request();
    chat.messages.push(Message::user_with_images(
        "What is this?",
        vec![crate::llm::ImagePart {
            name: "cat.png".into(),
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }],
    ));
    let events = drain(client(&server).stream(chat, CancellationToken::new())).await;
    assert_eq!(text_of(&events), "A cat.");
    let body = server.requests_to(MESSAGES_PATH)[0].json();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    // Consecutive user messages are merged into one turn: this message's blocks end it.
    let blocks = last["content"].as_array().unwrap();
    assert_eq!(
        blocks[blocks.len() - 2..],
        [
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}),
            json!({"type": "text", "text": "What is this?"}),
        ]
    );
}
