//! Whole turns: the tool loop through the gate, the skills agent's restriction, the graph
//! agent's node order and classification, approvals denied mid-loop and withdrawn on cancel,
//! the error node, summarization, Knowledge offload inside a turn.

use serde_json::{Value, json};
use souz_protocol::{ApprovalStatus, ExpiryReason, Outcome, Requester, Verdict};

use super::*;
use crate::agent::context::{CONTEXT_PREFIX, is_injected_context};
use crate::agent::nodes::names;
use crate::agent::prompts::{
    CONTEXT_RESET, CUT_OFF, GRAPH_SYSTEM_PROMPT_RU, NO_BALANCE, SKILLS_SYSTEM_PROMPT,
    SUMMARY_PREFIX, SUMMARY_PROMPT, TIMEOUT,
};
use crate::approvals::audit::AuditQuery;
use crate::llm::{Message, Role};

fn tool_message(history: &[Message], index: usize) -> (&str, &str, bool) {
    match &history[index] {
        Message::Tool {
            name,
            content,
            is_error,
            ..
        } => (name, content, *is_error),
        other => panic!("message {index} is not a tool result: {other:?}"),
    }
}

/// The content and error flag of the tool result for the model's call `id`.
fn tool_result<'a>(history: &'a [Message], id: &str) -> (&'a str, bool) {
    history
        .iter()
        .find_map(|message| match message {
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } if tool_call_id == id => Some((content.as_str(), *is_error)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id} in {history:?}"))
}

#[tokio::test]
async fn the_skills_agent_finds_and_runs_a_catalog_tool_through_the_gate() {
    let f = fixture().await;
    f.llm.push_tool_calls(vec![call(
        "c1",
        "GetSkillByName",
        json!({"skillId": "ReadNote"}),
    )]);
    f.llm.push_tool_calls(vec![run_skill(
        "c2",
        "ReadNote",
        json!({"path": "todo.md"}),
    )]);
    f.llm.push_text("Your note says: ReadNote done for todo.md");
    let (outcome, sink) = f.run(skills("chat-1", "What is in todo.md?")).await;

    assert_eq!(outcome.status, TurnStatus::Completed);
    let reply = outcome.reply.clone().unwrap();
    assert_eq!(reply.text, "Your note says: ReadNote done for todo.md");
    assert_eq!(f.probes.runs(), ["ReadNote"]);
    assert_eq!(f.llm.remaining(), 0);

    // History layout of the original (§2.4): system with inventory, context, the person's
    // message, then the loop.
    let history = &outcome.history;
    let roles: Vec<Role> = history.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    let Message::System { content: system } = &history[0] else {
        unreachable!()
    };
    assert!(system.starts_with(SKILLS_SYSTEM_PROMPT));
    assert!(system.contains("<skill_inventory>"));
    assert!(is_injected_context(&history[1]));
    assert_eq!(history[2], Message::user("What is in todo.md?"));
    let (name, content, is_error) = tool_message(history, 4);
    assert_eq!(name, "GetSkillByName");
    assert!(!is_error);
    let lookup: Value = serde_json::from_str(content).unwrap();
    assert_eq!(lookup["skill"]["skillId"], "ReadNote");
    assert_eq!(lookup["error"], Value::Null);
    let (name, content, is_error) = tool_message(history, 6);
    assert_eq!(
        (name, content, is_error),
        ("RunSkillCommand", "ReadNote done for todo.md", false),
        "the delegated result carries the outer call's name"
    );

    // Every request showed exactly the seven core tools.
    for request in f.llm.requests() {
        assert_eq!(advertised(&request), core_names());
    }
    // The catalog call went through the gate as the chat.
    // Calls that changed nothing are stored in batches, after their answer.
    f.gate.flushed().await;
    let audit = f
        .gate
        .approvals()
        .audit(AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].tool, "ReadNote");
    assert_eq!(
        audit[0].requester,
        Requester::Chat {
            chat_id: "chat-1".into()
        }
    );
    assert_eq!(audit[0].outcome, Outcome::Succeeded);

    let kinds: Vec<&str> = sink
        .events()
        .iter()
        .map(|event| match event {
            AgentEvent::ToolCallStarted { .. } => "started",
            AgentEvent::ToolCallFinished { .. } => "finished",
            AgentEvent::TextDelta { attempt: 3, .. } => "text",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(kinds[..4], ["started", "finished", "started", "finished"]);
    assert!(kinds[4..].iter().all(|kind| *kind == "text"));
    let text: String = sink
        .events()
        .iter()
        .filter_map(|event| match event {
            AgentEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, reply.text, "deltas add up to the answer");
}

#[tokio::test]
async fn the_skills_agent_can_neither_see_nor_run_catalog_tools_directly() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![call("c1", "ReadNote", json!({"path": "secret.txt"}))]);
    f.llm.push_text("I cannot do that directly.");
    let (outcome, sink) = f.run(skills("chat-1", "read secret.txt")).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert!(f.probes.runs().is_empty(), "nothing ran");
    let (name, content, is_error) = tool_message(&outcome.history, 4);
    assert_eq!(name, "ReadNote");
    assert!(is_error);
    assert!(content.contains("no tool named `ReadNote`"), "{content}");
    assert!(sink.events().iter().any(
        |event| matches!(event, AgentEvent::ToolCallFailed { tool, .. } if tool == "ReadNote")
    ));
    // Calls that changed nothing are stored in batches, after their answer.
    f.gate.flushed().await;
    let audit = f
        .gate
        .approvals()
        .audit(AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert!(audit.is_empty(), "the gate never saw the call");
}

#[tokio::test]
async fn the_graph_agent_runs_its_nodes_in_order_and_narrows_only_what_is_advertised() {
    let f = fixture().await;
    f.llm.push_text("CALCULATOR 90");
    f.llm
        .push_tool_calls(vec![call("c1", "ReadNote", json!({"path": "a.txt"}))]);
    f.llm.push_text("done");
    let (outcome, _) = f
        .run(graph("chat-g", "what is 2 + 2, and read a.txt"))
        .await;
    assert_eq!(outcome.status, TurnStatus::Completed);

    let requests = f.llm.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0].tools.is_empty(), "the classifier gets no tools");
    let Message::System { content } = &requests[0].messages[0] else {
        panic!("the classifier prompt comes first");
    };
    assert!(content.contains("CALCULATOR") && content.contains("FILES"));
    assert!(!content.contains("Forbidden"), "only categories, not tools");
    let mut expected = vec![
        "Compute",
        "GetKnowledge",
        "GetSkillByName",
        "RunSkillCommand",
        "SearchKnowledge",
        "SearchMemory",
    ];
    expected.sort_unstable();
    assert_eq!(advertised(&requests[1]), expected);
    assert_eq!(
        f.probes.runs(),
        ["ReadNote"],
        "executable keeps every enabled catalog tool"
    );

    let turns = f.agents.sessions().turns("chat-g").await.unwrap();
    let steps = f.agents.sessions().steps(&turns[0].turn_id).await.unwrap();
    let nodes: Vec<&str> = steps.iter().map(|step| step.node.as_str()).collect();
    assert_eq!(
        nodes,
        [
            "turn.start",
            names::INPUT,
            names::MEMORY,
            names::CLASSIFY,
            names::INVENTORY,
            names::MCP,
            names::INFORMATION,
            names::CHAT,
            names::TOOLS,
            names::CHAT,
            names::FINISH,
        ]
    );
    let classified = steps
        .iter()
        .find(|step| step.node == names::CLASSIFY)
        .unwrap();
    assert_eq!(classified.data["categories"], json!(["CALCULATOR"]));
}

#[tokio::test]
async fn the_graph_agent_speaks_the_interface_language_and_the_skills_agent_stays_english() {
    let f = fixture().await;
    f.llm.push_text("CALCULATOR 90");
    f.llm.push_text("готово");
    f.llm.push_text("done");
    let russian = |request: TurnRequest| TurnRequest {
        language: souz_protocol::language::Language::Ru,
        ..request
    };
    f.run(russian(graph("chat-ru", "сколько будет 2 + 2")))
        .await;
    f.run(russian(skills("chat-ru-s", "сколько будет 2 + 2")))
        .await;
    let requests = f.llm.requests();
    let system = |index: usize| match &requests[index].messages[0] {
        Message::System { content } => content.clone(),
        other => panic!("a system prompt comes first, not {other:?}"),
    };
    assert!(
        system(1).starts_with(GRAPH_SYSTEM_PROMPT_RU),
        "{}",
        system(1)
    );
    assert!(system(2).starts_with(SKILLS_SYSTEM_PROMPT), "{}", system(2));
}

#[tokio::test]
async fn an_unsure_classifier_that_disagrees_shows_every_category() {
    let f = fixture().await;
    // Local patterns see FILES first; the model says WEB_SEARCH with low confidence.
    f.llm.push_text("WEB_SEARCH 30");
    f.llm.push_text("ok");
    f.run(graph("chat-c", "rename the file notes.txt")).await;
    let shown = advertised(&f.llm.requests()[1]);
    for tool in ["Compute", "FetchPage", "ReadNote", "Wait", "WriteNote"] {
        assert!(shown.iter().any(|name| name == tool), "{tool} in {shown:?}");
    }
    assert!(
        !shown.iter().any(|name| name == "Forbidden"),
        "a tool the policy always refuses is disabled"
    );
}

#[tokio::test]
async fn a_denied_approval_mid_loop_is_a_result_the_model_reads() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "WriteNote", json!({"path": "a.md"}))]);
    f.llm
        .push_tool_calls(vec![run_skill("c2", "WriteNote", json!({"path": "b.md"}))]);
    f.llm.push_text("a.md was refused, b.md is written");
    let (_, sink, task) = f
        .spawn(
            skills("chat-d", "write two notes"),
            CancellationToken::new(),
        )
        .await;
    let first = sink
        .wait_for(|event| matches!(event, AgentEvent::ApprovalRequested { tool_call_id, .. } if tool_call_id == "c1"))
        .await;
    let AgentEvent::ApprovalRequested { approval_id, .. } = first else {
        unreachable!()
    };
    assert!(f.probes.runs().is_empty(), "nothing runs before a decision");
    f.decide(&approval_id, Verdict::Deny).await;
    let second = sink
        .wait_for(|event| matches!(event, AgentEvent::ApprovalRequested { tool_call_id, .. } if tool_call_id == "c2"))
        .await;
    let AgentEvent::ApprovalRequested { approval_id, .. } = second else {
        unreachable!()
    };
    f.decide(&approval_id, Verdict::Approve).await;
    let outcome = task.await.unwrap();

    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(f.probes.runs(), ["WriteNote"], "only the approved call ran");
    let (_, denied, is_error) = tool_message(&outcome.history, 4);
    assert!(is_error);
    assert!(denied.contains("denied"), "{denied}");
    let (_, written, is_error) = tool_message(&outcome.history, 6);
    assert_eq!((written, is_error), ("WriteNote done for b.md", false));
    let third_request = &f.llm.requests()[2];
    assert!(
        third_request
            .messages
            .iter()
            .any(|message| matches!(message,
            Message::Tool { tool_call_id, is_error: true, .. } if tool_call_id == "c1")),
        "the model saw the denial"
    );
    assert!(sink.events().iter().any(|event| matches!(event,
        AgentEvent::ToolCallFailed { tool_call_id, .. } if tool_call_id == "c1")));

    // Each approval is reported with what it is about, then how it ended, before the call's
    // own end; a result carries its preview.
    let seen: Vec<String> = sink
        .events()
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ApprovalRequested {
                tool_call_id,
                tool,
                summary,
                ..
            } => Some(format!("asked {tool_call_id} {tool}: {summary}")),
            AgentEvent::ApprovalResolved {
                tool_call_id,
                tool,
                status,
                decision,
                expiry_reason,
                ..
            } => Some(format!(
                "resolved {tool_call_id} {tool}: {} via {} {expiry_reason:?}",
                status.as_str(),
                decision
                    .as_ref()
                    .map_or("-", |decision| decision.via.as_str()),
            )),
            AgentEvent::ToolCallFinished {
                tool_call_id,
                result_preview,
                ..
            } => Some(format!("finished {tool_call_id}: {result_preview}")),
            AgentEvent::ToolCallFailed { tool_call_id, .. } => {
                Some(format!("failed {tool_call_id}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        [
            "asked c1 WriteNote: WriteNote a.md",
            "resolved c1 WriteNote: denied via test None",
            "failed c1",
            "asked c2 WriteNote: WriteNote b.md",
            "resolved c2 WriteNote: approved via test None",
            "finished c2: \"WriteNote done for b.md\"",
        ]
    );
}

#[tokio::test]
async fn an_expired_approval_is_reported_with_its_reason() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "WriteNote", json!({"path": "a.md"}))]);
    f.llm.push_text("nobody answered");
    let (_, sink, task) = f
        .spawn(skills("chat-e", "write a note"), CancellationToken::new())
        .await;
    let AgentEvent::ApprovalRequested { approval_id, .. } = sink
        .wait_for(|event| matches!(event, AgentEvent::ApprovalRequested { .. }))
        .await
    else {
        unreachable!()
    };
    f.gate
        .approvals()
        .expire(&approval_id, ExpiryReason::Timeout)
        .await
        .unwrap();
    let outcome = task.await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert!(f.probes.runs().is_empty());
    let resolved = sink
        .events()
        .into_iter()
        .find(|event| matches!(event, AgentEvent::ApprovalResolved { .. }));
    let Some(AgentEvent::ApprovalResolved {
        tool_call_id,
        approval_id: resolved_id,
        tool,
        status,
        decision,
        expiry_reason,
        ..
    }) = resolved
    else {
        panic!("no resolution in {:?}", sink.events());
    };
    assert_eq!(
        (tool_call_id.as_str(), resolved_id, tool.as_str(), status),
        ("c1", approval_id, "WriteNote", ApprovalStatus::Expired)
    );
    assert_eq!(expiry_reason, Some(ExpiryReason::Timeout));
    assert_eq!(
        decision.map(|decision| decision.via),
        Some("timeout".into())
    );
}

#[tokio::test]
async fn results_are_previewed_redacted_and_shortened() {
    let f = fixture().await;
    f.llm.push_tool_calls(vec![run_skill(
        "c1",
        "ReadNote",
        json!({"path": "password=hunter2-secret"}),
    )]);
    f.llm
        .push_tool_calls(vec![run_skill("c2", "ReadNote", json!({"size": 5000}))]);
    f.llm.push_text("read");
    let (_, sink) = f.run(skills("chat-p", "read")).await;
    let previews: Vec<Value> = sink
        .events()
        .into_iter()
        .filter_map(|event| match event {
            AgentEvent::ToolCallFinished { result_preview, .. } => Some(result_preview),
            _ => None,
        })
        .collect();
    assert_eq!(previews.len(), 2);
    assert_eq!(previews[0], json!("ReadNote done for password=[REDACTED]"));
    let long = previews[1].as_str().unwrap();
    assert!(
        long.ends_with("...") && long.chars().count() == 160,
        "{long}"
    );
}

#[tokio::test]
async fn cancelling_a_turn_withdraws_its_pending_approval() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "WriteNote", json!({"path": "a.md"}))]);
    let cancel = CancellationToken::new();
    let (_, sink, task) = f
        .spawn(skills("chat-x", "write a note"), cancel.clone())
        .await;
    let AgentEvent::ApprovalRequested { approval_id, .. } = sink
        .wait_for(|event| matches!(event, AgentEvent::ApprovalRequested { .. }))
        .await
    else {
        unreachable!()
    };
    cancel.cancel();
    let outcome = task.await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert!(outcome.reply.is_none());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let approval = f.gate.approvals().get(&approval_id).await.unwrap();
        if approval.status != ApprovalStatus::Pending {
            assert_eq!(approval.status, ApprovalStatus::Expired);
            assert_eq!(approval.expiry_reason, Some(ExpiryReason::Withdrawn));
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the approval stayed pending"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(f.probes.runs().is_empty());
    let turns = f.agents.sessions().turns("chat-x").await.unwrap();
    assert_eq!(turns[0].status, TurnStatus::Cancelled);
    assert!(!f.agents.is_running("chat-x"), "the chat is free again");
}

#[tokio::test]
async fn the_error_node_maps_provider_failures_like_the_original() {
    let status = |status: u16, message: &str| LlmError::Status {
        provider: crate::llm::ProviderId::OpenAi,
        status,
        message: message.into(),
        retry_after: None,
    };
    let cases: Vec<(LlmError, String, &str, bool)> = vec![
        (
            status(413, "too big"),
            CONTEXT_RESET.into(),
            "context_reset",
            true,
        ),
        (
            status(402, r#"{"balance":0}"#),
            format!("{NO_BALANCE}\n\n```json\n{{\"balance\":0}}\n```"),
            "no_balance",
            true,
        ),
        (
            status(402, "no money"),
            format!("{NO_BALANCE}\n\nno money"),
            "no_balance",
            true,
        ),
        (
            LlmError::Timeout {
                provider: crate::llm::ProviderId::OpenAi,
                after: Duration::from_secs(60),
            },
            TIMEOUT.into(),
            "timeout",
            false,
        ),
        (
            status(500, "upstream said request_timeout=30"),
            TIMEOUT.into(),
            "timeout",
            false,
        ),
        (
            LlmError::CutOff {
                provider: crate::llm::ProviderId::Local,
                limit: 64,
                used: Usage::default(),
            },
            CUT_OFF.replace("{tokens}", "64 output tokens"),
            "cut_off",
            false,
        ),
        (
            status(500, "boom"),
            "openai answered HTTP 500: boom".into(),
            "model_error",
            false,
        ),
    ];
    for (index, (error, text, code, clears)) in cases.into_iter().enumerate() {
        let f = fixture().await;
        f.llm.push_error(error);
        let earlier = vec![
            Message::system("old"),
            Message::user("earlier"),
            Message::assistant("reply"),
        ];
        let request = TurnRequest {
            history: Some(earlier.clone()),
            ..skills(&format!("chat-{index}"), "hello")
        };
        let (outcome, _) = f.run(request).await;
        let reply = outcome.reply.unwrap();
        assert_eq!(reply.text, text, "case {index}");
        assert_eq!(
            reply.failure.as_ref().map(|failure| failure.code.as_str()),
            Some(code)
        );
        assert_eq!(outcome.status, TurnStatus::Failed);
        assert_eq!(
            outcome.history.is_empty(),
            clears,
            "case {index}: {:?}",
            outcome.history
        );
        assert_eq!(
            f.llm.requests().len(),
            1,
            "a failed chat request is not retried"
        );
    }
}

/// The window of the summarization tests; the system prompt, inventory and context take about
/// 550 of its tokens, and it is summarized at 3200.
const WINDOW: u32 = 4000;

/// Text that estimates to `tokens` tokens (four characters each).
fn long_text(tokens: usize) -> String {
    "word ".repeat(tokens * 4 / 5)
}

#[tokio::test]
async fn a_history_at_80_percent_of_the_window_is_summarized() {
    let f = fixture().await;
    f.llm.push_events(bare_text(&long_text(3000)));
    f.llm.push_text("GOAL: keep notes");
    let request = TurnRequest {
        context_size: Some(WINDOW),
        ..skills("chat-s", "tell me everything")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(
        outcome.reply.unwrap().text,
        long_text(3000),
        "the answer is still the reply"
    );
    let requests = f.llm.requests();
    assert_eq!(requests.len(), 2);
    let summary_request = &requests[1];
    assert!(summary_request.tools.is_empty());
    assert_eq!(
        summary_request.messages.last(),
        Some(&Message::user(SUMMARY_PROMPT))
    );
    assert_eq!(
        outcome.history,
        [
            Message::system(SKILLS_SYSTEM_PROMPT),
            Message::assistant(format!("{SUMMARY_PREFIX}:\nGOAL: keep notes")),
            Message::assistant(long_text(3000)),
        ]
    );
}

#[tokio::test]
async fn a_history_under_the_threshold_is_left_alone() {
    let f = fixture().await;
    f.llm.push_events(bare_text(&long_text(1000)));
    let request = TurnRequest {
        context_size: Some(WINDOW),
        ..skills("chat-s", "hi")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(f.llm.requests().len(), 1);
    assert_eq!(outcome.history.len(), 4);
}

#[tokio::test]
async fn the_providers_token_count_wins_over_the_character_estimate() {
    let f = fixture().await;
    // A short history, but the provider counted 3150 + 60 tokens: just over 80 % of 4000.
    f.llm.push_events(vec![
        Ok(StreamEvent::TextDelta("short".into())),
        Ok(StreamEvent::Usage(Usage {
            input_tokens: 3150,
            output_tokens: 60,
            cached_input_tokens: 0,
        })),
        Ok(StreamEvent::Finish(FinishReason::Stop)),
    ]);
    f.llm.push_text("summary");
    let request = TurnRequest {
        context_size: Some(WINDOW),
        ..skills("chat-u", "hi")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(
        f.llm.requests().len(),
        2,
        "summarized on the provider's count"
    );
    assert_eq!(outcome.history.len(), 3);
    assert!(outcome.usage.input_tokens >= 3150);
}

#[tokio::test]
async fn a_summary_that_fails_twice_keeps_the_answer_and_the_whole_history() {
    let f = fixture().await;
    f.llm.push_events(bare_text(&long_text(3000)));
    for _ in 0..2 {
        f.llm.push_error(LlmError::Interrupted {
            provider: None,
            detail: "cut".into(),
        });
    }
    let request = TurnRequest {
        context_size: Some(WINDOW),
        ..skills("chat-f", "tell me")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(
        f.llm.requests().len(),
        3,
        "one answer, two summary attempts"
    );
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.reply.unwrap().text, long_text(3000));
    assert_eq!(outcome.history.len(), 4, "nothing was summarized");
    assert_eq!(
        f.agents
            .sessions()
            .history("chat-f")
            .await
            .unwrap()
            .unwrap(),
        outcome.history
    );
}

#[tokio::test]
async fn large_results_are_offloaded_and_read_back_inline() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "ReadNote", json!({"size": 20_000}))]);
    let (outcome, _) = {
        // The knowledge id is only known once the first call ran: script the rest live.
        let live = f.llm.push_live();
        let request = skills("chat-k", "read the big note");
        let (_, sink, task) = f.spawn(request, CancellationToken::new()).await;
        f.requests_reach(2).await;
        let reference: Value = {
            let messages = &f.llm.requests()[1].messages;
            let Some(Message::Tool { content, .. }) = messages.last() else {
                panic!("the tool result comes last");
            };
            serde_json::from_str(content).unwrap()
        };
        assert_eq!(reference["sourceTool"], "RunSkillCommand");
        assert_eq!(reference["originalLength"], 20_000);
        let id = reference["knowledgeId"].as_str().unwrap().to_owned();
        f.llm.push_text("It is 20000 n's.");
        live.send(Ok(StreamEvent::ToolCall(call(
            "c2",
            "GetKnowledge",
            json!({"knowledgeId": id}),
        ))))
        .unwrap();
        live.send(Ok(StreamEvent::Finish(FinishReason::ToolCalls)))
            .unwrap();
        drop(live);
        (task.await.unwrap(), sink)
    };
    assert_eq!(outcome.status, TurnStatus::Completed);
    let (name, content, _) = tool_message(&outcome.history, 6);
    assert_eq!(name, "GetKnowledge");
    assert!(content.len() > 20_000, "a Knowledge read stays inline");
    let read: Value = serde_json::from_str(content).unwrap();
    assert_eq!(read["text"].as_str().unwrap(), "n".repeat(20_000));
}

#[tokio::test]
async fn search_memory_answers_memory_unavailable() {
    let f = fixture().await;
    f.llm.push_tool_calls(vec![call(
        "c1",
        "SearchMemory",
        json!({"semanticQuery": "favourite editor", "lexicalHints": ["editor"]}),
    )]);
    f.llm.push_text("I do not remember.");
    let (outcome, _) = f.run(skills("chat-m", "which editor do I like?")).await;
    let (_, content, is_error) = tool_message(&outcome.history, 4);
    assert!(is_error);
    let answer: Value = serde_json::from_str(content).unwrap();
    assert_eq!(answer["facts"], json!([]));
    assert_eq!(answer["error"]["code"], "memory_unavailable");
}

#[tokio::test]
async fn injected_context_is_replaced_each_turn_and_the_person_message_stays() {
    let f = fixture().await;
    f.llm.push_text("first");
    let (first, _) = f.run(skills("chat-h", "hello")).await;
    f.llm.push_text("second");
    // The person's own message happens to look like the context envelope.
    let lookalike = format!("{CONTEXT_PREFIX}my own text</context>");
    let (second, _) = f.run(skills("chat-h", &lookalike)).await;
    let injected = second
        .history
        .iter()
        .filter(|message| is_injected_context(message))
        .count();
    assert_eq!(
        injected, 2,
        "this turn's context and the person's look-alike"
    );
    assert_eq!(
        second.history[second.history.len() - 2],
        Message::user(lookalike)
    );
    assert_eq!(
        second.history[..3],
        first.history[..1]
            .iter()
            .cloned()
            .chain([Message::user("hello"), Message::assistant("first")])
            .collect::<Vec<_>>()[..],
        "the previous turn's context message is gone"
    );
}

#[tokio::test]
async fn one_turn_per_chat_and_a_clear_error_for_bad_requests() {
    let f = fixture().await;
    f.llm.push_stall(vec![]);
    let (_, _, task) = f
        .spawn(skills("busy", "one"), CancellationToken::new())
        .await;
    let second = f
        .agents
        .start_turn(skills("busy", "two"))
        .await
        .unwrap_err();
    assert!(matches!(second, AgentError::Busy { .. }), "{second}");
    assert!(matches!(
        f.agents.start_turn(skills(" ", "x")).await.unwrap_err(),
        AgentError::InvalidChat
    ));
    assert!(matches!(
        f.agents
            .start_turn(skills("other", "  "))
            .await
            .unwrap_err(),
        AgentError::EmptyInput
    ));
    assert!(f.agents.cancel_turn("busy").is_some());
    assert_eq!(task.await.unwrap().status, TurnStatus::Cancelled);
    assert!(f.agents.cancel_turn("busy").is_none());
}

#[tokio::test]
async fn ask_user_ends_the_turn_with_a_question_and_the_answer_continues_it() {
    let f = fixture().await;
    // Without ask_user the tool is neither offered nor runnable.
    f.llm
        .push_tool_calls(vec![call("c0", "AskUser", json!({"question": "Which?"}))]);
    f.llm.push_text("ok");
    let (outcome, _) = f.run(skills("chat-0", "hello")).await;
    assert_eq!(outcome.reply.unwrap().question, None);
    assert!(!advertised(&f.llm.requests()[0]).contains(&"AskUser".to_owned()));

    f.llm.push_tool_calls(vec![call(
        "c1",
        "AskUser",
        json!({"question": "Apples or bananas?", "choices": ["Apples", "Bananas"]}),
    )]);
    let request = TurnRequest {
        ask_user: true,
        ..skills("chat-1", "Buy fruit")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    // A chat turn's skills agent offers exactly its seven core tools and AskUser.
    let mut expected = core_names();
    expected.push("AskUser".to_owned());
    expected.sort();
    assert_eq!(advertised(f.llm.requests().last().unwrap()), expected);
    let reply = outcome.reply.clone().unwrap();
    let question = reply.question.expect("the turn ended with a question");
    assert_eq!(question.title, "Apples or bananas?");
    assert_eq!(question.choices.len(), 2);
    assert_eq!(reply.text, "Apples or bananas?");
    let last = outcome.history.len() - 1;
    let (name, content, is_error) = tool_message(&outcome.history, last);
    assert_eq!((name, is_error), ("AskUser", false));
    assert!(content.contains("wait"));
    assert_eq!(f.llm.remaining(), 0, "no model request after the question");

    // The answer is the next turn's input, on the same history.
    f.llm.push_text("Bananas it is.");
    let request = TurnRequest {
        ask_user: true,
        ..skills("chat-1", "Answer to \"Apples or bananas?\": Bananas")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(outcome.reply.unwrap().text, "Bananas it is.");
    let sent = f.llm.requests().last().unwrap().messages.clone();
    assert!(
        sent.iter()
            .any(|m| matches!(m, Message::Tool { name, .. } if name == "AskUser")),
        "the question stays in the history"
    );
}

#[tokio::test]
async fn enabled_tools_limit_what_the_graph_agent_shows_and_runs() {
    let f = fixture().await;
    f.llm.push_text("FILES 90");
    f.llm.push_tool_calls(vec![
        call("c1", "WriteNote", json!({"path": "a.md"})),
        call("c2", "ReadNote", json!({"path": "b.md"})),
    ]);
    f.llm.push_text("done");
    let request = TurnRequest {
        enabled_tools: Some(vec!["ReadNote".into(), "Compute".into()]),
        ..graph("chat-g", "read and write notes")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    let mut shown = advertised(&f.llm.requests()[1]);
    shown.retain(|name| !core_names().contains(name));
    assert_eq!(shown, ["ReadNote"], "FILES, without the disabled WriteNote");
    let (refused, is_error) = tool_result(&outcome.history, "c1");
    assert!(
        is_error && refused.contains("no tool named `WriteNote`"),
        "{refused}"
    );
    assert_eq!(f.probes.runs(), ["ReadNote"]);
}

#[tokio::test]
async fn enabled_tools_limit_the_skills_inventory_and_run_skill_command() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "WriteNote", json!({"path": "a.md"}))]);
    f.llm.push_text("WriteNote is off");
    let request = TurnRequest {
        enabled_tools: Some(vec!["ReadNote".into()]),
        ..skills("chat-s", "write a note")
    };
    let (outcome, sink) = f.run(request).await;
    let Message::System { content } = &f.llm.requests()[0].messages[0] else {
        panic!("the system message comes first");
    };
    assert!(content.contains("- FILES: ReadNote\n"), "{content}");
    assert!(
        !content.contains("WriteNote") && !content.contains("Compute"),
        "{content}"
    );
    let (refused, is_error) = tool_result(&outcome.history, "c1");
    assert!(is_error && refused.contains("skill_disabled"), "{refused}");
    assert!(f.probes.runs().is_empty());
    assert!(
        !sink
            .events()
            .iter()
            .any(|event| matches!(event, AgentEvent::ApprovalRequested { .. })),
        "nobody is asked about a disabled tool"
    );
}

#[tokio::test]
async fn the_request_timeout_bounds_each_model_request() {
    let f = fixture().await;
    f.llm
        .push_stall(vec![Ok(StreamEvent::TextDelta("Let me".into()))]);
    let request = TurnRequest {
        request_timeout: Some(Duration::from_millis(300)),
        ..skills("chat-t", "hi")
    };
    let started = std::time::Instant::now();
    let (outcome, _) = f.run(request).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let reply = outcome.reply.unwrap();
    let failure = reply.failure.unwrap();
    assert!(
        failure
            .detail
            .contains("within the request timeout (300 ms)"),
        "{failure:?}"
    );
}

#[tokio::test]
async fn a_failed_request_is_answered_in_the_interface_language() {
    let russian = |chat: &str| TurnRequest {
        language: souz_protocol::language::Language::Ru,
        ..skills(chat, "привет")
    };
    let f = fixture().await;
    f.llm.push_error(LlmError::Timeout {
        provider: crate::llm::ProviderId::OpenAi,
        after: Duration::from_secs(60),
    });
    let (outcome, _) = f.run(russian("chat-ru-timeout")).await;
    let reply = outcome.reply.unwrap();
    assert_eq!(reply.text, "Модель не ответила за отведённое время.");
    assert_eq!(
        reply.failure.map(|failure| failure.code.as_str()),
        Some("timeout")
    );

    f.llm.push_error(LlmError::Status {
        provider: crate::llm::ProviderId::OpenAi,
        status: 402,
        message: "no money".into(),
        retry_after: None,
    });
    let (outcome, _) = f.run(russian("chat-ru-balance")).await;
    assert_eq!(
        outcome.reply.unwrap().text,
        "На счёте выбранного провайдера нет средств.\n\nno money",
        "the provider's own words stay as they came"
    );

    // The limit is counted as Russian counts: 64 токена, 25 токенов.
    for (limit, counted) in [(64, "64 токена"), (25, "25 токенов")] {
        f.llm.push_error(LlmError::CutOff {
            provider: crate::llm::ProviderId::Local,
            limit,
            used: Usage::default(),
        });
        let (outcome, _) = f.run(russian(&format!("chat-ru-cut-{limit}"))).await;
        let text = outcome.reply.unwrap().text;
        assert!(
            text.starts_with(&format!("Ответ модели не уместился в {counted}, ")),
            "{text}"
        );
    }

    // The other failures: a sentence by their kind, the provider's own words kept.
    let cases = [
        (
            LlmError::Transport {
                provider: crate::llm::ProviderId::Ollama,
                message: "connection refused".into(),
            },
            "Не удалось связаться с ollama: connection refused. Проверьте сеть",
        ),
        (
            LlmError::Status {
                provider: crate::llm::ProviderId::OpenAi,
                status: 500,
                message: "boom".into(),
                retry_after: None,
            },
            "openai отказал в запросе (HTTP 500): boom",
        ),
        (
            LlmError::MissingKey {
                provider: crate::llm::ProviderId::Anthropic,
            },
            "Нет API-ключа для anthropic: добавьте его командой `souz keys set anthropic`",
        ),
        (
            LlmError::Malformed {
                provider: crate::llm::ProviderId::OpenAi,
                detail: "no choices".into(),
            },
            "openai прислал ответ в непонятном формате: no choices",
        ),
    ];
    for (index, (error, start)) in cases.into_iter().enumerate() {
        f.llm.push_error(error);
        let (outcome, _) = f.run(russian(&format!("chat-ru-other-{index}"))).await;
        let reply = outcome.reply.unwrap();
        assert!(reply.text.starts_with(start), "{}", reply.text);
        assert_eq!(
            reply.failure.map(|failure| failure.code.as_str()),
            Some("model_error")
        );
    }
}

#[tokio::test]
async fn a_lost_codex_sign_in_is_said_in_the_persons_language() {
    let f = fixture().await;
    let sign_in = || LlmError::SignInRequired {
        provider: crate::llm::ProviderId::Codex,
    };
    f.llm.push_error(sign_in());
    let request = TurnRequest {
        language: souz_protocol::language::Language::Ru,
        ..skills("chat-ru-codex", "привет")
    };
    let (outcome, _) = f.run(request).await;
    let reply = outcome.reply.unwrap();
    assert_eq!(
        reply.text,
        "Нужно снова войти в аккаунт codex: выполните `souz login codex` или нажмите «Войти \
         через ChatGPT» в настройках веб-интерфейса (`souz ui --open`)."
    );
    let failure = reply.failure.unwrap();
    assert_eq!(failure.code.as_str(), "model_error");
    assert!(failure.detail.contains("souz login codex"), "{failure:?}");

    // In English, the error's own words.
    f.llm.push_error(sign_in());
    let (outcome, _) = f.run(skills("chat-en-codex", "hello")).await;
    let text = outcome.reply.unwrap().text;
    assert!(
        text.starts_with("codex needs you to sign in again: run `souz login codex`"),
        "{text}"
    );
}
