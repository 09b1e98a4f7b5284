//! The public client protocol devices speak on a chat's WebSocket (original §1.9):
//! `WS /v1/chats/{chatId}/ws?clientType=backend|mobile_app&afterSeq=N`. `docs/protocol.md` is
//! the page for people; these types are the contract.
//!
//! Invariants:
//! - Decoding is strict: every frame is a JSON object with a known `kind` and no field its kind
//!   does not declare ([`ClientFrame::decode`]). An unreadable frame or an unknown kind closes
//!   the socket with [`CLOSE_POLICY`]; a known kind that breaks its contract gets a rejected
//!   `ack` with [`DeviceErrorCode::InvalidRequest`].
//! - Every field of a frame Souz sends is present: an absent value is an explicit `null`.
//! - A thread is an execution: `threadId` is the execution id.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ExecutionStatus;

/// Close code for a frame that is not JSON, not an object, has no or an unknown `kind`, or a
/// `clientType` Souz does not know (RFC 6455 "policy violation").
pub const CLOSE_POLICY: u16 = 1008;
/// Close code when the daemon stops.
pub const CLOSE_GOING_AWAY: u16 = 1001;
/// Close code when reading stored events failed.
pub const CLOSE_INTERNAL: u16 = 1011;
/// Close code when the client fell behind the live stream: reconnect with `afterSeq` set to the
/// last `seq` it received.
pub const CLOSE_RESYNC: u16 = 4000;

/// The kinds of client a device declares with `clientType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientType {
    /// A server acting for devices (the original's backend clients).
    Backend,
    /// The phone app.
    MobileApp,
}

impl ClientType {
    /// `backend` or `mobile_app`; anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "backend" => Some(Self::Backend),
            "mobile_app" => Some(Self::MobileApp),
            _ => None,
        }
    }
}

/// A frame a device sends, by its `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientFrame {
    /// `message.submit`: a new thread, or more input for a running one.
    Submit(MessageSubmit),
    /// `thread.cancel`: stop a thread.
    Cancel(ThreadCancel),
    /// `tool.result`: the outcome of a tool the device ran.
    ToolResult(ToolResult),
}

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameError {
    /// Not JSON, not an object, or no known `kind`: the socket closes with [`CLOSE_POLICY`].
    Policy(String),
    /// A known `kind` that breaks its contract: a rejected `ack` (`invalid_request`) answers it.
    Invalid {
        /// The frame's kind.
        kind: &'static str,
        /// What the frame said, read leniently, to address the rejected ack.
        keys: FrameKeys,
        /// What is wrong, for the person reading the ack.
        message: String,
    },
}

/// The addressing fields of a frame, read without trusting the rest of it (to answer a frame
/// that breaks its contract).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrameKeys {
    /// `requestId` if it was a string.
    pub request_id: Option<String>,
    /// `threadId` if it was a string.
    pub thread_id: Option<String>,
    /// `toolCallId` if it was a string.
    pub tool_call_id: Option<String>,
}

impl ClientFrame {
    /// The wire kinds, in the order of the variants.
    pub const KINDS: [&'static str; 3] = ["message.submit", "thread.cancel", "tool.result"];

    /// Decodes one text frame strictly (see the module invariants).
    pub fn decode(text: &str) -> Result<Self, FrameError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|error| FrameError::Policy(format!("The frame is not JSON: {error}")))?;
        let Value::Object(mut object) = value else {
            return Err(FrameError::Policy("The frame is not a JSON object.".into()));
        };
        let kind = match object.remove("kind") {
            Some(Value::String(kind)) => kind,
            _ => return Err(FrameError::Policy("The frame has no `kind`.".into())),
        };
        let Some(kind) = Self::KINDS.into_iter().find(|known| *known == kind) else {
            return Err(FrameError::Policy(format!("Unknown frame kind `{kind}`.")));
        };
        let text_of = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let keys = FrameKeys {
            request_id: text_of("requestId"),
            thread_id: text_of("threadId"),
            tool_call_id: text_of("toolCallId"),
        };
        let value = Value::Object(object);
        let decoded = match kind {
            "message.submit" => serde_json::from_value(value).map(Self::Submit),
            "thread.cancel" => serde_json::from_value(value).map(Self::Cancel),
            _ => serde_json::from_value(value).map(Self::ToolResult),
        };
        let frame = decoded.map_err(|error| FrameError::Invalid {
            kind,
            keys: keys.clone(),
            message: error.to_string(),
        })?;
        frame.check().map_err(|message| FrameError::Invalid {
            kind,
            keys,
            message,
        })?;
        Ok(frame)
    }

    /// The wire kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Submit(_) => Self::KINDS[0],
            Self::Cancel(_) => Self::KINDS[1],
            Self::ToolResult(_) => Self::KINDS[2],
        }
    }

    /// The chat the frame names.
    pub fn chat_id(&self) -> &str {
        match self {
            Self::Submit(frame) => &frame.chat_id,
            Self::Cancel(frame) => &frame.chat_id,
            Self::ToolResult(frame) => &frame.chat_id,
        }
    }

    /// The rules serde cannot say: non-blank identifiers and text, unique capabilities, and a
    /// tool result that carries `result` exactly when it succeeded.
    fn check(&self) -> Result<(), String> {
        let blank = |name: &str, value: &str| {
            if value.trim().is_empty() {
                Err(format!("{name} must not be blank."))
            } else {
                Ok(())
            }
        };
        blank("chatId", self.chat_id())?;
        match self {
            Self::Submit(frame) => {
                blank("requestId", &frame.request_id)?;
                if let Some(thread) = &frame.thread_id {
                    blank("threadId", thread)?;
                }
                let device = &frame.payload.device;
                blank("payload.device.userId", &device.user_id)?;
                blank("payload.device.deviceId", &device.device_id)?;
                let mut seen = device.capabilities.clone();
                seen.sort_unstable();
                seen.dedup();
                if seen.len() != device.capabilities.len() {
                    return Err("payload.device.capabilities must be unique.".into());
                }
                blank("payload.content.text", &frame.payload.content.text)
            }
            Self::Cancel(frame) => {
                blank("requestId", &frame.request_id)?;
                blank("threadId", &frame.thread_id)
            }
            Self::ToolResult(frame) => {
                blank("threadId", &frame.thread_id)?;
                blank("toolCallId", &frame.tool_call_id)?;
                let succeeded = frame.status == ToolResultStatus::Succeeded;
                match (succeeded, frame.result.is_some(), frame.error.is_some()) {
                    (true, true, false) | (false, false, true) => Ok(()),
                    (true, _, _) => Err("A succeeded tool.result carries `result` only.".into()),
                    (false, _, _) => Err("A tool.result that did not succeed carries `error` \
                                          only."
                        .into()),
                }
            }
        }
    }
}

/// `message.submit`: without `threadId` it starts a thread; with one it is more input for that
/// running thread (steering).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageSubmit {
    /// Must be the socket's chat.
    pub chat_id: String,
    /// The idempotency key, unique per chat (shared with `thread.cancel`).
    pub request_id: String,
    /// The running thread to continue; absent to start one.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// What is sent.
    pub payload: SubmitPayload,
}

/// The body of a `message.submit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitPayload {
    /// The device that sends it.
    pub device: Device,
    /// The message.
    pub content: Content,
    /// Overrides for the thread (a new thread only).
    #[serde(default)]
    pub meta: Option<SubmitMeta>,
}

/// The device a frame comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Device {
    /// The person's id as the device knows it (recorded; Souz has one person per daemon).
    pub user_id: String,
    /// The device's own id.
    pub device_id: String,
    /// What kind of device it is.
    pub device_type: DeviceType,
    /// What it can do (each at most once).
    pub capabilities: Vec<Capability>,
    /// Its app's version.
    #[serde(default)]
    pub app_version: Option<String>,
    /// Its platform.
    #[serde(default)]
    pub platform: Option<String>,
}

/// Kinds of device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceType {
    /// A TV box.
    TvBox,
    /// A smart speaker.
    SmartSpeaker,
    /// A phone.
    Smartphone,
    /// Anything else.
    Unknown,
}

/// What a device can do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// It speaks answers aloud.
    Speech,
    /// It has a screen.
    Screen,
    /// It runs client tools.
    DeviceTools,
    /// It can ask the person for permissions.
    UserPermissions,
    /// It opens deep links.
    DeepLinks,
    /// It can run an OAuth sign-in.
    Oauth,
}

/// The message of a `message.submit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Content {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: ContentType,
    /// How the person said it.
    pub source: ContentSource,
    /// The text (non-blank).
    pub text: String,
}

/// The one content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContentType {
    /// Plain text.
    Text,
}

/// How the person gave the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContentSource {
    /// Spoken and transcribed.
    Voice,
    /// Typed.
    Text,
}

/// Overrides for a new thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitMeta {
    /// The answer's language (`ru-RU`).
    #[serde(default)]
    pub locale: Option<String>,
    /// The person's time zone (`Europe/Moscow`).
    #[serde(default)]
    pub time_zone: Option<String>,
    /// The model (an unknown one is `invalid_request`).
    #[serde(default)]
    pub model: Option<String>,
}

/// `thread.cancel`: stop a running thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThreadCancel {
    /// Must be the socket's chat.
    pub chat_id: String,
    /// The idempotency key, unique per chat (shared with `message.submit`).
    pub request_id: String,
    /// The thread to stop.
    pub thread_id: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<CancelReason>,
}

/// Why a device cancels a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The person asked.
    UserRequested,
    /// A newer request replaces it.
    Superseded,
    /// The device is going away.
    DeviceDisconnected,
}

/// `tool.result`: the outcome of a client tool the device ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolResult {
    /// Must be the socket's chat.
    pub chat_id: String,
    /// The thread that called the tool.
    pub thread_id: String,
    /// The call, as `tool.call.started` named it.
    pub tool_call_id: String,
    /// How it ended.
    pub status: ToolResultStatus,
    /// The tool's result (exactly when `succeeded`).
    #[serde(default)]
    pub result: Option<Value>,
    /// What went wrong (exactly when not `succeeded`).
    #[serde(default)]
    pub error: Option<ToolError>,
}

/// How a client tool ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    /// It ran; `result` holds what it returned.
    Succeeded,
    /// It failed.
    Failed,
    /// It was cancelled on the device.
    Cancelled,
    /// It ran out of time on the device.
    TimedOut,
}

/// A client tool's failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolError {
    /// A stable code.
    pub code: String,
    /// For people.
    pub message: String,
    /// More, as an object.
    #[serde(default)]
    pub details: Option<serde_json::Map<String, Value>>,
}

/// A frame Souz sends, by its `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServerFrame {
    /// The answer to one client frame (always sent, before anything it caused).
    Ack(Ack),
    /// A thread's state after an accepted submit or cancel (live only, never replayed).
    Status(ThreadStatusFrame),
    /// A stored chat event that passes the public filter.
    Event(PublicEvent),
}

/// The three shapes of `ack`, by the frame they answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Ack {
    /// Answers `message.submit`.
    Submit(SubmitAck),
    /// Answers `thread.cancel`.
    Cancel(CancelAck),
    /// Answers `tool.result`.
    ToolResult(ToolResultAck),
}

/// Accepted or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AckStatus {
    /// Done (or already done: `duplicate`).
    Accepted,
    /// Not done; `error` says why.
    Rejected,
}

/// Why a frame was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AckError {
    /// A stable code.
    pub code: DeviceErrorCode,
    /// For people.
    pub message: String,
}

/// The stable codes of a rejected ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceErrorCode {
    /// The frame breaks its contract (unknown field, wrong type, blank text, another chat's
    /// `chatId`, an unknown model).
    InvalidRequest,
    /// The `requestId` (or the tool result) was already used with another payload or kind.
    IdempotencyConflict,
    /// Souz cannot take the message now (the chat has a running thread, the thread does not
    /// take input now, Souz is paused).
    MessageRejected,
    /// No such thread in this chat.
    ThreadNotFound,
    /// The thread has ended.
    ThreadAlreadyTerminal,
    /// No pending client tool call with this id.
    ToolCallNotFound,
    /// The client tool call's deadline passed before its result came (the model was told it
    /// timed out).
    ClientToolTimedOut,
    /// Souz failed; the detail is in its log.
    InternalError,
}

/// `ack` of a `message.submit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitAck {
    /// The socket's chat.
    pub chat_id: String,
    /// The frame's `requestId`.
    pub request_id: String,
    /// Accepted or rejected.
    pub status: AckStatus,
    /// The original answer to an earlier frame with the same `requestId` and payload.
    pub duplicate: bool,
    /// Where the input went (accepted only).
    pub submission: Option<Submission>,
    /// The thread (accepted only).
    pub thread: Option<AckThread>,
    /// Why not (rejected only).
    pub error: Option<AckError>,
    /// When Souz received the frame.
    pub received_at: DateTime<Utc>,
}

/// Where accepted input went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Submission {
    /// Its number within the thread: 1 for the message that started it.
    pub input_seq: i64,
}

/// The thread an accepted submit went to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AckThread {
    /// The thread (execution) id.
    pub id: String,
    /// Whether this submit started it.
    pub created: bool,
    /// Its status when accepted.
    pub status: ExecutionStatus,
    /// Its revision: the latest accepted `inputSeq`.
    pub revision: i64,
}

/// `ack` of a `thread.cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelAck {
    /// The socket's chat.
    pub chat_id: String,
    /// The frame's `requestId`.
    pub request_id: String,
    /// The frame's `threadId`.
    pub thread_id: Option<String>,
    /// Accepted or rejected.
    pub status: AckStatus,
    /// The original answer to an earlier frame with the same `requestId` and payload.
    pub duplicate: bool,
    /// Why not (rejected only).
    pub error: Option<AckError>,
    /// When Souz received the frame.
    pub received_at: DateTime<Utc>,
}

/// `ack` of a `tool.result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolResultAck {
    /// The socket's chat.
    pub chat_id: String,
    /// The frame's `toolCallId`.
    pub tool_call_id: Option<String>,
    /// The frame's `threadId`.
    pub thread_id: Option<String>,
    /// Accepted or rejected.
    pub status: AckStatus,
    /// The original answer to the same result sent before.
    pub duplicate: bool,
    /// Why not (rejected only).
    pub error: Option<AckError>,
    /// When Souz received the frame.
    pub received_at: DateTime<Utc>,
}

/// `status`: where a thread stands, sent after an accepted submit or cancel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThreadStatusFrame {
    /// Always `thread.status`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The socket's chat.
    pub chat_id: String,
    /// The thread.
    pub thread_id: String,
    /// The frame that caused it.
    pub request_id: String,
    /// The thread's status.
    pub status: ExecutionStatus,
    /// Active, and its lease (if any) has not run out.
    pub alive: bool,
    /// `queued` or `running`, and alive: a `message.submit` with this `threadId` is taken.
    pub accepts_input: bool,
    /// The latest accepted `inputSeq`.
    pub revision: i64,
    /// When it started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// Until when its owning process holds it.
    pub runtime_lease_expires_at: Option<DateTime<Utc>>,
    /// Why it failed.
    pub error: Option<ThreadError>,
    /// When Souz read this.
    pub observed_at: DateTime<Utc>,
}

/// Why a thread failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThreadError {
    /// A stable code (`process_restarted`, `agent_execution_failed`, ...).
    pub code: String,
    /// For people.
    pub message: String,
}

/// `event`: a stored chat event that passes the public filter: `thread.completed`,
/// `thread.failed`, `thread.cancelled` (the end of every thread, exactly once), and
/// `message.created` of messages that belong to no thread (delivered through another channel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublicEvent {
    /// The chat-local sequence number (resume with `afterSeq` set to it).
    pub seq: i64,
    /// `thread.completed`, `thread.failed`, `thread.cancelled` or `message.created`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The socket's chat.
    pub chat_id: String,
    /// The thread it ends (`null` for `message.created`).
    pub thread_id: Option<String>,
    /// `thread.completed`: `{response}`; `thread.failed`: `{error:{code,message}}`;
    /// `thread.cancelled`: `{reason}`; `message.created`: the message.
    pub payload: Value,
    /// When it happened.
    pub created_at: DateTime<Utc>,
}

/// One thread of a chat (`GET /v1/chats/{chatId}/threads`): one execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// The thread (execution) id.
    pub id: String,
    /// Its status.
    pub status: ExecutionStatus,
    /// The latest accepted `inputSeq` (1 until more input is sent to it).
    pub revision: i64,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// Until when its owning process holds it (active threads).
    pub runtime_lease_expires_at: Option<DateTime<Utc>>,
    /// Why it failed or was cancelled.
    pub error: Option<ThreadError>,
}

/// `GET /v1/chats/{chatId}/threads`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadList {
    /// The threads.
    pub items: Vec<Thread>,
}

#[cfg(test)]
mod tests;
