//! A chat execution's trace: its turns and steps as people read them, redacted and cut, and
//! only for the execution and chat asked about.

use serde_json::json;

use super::*;
use crate::agent::trace::{self, MAX_TEXT};

#[tokio::test]
async fn an_execution_trace_shows_each_model_request_and_tool_call_redacted() {
    let f = fixture().await;
    f.llm.push_tool_calls(vec![run_skill(
        "c1",
        "ReadNote",
        json!({"path": "a", "token": "ghp_0123456789abcdefghijABCDEFGHIJ012345"}),
    )]);
    f.llm.push_text("the note says hi");
    let long = "x".repeat(MAX_TEXT + 500);
    let input = format!("read my note; my password=hunter2 {long}");
    let request = TurnRequest {
        execution_id: Some("exec-1".into()),
        ..skills("chat", &input)
    };
    let (outcome, _) = f.run(request).await;
    let sessions = f.agents.sessions();

    let traced = trace::execution_trace(sessions, "chat", "exec-1")
        .await
        .unwrap();
    assert_eq!(traced.turns.len(), 1);
    let turn = &traced.turns[0];
    assert_eq!(turn.turn_id, outcome.turn_id);
    assert_eq!(
        (turn.status.as_str(), turn.agent.as_str()),
        ("completed", "skills")
    );
    assert!(turn.elapsed_ms.is_some());
    assert!(
        turn.usage
            .as_ref()
            .is_some_and(|usage| usage.total_tokens > 0)
    );
    assert_eq!(turn.steps[0].kind, "start");
    let ordinals: Vec<u32> = turn.steps.iter().map(|step| step.ordinal).collect();
    assert_eq!(ordinals, (0..turn.steps.len() as u32).collect::<Vec<_>>());

    // Both model requests are there, each with the messages it was sent with and its usage.
    let models: Vec<&souz_protocol::chat::TraceStep> = turn
        .steps
        .iter()
        .filter(|step| step.kind == "model")
        .collect();
    assert_eq!(
        models.len(),
        2,
        "{:?}",
        turn.steps.iter().map(|s| &s.node).collect::<Vec<_>>()
    );
    let first = models[0];
    assert!(
        models[1]
            .usage
            .as_ref()
            .is_some_and(|usage| usage.total_tokens > 0)
    );
    let asked = first
        .prompt
        .iter()
        .find(|message| message.role == "user" && message.text.starts_with("read my note"))
        .expect("the person's message is in the prompt");
    assert!(asked.truncated && asked.text.chars().count() == MAX_TEXT);
    assert!(
        !asked.text.contains("hunter2") && asked.text.contains("read my note"),
        "secrets are redacted before the text is cut: {}",
        &asked.text[..60]
    );
    let call = &first.added[0].tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("c1", "RunSkillCommand")
    );
    let arguments = call.arguments.to_string();
    assert!(
        arguments.contains("ReadNote") && !arguments.contains("ghp_0123456789"),
        "arguments are a redacted preview: {arguments}"
    );

    // The tool's result is added by a later step, and the second request was sent with it.
    let result_step = turn
        .steps
        .iter()
        .find(|step| step.added.iter().any(|message| message.role == "tool"))
        .expect("a step added the tool result");
    assert!(result_step.ordinal > first.ordinal && result_step.ordinal < models[1].ordinal);
    assert!(
        models[1]
            .prompt
            .iter()
            .any(|message| message.role == "tool")
    );
    assert_eq!(
        models[1].added[0].text, "the note says hi",
        "the final answer is the last request's"
    );
    assert!(first.prompt.iter().all(|message| message.role != "tool"));
}

#[tokio::test]
async fn a_trace_holds_only_the_turns_of_that_execution_and_chat() {
    let f = fixture().await;
    f.llm.push_text("one");
    f.run(TurnRequest {
        execution_id: Some("exec-1".into()),
        ..skills("chat", "first")
    })
    .await;
    f.llm.push_text("two");
    f.run(TurnRequest {
        execution_id: Some("exec-2".into()),
        ..skills("chat", "second")
    })
    .await;
    f.llm.push_text("three");
    f.run(skills("chat", "third")).await;
    let sessions = f.agents.sessions();

    let second = trace::execution_trace(sessions, "chat", "exec-2")
        .await
        .unwrap();
    let inputs: Vec<String> = second
        .turns
        .iter()
        .flat_map(|turn| &turn.steps)
        .flat_map(|step| &step.added)
        .filter(|message| message.role == "user")
        .map(|message| message.text.clone())
        .collect();
    assert!(
        inputs.iter().any(|input| input == "second")
            && !inputs
                .iter()
                .any(|input| input == "first" || input == "third"),
        "{inputs:?}"
    );
    assert!(
        trace::execution_trace(sessions, "other-chat", "exec-2")
            .await
            .unwrap()
            .turns
            .is_empty(),
        "another chat's execution id finds nothing"
    );
    assert!(
        trace::execution_trace(sessions, "chat", "exec-9")
            .await
            .unwrap()
            .turns
            .is_empty()
    );
}
