//! A large result of an external MCP tool, called by Souz's own agent, is offloaded to
//! Knowledge like any tool's (original §2.6: more than 8192 UTF-8 bytes): the model gets the
//! reference naming the external tool, the whole text is kept for `GetKnowledge`, and a small
//! result stays inline.

use std::sync::Arc;

use serde_json::{Value, json};
use souz_testkit::{FakeServer, openai};
use tokio_util::sync::CancellationToken;

use crate::agent::knowledge::KnowledgeContent;
use crate::agent::tests::Recorder;
use crate::agent::{TurnRequest, TurnStatus};
use crate::config::McpServerConfig;
use crate::mcp::client::tests::{allow_rule, everything_script, node, wait_for_tool};
use crate::testing::TestRuntime;

const TOOL: &str = "mcp__everything__echo";

/// The content of the tool message answering `call_id` in the requests the model received.
fn tool_message(server: &FakeServer, call_id: &str) -> String {
    server
        .requests_to(openai::CHAT_PATH)
        .into_iter()
        .map(|request| request.json())
        .find_map(|body| {
            body["messages"].as_array()?.iter().find_map(|message| {
                (message["role"] == "tool" && message["tool_call_id"] == call_id)
                    .then(|| message["content"].as_str().map(str::to_owned))
                    .flatten()
            })
        })
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))
}

#[tokio::test]
async fn a_large_external_result_reaches_the_model_as_a_knowledge_reference() {
    let server = FakeServer::start().await;
    // The graph agent asks its classifier first ("HELP": every category), then the model.
    server.push(openai::CHAT_PATH, openai::text(&["HELP 100"]));
    let large = "x".repeat(20_000);
    let calls = [
        ("call_big", TOOL, json!({"message": large}).to_string()),
        ("call_small", TOOL, json!({"message": "small"}).to_string()),
    ];
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, tool, arguments)| (*id, *tool, arguments.as_str()))
        .collect();
    server.push(openai::CHAT_PATH, openai::tool_calls(&calls, 2));
    server.set_fallback(openai::CHAT_PATH, openai::text(&["Echoed."]));
    let runtime = TestRuntime::builder()
        .with_llm(&server)
        .with_config(|config| {
            config.mcp.servers.insert(
                "everything".into(),
                McpServerConfig {
                    command: node(),
                    args: vec![everything_script()],
                    ..McpServerConfig::default()
                },
            );
            config.approvals.rules.push(allow_rule(TOOL));
        })
        .start()
        .await;
    wait_for_tool(&runtime, TOOL).await;
    let handle = runtime.handle();
    let outcome = handle
        .agents()
        .run_turn(
            TurnRequest::new("chat-large", "echo these"),
            Arc::new(Recorder::default()),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");

    let content = tool_message(&server, "call_big");
    let reference: Value = serde_json::from_str(&content)
        .unwrap_or_else(|_| panic!("the large result went inline ({} bytes)", content.len()));
    assert_eq!(reference["sourceTool"], TOOL, "{reference}");
    assert!(
        reference["originalLength"].as_u64().unwrap() > 20_000,
        "{reference}"
    );
    assert_eq!(reference["truncated"], false, "{reference}");
    let id = reference["knowledgeId"].as_str().unwrap();
    let entry = handle
        .agents()
        .knowledge()
        .get("chat-large", id)
        .await
        .unwrap()
        .expect("the entry is stored for the chat");
    assert_eq!(entry.source_tool, TOOL);
    let KnowledgeContent::Complete(kept) = entry.content else {
        panic!("20 KB is kept whole");
    };
    assert!(kept.contains(&large), "the whole result is kept");

    let small = tool_message(&server, "call_small");
    assert!(
        small.contains("small") && !small.contains("knowledgeId"),
        "a small result stays inline: {small}"
    );
    runtime.shutdown("test").await.unwrap();
}
