//! Steering races of the skills agent, forced deterministically: these tests run on the
//! single-threaded test runtime, so the turn's task only moves when the test awaits. Events
//! sent to the fake model and input submitted in one synchronous stretch are therefore ready
//! *at the same poll* of the chat node.

use serde_json::json;

use super::*;
use crate::agent::steering::SteerError;
use crate::llm::Message;

fn texts(sink: &Recorder) -> Vec<(u64, String)> {
    sink.events()
        .into_iter()
        .filter_map(|event| match event {
            AgentEvent::TextDelta { attempt, text } => Some((attempt, text)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn input_during_an_answer_cancels_only_that_request() {
    let f = fixture().await;
    let live = f.llm.push_live();
    f.llm.push_text("Bonjour !");
    let (steering, sink, task) = f
        .spawn(skills("s1", "greet me"), CancellationToken::new())
        .await;
    f.requests_reach(1).await;
    live.send(Ok(StreamEvent::TextDelta("Hel".into()))).unwrap();
    sink.wait_for(|event| matches!(event, AgentEvent::TextDelta { .. }))
        .await;
    assert_eq!(steering.submit("in French, please"), Ok(1));
    let outcome = task.await.unwrap();

    assert!(live.is_closed(), "the interrupted request was dropped");
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.reply.unwrap().text, "Bonjour !");
    let requests = f.llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].messages.last(),
        Some(&Message::user("in French, please"))
    );
    assert!(
        !outcome.history.iter().any(
            |message| matches!(message, Message::Assistant { content, .. } if content == "Hel")
        ),
        "the interrupted answer never enters the history"
    );
    let events = sink.events();
    let discarded = events
        .iter()
        .position(|event| *event == AgentEvent::AnswerDiscarded { attempt: 1 })
        .unwrap();
    let applied = events
        .iter()
        .position(|event| *event == AgentEvent::InputApplied { revision: 1 })
        .unwrap();
    assert!(discarded < applied);
    assert_eq!(texts(&sink)[0], (1, "Hel".to_owned()));
    assert!(texts(&sink)[1..].iter().all(|(attempt, _)| *attempt == 2));
    assert!(outcome.undelivered.is_empty());
}

#[tokio::test]
async fn an_answer_completing_as_input_arrives_wins_the_tie_then_the_input_is_applied() {
    let f = fixture().await;
    let live = f.llm.push_live();
    f.llm.push_text("Noted, and here is the longer answer.");
    let (steering, sink, task) = f
        .spawn(skills("s2", "answer briefly"), CancellationToken::new())
        .await;
    f.requests_reach(1).await;
    // One synchronous stretch: the whole answer and the new input are ready together.
    live.send(Ok(StreamEvent::TextDelta("Brief.".into())))
        .unwrap();
    live.send(Ok(StreamEvent::Usage(Usage {
        input_tokens: 0,
        output_tokens: 7,
        cached_input_tokens: 0,
    })))
    .unwrap();
    live.send(Ok(StreamEvent::Finish(FinishReason::Stop)))
        .unwrap();
    steering.submit("actually, be detailed").unwrap();
    let outcome = task.await.unwrap();

    // The completed answer was taken (its usage is counted, its text was streamed) ...
    assert_eq!(texts(&sink)[0], (1, "Brief.".to_owned()));
    assert!(
        outcome.usage.output_tokens >= 7,
        "the first answer completed rather than being cancelled: {:?}",
        outcome.usage
    );
    // ... but the input was applied before it could be accepted as final.
    assert!(
        sink.events()
            .contains(&AgentEvent::AnswerDiscarded { attempt: 1 })
    );
    assert_eq!(
        outcome.reply.unwrap().text,
        "Noted, and here is the longer answer."
    );
    let requests = f.llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].messages.last(),
        Some(&Message::user("actually, be detailed"))
    );
    assert!(!outcome.history.contains(&Message::assistant("Brief.")));
}

#[tokio::test]
async fn input_arriving_with_a_tool_proposal_prevents_the_stale_tool_call() {
    let f = fixture().await;
    let live = f.llm.push_live();
    f.llm.push_text("Skipped the note as you asked.");
    let (steering, _, task) = f
        .spawn(skills("s3", "write a note"), CancellationToken::new())
        .await;
    f.requests_reach(1).await;
    live.send(Ok(StreamEvent::ToolCall(run_skill(
        "c1",
        "ReadNote",
        json!({"path": "a.md"}),
    ))))
    .unwrap();
    live.send(Ok(StreamEvent::Finish(FinishReason::ToolCalls)))
        .unwrap();
    steering.submit("wait, do not touch my notes").unwrap();
    let outcome = task.await.unwrap();
    assert!(f.probes.runs().is_empty(), "the stale tool call never ran");
    let requests = f.llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        !requests[1].messages.iter().any(|message| matches!(message,
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty())),
        "the discarded proposal is not in the history"
    );
    assert_eq!(outcome.status, TurnStatus::Completed);
}

#[tokio::test]
async fn input_during_a_tool_batch_waits_for_its_results() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "Wait", json!({}))]);
    f.llm
        .push_text("The wait finished; and yes, I saw your note.");
    let (steering, sink, task) = f
        .spawn(skills("s4", "wait for it"), CancellationToken::new())
        .await;
    let started = f.probes.waiting.notified();
    tokio::pin!(started);
    started.as_mut().enable();
    if f.probes.waits.load(Ordering::SeqCst) == 0 {
        tokio::time::timeout(Duration::from_secs(10), started)
            .await
            .unwrap();
    }
    assert_eq!(steering.submit("also, add a note"), Ok(1));
    // Give the turn every chance to (wrongly) cancel the running tool.
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(f.llm.requests().len(), 1, "no replan while tools run");
    f.probes.release.add_permits(1);
    let outcome = task.await.unwrap();
    assert_eq!(f.probes.runs(), ["Wait"], "the tool was not interrupted");
    let second = &f.llm.requests()[1].messages;
    let tail: Vec<&Message> = second.iter().rev().take(3).rev().collect();
    assert!(matches!(tail[0], Message::Assistant { tool_calls, .. } if tool_calls.len() == 1));
    assert!(
        matches!(tail[1], Message::Tool { name, is_error: false, .. } if name == "RunSkillCommand")
    );
    assert_eq!(tail[2], &Message::user("also, add a note"));
    assert!(
        !sink
            .events()
            .iter()
            .any(|event| matches!(event, AgentEvent::AnswerDiscarded { .. })),
        "an accepted tool batch is never discarded"
    );
    assert_eq!(outcome.status, TurnStatus::Completed);
}

#[tokio::test]
async fn several_inputs_are_applied_together_in_order() {
    let f = fixture().await;
    let live = f.llm.push_live();
    f.llm.push_text("ok");
    let (steering, _, task) = f
        .spawn(skills("s5", "start"), CancellationToken::new())
        .await;
    f.requests_reach(1).await;
    assert_eq!(steering.submit("one"), Ok(1));
    assert_eq!(steering.submit("two"), Ok(2));
    let outcome = task.await.unwrap();
    drop(live);
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(
        f.llm.requests()[1].messages.last(),
        Some(&Message::user(
            "<additional_user_messages>\n<message index=\"1\">\none\n</message>\n\
             <message index=\"2\">\ntwo\n</message>\n</additional_user_messages>"
        ))
    );
}

#[tokio::test]
async fn input_during_finalization_is_refused_as_sealed() {
    let f = fixture().await;
    // A long answer makes the turn summarize; the summary request hangs until the test lets it.
    f.llm.push_events(bare_text(&"word ".repeat(4000)));
    let summary = f.llm.push_live();
    let request = TurnRequest {
        context_size: Some(4000),
        ..skills("s6", "go")
    };
    let (steering, _, task) = f.spawn(request, CancellationToken::new()).await;
    f.requests_reach(2).await;
    assert_eq!(
        steering.submit("one more thing"),
        Err(SteerError::Sealed),
        "the final answer was accepted; this belongs to the next turn"
    );
    assert_eq!(
        f.agents.submit_input("s6", "through the registry"),
        Err(SteerError::Sealed)
    );
    summary
        .send(Ok(StreamEvent::TextDelta("summary".into())))
        .unwrap();
    summary
        .send(Ok(StreamEvent::Finish(FinishReason::Stop)))
        .unwrap();
    let outcome = task.await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert!(outcome.undelivered.is_empty());
    assert_eq!(
        f.agents.submit_input("s6", "later"),
        Err(SteerError::NoTurn)
    );
}

#[tokio::test]
async fn cancelling_is_not_a_replan_and_hands_back_unread_input() {
    let f = fixture().await;
    f.llm.push_stall(vec![]);
    let cancel = CancellationToken::new();
    let (steering, _, task) = f.spawn(skills("s7", "start"), cancel.clone()).await;
    f.requests_reach(1).await;
    steering.submit("unread").unwrap();
    cancel.cancel();
    let outcome = task.await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(f.llm.requests().len(), 1, "no new request after the cancel");
    assert_eq!(
        outcome.undelivered,
        ["unread"],
        "nothing the person sent is lost"
    );
    assert_eq!(steering.submit("after"), Err(SteerError::Closed));
}

#[tokio::test]
async fn a_model_side_cancellation_is_an_error_not_a_replan() {
    let f = fixture().await;
    f.llm.push_error(LlmError::Cancelled);
    let (outcome, _) = f.run(skills("s8", "hi")).await;
    assert_eq!(outcome.status, TurnStatus::Failed);
    assert_eq!(f.llm.requests().len(), 1);
    assert_eq!(
        outcome
            .reply
            .unwrap()
            .failure
            .map(|failure| failure.code.as_str()),
        Some("model_error")
    );
}

#[tokio::test]
async fn the_graph_agent_takes_no_input_while_it_runs() {
    let f = fixture().await;
    f.llm.push_stall(vec![]);
    let cancel = CancellationToken::new();
    let (steering, _, task) = f.spawn(graph("g1", "hi"), cancel.clone()).await;
    assert_eq!(steering.submit("more"), Err(SteerError::Unsupported));
    assert_eq!(
        f.agents.submit_input("g1", "more"),
        Err(SteerError::Unsupported)
    );
    assert_eq!(
        f.agents.submit_input("nobody", "x"),
        Err(SteerError::NoTurn)
    );
    cancel.cancel();
    assert_eq!(task.await.unwrap().status, TurnStatus::Cancelled);
}
