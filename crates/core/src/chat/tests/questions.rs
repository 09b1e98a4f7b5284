//! Questions reach the runtime bus like approvals do: `option.requested` (durable before it is
//! announced, with who asks), then `option.answered`, `option.cancelled` or `option.expired`;
//! the pending ones are listed per user.

use std::time::Duration;

use souz_protocol::chat::{OptionStatus, SelectionMode};
use tokio::sync::broadcast;

use super::*;

/// The next runtime event (within 5 s).
async fn next(events: &mut broadcast::Receiver<Arc<souz_protocol::EventEnvelope>>) -> RuntimeEvent {
    tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("a runtime event within 5 s")
        .expect("the bus is open")
        .event
        .clone()
}

/// The next runtime event, which must be `option.requested`: its question.
async fn requested(
    events: &mut broadcast::Receiver<Arc<souz_protocol::EventEnvelope>>,
) -> Box<souz_protocol::chat::Question> {
    match next(events).await {
        RuntimeEvent::OptionRequested { option } => option,
        other => panic!("expected option.requested, got {other:?}"),
    }
}

fn answer(ids: &[&str]) -> OptionAnswer {
    OptionAnswer {
        selected_option_ids: ids.iter().map(|id| (*id).to_owned()).collect(),
        ..OptionAnswer::default()
    }
}

impl Fixture {
    async fn titled_chat(&self, title: &str) -> String {
        let request = CreateChat {
            title: Some(title.into()),
            ..CreateChat::default()
        };
        self.chats
            .create_chat(&me(), request)
            .await
            .unwrap()
            .0
            .chat
            .id
    }

    /// Posts "ask" and returns the execution once it waits for the answer.
    async fn asked(&self, chat_id: &str) -> String {
        let response = self
            .chats
            .post_message(&me(), chat_id, message("ask"))
            .await
            .unwrap();
        let execution = response.execution.id;
        self.until_status(chat_id, &execution, ExecutionStatus::WaitingOption)
            .await;
        execution
    }

    /// The questions pending for `user`.
    async fn pending(&self, user: &ChatUser) -> Vec<souz_protocol::chat::Question> {
        self.chats.questions(user, 100).await.unwrap().items
    }

    /// Moves the deadline of question `option_id` to `expires_at` (a stored time).
    async fn expires_at(&self, option_id: &str, expires_at: String) {
        let id = option_id.to_owned();
        self.store
            .write(move |tx| {
                tx.execute(
                    "UPDATE options SET expires_at = ?2 WHERE id = ?1",
                    [&id, &expires_at],
                )
                .map_err(StoreError::from)
            })
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_question_is_announced_listed_and_withdrawn_when_answered() {
    let f = fixture().await;
    let chat_id = f.titled_chat("Fruit").await;
    let mut events = f.bus.subscribe();
    let execution = f.asked(&chat_id).await;

    let option = requested(&mut events).await;
    assert_eq!(option.chat_id, chat_id);
    assert_eq!(option.chat_title.as_deref(), Some("Fruit"));
    assert_eq!(option.execution_id, execution);
    assert_eq!(option.title, "Which one?");
    assert_eq!(option.selection_mode, SelectionMode::Single);
    assert_eq!(
        option
            .options
            .iter()
            .map(|c| c.label.as_str())
            .collect::<Vec<_>>(),
        ["Apples", "Bananas"]
    );
    assert!(option.free_text);
    assert_eq!(option.status, OptionStatus::Pending);
    // Durable before announced: the stored stream has it.
    let stored = f.bus.replay(0, 100).await.unwrap();
    assert!(stored.iter().any(
        |e| matches!(&e.event, RuntimeEvent::OptionRequested { option: o } if o.id == option.id)
    ));

    let listed = f.pending(&me()).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0], *option);
    assert_eq!(f.chats.question(&me(), &option.id).await.unwrap(), *option);
    let stranger = ChatUser("stranger".into());
    assert!(f.pending(&stranger).await.is_empty());
    assert!(matches!(
        f.chats.question(&stranger, &option.id).await,
        Err(ChatError::OptionNotFound)
    ));

    f.chats
        .answer_option(&me(), &option.id, answer(&["b"]))
        .await
        .unwrap();
    match next(&mut events).await {
        RuntimeEvent::OptionAnswered {
            option_id,
            chat_id: answered_chat,
            execution_id,
            selected_option_ids,
            free_text,
        } => {
            assert_eq!(
                (option_id, answered_chat, execution_id),
                (option.id.clone(), chat_id.clone(), execution.clone())
            );
            assert_eq!(selected_option_ids, ["b"]);
            assert_eq!(free_text, None);
        }
        other => panic!("expected option.answered, got {other:?}"),
    }
    assert!(f.pending(&me()).await.is_empty());
    let settled = f.chats.question(&me(), &option.id).await.unwrap();
    assert_eq!(settled.status, OptionStatus::Answered);
    assert_eq!(settled.answer.unwrap().selected_option_ids, ["b"]);
    assert!(settled.answered_at.is_some());
    f.until_status(&chat_id, &execution, ExecutionStatus::Completed)
        .await;
}

#[tokio::test]
async fn cancelling_a_waiting_turn_withdraws_its_question() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let mut events = f.bus.subscribe();
    let execution = f.asked(&chat_id).await;
    let option = requested(&mut events).await;
    assert_eq!(option.chat_title, None);

    let cancelled = f.chats.cancel_active(&me(), &chat_id).await.unwrap();
    assert_eq!(cancelled.status, ExecutionStatus::Cancelled);
    assert_eq!(
        next(&mut events).await,
        RuntimeEvent::OptionCancelled {
            option_id: option.id.clone(),
            chat_id: chat_id.clone(),
            execution_id: execution,
        }
    );
    assert!(f.pending(&me()).await.is_empty());
    assert_eq!(
        f.chats.question(&me(), &option.id).await.unwrap().status,
        OptionStatus::Cancelled
    );
    let late = f
        .chats
        .answer_option(&me(), &option.id, answer(&["a"]))
        .await;
    assert!(matches!(late, Err(ChatError::Invalid(m)) if m == "Option is not pending."));
}

#[tokio::test]
async fn an_expired_question_is_not_listed_and_expires_when_answered() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let mut events = f.bus.subscribe();
    let execution = f.asked(&chat_id).await;
    let option = requested(&mut events).await;
    f.expires_at(&option.id, "2000-01-01T00:00:00.000Z".into())
        .await;
    assert!(f.pending(&me()).await.is_empty());

    let error = f
        .chats
        .answer_option(&me(), &option.id, answer(&["a"]))
        .await
        .unwrap_err();
    assert!(matches!(&error, ChatError::Invalid(m) if m == "Option has expired."));
    assert_eq!(
        next(&mut events).await,
        RuntimeEvent::OptionExpired {
            option_id: option.id.clone(),
            chat_id,
            execution_id: execution,
        }
    );
    assert_eq!(
        f.chats.question(&me(), &option.id).await.unwrap().status,
        OptionStatus::Expired
    );
}

#[tokio::test]
async fn a_question_nobody_answers_expires_on_time_and_frees_the_chat() {
    let f = fixture().await;
    crate::tasks::spawn_in_test(f.chats.clone().expire_questions());
    let chat_id = f.chat().await;
    let mut events = f.bus.subscribe();
    let execution = f.asked(&chat_id).await;
    let option = requested(&mut events).await;
    let waiting = f
        .until_status(&chat_id, &execution, ExecutionStatus::WaitingOption)
        .await;
    assert!(
        waiting
            .usage
            .as_ref()
            .is_some_and(|usage| usage.total_tokens > 0),
        "the turn used tokens before it asked: {:?}",
        waiting.usage
    );
    // Nearly out of time (instead of 24 hours), and the expiry task told to look again.
    let soon = crate::store::codec::to_time(now() + chrono::Duration::milliseconds(300));
    f.expires_at(&option.id, soon).await;
    f.chats.inner.asked.notify_one();

    assert_eq!(
        next(&mut events).await,
        RuntimeEvent::OptionExpired {
            option_id: option.id.clone(),
            chat_id: chat_id.clone(),
            execution_id: execution.clone(),
        }
    );
    let ended = f
        .until_status(&chat_id, &execution, ExecutionStatus::Failed)
        .await;
    assert_eq!(ended.error_code.as_deref(), Some("option_expired"));
    assert_eq!(ended.usage, waiting.usage, "the usage so far is kept");
    assert_eq!(
        f.kinds(&chat_id)
            .await
            .iter()
            .filter(|kind| kind.starts_with("execution.") && *kind != "execution.started")
            .collect::<Vec<_>>(),
        ["execution.failed"],
        "exactly one terminal event"
    );
    // The chat takes a new message.
    f.chats
        .post_message(&me(), &chat_id, message("hello again"))
        .await
        .unwrap();
}
