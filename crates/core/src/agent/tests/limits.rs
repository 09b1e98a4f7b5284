//! Agents that notice: a model repeating a failing call is stopped and the person told why,
//! in their language; the caps on a turn's tool calls and wall time; the classifier's single
//! bounded attempt; the tokens of a turn cut at the output limit.

use std::time::Instant;

use serde_json::json;
use souz_protocol::chat::events::TurnEndReason;
use souz_protocol::language::Language;

use super::*;
use crate::agent::limits::NOT_RUN_AFTER_STOP;
use crate::agent::nodes::classify::MAX_ANSWER_TOKENS;
use crate::llm::Message;

fn with_limits(limits: TurnLimits) -> impl FnOnce(&mut AgentParts) {
    move |parts| parts.limits = limits
}

fn tool_results(history: &[Message]) -> Vec<(String, String, bool)> {
    history
        .iter()
        .filter_map(|message| match message {
            Message::Tool {
                name,
                content,
                is_error,
                ..
            } => Some((name.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// Without its deadline the turn would never end: the test fails instead of hanging.
async fn within_ten_seconds<T>(turn: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .expect("the turn's time limit did not end it")
}

#[tokio::test]
async fn a_model_repeating_a_failing_call_is_stopped_after_the_limit_and_told_why() {
    let f = fixture().await;
    f.llm.push_text("FILES 90");
    // Arguments the tool cannot read: the gate answers the same error every time. The model
    // would go on for ever; two of these answers are never asked for.
    for index in 0..5 {
        f.llm.push_tool_calls(vec![call(
            &format!("c{index}"),
            "ReadNote",
            json!({"path": 42}),
        )]);
    }
    let (outcome, sink) = f.run(graph("chat-repeat", "read my note")).await;

    assert_eq!(
        f.llm.requests().len(),
        4,
        "the classifier, then three calls"
    );
    assert_eq!(f.llm.remaining(), 2);
    let results = tool_results(&outcome.history);
    assert_eq!(results.len(), 3);
    assert!(
        results
            .iter()
            .all(|result| result == &results[0] && result.2),
        "the same failing result each time: {results:?}"
    );
    assert_eq!(outcome.status, TurnStatus::Failed);
    let reply = outcome.reply.clone().unwrap();
    assert_eq!(reply.end_reason(), TurnEndReason::RepeatedToolCall);
    assert!(
        reply
            .text
            .starts_with("I stopped: I called ReadNote 3 times with the same arguments"),
        "{}",
        reply.text
    );
    // The explanation ends the conversation the next turn continues.
    assert_eq!(
        outcome.history.last(),
        Some(&Message::assistant(reply.text.clone()))
    );
    // The turn's record says why it ended.
    let turns = f.agents.sessions().turns("chat-repeat").await.unwrap();
    let error = turns[0].error.clone().unwrap_or_default();
    assert!(
        error.starts_with("repeated_tool_call: ReadNote was called 3 times"),
        "{error}"
    );
    assert!(
        sink.events().iter().all(
            |event| !matches!(event, AgentEvent::ToolCallStarted { tool_call_id, .. } if tool_call_id == "c3")
        ),
        "no fourth call"
    );
}

#[tokio::test]
async fn the_skills_agent_repeating_a_search_is_stopped_and_answers_in_russian() {
    let f = fixture().await;
    for index in 0..4 {
        f.llm.push_tool_calls(vec![call(
            &format!("s{index}"),
            "SearchKnowledge",
            json!({"query": "отпуск"}),
        )]);
    }
    let request = TurnRequest {
        language: Language::Ru,
        ..skills("chat-ru", "когда у меня отпуск?")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(f.llm.requests().len(), 3);
    let reply = outcome.reply.unwrap();
    assert_eq!(reply.end_reason(), TurnEndReason::RepeatedToolCall);
    assert!(
        reply
            .text
            .starts_with("Я остановился: вызвал SearchKnowledge 3 раза"),
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn the_tool_call_cap_ends_the_turn_and_later_calls_of_the_batch_do_not_run() {
    let f = fixture_with(with_limits(TurnLimits {
        max_tool_calls: 2,
        ..TurnLimits::default()
    }))
    .await;
    f.llm.push_tool_calls(vec![
        run_skill("a", "Compute", json!({"path": "1"})),
        run_skill("b", "Compute", json!({"path": "2"})),
        run_skill("c", "Compute", json!({"path": "3"})),
    ]);
    f.llm.push_text("never asked");
    let (outcome, _) = f.run(skills("chat-cap", "compute three things")).await;

    assert_eq!(f.probes.runs(), ["Compute", "Compute"]);
    assert_eq!(f.llm.remaining(), 1, "the model is not asked again");
    let results = tool_results(&outcome.history);
    assert_eq!(results.len(), 3, "every call has a result");
    assert_eq!(results[2].1, NOT_RUN_AFTER_STOP);
    let reply = outcome.reply.unwrap();
    assert_eq!(reply.end_reason(), TurnEndReason::ToolCallLimit);
    assert!(reply.text.contains("2 tool calls"), "{}", reply.text);
}

#[tokio::test]
async fn the_wall_time_cap_stops_a_turn_stuck_in_a_call_and_says_why() {
    let f = fixture_with(with_limits(TurnLimits {
        max_duration: Duration::from_millis(300),
        ..TurnLimits::default()
    }))
    .await;
    // `Wait` never returns on its own.
    f.llm
        .push_tool_calls(vec![run_skill("w", "Wait", json!({"path": "x"}))]);
    f.llm.push_text("never asked");
    let started = Instant::now();
    let (outcome, _) = within_ten_seconds(f.run(skills("chat-time", "wait for it"))).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        f.probes.runs().is_empty(),
        "the call was stopped, not finished"
    );
    assert_eq!(outcome.status, TurnStatus::Failed, "stopped, not cancelled");
    let reply = outcome.reply.clone().unwrap();
    assert_eq!(reply.end_reason(), TurnEndReason::TimeLimit);
    assert!(
        reply.text.starts_with("I stopped: this request ran for"),
        "{}",
        reply.text
    );
    // The interrupted call still has a result, and the explanation comes last.
    let results = tool_results(&outcome.history);
    assert_eq!(results.len(), 1, "{:?}", outcome.history);
    assert_eq!(
        outcome.history.last(),
        Some(&Message::assistant(reply.text.clone()))
    );
    let turns = f.agents.sessions().turns("chat-time").await.unwrap();
    assert_eq!(turns[0].status, TurnStatus::Failed);
    assert!(
        turns[0]
            .error
            .as_deref()
            .is_some_and(|error| error.starts_with("time_limit")),
        "{:?}",
        turns[0].error
    );
}

#[tokio::test]
async fn the_wall_time_cap_also_stops_a_model_that_never_finishes_its_answer() {
    let f = fixture_with(with_limits(TurnLimits {
        max_duration: Duration::from_millis(200),
        ..TurnLimits::default()
    }))
    .await;
    f.llm
        .push_stall(vec![Ok(StreamEvent::TextDelta("Let me think".into()))]);
    let request = TurnRequest {
        language: Language::Ru,
        ..skills("chat-stall", "подумай")
    };
    let (outcome, _) = within_ten_seconds(f.run(request)).await;
    assert_eq!(outcome.status, TurnStatus::Failed);
    let reply = outcome.reply.unwrap();
    assert_eq!(reply.end_reason(), TurnEndReason::TimeLimit);
    assert!(
        reply
            .text
            .starts_with("Я остановился: этот запрос выполнялся 0 секунд"),
        "{}",
        reply.text
    );
    assert!(tool_results(&outcome.history).is_empty());
}

#[tokio::test]
async fn a_failing_classifier_is_asked_once_with_a_bounded_answer() {
    let f = fixture().await;
    f.llm.push_text("not a classification");
    f.llm.push_text("ok");
    f.llm.push_text("still not one");
    f.llm.push_text("ok again");
    f.run(graph("chat-c", "rename the file notes.txt")).await;
    f.run(graph("chat-c", "and the file todo.md")).await;

    let requests = f.llm.requests();
    assert_eq!(
        requests.len(),
        4,
        "one classifier attempt per turn, then the chat"
    );
    for classifier in [&requests[0], &requests[2]] {
        assert_eq!(classifier.max_tokens, Some(MAX_ANSWER_TOKENS));
        assert!(classifier.tools.is_empty());
    }
    assert_eq!(
        requests[1].max_tokens, None,
        "the chat keeps its own budget"
    );
    let mut shown = advertised(&requests[1]);
    shown.retain(|name| !core_names().contains(name));
    assert_eq!(
        shown,
        ["ReadNote", "WriteNote"],
        "FILES, as the local classifier saw it"
    );
}

#[tokio::test]
async fn a_turn_cut_at_the_output_limit_reports_the_tokens_it_used() {
    let f = fixture().await;
    // The classifier is cut, a tool round answers with usage, the final request is cut.
    f.llm.push_error(LlmError::CutOff {
        provider: crate::llm::ProviderId::Local,
        limit: MAX_ANSWER_TOKENS,
        used: Usage {
            input_tokens: 300,
            output_tokens: 32,
            cached_input_tokens: 0,
        },
    });
    f.llm.push_events(vec![
        Ok(StreamEvent::ToolCall(call(
            "c1",
            "ReadNote",
            json!({"path": "a"}),
        ))),
        Ok(StreamEvent::Usage(Usage {
            input_tokens: 400,
            output_tokens: 20,
            cached_input_tokens: 100,
        })),
        Ok(StreamEvent::Finish(FinishReason::ToolCalls)),
    ]);
    f.llm.push_error(LlmError::CutOff {
        provider: crate::llm::ProviderId::Local,
        limit: 64,
        used: Usage {
            input_tokens: 450,
            output_tokens: 64,
            cached_input_tokens: 0,
        },
    });
    let (outcome, _) = f.run(graph("chat-cut", "read the file a")).await;

    let reply = outcome.reply.unwrap();
    assert_eq!(reply.end_reason(), TurnEndReason::CutOff);
    let expected = Usage {
        input_tokens: 1150,
        output_tokens: 116,
        cached_input_tokens: 100,
    };
    assert_eq!(outcome.usage, expected);
    let turns = f.agents.sessions().turns("chat-cut").await.unwrap();
    assert_eq!(
        turns[0].usage,
        Some(expected),
        "the trace reads this record"
    );
}

#[tokio::test]
async fn a_classifier_failing_twice_in_a_row_rests_and_a_good_answer_resets_the_count() {
    let f = fixture().await;
    // Fails, answers, fails, fails (two in a row: it rests), then is not asked.
    for (classifier, reply) in [
        (Some("not a classification"), "one"),
        (Some("FILES 90"), "two"),
        (Some("still not one"), "three"),
        (Some("nor this"), "four"),
        (None, "five"),
    ] {
        if let Some(answer) = classifier {
            f.llm.push_text(answer);
        }
        f.llm.push_text(reply);
    }
    for input in [
        "rename the file a",
        "rename the file b",
        "rename the file c",
        "rename the file d",
        "rename the file e",
    ] {
        let (outcome, _) = f.run(graph("chat-rest", input)).await;
        assert_eq!(outcome.status, TurnStatus::Completed);
    }

    let requests = f.llm.requests();
    assert_eq!(f.llm.remaining(), 0, "every scripted answer was asked for");
    let asked: Vec<bool> = requests
        .iter()
        .map(|request| request.max_tokens == Some(MAX_ANSWER_TOKENS))
        .collect();
    assert_eq!(
        asked,
        [true, false, true, false, true, false, true, false, false],
        "the good answer reset the count; the second failure in a row put it to rest"
    );
    let mut shown = advertised(requests.last().unwrap());
    shown.retain(|name| !core_names().contains(name));
    assert_eq!(
        shown,
        ["ReadNote", "WriteNote"],
        "a resting classifier leaves the local classification"
    );
}

#[tokio::test]
async fn a_summary_cut_at_the_output_limit_still_counts_its_tokens() {
    let f = fixture().await;
    // An answer that fills the window, then both summary attempts are cut.
    f.llm.push_events(vec![
        Ok(StreamEvent::TextDelta("a long answer".into())),
        Ok(StreamEvent::Usage(Usage {
            input_tokens: 3500,
            output_tokens: 100,
            cached_input_tokens: 0,
        })),
        Ok(StreamEvent::Finish(FinishReason::Stop)),
    ]);
    f.llm.push_error(LlmError::CutOff {
        provider: crate::llm::ProviderId::Local,
        limit: 500,
        used: Usage {
            input_tokens: 3700,
            output_tokens: 500,
            cached_input_tokens: 0,
        },
    });
    let request = TurnRequest {
        context_size: Some(4000),
        ..skills("chat-summary-cut", "tell me")
    };
    let (outcome, _) = f.run(request).await;

    assert_eq!(
        f.llm.requests().len(),
        2,
        "one answer and one summary attempt (a cut one is not retried)"
    );
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.reply.unwrap().text, "a long answer");
    let expected = Usage {
        input_tokens: 7200,
        output_tokens: 600,
        cached_input_tokens: 0,
    };
    assert_eq!(outcome.usage, expected, "the cut summary's tokens count");
    let turns = f.agents.sessions().turns("chat-summary-cut").await.unwrap();
    assert_eq!(
        turns[0].usage,
        Some(expected),
        "the trace reads this record"
    );
}
