//! Agent turns as the chat layer sees them: the [`TurnEngine`] boundary (implemented by the
//! agent runtime), and the execution driver that turns engine events into chat events and the
//! engine's outcome into exactly one terminal state and event.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use souz_protocol::chat::events::{
    ApprovalRequestedPayload, ApprovalResolvedPayload, ToolCallFailedPayload,
    ToolCallFinishedPayload, ToolCallStartedPayload,
};
use souz_protocol::chat::{ChatEventBody, OptionChoice, SelectionMode, Settings, Usage};
use souz_protocol::{ApprovalStatus, ExpiryReason, RecordedDecision};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What an engine is asked to do.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The chat's owner.
    pub user_id: String,
    /// The chat (also the agent's conversation id).
    pub chat_id: String,
    /// The execution this turn belongs to.
    pub execution_id: String,
    /// The id the execution's answer will be stored under, allocated when the execution
    /// started (`message.delta` names it before the message exists).
    pub message_id: String,
    /// What the person said (or answered).
    pub input: TurnInput,
    /// What the person attached, as text for the model (not their words).
    pub attached: String,
    /// Images the person attached to the message (sent to the model as image parts).
    pub images: Vec<crate::llm::ImagePart>,
    /// The settings snapshot the execution started with.
    pub settings: Settings,
    /// The agent the chat runs on (`None`: the configured default).
    pub agent: Option<crate::agent::AgentKind>,
    /// The agent's own tools the chat's turns leave out.
    pub core_off: crate::agent::CoreToolsOff,
    /// The unattended run this turn is (a schedule's): its calls that need a person park.
    pub unattended: Option<crate::tools::gate::Unattended>,
    /// Messages delivered into the chat through another channel since the chat's previous
    /// execution, oldest first (filled when the turn runs: [`Chats::delivered_for`](super::Chats::delivered_for)).
    pub delivered: Vec<crate::agent::Delivered>,
    /// The tools of the device that submitted the turn, when a device did (`client_tools`).
    pub client_tools: Option<crate::agent::client_tools::ClientTools>,
}

/// The person's input to a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnInput {
    /// A chat message.
    Message(String),
    /// The answer to a question the agent asked (the turn continues from it).
    OptionAnswer {
        /// The option id.
        option_id: String,
        /// The question.
        question: String,
        /// The chosen choices.
        selected: Vec<OptionChoice>,
        /// Free text.
        free_text: Option<String>,
        /// Extra metadata.
        metadata: std::collections::BTreeMap<String, String>,
    },
    /// The person approved the call the turn parked on: it runs, and the turn goes on.
    Approved {
        /// The parked approval.
        approval_id: String,
        /// What the person asked the execution to do (its message), which the resumed turn
        /// is reminded of: the turn that parked may not be in the conversation (a crash).
        task: String,
    },
}

/// Something that happened during a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// Streamed answer text of model request `attempt` (1 for the turn's first).
    Delta {
        /// The model request it belongs to.
        attempt: u64,
        /// The text.
        text: String,
    },
    /// The text of model request `attempt` was thrown away (new input arrived); clients
    /// remove what they showed of it.
    Discarded {
        /// The model request.
        attempt: u64,
    },
    /// A running tool call reported progress (live only).
    ToolCallProgress {
        /// Call id.
        call_id: String,
        /// Tool.
        tool: String,
        /// How far along.
        progress: f64,
        /// The total, when known.
        total: Option<f64>,
        /// The tool's message.
        message: Option<String>,
    },
    /// A tool call started running.
    ToolCallStarted {
        /// Call id.
        call_id: String,
        /// Tool.
        tool: String,
        /// Arguments.
        arguments: Value,
    },
    /// A tool call produced a result.
    ToolCallFinished {
        /// Call id.
        call_id: String,
        /// Tool.
        tool: String,
        /// Milliseconds.
        duration_ms: u64,
        /// The result, already redacted and shortened (original §1.17).
        result_preview: Value,
        /// The gate's call id, when the call went through the gate.
        gate_call_id: Option<String>,
    },
    /// A tool call failed or was refused.
    ToolCallFailed {
        /// Call id.
        call_id: String,
        /// Tool.
        tool: String,
        /// Milliseconds.
        duration_ms: u64,
        /// Why.
        error: String,
        /// The gate's call id, when the call went through the gate.
        gate_call_id: Option<String>,
    },
    /// A tool call waits for the person's approval.
    ApprovalRequested {
        /// Approval id.
        approval_id: String,
        /// The model's call id (as in `tool.call.*`).
        call_id: String,
        /// The gate's call id (`GET /v1/tool-calls/{id}`).
        gate_call_id: String,
        /// The catalog tool that asks.
        tool: String,
        /// What it will do.
        summary: String,
    },
    /// A pending approval was decided or expired (a denial).
    ApprovalResolved {
        /// Approval id.
        approval_id: String,
        /// The model's call id.
        call_id: String,
        /// The gate's call id.
        gate_call_id: String,
        /// The catalog tool.
        tool: String,
        /// `approved`, `denied` or `expired`.
        status: ApprovalStatus,
        /// The person's decision, when one was made.
        decision: Option<RecordedDecision>,
        /// Why it expired, when it did.
        expiry_reason: Option<ExpiryReason>,
    },
}

/// A question for the person (the `AskUser` tool) before the chat stores it as an option (with
/// its id, chat and status: `souz_protocol::chat::Question`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewQuestion {
    /// Kind (`generic_selection`, `text_edit_variant`, ...).
    pub kind: String,
    /// The question.
    pub title: String,
    /// One choice or several.
    pub selection_mode: SelectionMode,
    /// Choices (may be empty when free text is accepted).
    pub choices: Vec<OptionChoice>,
    /// Whether a free-text answer is accepted.
    pub free_text: bool,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    /// The agent answered.
    Completed {
        /// The answer (or the explanation of why the turn ended without one).
        text: String,
        /// Tokens used.
        usage: Usage,
        /// Why the turn ended (`answered` unless Souz stopped it or the model failed).
        end_reason: souz_protocol::chat::events::TurnEndReason,
    },
    /// The agent asked the person a question; the turn resumes with the answer.
    Asked {
        /// The question.
        question: NewQuestion,
        /// Tokens used so far.
        usage: Usage,
    },
    /// The turn failed.
    Failed {
        /// Stable code (`agent_execution_failed`, ...).
        code: String,
        /// Message for the person.
        message: String,
        /// Tokens used.
        usage: Usage,
    },
    /// The turn was cancelled.
    Cancelled {
        /// Tokens used.
        usage: Usage,
    },
    /// An unattended turn parked on a call that needs the person; it resumes once they
    /// decide (see `chat::parking`).
    Parked {
        /// The pending approval.
        approval_id: String,
        /// The model's id for the parked call.
        tool_call_id: String,
        /// Tokens used so far.
        usage: Usage,
    },
}

/// Runs agent turns. Implemented by the agent runtime; tests use scripted engines.
pub trait TurnEngine: Send + Sync + 'static {
    /// Runs `turn`, sending events as they happen; ends with the outcome. `cancel` stops the
    /// turn (in-flight model calls aborted, pending approvals withdrawn).
    fn run(
        &self,
        turn: Turn,
        events: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, TurnOutcome>;

    /// Adds input to the turn running in `chat_id` (steering); false when it cannot take it.
    fn steer(&self, _chat_id: &str, _input: &str) -> bool {
        false
    }
}

/// A shareable engine.
pub(crate) type SharedEngine = Arc<dyn TurnEngine>;

/// Adds `more` to `usage`.
pub(crate) fn add_usage(usage: &mut Usage, more: &Usage) {
    usage.prompt_tokens += more.prompt_tokens;
    usage.completion_tokens += more.completion_tokens;
    usage.total_tokens += more.total_tokens;
    usage.precached_tokens += more.precached_tokens;
}

/// The chat event for an engine event, or `None` when the settings hide it (deltas and
/// discards are live-only and published by the relay itself).
pub(crate) fn event_body(event: &TurnEvent, show_tool_events: bool) -> Option<ChatEventBody> {
    match event {
        TurnEvent::Delta { .. }
        | TurnEvent::Discarded { .. }
        | TurnEvent::ToolCallProgress { .. } => None,
        TurnEvent::ToolCallStarted {
            call_id,
            tool,
            arguments,
        } if show_tool_events => {
            let mut keys: Vec<String> = arguments
                .as_object()
                .map(|object| object.keys().cloned().collect())
                .unwrap_or_default();
            keys.sort();
            Some(ChatEventBody::ToolCallStarted(ToolCallStartedPayload {
                tool_call_id: call_id.clone(),
                name: tool.clone(),
                argument_keys: keys,
                arguments_preview: crate::redact::preview(arguments),
            }))
        }
        TurnEvent::ToolCallFinished {
            call_id,
            tool,
            duration_ms,
            result_preview,
            gate_call_id,
        } if show_tool_events => Some(ChatEventBody::ToolCallFinished(ToolCallFinishedPayload {
            tool_call_id: call_id.clone(),
            name: tool.clone(),
            status: "finished".into(),
            duration_ms: *duration_ms,
            result_preview: result_preview.clone(),
            call_id: gate_call_id.clone(),
        })),
        TurnEvent::ToolCallFailed {
            call_id,
            tool,
            duration_ms,
            error,
            gate_call_id,
        } if show_tool_events => Some(ChatEventBody::ToolCallFailed(ToolCallFailedPayload {
            tool_call_id: call_id.clone(),
            name: tool.clone(),
            status: "failed".into(),
            error: crate::redact::error_preview(error),
            duration_ms: *duration_ms,
            call_id: gate_call_id.clone(),
        })),
        TurnEvent::ApprovalRequested {
            approval_id,
            call_id,
            gate_call_id,
            tool,
            summary,
        } => Some(ChatEventBody::ApprovalRequested(ApprovalRequestedPayload {
            approval_id: approval_id.clone(),
            tool_call_id: call_id.clone(),
            call_id: gate_call_id.clone(),
            name: tool.clone(),
            summary: summary.clone(),
        })),
        TurnEvent::ApprovalResolved {
            approval_id,
            call_id,
            gate_call_id,
            tool,
            status,
            decision,
            expiry_reason,
        } => {
            // An expiry is recorded as a denial "via" its reason: the reason says it.
            let decision = decision.as_ref().filter(|_| expiry_reason.is_none());
            let payload = ApprovalResolvedPayload {
                approval_id: approval_id.clone(),
                tool_call_id: call_id.clone(),
                call_id: gate_call_id.clone(),
                name: tool.clone(),
                status: *status,
                scope: decision.map(|decision| decision.scope),
                via: decision.map(|decision| decision.via.clone()),
                decided_at: decision.map(|decision| decision.decided_at),
                grant_id: decision.and_then(|decision| decision.grant_id.clone()),
                reason: *expiry_reason,
            };
            Some(if *status == ApprovalStatus::Expired {
                ChatEventBody::ApprovalExpired(payload)
            } else {
                ChatEventBody::ApprovalDecided(payload)
            })
        }
        _ => None,
    }
}
