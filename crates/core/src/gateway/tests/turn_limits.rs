//! A model stuck repeating a failing call, over HTTP against the fake OpenAI server: the
//! execution ends after the repeat limit with an answer that says why, `execution.finished`
//! reports the reason and the tokens, and the execution's trace says it too.

use std::time::Duration;

use serde_json::json;
use souz_testkit::{FakeServer, openai};

use super::*;

#[tokio::test]
async fn a_repeated_failing_call_ends_the_execution_with_its_reason_reported() {
    let provider = FakeServer::start().await;
    let runtime = TestRuntime::builder()
        .with_llm(&provider)
        .with_config(|config| {
            config.agent.default_agent = "skills".into();
            config.memory.capture = false;
        })
        .start()
        .await;
    let f = Fixture::on(runtime);
    let arguments =
        json!({"skillId": "ListFiles", "arguments": {"path": "~/no-such-folder"}}).to_string();
    // The model would go on for ever; the fourth answer is never asked for.
    for index in 0..4 {
        let id = format!("call_{index}");
        provider.push(
            openai::CHAT_PATH,
            openai::tool_calls(&[(id.as_str(), "RunSkillCommand", arguments.as_str())], 2),
        );
    }
    let chat = f.new_chat().await;
    let (status, posted) = f
        .send(f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "What is in no-such-folder?"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{posted}");
    let execution = posted["execution"]["id"].as_str().unwrap().to_owned();

    let finished = finished_event(&f, &chat).await;
    assert_eq!(
        finished["payload"]["endReason"], "repeated_tool_call",
        "{finished}"
    );
    assert!(
        finished["payload"]["promptTokens"]
            .as_u64()
            .unwrap_or_default()
            > 0,
        "{finished}"
    );
    assert_eq!(provider.requests_to(openai::CHAT_PATH).len(), 3);
    let (_, messages) = f
        .send(f.bare("GET", &format!("/v1/chats/{chat}/messages")))
        .await;
    assert!(
        messages
            .to_string()
            .contains("I called RunSkillCommand 3 times"),
        "{messages}"
    );
    let (status, trace) = f
        .send(f.bare(
            "GET",
            &format!("/v1/chats/{chat}/executions/{execution}/trace"),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{trace}");
    let error = trace["turns"][0]["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("repeated_tool_call: "), "{trace}");
}

/// Waits for the chat's `execution.finished` event and returns it.
async fn finished_event(f: &Fixture, chat: &str) -> Value {
    for _ in 0..1500 {
        let path = format!("/v1/chats/{chat}/events?afterSeq=0&limit=1000");
        let (_, events) = f.send(f.bare("GET", &path)).await;
        let found = events["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|event| event["type"] == "execution.finished")
            .cloned();
        if let Some(event) = found {
            return event;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("chat {chat} did not finish");
}
