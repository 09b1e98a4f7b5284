//! One turn through the real runtime: `LlmService` against the fake OpenAI server, the real
//! catalog and gate, the runtime's agents.

use std::sync::Arc;

use serde_json::Value;
use souz_testkit::{FakeServer, openai};
use tokio_util::sync::CancellationToken;

use crate::agent::tests::{Recorder, core_names};
use crate::agent::{AgentEvent, TurnRequest, TurnStatus};
use crate::testing::{TestHome, TestRuntime};

#[tokio::test]
async fn a_skills_turn_against_the_fake_openai_server() {
    let server = FakeServer::start().await;
    let arguments =
        serde_json::json!({"skillId": "ListFiles", "arguments": {"path": "~"}}).to_string();
    server.push(
        openai::CHAT_PATH,
        openai::tool_calls(&[("call_1", "RunSkillCommand", arguments.as_str())], 3),
    );
    server.push(
        openai::CHAT_PATH,
        openai::text(&["Your home ", "holds ", "notes.txt."]),
    );

    let home = TestHome::new();
    std::fs::write(home.path().join("notes.txt"), "hello").unwrap();
    let runtime = TestRuntime::builder()
        .with_llm(&server)
        .with_config(|config| config.agent.default_agent = "skills".into())
        .start_in(home)
        .await;
    let handle = runtime.handle();
    let sink = Arc::new(Recorder::default());
    let outcome = handle
        .agents()
        .run_turn(
            TurnRequest::new("chat-openai", "what is in my home folder?"),
            sink.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();

    assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.reply.unwrap().text, "Your home holds notes.txt.");
    assert_eq!(outcome.model, "openai/gpt-5-mini");
    let requests = server.requests_to(openai::CHAT_PATH);
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    let mut tools: Vec<String> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        core_names(),
        "the skills agent shows only its core tools"
    );
    assert_eq!(first["stream"], true);
    let second = requests[1].json();
    let tool_result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool_result["tool_call_id"], "call_1");
    let content = tool_result["content"].as_str().unwrap();
    assert!(
        content.contains("notes.txt"),
        "the real ListFiles ran: {content}"
    );
    let deltas: Vec<Value> = sink
        .events()
        .iter()
        .filter_map(|event| match event {
            AgentEvent::TextDelta { text, .. } => Some(Value::String(text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(deltas.len(), 3, "one delta per streamed piece");
    runtime.shutdown("test").await.unwrap();
}
