//! The typed body of a chat event: its dotted `type` and its `payload`, one variant per kind.
//!
//! Invariants:
//! - The bytes are those the untyped `{type, payload}` pair had: the payload is written as a
//!   JSON object with its keys sorted (as `serde_json::Value` writes them), field names and
//!   optionality exactly as the producers wrote them (an absent optional field stays absent,
//!   a `null` one stays `null`).
//! - Nothing read back is lost: a kind this build does not know, or a payload that does not fit
//!   its kind's struct exactly (unknown or missing fields, as an older or newer daemon may have
//!   stored), is kept verbatim as [`ChatEventBody::Other`] and written back unchanged.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{OptionChoice, SelectionMode};
use crate::approvals::{ApprovalStatus, ExpiryReason, ScopeKind};

/// A message was stored (`message.created`) or an answer completed (`message.completed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessagePayload {
    /// Message id.
    pub message_id: String,
    /// Position in the chat, from 1.
    pub seq: i64,
    /// `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
    /// The client's idempotency key of a user message, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
    /// The files the person attached to a user message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<super::Attachment>,
}

impl MessagePayload {
    /// The `message.created` payload of a stored `message` (with the client's idempotency
    /// key of a user message, which the message keeps elsewhere).
    pub fn of(message: &super::Message, client_message_id: Option<String>) -> Self {
        Self {
            message_id: message.id.clone(),
            seq: message.seq,
            role: message.role.clone(),
            content: message.content.clone(),
            client_message_id,
            attachments: message.attachments.clone(),
        }
    }
}

/// Streamed answer text (live only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageDeltaPayload {
    /// The id the answer will be stored under.
    pub message_id: String,
    /// The execution.
    pub execution_id: String,
    /// The model request it belongs to (1 for the turn's first).
    pub attempt: u64,
    /// The text.
    pub delta: String,
}

/// The streamed text of one model request was thrown away (live only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageDiscardedPayload {
    /// The id the answer will be stored under.
    pub message_id: String,
    /// The execution.
    pub execution_id: String,
    /// The model request whose text to remove.
    pub attempt: u64,
}

/// A tool call started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallStartedPayload {
    /// The model's call id.
    pub tool_call_id: String,
    /// Tool name.
    pub name: String,
    /// The argument names, sorted.
    pub argument_keys: Vec<String>,
    /// The arguments, redacted and shortened.
    pub arguments_preview: Value,
}

/// A running tool call reported progress (live only: an external MCP server's
/// `notifications/progress`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallProgressPayload {
    /// The model's call id.
    pub tool_call_id: String,
    /// Tool name.
    pub name: String,
    /// How far along (increases with each report).
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// The tool's message, redacted and shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A tool call produced a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallFinishedPayload {
    /// The model's call id.
    pub tool_call_id: String,
    /// Tool name.
    pub name: String,
    /// Always `finished`.
    pub status: String,
    /// Milliseconds.
    pub duration_ms: u64,
    /// The result, redacted and shortened.
    pub result_preview: Value,
    /// The gate's call id (`GET /v1/tool-calls/{id}`, what `souz undo` and the history name)
    /// when the call went through the gate; absent for Souz's own core tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// A tool call failed or was refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallFailedPayload {
    /// The model's call id.
    pub tool_call_id: String,
    /// Tool name.
    pub name: String,
    /// Always `failed`.
    pub status: String,
    /// Why, redacted and shortened.
    pub error: String,
    /// Milliseconds.
    pub duration_ms: u64,
    /// The gate's call id (`GET /v1/tool-calls/{id}`, what `souz undo` and the history name)
    /// when the call went through the gate; absent for Souz's own core tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// A tool call waits for the person's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequestedPayload {
    /// Approval id.
    pub approval_id: String,
    /// The model's call id (as in `tool.call.*`).
    pub tool_call_id: String,
    /// The gate's call id (`GET /v1/tool-calls/{id}`).
    pub call_id: String,
    /// The catalog tool that asks.
    pub name: String,
    /// What it will do.
    pub summary: String,
}

/// A pending approval was decided (`approval.decided`) or expired (`approval.expired`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalResolvedPayload {
    /// Approval id.
    pub approval_id: String,
    /// The model's call id.
    pub tool_call_id: String,
    /// The gate's call id.
    pub call_id: String,
    /// The catalog tool.
    pub name: String,
    /// `approved`, `denied` or `expired`.
    pub status: ApprovalStatus,
    /// The scope a person chose (absent for an expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeKind>,
    /// Where it was decided (absent for an expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// When it was decided (absent for an expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    /// The grant a scoped approval created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<String>,
    /// Why it expired, for an expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ExpiryReason>,
}

/// The agent asked the person a question; the execution waits for the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OptionRequestedPayload {
    /// Option (question) id.
    pub option_id: String,
    /// Kind (`generic_selection`, ...).
    pub kind: String,
    /// The question.
    pub title: String,
    /// One choice or several.
    pub selection_mode: SelectionMode,
    /// The choices.
    pub options: Vec<OptionChoice>,
    /// Whether a free-text answer is accepted.
    pub free_text: bool,
    /// When it expires.
    pub expires_at: Option<DateTime<Utc>>,
}

/// The person answered a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OptionAnsweredPayload {
    /// Option (question) id.
    pub option_id: String,
    /// Always `answered`.
    pub status: String,
    /// The chosen choice ids.
    pub selected_option_ids: Vec<String>,
    /// The free text (empty when none was given).
    pub free_text: String,
    /// String metadata sent with the answer.
    pub metadata: BTreeMap<String, String>,
}

/// An execution (agent turn) started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionStartedPayload {
    /// Execution id.
    pub execution_id: String,
    /// The user message that started it.
    pub user_message_id: String,
    /// The model, if known.
    pub model: Option<String>,
    /// The provider, if known.
    pub provider: Option<String>,
    /// Whether the answer streams as `message.delta` events.
    pub streaming_messages: bool,
}

/// An execution completed with an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionFinishedPayload {
    /// Execution id.
    pub execution_id: String,
    /// The answer's message id.
    pub assistant_message_id: String,
    /// Always `completed`.
    pub status: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Prompt tokens served from a cache.
    pub precached_tokens: u64,
    /// Why the turn ended: the model answered, or Souz ended it and the answer explains why.
    /// Absent means `answered` (so events stored before this field existed are written as
    /// they were stored).
    #[serde(default, skip_serializing_if = "TurnEndReason::is_answered")]
    pub end_reason: TurnEndReason,
}

/// Why an agent turn ended with the message it left for the person.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnEndReason {
    /// The model answered.
    #[default]
    Answered,
    /// The model kept making the same tool call with the same arguments and getting the same
    /// result; the turn was stopped (`[agent] repeated_call_limit`).
    RepeatedToolCall,
    /// The turn made as many tool calls as it may (`[agent] max_tool_calls`).
    ToolCallLimit,
    /// The turn ran as long as it may (`[agent] max_turn_seconds`).
    TimeLimit,
    /// The model's answer did not fit in the output-token limit.
    CutOff,
    /// The model did not answer in time.
    Timeout,
    /// The conversation outgrew the model's context and was reset.
    ContextReset,
    /// The provider's account has no balance.
    NoBalance,
    /// The model request failed otherwise.
    ModelError,
}

impl TurnEndReason {
    /// Whether the model answered (the reason left out on the wire).
    pub fn is_answered(&self) -> bool {
        *self == Self::Answered
    }

    /// The stable code, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::RepeatedToolCall => "repeated_tool_call",
            Self::ToolCallLimit => "tool_call_limit",
            Self::TimeLimit => "time_limit",
            Self::CutOff => "cut_off",
            Self::Timeout => "timeout",
            Self::ContextReset => "context_reset",
            Self::NoBalance => "no_balance",
            Self::ModelError => "model_error",
        }
    }
}

impl std::fmt::Display for TurnEndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An execution failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionFailedPayload {
    /// Execution id.
    pub execution_id: String,
    /// Stable code (`agent_execution_failed`, ...).
    pub error_code: String,
    /// Message for the person.
    pub error_message: String,
}

/// An execution was cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionCancelledPayload {
    /// Execution id.
    pub execution_id: String,
}

/// What a chat event says: its `type` and the `payload` of that type.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEventBody {
    /// `message.created`: a message was stored.
    MessageCreated(MessagePayload),
    /// `message.delta`: streamed answer text (live only).
    MessageDelta(MessageDeltaPayload),
    /// `message.discarded`: streamed text thrown away (live only).
    MessageDiscarded(MessageDiscardedPayload),
    /// `message.completed`: the answer is complete.
    MessageCompleted(MessagePayload),
    /// `tool.call.started`.
    ToolCallStarted(ToolCallStartedPayload),
    /// `tool.call.progress`: a running call's progress (live only).
    ToolCallProgress(ToolCallProgressPayload),
    /// `tool.call.finished`.
    ToolCallFinished(ToolCallFinishedPayload),
    /// `tool.call.failed`.
    ToolCallFailed(ToolCallFailedPayload),
    /// `approval.requested`.
    ApprovalRequested(ApprovalRequestedPayload),
    /// `approval.decided`.
    ApprovalDecided(ApprovalResolvedPayload),
    /// `approval.expired`.
    ApprovalExpired(ApprovalResolvedPayload),
    /// `option.requested`.
    OptionRequested(OptionRequestedPayload),
    /// `option.answered`.
    OptionAnswered(OptionAnsweredPayload),
    /// `execution.started`.
    ExecutionStarted(ExecutionStartedPayload),
    /// `execution.finished`.
    ExecutionFinished(ExecutionFinishedPayload),
    /// `execution.failed`.
    ExecutionFailed(ExecutionFailedPayload),
    /// `execution.cancelled`.
    ExecutionCancelled(ExecutionCancelledPayload),
    /// A kind this build does not know, or a payload that does not fit its kind: kept verbatim.
    Other {
        /// The dotted type.
        kind: String,
        /// The payload as read.
        payload: Value,
    },
}

impl ChatEventBody {
    /// The dotted type (`message.created`).
    pub fn kind(&self) -> &str {
        match self {
            Self::MessageCreated(_) => "message.created",
            Self::MessageDelta(_) => "message.delta",
            Self::MessageDiscarded(_) => "message.discarded",
            Self::MessageCompleted(_) => "message.completed",
            Self::ToolCallStarted(_) => "tool.call.started",
            Self::ToolCallProgress(_) => "tool.call.progress",
            Self::ToolCallFinished(_) => "tool.call.finished",
            Self::ToolCallFailed(_) => "tool.call.failed",
            Self::ApprovalRequested(_) => "approval.requested",
            Self::ApprovalDecided(_) => "approval.decided",
            Self::ApprovalExpired(_) => "approval.expired",
            Self::OptionRequested(_) => "option.requested",
            Self::OptionAnswered(_) => "option.answered",
            Self::ExecutionStarted(_) => "execution.started",
            Self::ExecutionFinished(_) => "execution.finished",
            Self::ExecutionFailed(_) => "execution.failed",
            Self::ExecutionCancelled(_) => "execution.cancelled",
            Self::Other { kind, .. } => kind,
        }
    }

    /// The payload as a JSON value (object keys sorted: the stored and sent form).
    pub fn payload(&self) -> Result<Value, serde_json::Error> {
        match self {
            Self::MessageCreated(payload) | Self::MessageCompleted(payload) => {
                serde_json::to_value(payload)
            }
            Self::MessageDelta(payload) => serde_json::to_value(payload),
            Self::MessageDiscarded(payload) => serde_json::to_value(payload),
            Self::ToolCallStarted(payload) => serde_json::to_value(payload),
            Self::ToolCallProgress(payload) => serde_json::to_value(payload),
            Self::ToolCallFinished(payload) => serde_json::to_value(payload),
            Self::ToolCallFailed(payload) => serde_json::to_value(payload),
            Self::ApprovalRequested(payload) => serde_json::to_value(payload),
            Self::ApprovalDecided(payload) | Self::ApprovalExpired(payload) => {
                serde_json::to_value(payload)
            }
            Self::OptionRequested(payload) => serde_json::to_value(payload),
            Self::OptionAnswered(payload) => serde_json::to_value(payload),
            Self::ExecutionStarted(payload) => serde_json::to_value(payload),
            Self::ExecutionFinished(payload) => serde_json::to_value(payload),
            Self::ExecutionFailed(payload) => serde_json::to_value(payload),
            Self::ExecutionCancelled(payload) => serde_json::to_value(payload),
            Self::Other { payload, .. } => Ok(payload.clone()),
        }
    }

    /// The body for a stored or received `type` and `payload`: typed when the kind is known and
    /// the payload fits it exactly, [`Self::Other`] otherwise.
    pub fn from_parts(kind: String, payload: Value) -> Self {
        match Self::decode(&kind, ParsedPayload(payload)) {
            Ok(body) => body,
            // A parsed value always converts back to itself.
            Err(never) => match never {},
        }
    }

    /// [`Self::from_parts`] straight from the payload's JSON text (as stored), without building
    /// a [`Value`] first unless the payload does not fit its kind. Fails only when `payload` is
    /// not JSON.
    pub fn from_text(kind: &str, payload: &str) -> Result<Self, serde_json::Error> {
        Self::decode(kind, TextPayload(payload))
    }

    fn decode<P: PayloadSource>(kind: &str, payload: P) -> Result<Self, P::Error> {
        fn typed<T: DeserializeOwned, P: PayloadSource>(
            kind: &str,
            payload: P,
            variant: fn(T) -> ChatEventBody,
        ) -> Result<ChatEventBody, P::Error> {
            match payload.typed::<T>() {
                Some(typed) => Ok(variant(typed)),
                None => Ok(ChatEventBody::Other {
                    kind: kind.to_owned(),
                    payload: payload.value()?,
                }),
            }
        }
        match kind {
            "message.created" => typed(kind, payload, Self::MessageCreated),
            "message.delta" => typed(kind, payload, Self::MessageDelta),
            "message.discarded" => typed(kind, payload, Self::MessageDiscarded),
            "message.completed" => typed(kind, payload, Self::MessageCompleted),
            "tool.call.started" => typed(kind, payload, Self::ToolCallStarted),
            "tool.call.progress" => typed(kind, payload, Self::ToolCallProgress),
            "tool.call.finished" => typed(kind, payload, Self::ToolCallFinished),
            "tool.call.failed" => typed(kind, payload, Self::ToolCallFailed),
            "approval.requested" => typed(kind, payload, Self::ApprovalRequested),
            "approval.decided" => typed(kind, payload, Self::ApprovalDecided),
            "approval.expired" => typed(kind, payload, Self::ApprovalExpired),
            "option.requested" => typed(kind, payload, Self::OptionRequested),
            "option.answered" => typed(kind, payload, Self::OptionAnswered),
            "execution.started" => typed(kind, payload, Self::ExecutionStarted),
            "execution.finished" => typed(kind, payload, Self::ExecutionFinished),
            "execution.failed" => typed(kind, payload, Self::ExecutionFailed),
            "execution.cancelled" => typed(kind, payload, Self::ExecutionCancelled),
            _ => Ok(Self::Other {
                kind: kind.to_owned(),
                payload: payload.value()?,
            }),
        }
    }

    /// Whether an execution ended with it (`execution.finished`, `.failed`, `.cancelled`).
    pub fn ends_execution(&self) -> bool {
        matches!(
            self,
            Self::ExecutionFinished(_) | Self::ExecutionFailed(_) | Self::ExecutionCancelled(_)
        )
    }
}

/// A payload to read a body from: a parsed value, or JSON text read without an intermediate
/// value.
trait PayloadSource {
    /// Why the payload cannot be kept as a value.
    type Error;
    /// The payload as `T`, if it fits exactly.
    fn typed<T: DeserializeOwned>(&self) -> Option<T>;
    /// The payload as a value (for [`ChatEventBody::Other`]).
    fn value(self) -> Result<Value, Self::Error>;
}

struct ParsedPayload(Value);

impl PayloadSource for ParsedPayload {
    type Error = std::convert::Infallible;

    fn typed<T: DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(&self.0).ok()
    }

    fn value(self) -> Result<Value, Self::Error> {
        Ok(self.0)
    }
}

struct TextPayload<'a>(&'a str);

impl PayloadSource for TextPayload<'_> {
    type Error = serde_json::Error;

    fn typed<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_str(self.0).ok()
    }

    fn value(self) -> Result<Value, Self::Error> {
        serde_json::from_str(self.0)
    }
}

/// The wire form: `{"type": ..., "payload": ...}` (flattened into [`super::ChatEvent`]).
#[derive(Serialize, Deserialize)]
struct Parts<P> {
    #[serde(rename = "type")]
    kind: String,
    payload: P,
}

impl Serialize for ChatEventBody {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Parts {
            kind: self.kind().to_owned(),
            payload: self.payload().map_err(S::Error::custom)?,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ChatEventBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let parts = Parts::<Value>::deserialize(deserializer)?;
        Ok(Self::from_parts(parts.kind, parts.payload))
    }
}

/// The documented shape: one alternative per known kind (the schema of [`ChatEventBody`]).
/// Kinds this daemon does not write ([`ChatEventBody::Other`]) are left out of the document;
/// clients ignore types they do not know.
#[derive(JsonSchema)]
#[serde(tag = "type", content = "payload")]
#[allow(dead_code)] // Only its schema is used.
enum Documented {
    /// A message was stored.
    #[serde(rename = "message.created")]
    MessageCreated(MessagePayload),
    /// Streamed answer text (live only: `seq` is `null`).
    #[serde(rename = "message.delta")]
    MessageDelta(MessageDeltaPayload),
    /// Streamed text of one model request thrown away (live only).
    #[serde(rename = "message.discarded")]
    MessageDiscarded(MessageDiscardedPayload),
    /// The answer is complete.
    #[serde(rename = "message.completed")]
    MessageCompleted(MessagePayload),
    /// A tool call started.
    #[serde(rename = "tool.call.started")]
    ToolCallStarted(ToolCallStartedPayload),
    /// A running tool call reported progress (live only: `seq` is `null`).
    #[serde(rename = "tool.call.progress")]
    ToolCallProgress(ToolCallProgressPayload),
    /// A tool call produced a result.
    #[serde(rename = "tool.call.finished")]
    ToolCallFinished(ToolCallFinishedPayload),
    /// A tool call failed or was refused.
    #[serde(rename = "tool.call.failed")]
    ToolCallFailed(ToolCallFailedPayload),
    /// A tool call waits for approval.
    #[serde(rename = "approval.requested")]
    ApprovalRequested(ApprovalRequestedPayload),
    /// A person decided a pending approval.
    #[serde(rename = "approval.decided")]
    ApprovalDecided(ApprovalResolvedPayload),
    /// A pending approval expired (a denial).
    #[serde(rename = "approval.expired")]
    ApprovalExpired(ApprovalResolvedPayload),
    /// The agent asked a question.
    #[serde(rename = "option.requested")]
    OptionRequested(OptionRequestedPayload),
    /// The person answered a question.
    #[serde(rename = "option.answered")]
    OptionAnswered(OptionAnsweredPayload),
    /// An execution started.
    #[serde(rename = "execution.started")]
    ExecutionStarted(ExecutionStartedPayload),
    /// An execution completed.
    #[serde(rename = "execution.finished")]
    ExecutionFinished(ExecutionFinishedPayload),
    /// An execution failed.
    #[serde(rename = "execution.failed")]
    ExecutionFailed(ExecutionFailedPayload),
    /// An execution was cancelled.
    #[serde(rename = "execution.cancelled")]
    ExecutionCancelled(ExecutionCancelledPayload),
}

impl JsonSchema for ChatEventBody {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ChatEventBody".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Documented::json_schema(generator)
    }
}

#[cfg(test)]
mod tests;
