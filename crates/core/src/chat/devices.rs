//! The public client protocol's requests over the chat service (original §1.9): what a device's
//! `message.submit`, `thread.cancel` and `tool.result` do, the acks and `status` frames that
//! answer them, the public filter of a chat's events, and the threads of a chat (one thread is
//! one execution). The socket itself is the gateway's; this is what the frames mean.
//!
//! Invariants:
//! - A chat's submits and cancels are handled one at a time (a per-chat lock), other chats'
//!   meanwhile.
//! - Idempotency by `(chatId, requestId)`, shared by submits and cancels: an accepted request
//!   is stored (`client_requests`) with the SHA-256 of its normalised frame (keys sorted,
//!   capabilities sorted) and its ack before the ack is sent. The same frame again gets that
//!   ack with `duplicate: true`; the key with another payload or kind is refused
//!   (`idempotency_conflict`). A rejected request is not stored: retrying it later may succeed.
//! - A submit without `threadId` starts a thread exactly as `POST .../messages` does (its
//!   `requestId` is the message's `clientMessageId`); with one it steers that running thread
//!   (the skills agent's steering, original §2.5): taken only when the running turn accepts
//!   it, stored before the ack, and nothing is stored when it is refused.
//! - A submit speaks for the chat's owner: its `device.userId` must be the chat's user (the one
//!   the socket's credential proved), or it is rejected (`invalid_request`) and nothing is done.
//! - A thread ends exactly once (the execution's terminal event), shown to devices as
//!   `thread.completed`, `thread.failed` or `thread.cancelled` with the event's `seq`.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use souz_protocol::chat::devices::{
    Ack, AckError, AckStatus, AckThread, CancelAck, ClientFrame, DeviceErrorCode, FrameKeys,
    MessageSubmit, PublicEvent, Submission, SubmitAck, Thread, ThreadCancel, ThreadError,
    ThreadList, ThreadStatusFrame, ToolResult, ToolResultAck,
};
use souz_protocol::chat::{ChatEvent, ChatEventBody, ExecutionStatus, PostMessage, TurnOptions};

use super::{ChatError, ChatUser, Chats, records};
use crate::store::StoreError;
use crate::store::codec::{from_time, from_time_opt, now, to_time};

/// How long a continuation waits for a just-launched turn to take input, and how often it
/// tries meanwhile.
const STEER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
const STEER_RETRY: std::time::Duration = std::time::Duration::from_millis(10);

/// How many threads `GET .../threads` lists.
const THREAD_LIMIT: usize = 100;

/// What answers one client frame: the ack, and for an accepted submit or cancel the thread's
/// status to send after it.
#[derive(Debug)]
pub struct Handled {
    /// The ack.
    pub ack: Ack,
    /// The `status` frame, sent after the ack.
    pub status: Option<ThreadStatusFrame>,
    /// An accepted client tool result, handed to its waiting turn once the ack was sent.
    pub delivery: Option<super::client_tools::ResultDelivery>,
}

/// The per-chat locks of device requests; an entry lives while someone holds or waits for it.
#[derive(Default)]
pub(crate) struct RequestLocks(std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl RequestLocks {
    fn of(&self, chat_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Drop the locks nobody holds any more, so the map stays as small as the busy chats.
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        Arc::clone(locks.entry(chat_id.to_owned()).or_default())
    }
}

/// A thread as stored: its execution's columns the protocol shows.
struct ThreadRow {
    thread: Thread,
}

impl Chats {
    /// Handles one decoded frame of a device on the socket of `chat_id`.
    pub async fn device_frame(
        &self,
        user: &ChatUser,
        chat_id: &str,
        frame: ClientFrame,
    ) -> Result<Handled, ChatError> {
        let received_at = now();
        if frame.chat_id() != chat_id {
            let keys = keys_of(&frame);
            let error = AckError {
                code: DeviceErrorCode::InvalidRequest,
                message: "chatId must be the chat of this socket.".into(),
            };
            return Ok(Handled {
                ack: rejected(frame.kind(), chat_id, keys, error, received_at),
                status: None,
                delivery: None,
            });
        }
        match frame {
            ClientFrame::ToolResult(result) => {
                Ok(self.tool_result(chat_id, result, received_at).await)
            }
            ClientFrame::Submit(submit) => {
                let lock = self.inner.device_locks.of(chat_id);
                let _held = lock.lock().await;
                self.idempotent(
                    user,
                    chat_id,
                    Request::Submit(Box::new(submit)),
                    received_at,
                )
                .await
            }
            ClientFrame::Cancel(cancel) => {
                let lock = self.inner.device_locks.of(chat_id);
                let _held = lock.lock().await;
                self.idempotent(user, chat_id, Request::Cancel(cancel), received_at)
                    .await
            }
        }
    }

    /// The rejected ack of a frame of a known kind that broke its contract.
    pub fn device_invalid(chat_id: &str, kind: &str, keys: FrameKeys, message: String) -> Handled {
        let error = AckError {
            code: DeviceErrorCode::InvalidRequest,
            message,
        };
        Handled {
            ack: rejected(kind, chat_id, keys, error, now()),
            status: None,
            delivery: None,
        }
    }

    /// A stored event as devices see it, or `None` when the public filter drops it.
    pub async fn public_event(&self, event: &ChatEvent) -> Result<Option<PublicEvent>, ChatError> {
        let Some(seq) = event.seq else {
            return Ok(None);
        };
        let (kind, payload) = match &event.body {
            ChatEventBody::ExecutionFinished(finished) => {
                let (chat, id) = (event.chat_id.clone(), finished.assistant_message_id.clone());
                let answer = self
                    .inner
                    .store
                    .read(move |c| records::load_message(c, &chat, &id))
                    .await?;
                let response = answer.map(|message| message.content);
                ("thread.completed", json!({ "response": response }))
            }
            ChatEventBody::ExecutionFailed(failed) => (
                "thread.failed",
                json!({"error": {"code": failed.error_code, "message": failed.error_message}}),
            ),
            ChatEventBody::ExecutionCancelled(_) => ("thread.cancelled", json!({"reason": null})),
            // A call to a tool of the device (`client_tools`): the public `tool.call.started`.
            ChatEventBody::Other { kind, payload }
                if kind == super::client_tools::CLIENT_CALL_STARTED =>
            {
                ("tool.call.started", payload.clone())
            }
            ChatEventBody::MessageCreated(created) if event.execution_id.is_none() => (
                "message.created",
                serde_json::to_value(created).map_err(|e| ChatError::Internal(e.to_string()))?,
            ),
            _ => return Ok(None),
        };
        Ok(Some(PublicEvent {
            seq,
            kind: kind.to_owned(),
            chat_id: event.chat_id.clone(),
            thread_id: event.execution_id.clone(),
            payload,
            created_at: event.created_at,
        }))
    }

    /// The chat's threads (its executions), newest first.
    pub async fn threads(&self, user: &ChatUser, chat_id: &str) -> Result<ThreadList, ChatError> {
        self.require_chat(user, chat_id).await?;
        let chat = chat_id.to_owned();
        let items = self
            .inner
            .store
            .read(move |c| list_threads(c, &chat, THREAD_LIMIT))
            .await?;
        Ok(ThreadList {
            items: items.into_iter().map(|row| row.thread).collect(),
        })
    }

    /// Answers a submit or cancel once per `(chat, requestId)` (see the module invariants).
    async fn idempotent(
        &self,
        user: &ChatUser,
        chat_id: &str,
        request: Request,
        received_at: DateTime<Utc>,
    ) -> Result<Handled, ChatError> {
        let (kind, request_id, hash) = (request.kind(), request.request_id(), request.hash()?);
        let (chat, key) = (chat_id.to_owned(), request_id.clone());
        let earlier = self
            .inner
            .store
            .read(move |c| load_request(c, &chat, &key))
            .await?;
        if let Some(earlier) = earlier {
            if earlier.kind != kind || earlier.payload_hash != hash {
                let error = AckError {
                    code: DeviceErrorCode::IdempotencyConflict,
                    message: "requestId was already used with a different payload.".into(),
                };
                let keys = request.keys();
                return Ok(Handled {
                    ack: rejected(kind, chat_id, keys, error, received_at),
                    status: None,
                    delivery: None,
                });
            }
            let mut ack: Ack = serde_json::from_str(&earlier.ack)
                .map_err(|e| ChatError::Internal(format!("stored ack: {e}")))?;
            match &mut ack {
                Ack::Submit(ack) => ack.duplicate = true,
                Ack::Cancel(ack) => ack.duplicate = true,
                Ack::ToolResult(ack) => ack.duplicate = true,
            }
            let status = match &earlier.thread_id {
                Some(thread) => self.status_frame(chat_id, thread, &request_id).await?,
                None => None,
            };
            return Ok(Handled {
                ack,
                status,
                delivery: None,
            });
        }
        let outcome = match &request {
            Request::Submit(submit) => self.submit(user, chat_id, submit, received_at).await,
            Request::Cancel(cancel) => self.cancel_thread(user, chat_id, cancel, received_at).await,
        };
        let (ack, thread_id) = match outcome {
            Ok(accepted) => accepted,
            Err(error) => {
                let error = ack_error(error);
                let keys = request.keys();
                return Ok(Handled {
                    ack: rejected(kind, chat_id, keys, error, received_at),
                    status: None,
                    delivery: None,
                });
            }
        };
        let stored = StoredRequest {
            kind,
            thread_id: Some(thread_id.clone()),
            payload_hash: hash,
            ack: serde_json::to_string(&ack).map_err(|e| ChatError::Internal(e.to_string()))?,
        };
        let chat = chat_id.to_owned();
        let key = request_id.clone();
        self.inner
            .store
            .write(move |tx| insert_request(tx, &chat, &key, &stored))
            .await?;
        let status = self.status_frame(chat_id, &thread_id, &request_id).await?;
        Ok(Handled {
            ack,
            status,
            delivery: None,
        })
    }

    /// A new thread, or input for a running one. Returns the ack and the thread.
    async fn submit(
        &self,
        user: &ChatUser,
        chat_id: &str,
        submit: &MessageSubmit,
        received_at: DateTime<Utc>,
    ) -> Result<(Ack, String), ChatError> {
        // The device speaks for the chat's owner (original §1.2): the user the chat belongs
        // to, whom this socket's credential already proved to be (`local` for the operator).
        if submit.payload.device.user_id != user.0 {
            return Err(ChatError::Invalid(
                "payload.device.userId must be the chat's owner.".into(),
            ));
        }
        let text = submit.payload.content.text.trim().to_owned();
        let (thread, submission) = match &submit.thread_id {
            None => {
                let meta = submit.payload.meta.clone();
                let options = meta.map(|meta| TurnOptions {
                    model: meta.model,
                    locale: meta.locale,
                    time_zone: meta.time_zone,
                    ..TurnOptions::default()
                });
                let device = &submit.payload.device;
                let device = super::client_tools::DeviceContext {
                    device_id: device.device_id.clone(),
                    capabilities: device.capabilities.clone(),
                };
                let posted = self
                    .post_message_from(
                        user,
                        chat_id,
                        PostMessage {
                            content: text,
                            client_message_id: Some(submit.request_id.clone()),
                            options,
                            attachments: Vec::new(),
                        },
                        super::posting::Origin {
                            unattended: None,
                            device: Some(device),
                        },
                    )
                    .await?;
                let thread = AckThread {
                    id: posted.execution.id,
                    created: true,
                    status: posted.execution.status,
                    revision: 1,
                };
                (thread, Submission { input_seq: 1 })
            }
            Some(thread_id) => {
                self.require_chat(user, chat_id).await?;
                let row = self.thread_row(chat_id, thread_id).await?;
                let status = row.thread.status;
                if !status.is_active() {
                    return Err(ChatError::ThreadEnded);
                }
                if !matches!(status, ExecutionStatus::Queued | ExecutionStatus::Running) {
                    return Err(ChatError::NoInputNow);
                }
                self.steer_thread(chat_id, thread_id, &text).await?;
                self.store_input(chat_id, thread_id, &text, Some(submit.request_id.clone()))
                    .await?;
                let id = thread_id.clone();
                let revision = self
                    .inner
                    .store
                    .write(move |tx| bump_revision(tx, &id))
                    .await?;
                let thread = AckThread {
                    id: thread_id.clone(),
                    created: false,
                    status,
                    revision,
                };
                (
                    thread,
                    Submission {
                        input_seq: revision,
                    },
                )
            }
        };
        let id = thread.id.clone();
        let ack = Ack::Submit(SubmitAck {
            chat_id: chat_id.to_owned(),
            request_id: submit.request_id.clone(),
            status: AckStatus::Accepted,
            duplicate: false,
            submission: Some(submission),
            thread: Some(thread),
            error: None,
            received_at,
        });
        Ok((ack, id))
    }

    /// Gives `text` to the running turn of `thread_id` at its next step. A turn just launched
    /// may not take input yet (its agent is still starting): it is tried again for up to
    /// [`STEER_WAIT`] while the thread runs here. Fails when the thread ends meanwhile
    /// ([`ChatError::ThreadEnded`]) or its turn does not take input ([`ChatError::NoInputNow`]:
    /// an agent that cannot be steered, or a turn that is not running in this process).
    async fn steer_thread(
        &self,
        chat_id: &str,
        thread_id: &str,
        text: &str,
    ) -> Result<(), ChatError> {
        let deadline = tokio::time::Instant::now() + STEER_WAIT;
        loop {
            if !self.is_running(thread_id) {
                let ended = !self
                    .thread_row(chat_id, thread_id)
                    .await?
                    .thread
                    .status
                    .is_active();
                return Err(if ended {
                    ChatError::ThreadEnded
                } else {
                    ChatError::NoInputNow
                });
            }
            if self.steer(chat_id, text) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ChatError::NoInputNow);
            }
            tokio::time::sleep(STEER_RETRY).await;
        }
    }

    /// Cancels a thread of the chat. Returns the ack and the thread.
    async fn cancel_thread(
        &self,
        user: &ChatUser,
        chat_id: &str,
        cancel: &ThreadCancel,
        received_at: DateTime<Utc>,
    ) -> Result<(Ack, String), ChatError> {
        self.require_chat(user, chat_id).await?;
        let row = self.thread_row(chat_id, &cancel.thread_id).await?;
        if !row.thread.status.is_active() {
            return Err(ChatError::ThreadEnded);
        }
        match self
            .cancel_execution(user, chat_id, &cancel.thread_id)
            .await
        {
            Ok(_) => {}
            // It ended between the read and the cancel.
            Err(ChatError::Invalid(_)) => return Err(ChatError::ThreadEnded),
            Err(error) => return Err(error),
        }
        let ack = Ack::Cancel(CancelAck {
            chat_id: chat_id.to_owned(),
            request_id: cancel.request_id.clone(),
            thread_id: Some(cancel.thread_id.clone()),
            status: AckStatus::Accepted,
            duplicate: false,
            error: None,
            received_at,
        });
        Ok((ack, cancel.thread_id.clone()))
    }

    /// A `tool.result`: stored for the client tool call that waits for it (`client_tools`),
    /// before its ack; the waiting turn gets it once the ack was sent.
    async fn tool_result(
        &self,
        chat_id: &str,
        result: ToolResult,
        received_at: DateTime<Utc>,
    ) -> Handled {
        let (status, duplicate, error, delivery) = match self.client_result(chat_id, &result).await
        {
            Ok((duplicate, delivery)) => (AckStatus::Accepted, duplicate, None, delivery),
            Err(error) => (AckStatus::Rejected, false, Some(error), None),
        };
        Handled {
            ack: Ack::ToolResult(ToolResultAck {
                chat_id: chat_id.to_owned(),
                tool_call_id: Some(result.tool_call_id),
                thread_id: Some(result.thread_id),
                status,
                duplicate,
                error,
                received_at,
            }),
            status: None,
            delivery,
        }
    }

    async fn thread_row(&self, chat_id: &str, thread_id: &str) -> Result<ThreadRow, ChatError> {
        let (chat, id) = (chat_id.to_owned(), thread_id.to_owned());
        self.inner
            .store
            .read(move |c| load_thread(c, &chat, &id))
            .await?
            .ok_or(ChatError::ExecutionNotFound)
    }

    /// The `status` frame of a thread as stored now.
    async fn status_frame(
        &self,
        chat_id: &str,
        thread_id: &str,
        request_id: &str,
    ) -> Result<Option<ThreadStatusFrame>, ChatError> {
        let (chat, id) = (chat_id.to_owned(), thread_id.to_owned());
        let row = self
            .inner
            .store
            .read(move |c| load_thread(c, &chat, &id))
            .await?;
        Ok(row.map(|row| status_of(chat_id, row.thread, request_id, now())))
    }
}

/// The `status` frame of `thread` observed at `at`. A thread is alive while it is active and,
/// when its owning process must renew its lease (queued, running, cancelling), the lease holds;
/// a question or approval waiting for the person needs no process.
fn status_of(
    chat_id: &str,
    thread: Thread,
    request_id: &str,
    at: DateTime<Utc>,
) -> ThreadStatusFrame {
    let leased = matches!(
        thread.status,
        ExecutionStatus::Queued | ExecutionStatus::Running | ExecutionStatus::Cancelling
    );
    let alive = thread.status.is_active()
        && (!leased
            || thread
                .runtime_lease_expires_at
                .is_none_or(|until| until > at));
    let accepts_input = alive
        && matches!(
            thread.status,
            ExecutionStatus::Queued | ExecutionStatus::Running
        );
    ThreadStatusFrame {
        kind: "thread.status".into(),
        chat_id: chat_id.to_owned(),
        thread_id: thread.id,
        request_id: request_id.to_owned(),
        status: thread.status,
        alive,
        accepts_input,
        revision: thread.revision,
        started_at: thread.started_at,
        finished_at: thread.finished_at,
        runtime_lease_expires_at: thread.runtime_lease_expires_at,
        error: thread.error,
        observed_at: at,
    }
}

/// A submit or a cancel: the requests that share `(chatId, requestId)`.
enum Request {
    Submit(Box<MessageSubmit>),
    Cancel(ThreadCancel),
}

impl Request {
    fn kind(&self) -> &'static str {
        match self {
            Self::Submit(_) => "message.submit",
            Self::Cancel(_) => "thread.cancel",
        }
    }

    fn request_id(&self) -> String {
        match self {
            Self::Submit(submit) => submit.request_id.clone(),
            Self::Cancel(cancel) => cancel.request_id.clone(),
        }
    }

    fn keys(&self) -> FrameKeys {
        match self {
            Self::Submit(submit) => FrameKeys {
                request_id: Some(submit.request_id.clone()),
                thread_id: submit.thread_id.clone(),
                tool_call_id: None,
            },
            Self::Cancel(cancel) => FrameKeys {
                request_id: Some(cancel.request_id.clone()),
                thread_id: Some(cancel.thread_id.clone()),
                tool_call_id: None,
            },
        }
    }

    /// The SHA-256 (hex) of the normalised frame: its JSON with keys sorted (as
    /// `serde_json::Value` writes them) and the device's capabilities sorted.
    fn hash(&self) -> Result<String, ChatError> {
        let value = match self {
            Self::Submit(submit) => {
                let mut submit = submit.clone();
                submit.payload.device.capabilities.sort_unstable();
                serde_json::to_value(submit)
            }
            Self::Cancel(cancel) => serde_json::to_value(cancel),
        }
        .map_err(|e| ChatError::Internal(e.to_string()))?;
        let normalised = value.to_string();
        Ok(hex::encode(Sha256::digest(normalised.as_bytes())))
    }
}

fn keys_of(frame: &ClientFrame) -> FrameKeys {
    match frame {
        ClientFrame::Submit(submit) => FrameKeys {
            request_id: Some(submit.request_id.clone()),
            thread_id: submit.thread_id.clone(),
            tool_call_id: None,
        },
        ClientFrame::Cancel(cancel) => FrameKeys {
            request_id: Some(cancel.request_id.clone()),
            thread_id: Some(cancel.thread_id.clone()),
            tool_call_id: None,
        },
        ClientFrame::ToolResult(result) => FrameKeys {
            request_id: None,
            thread_id: Some(result.thread_id.clone()),
            tool_call_id: Some(result.tool_call_id.clone()),
        },
    }
}

/// The rejected ack of a frame of `kind`, in that kind's shape.
fn rejected(
    kind: &str,
    chat_id: &str,
    keys: FrameKeys,
    error: AckError,
    received_at: DateTime<Utc>,
) -> Ack {
    let chat_id = chat_id.to_owned();
    match kind {
        "message.submit" => Ack::Submit(SubmitAck {
            chat_id,
            request_id: keys.request_id.unwrap_or_default(),
            status: AckStatus::Rejected,
            duplicate: false,
            submission: None,
            thread: None,
            error: Some(error),
            received_at,
        }),
        "thread.cancel" => Ack::Cancel(CancelAck {
            chat_id,
            request_id: keys.request_id.unwrap_or_default(),
            thread_id: keys.thread_id,
            status: AckStatus::Rejected,
            duplicate: false,
            error: Some(error),
            received_at,
        }),
        _ => Ack::ToolResult(ToolResultAck {
            chat_id,
            tool_call_id: keys.tool_call_id,
            thread_id: keys.thread_id,
            status: AckStatus::Rejected,
            duplicate: false,
            error: Some(error),
            received_at,
        }),
    }
}

/// The ack error of a refused request; Souz's own failures are logged, not shown.
fn ack_error(error: ChatError) -> AckError {
    let (code, message) = match error {
        ChatError::Invalid(message) | ChatError::UnsupportedModel(message) => {
            (DeviceErrorCode::InvalidRequest, message)
        }
        ChatError::ChatNotFound => (DeviceErrorCode::InvalidRequest, error.to_string()),
        ChatError::ActiveExecution => (
            DeviceErrorCode::MessageRejected,
            "The chat already has a running thread.".into(),
        ),
        ChatError::ExecutionNotFound => (
            DeviceErrorCode::ThreadNotFound,
            "No such thread in this chat.".into(),
        ),
        ChatError::ThreadEnded => (DeviceErrorCode::ThreadAlreadyTerminal, error.to_string()),
        ChatError::IdempotencyConflict => (DeviceErrorCode::IdempotencyConflict, error.to_string()),
        ChatError::NoInputNow
        | ChatError::Paused
        | ChatError::AwaitingAnswer
        | ChatError::AwaitingApproval
        | ChatError::RequiresModelAccess(_)
        | ChatError::StartFailed(_)
        | ChatError::Llm(_) => (DeviceErrorCode::MessageRejected, error.to_string()),
        ChatError::OptionNotFound | ChatError::Store(_) | ChatError::Internal(_) => {
            tracing::error!(%error, "a device request failed");
            (
                DeviceErrorCode::InternalError,
                "Souz failed to handle the request; see its log.".into(),
            )
        }
    };
    AckError { code, message }
}

/// A request stored with its ack.
struct StoredRequest {
    kind: &'static str,
    thread_id: Option<String>,
    payload_hash: String,
    ack: String,
}

/// A request read back.
struct EarlierRequest {
    kind: String,
    thread_id: Option<String>,
    payload_hash: String,
    ack: String,
}

fn load_request(
    connection: &Connection,
    chat_id: &str,
    request_id: &str,
) -> Result<Option<EarlierRequest>, StoreError> {
    Ok(connection
        .query_row(
            "SELECT kind, thread_id, payload_hash, ack FROM client_requests \
             WHERE chat_id = ?1 AND request_id = ?2",
            params![chat_id, request_id],
            |row| {
                Ok(EarlierRequest {
                    kind: row.get(0)?,
                    thread_id: row.get(1)?,
                    payload_hash: row.get(2)?,
                    ack: row.get(3)?,
                })
            },
        )
        .optional()?)
}

fn insert_request(
    connection: &Connection,
    chat_id: &str,
    request_id: &str,
    request: &StoredRequest,
) -> Result<(), StoreError> {
    connection.execute(
        "INSERT INTO client_requests \
         (chat_id, request_id, kind, thread_id, payload_hash, ack, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            chat_id,
            request_id,
            request.kind,
            request.thread_id,
            request.payload_hash,
            request.ack,
            to_time(now())
        ],
    )?;
    Ok(())
}

/// Counts one more accepted input of a thread; returns its new revision.
fn bump_revision(connection: &Connection, execution_id: &str) -> Result<i64, StoreError> {
    Ok(connection.query_row(
        "UPDATE executions SET revision = revision + 1 WHERE id = ?1 RETURNING revision",
        [execution_id],
        |row| row.get(0),
    )?)
}

const THREAD_COLUMNS: &str = "id, status, revision, created_at, started_at, finished_at, \
    lease_until, error_code, error_message";

fn load_thread(
    connection: &Connection,
    chat_id: &str,
    id: &str,
) -> Result<Option<ThreadRow>, StoreError> {
    connection
        .query_row(
            &format!("SELECT {THREAD_COLUMNS} FROM executions WHERE chat_id = ?1 AND id = ?2"),
            params![chat_id, id],
            raw_thread,
        )
        .optional()?
        .map(thread_from_raw)
        .transpose()
}

fn list_threads(
    connection: &Connection,
    chat_id: &str,
    limit: usize,
) -> Result<Vec<ThreadRow>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {THREAD_COLUMNS} FROM executions WHERE chat_id = ?1 \
         ORDER BY created_at DESC, id DESC LIMIT ?2"
    ))?;
    let rows = statement
        .query_map(
            params![chat_id, i64::try_from(limit).unwrap_or(i64::MAX)],
            raw_thread,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().map(thread_from_raw).collect()
}

type RawThread = (
    String,
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn raw_thread(row: &Row<'_>) -> rusqlite::Result<RawThread> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
    ))
}

fn thread_from_raw(raw: RawThread) -> Result<ThreadRow, StoreError> {
    let (id, status, revision, created, started, finished, lease, code, message) = raw;
    let status: ExecutionStatus = serde_json::from_value(Value::String(status))
        .map_err(|error| StoreError::Corrupt(format!("executions.status: {error}")))?;
    let active = status.is_active();
    Ok(ThreadRow {
        thread: Thread {
            id,
            status,
            revision,
            created_at: from_time("executions.created_at", &created)?,
            started_at: from_time_opt("executions.started_at", started)?,
            finished_at: from_time_opt("executions.finished_at", finished)?,
            runtime_lease_expires_at: if active {
                from_time_opt("executions.lease_until", lease)?
            } else {
                None
            },
            error: code.map(|code| ThreadError {
                code,
                message: message.unwrap_or_default(),
            }),
        },
    })
}
