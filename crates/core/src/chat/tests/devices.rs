//! The public client protocol over the chat service (`chat::devices`): idempotency, the
//! rejections, cancellation, the public filter and the threads list.

use souz_protocol::chat::devices::{
    Ack, AckStatus, ClientFrame, DeviceErrorCode, SubmitAck, ThreadStatusFrame,
};

use rusqlite::OptionalExtension;

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
    assert!(
        f.chats
            .threads(&me(), &chat_id)
            .await
            .unwrap()
            .items
            .is_empty()
    );

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

/// A device's `tool.result` frame.
fn result_frame(chat_id: &str, thread: &str, call: &str, answer: serde_json::Value) -> ClientFrame {
    let frame = json!({"kind": "tool.result", "chatId": chat_id, "threadId": thread,
                       "toolCallId": call, "status": "succeeded", "result": answer});
    ClientFrame::decode(&frame.to_string()).unwrap()
}

fn tool_ack(ack: &Ack) -> &souz_protocol::chat::devices::ToolResultAck {
    match ack {
        Ack::ToolResult(ack) => ack,
        other => panic!("not a tool result ack: {other:?}"),
    }
}

impl Fixture {
    /// Submits `text` from the speaker (capabilities `capabilities`); the thread's id.
    async fn device_thread(
        &self,
        chat_id: &str,
        request: &str,
        text: &str,
        capabilities: &[&str],
    ) -> String {
        let frame = json!({
            "kind": "message.submit", "chatId": chat_id, "requestId": request,
            "payload": {
                "device": {"userId": "local", "deviceId": "speaker-1", "deviceType": "smart_speaker",
                           "capabilities": capabilities},
                "content": {"type": "text", "source": "voice", "text": text}
            }
        });
        let (ack, _) = self
            .device(chat_id, ClientFrame::decode(&frame.to_string()).unwrap())
            .await;
        submit_ack(&ack).thread.clone().expect("accepted").id
    }

    /// The public `tool.call.started` of the chat, once the device's call was announced.
    async fn announced_call(&self, chat_id: &str) -> souz_protocol::chat::devices::PublicEvent {
        for _ in 0..500 {
            let events = self
                .chats
                .replay(&me(), chat_id, 0, 1000)
                .await
                .unwrap()
                .items;
            for event in events {
                if let Some(public) = self.chats.public_event(&event).await.unwrap()
                    && public.kind == "tool.call.started"
                {
                    return public;
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no tool.call.started");
    }

    async fn answer_of(&self, chat_id: &str, thread: &str) -> String {
        let execution = self
            .until_status(chat_id, thread, ExecutionStatus::Completed)
            .await;
        let id = execution.assistant_message_id.unwrap();
        let chat = chat_id.to_owned();
        self.store
            .read(move |c| records::load_message(c, &chat, &id))
            .await
            .unwrap()
            .unwrap()
            .content
    }

    async fn call_status(&self, thread: &str, call: &str) -> String {
        let (thread, call) = (thread.to_owned(), call.to_owned());
        self.store
            .read(move |c| {
                c.query_row(
                    "SELECT status FROM client_tool_calls WHERE execution_id = ?1 AND tool_call_id = ?2",
                    rusqlite::params![thread, call],
                    |row| row.get::<_, String>(0),
                )
                .map_err(StoreError::from)
            })
            .await
            .unwrap()
    }
}

/// A device's turn calls its `user.ask`: the call is stored and announced as the public
/// `tool.call.started` (target `client`, the device, the deadline); the device's result is
/// stored before its ack, reaches the turn after it, and is idempotent by its toolCallId.
#[tokio::test]
async fn a_client_tool_call_reaches_the_device_and_its_result_the_turn() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let thread = f
        .device_thread(&chat_id, "r-1", "device", &["speech"])
        .await;
    let started = f.announced_call(&chat_id).await;
    assert_eq!(started.thread_id.as_deref(), Some(thread.as_str()));
    assert_eq!(started.payload["name"], "user.ask");
    assert_eq!(started.payload["target"], "client");
    assert_eq!(started.payload["deviceId"], "speaker-1");
    assert_eq!(started.payload["toolCallId"], "call-1");
    assert_eq!(
        started.payload["arguments"],
        json!({"question": "Which room?"})
    );
    assert!(
        started.payload["deadlineAt"].is_string(),
        "{:?}",
        started.payload
    );

    let handled = f
        .chats
        .device_frame(
            &me(),
            &chat_id,
            result_frame(&chat_id, &thread, "call-1", json!({"answer": "Kitchen"})),
        )
        .await
        .unwrap();
    let ack = tool_ack(&handled.ack);
    assert_eq!(ack.status, AckStatus::Accepted, "{ack:?}");
    assert!(!ack.duplicate);
    // Stored before the ack; the turn has not got it yet (it gets it after the ack is sent).
    assert_eq!(f.call_status(&thread, "call-1").await, "succeeded");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        f.execution(&chat_id, &thread).await.status,
        ExecutionStatus::Running,
        "the turn waits for the ack to be sent"
    );
    handled.delivery.expect("a turn waits for it").deliver();
    let answer: serde_json::Value =
        serde_json::from_str(&f.answer_of(&chat_id, &thread).await).unwrap();
    assert_eq!(
        answer,
        json!({"answer": "Kitchen"}),
        "the model reads the raw result"
    );

    // The same result again: an accepted duplicate; another one: a conflict.
    let (ack, _) = f
        .device(
            &chat_id,
            result_frame(&chat_id, &thread, "call-1", json!({"answer": "Kitchen"})),
        )
        .await;
    assert_eq!(tool_ack(&ack).status, AckStatus::Accepted, "{ack:?}");
    assert!(tool_ack(&ack).duplicate);
    let (ack, _) = f
        .device(
            &chat_id,
            result_frame(&chat_id, &thread, "call-1", json!({"answer": "Hall"})),
        )
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::IdempotencyConflict);
    assert!(!tool_ack(&ack).duplicate);
    let (ack, _) = f
        .device(
            &chat_id,
            result_frame(&chat_id, &thread, "call-9", json!({"answer": "Hall"})),
        )
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ToolCallNotFound);
}

/// Past its deadline the call ends `timed_out` (what the model reads says so) and a late result
/// is refused with `client_tool_timed_out`.
#[tokio::test]
async fn a_client_tool_that_gets_no_answer_in_time_times_out() {
    let f = fixture().await;
    f.chats
        .set_client_tool_deadline(Some(Duration::from_millis(300)));
    let chat_id = f.chat().await;
    let thread = f
        .device_thread(&chat_id, "r-1", "device", &["screen"])
        .await;
    f.announced_call(&chat_id).await;
    let answer: serde_json::Value =
        serde_json::from_str(&f.answer_of(&chat_id, &thread).await).unwrap();
    assert_eq!(answer["status"], "timed_out", "{answer}");
    assert_eq!(answer["error"]["code"], "client_tool_timed_out", "{answer}");
    assert_eq!(f.call_status(&thread, "call-1").await, "timed_out");
    let (ack, _) = f
        .device(
            &chat_id,
            result_frame(&chat_id, &thread, "call-1", json!({"answer": "Late"})),
        )
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ClientToolTimedOut);
}

/// A device without the capability a tool needs is not offered it; a second call while one
/// waits is refused `client_tool_busy` (and not stored); a cancelled thread's call is stored
/// cancelled and takes no late result.
#[tokio::test]
async fn client_tools_follow_capabilities_one_call_at_a_time() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let thread = f.device_thread(&chat_id, "r-1", "device", &["oauth"]).await;
    assert_eq!(
        f.answer_of(&chat_id, &thread).await,
        "user.ask is not offered"
    );
    let offered = f
        .script
        .turns
        .lock()
        .unwrap()
        .last()
        .unwrap()
        .client_tools
        .clone()
        .unwrap()
        .offered;
    assert!(offered.is_empty(), "{offered:?}");

    f.chats
        .set_client_tool_deadline(Some(Duration::from_millis(500)));
    let busy_chat = f.chat().await;
    let thread = f
        .device_thread(&busy_chat, "r-1", "device twice", &["speech"])
        .await;
    let second: serde_json::Value =
        serde_json::from_str(&f.answer_of(&busy_chat, &thread).await).unwrap();
    assert_eq!(second["error"]["code"], "client_tool_busy", "{second}");
    assert_eq!(f.call_status(&thread, "call-1").await, "timed_out");
    let stored: Option<String> = {
        let thread = thread.clone();
        f.store
            .read(move |c| {
                Ok::<_, StoreError>(
                    c.query_row(
                        "SELECT status FROM client_tool_calls WHERE execution_id = ?1 \
                         AND tool_call_id = 'call-2'",
                        rusqlite::params![thread],
                        |row| row.get(0),
                    )
                    .optional()?,
                )
            })
            .await
            .unwrap()
    };
    assert_eq!(stored, None, "the busy call was not stored");

    f.chats.set_client_tool_deadline(None);
    let cancel_chat = f.chat().await;
    let thread = f
        .device_thread(&cancel_chat, "r-1", "device", &["speech"])
        .await;
    f.announced_call(&cancel_chat).await;
    let (ack, _) = f
        .device(&cancel_chat, cancel(&cancel_chat, "c-1", &thread))
        .await;
    assert!(
        matches!(&ack, Ack::Cancel(ack) if ack.status == AckStatus::Accepted),
        "{ack:?}"
    );
    f.until_status(&cancel_chat, &thread, ExecutionStatus::Cancelled)
        .await;
    assert_eq!(f.call_status(&thread, "call-1").await, "cancelled");
    let (ack, _) = f
        .device(
            &cancel_chat,
            result_frame(&cancel_chat, &thread, "call-1", json!({"answer": "Late"})),
        )
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ThreadAlreadyTerminal);
}

/// A thread that ends while its device still holds a call (its process was killed, and
/// recovery failed it) takes the call with it: the row is `cancelled` in the transaction that
/// ends the thread, and a result that comes later is refused as after the thread's end.
#[tokio::test]
async fn a_thread_ended_by_recovery_cancels_the_call_its_device_held() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let thread = f
        .device_thread(&chat_id, "r-1", "device", &["speech"])
        .await;
    f.announced_call(&chat_id).await;
    assert_eq!(f.call_status(&thread, "call-1").await, "pending");

    f.chats
        .fail_orphans(vec![(thread.clone(), chat_id.clone())])
        .await
        .unwrap();
    let failed = f.execution(&chat_id, &thread).await;
    assert_eq!(failed.error_code.as_deref(), Some("process_restarted"));
    assert_eq!(f.call_status(&thread, "call-1").await, "cancelled");
    let (ack, _) = f
        .device(
            &chat_id,
            result_frame(&chat_id, &thread, "call-1", json!({"answer": "Late"})),
        )
        .await;
    assert_eq!(rejection(&ack), DeviceErrorCode::ThreadAlreadyTerminal);
}
