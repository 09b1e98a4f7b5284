//! Sessions: turns and steps are persisted per conversation and replay to the stored history;
//! turns a dead process left running are marked interrupted and left out of the replay.

use serde_json::json;

use super::*;
use crate::llm::Message;

#[tokio::test]
async fn turns_replay_step_by_step_to_the_stored_history() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "ReadNote", json!({"path": "a"}))]);
    f.llm.push_text("first answer");
    let (first, _) = f.run(skills("chat", "first")).await;
    f.llm.push_text("second answer");
    let (second, _) = f.run(skills("chat", "second")).await;

    let sessions = f.agents.sessions();
    assert_eq!(
        sessions.history("chat").await.unwrap(),
        Some(second.history.clone())
    );
    assert_eq!(sessions.replay("chat").await.unwrap(), second.history);
    let turns = sessions.turns("chat").await.unwrap();
    let summary: Vec<(&str, TurnStatus, Option<&str>)> = turns
        .iter()
        .map(|turn| (turn.input.as_str(), turn.status, turn.reply.as_deref()))
        .collect();
    assert_eq!(
        summary,
        [
            ("first", TurnStatus::Completed, Some("first answer")),
            ("second", TurnStatus::Completed, Some("second answer")),
        ]
    );
    assert_eq!(turns[0].agent, "skills");
    assert_eq!(turns[0].model, "fake-model");
    assert!(turns[0].usage.is_some_and(|usage| usage.input_tokens > 0));

    let replayed = sessions.replay_turn(&first.turn_id).await.unwrap();
    assert_eq!(replayed[0].step.node, "turn.start");
    assert!(replayed[0].history.is_empty(), "the chat started empty");
    assert_eq!(replayed.last().unwrap().history, first.history);
    let ordinals: Vec<u32> = replayed.iter().map(|step| step.step.ordinal).collect();
    assert_eq!(ordinals, (0..replayed.len() as u32).collect::<Vec<_>>());
    let after_input = &replayed[1];
    assert_eq!(after_input.step.node, "Input->History");
    assert_eq!(after_input.history.last(), Some(&Message::user("first")));
    let tool_step = replayed
        .iter()
        .find(|step| step.step.node == "Tool use")
        .unwrap();
    let change = tool_step.step.history_change.as_ref().unwrap();
    assert_eq!(
        (change.removed, change.inserted.len()),
        (0, 1),
        "a step stores what it added, not the whole history"
    );

    let second_replay = sessions.replay_turn(&second.turn_id).await.unwrap();
    assert_eq!(
        second_replay[0].history, first.history,
        "each turn starts where the last ended"
    );
    assert_eq!(second_replay.last().unwrap().history, second.history);
}

#[tokio::test]
async fn a_request_history_differing_from_the_stored_one_is_recorded_at_turn_start() {
    let f = fixture().await;
    f.llm.push_text("hello again");
    let given = vec![
        Message::system("s"),
        Message::user("from elsewhere"),
        Message::assistant("ok"),
    ];
    let request = TurnRequest {
        history: Some(given.clone()),
        ..skills("chat", "hi")
    };
    let (outcome, _) = f.run(request).await;
    let replayed = f
        .agents
        .sessions()
        .replay_turn(&outcome.turn_id)
        .await
        .unwrap();
    assert_eq!(replayed[0].history, given);
    assert_eq!(
        f.agents.sessions().replay("chat").await.unwrap(),
        outcome.history
    );
}

#[tokio::test]
async fn turns_left_running_are_marked_interrupted_and_not_replayed() {
    let f = fixture().await;
    f.llm.push_text("kept");
    let (kept, _) = f.run(skills("chat", "one")).await;
    // A turn that was running when the process died: its rows exist, it never finished.
    f.llm.push_stall(vec![]);
    let cancel = CancellationToken::new();
    let (_, _, task) = f.spawn(skills("chat", "two"), cancel.clone()).await;
    f.requests_reach(2).await;
    task.abort();
    let _ = task.await;
    assert_eq!(f.agents.recover().await.unwrap(), 1);
    let turns = f.agents.sessions().turns("chat").await.unwrap();
    assert_eq!(turns[1].status, TurnStatus::Interrupted);
    assert!(turns[1].finished_at.is_some());
    assert_eq!(
        f.agents.sessions().replay("chat").await.unwrap(),
        kept.history
    );
    assert_eq!(
        f.agents.recover().await.unwrap(),
        0,
        "recovery is idempotent"
    );
    assert!(
        !f.agents.is_running("chat"),
        "an aborted turn frees its chat"
    );
}

#[tokio::test]
async fn forgetting_a_chat_removes_its_sessions_and_knowledge() {
    let f = fixture().await;
    f.llm
        .push_tool_calls(vec![run_skill("c1", "ReadNote", json!({"size": 9000}))]);
    f.llm.push_text("done");
    f.run(skills("chat", "big")).await;
    f.llm.push_text("other");
    f.run(skills("other", "keep me")).await;
    f.agents.forget_chat(None, "chat").await.unwrap();
    assert!(f.agents.sessions().turns("chat").await.unwrap().is_empty());
    assert_eq!(f.agents.sessions().history("chat").await.unwrap(), None);
    let count: i64 = f
        .store
        .read(|connection| {
            connection
                .query_row(
                    "SELECT count(*) FROM knowledge_entries WHERE chat_id = 'chat'",
                    [],
                    |row| row.get(0),
                )
                .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    assert_eq!(count, 0);
    assert_eq!(f.agents.sessions().turns("other").await.unwrap().len(), 1);
}
