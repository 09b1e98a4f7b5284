//! The public client protocol over the chat service (`chat::devices`): idempotency, the
//! rejections, cancellation, the public filter and the threads list.

use souz_protocol::chat::devices::{
    Ack, AckStatus, ClientFrame, DeviceErrorCode, SubmitAck, ThreadStatusFrame,
};

use super::*;

fn submit(chat_id: &str, request_id: &str, thread: Option<&str>, text: &str) -> ClientFrame {
    let mut frame = json!({
        "kind": "message.submit",
        "chatId": chat_id,
        "requestId": request_id,
        "payload": {
            "device": {"userId": "local", "deviceId": "speaker-1", "deviceType": "smart_speaker",
                       "capabilities": ["speech", "screen"]},
            "content": {"type": "text", "source": "voice", "text": text}
        }
    });
    if let Some(thread) = thread {
        frame["threadId"] = json!(thread);
    }
    ClientFrame::decode(&frame.to_string()).unwrap()
}

fn cancel(chat_id: &str, request_id: &str, thread: &str) -> ClientFrame {
    let frame = json!({"kind": "thread.cancel", "chatId": chat_id, "requestId": request_id,
                       "threadId": thread, "reason": "user_requested"});
    ClientFrame::decode(&frame.to_string()).unwrap()
}

fn submit_ack(ack: &Ack) -> &SubmitAck {
    match ack {
        Ack::Submit(ack) => ack,
        other => panic!("not a submit ack: {other:?}"),
    }
}

/// The error code of a rejected ack of any shape.
fn rejection(ack: &Ack) -> DeviceErrorCode {
    let (status, error) = match ack {
        Ack::Submit(ack) => (ack.status, &ack.error),
        Ack::Cancel(ack) => (ack.status, &ack.error),
        Ack::ToolResult(ack) => (ack.status, &ack.error),
    };
    assert_eq!(status, AckStatus::Rejected, "{ack:?}");
    error.as_ref().expect("a rejected ack has an error").code
}

impl Fixture {
    async fn device(&self, chat_id: &str, frame: ClientFrame) -> (Ack, Option<ThreadStatusFrame>) {
        let handled = self
            .chats
            .device_frame(&me(), chat_id, frame)
            .await
            .unwrap();
        (handled.ack, handled.status)
    }
}

#[tokio::test]
async fn a_submit_starts_a_thread_once_and_a_reused_request_id_is_refused() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let (ack, status) = f
        .device(&chat_id, submit(&chat_id, "r-1", None, "hello"))
        .await;
    let first = submit_ack(&ack).clone();
    assert_eq!(first.status, AckStatus::Accepted);
    assert!(!first.duplicate);
    let thread = first.thread.clone().unwrap();
    assert!(thread.created);
    assert_eq!(thread.revision, 1);
    assert_eq!(first.submission.clone().unwrap().input_seq, 1);
    let status = status.expect("a status frame follows an accepted submit");
    assert_eq!(status.thread_id, thread.id);
    assert_eq!(status.request_id, "r-1");
    assert_eq!(status.chat_id, chat_id);
    f.until_status(&chat_id, &thread.id, ExecutionStatus::Completed)
        .await;

    // The same frame (capabilities in another order): the original ack, marked duplicate.
    let mut again = json!({
        "kind": "message.submit", "chatId": chat_id, "requestId": "r-1",
        "payload": {
            "device": {"userId": "local", "deviceId": "speaker-1", "deviceType": "smart_speaker",
                       "capabilities": ["screen", "speech"]},
            "content": {"type": "text", "source": "voice", "text": "hello"}
        }
    });
    let (ack, _) = f
        .device(&chat_id, ClientFrame::decode(&again.to_string()).unwrap())
        .await;
    let duplicate = submit_ack(&ack);
    assert!(duplicate.duplicate);
    assert_eq!(duplicate.thread, first.thread);
    assert_eq!(duplicate.received_at, first.received_at);
    let threads = f.chats.threads(&me(), &chat_id).await.unwrap();
    assert_eq!(threads.items.len(), 1, "no second thread");

    // Another payload, or another kind, under the same key.
    again["payload"]["content"]["text"] = json!("goodbye");
    let (ack, status) = f
        .device(&chat_id, ClientFrame::decode(&again.to_string()).unwrap())
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::IdempotencyConflict);
    assert!(status.is_none());
    let (ack, _) = f
        .device(&chat_id, cancel(&chat_id, "r-1", &thread.id))
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::IdempotencyConflict);
}

#[tokio::test]
async fn submits_and_cancels_are_refused_with_the_code_that_says_why() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let other = f.chat().await;
    let (ack, _) = f
        .device(&chat_id, submit(&other, "r-0", None, "hello"))
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::InvalidRequest);
    // A device that speaks for someone else than the chat's owner: refused, nothing started.
    let mut foreign = serde_json::to_value(match submit(&chat_id, "r-1", None, "slow") {
        ClientFrame::Submit(frame) => frame,
        other => panic!("{other:?}"),
    })
    .unwrap();
    foreign["kind"] = json!("message.submit");
    foreign["payload"]["device"]["userId"] = json!("stranger");
    let (ack, _) = f
        .device(&chat_id, ClientFrame::decode(&foreign.to_string()).unwrap())
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::InvalidRequest);
    assert!(f.chats.threads(&me(), &chat_id).await.unwrap().items.is_empty());

    let (ack, _) = f
        .device(&chat_id, submit(&chat_id, "r-1", None, "slow"))
        .await;
    let running = submit_ack(&ack).thread.clone().unwrap().id;
    // A second thread while one runs.
    let (ack, _) = f
        .device(&chat_id, submit(&chat_id, "r-2", None, "more"))
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::MessageRejected);
    // The scripted engine cannot be steered: the input is refused and nothing is stored.
    let before = f.kinds(&chat_id).await;
    let (ack, _) = f
        .device(&chat_id, submit(&chat_id, "r-3", Some(&running), "more"))
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::MessageRejected);
    assert_eq!(f.kinds(&chat_id).await, before);
    let (ack, _) = f
        .device(
            &chat_id,
            submit(&chat_id, "r-4", Some("no-such-thread"), "more"),
        )
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ThreadNotFound);

    // A rejected request is not stored: the key can be used once the chat is free.
    let (ack, status) = f.device(&chat_id, cancel(&chat_id, "c-1", &running)).await;
    let Ack::Cancel(cancelled) = &ack else {
        panic!("{ack:?}")
    };
    assert_eq!(cancelled.status, AckStatus::Accepted, "{ack:?}");
    assert_eq!(cancelled.thread_id.as_deref(), Some(running.as_str()));
    let status = status.unwrap();
    assert!(!status.accepts_input, "{status:?}");
    f.until_status(&chat_id, &running, ExecutionStatus::Cancelled)
        .await;
    let (ack, _) = f.device(&chat_id, cancel(&chat_id, "c-2", &running)).await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ThreadAlreadyTerminal);
    let (ack, _) = f
        .device(&chat_id, submit(&chat_id, "r-5", Some(&running), "more"))
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ThreadAlreadyTerminal);
    let (ack, _) = f
        .device(&chat_id, submit(&chat_id, "r-2", None, "again"))
        .await;
    assert_eq!(submit_ack(&ack).status, AckStatus::Accepted, "{ack:?}");

    let result = json!({"kind": "tool.result", "chatId": chat_id, "threadId": running,
                        "toolCallId": "k-1", "status": "succeeded", "result": {"answer": 42}});
    let (ack, _) = f
        .device(&chat_id, ClientFrame::decode(&result.to_string()).unwrap())
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ToolCallNotFound);
}

#[tokio::test]
async fn devices_see_each_thread_end_once_and_messages_of_no_thread() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let (ack, _) = f
        .device(&chat_id, submit(&chat_id, "r-1", None, "hello"))
        .await;
    let thread = submit_ack(&ack).thread.clone().unwrap().id;
    f.until_status(&chat_id, &thread, ExecutionStatus::Completed)
        .await;
    let (ack, _) = f
        .device(&chat_id, submit(&chat_id, "r-2", None, "fail"))
        .await;
    let failed = submit_ack(&ack).thread.clone().unwrap().id;
    f.until_status(&chat_id, &failed, ExecutionStatus::Failed)
        .await;
    f.chats
        .record_delivered(&me(), &chat_id, "telegram", "Sent from the phone")
        .await
        .unwrap();

    let events = f
        .chats
        .replay(&me(), &chat_id, 0, 1000)
        .await
        .unwrap()
        .items;
    let mut public = Vec::new();
    for event in &events {
        if let Some(shown) = f.chats.public_event(event).await.unwrap() {
            public.push(shown);
        }
    }
    let kinds: Vec<&str> = public.iter().map(|event| event.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["thread.completed", "thread.failed", "message.created"]
    );
    assert_eq!(public[0].thread_id.as_deref(), Some(thread.as_str()));
    assert_eq!(public[0].payload, json!({"response": "echo: hello"}));
    assert_eq!(
        public[1].payload,
        json!({"error": {"code": "agent_execution_failed", "message": "model exploded"}})
    );
    assert_eq!(public[2].thread_id, None);
    assert_eq!(public[2].payload["content"], "Sent from the phone");
    assert!(public.windows(2).all(|pair| pair[0].seq < pair[1].seq));

    let threads = f.chats.threads(&me(), &chat_id).await.unwrap().items;
    assert_eq!(threads.len(), 2);
    assert_eq!(threads[0].id, failed, "newest first");
    assert_eq!(
        threads[0].error.as_ref().map(|error| error.code.as_str()),
        Some("agent_execution_failed")
    );
    assert_eq!(threads[0].runtime_lease_expires_at, None, "ended");
    assert_eq!(threads[1].status, ExecutionStatus::Completed);
}
