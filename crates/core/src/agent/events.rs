//! What a running turn reports to whoever shows it: answer text as it streams, tool calls and
//! the approvals they wait for, steering input taken into account.
//!
//! Invariants:
//! - Events arrive in the order things happened, from the turn's own task.
//! - Text deltas carry the number of the model request (`attempt`) they belong to. A request
//!   whose answer was thrown away (new input arrived while it ran) is followed by
//!   [`AgentEvent::AnswerDiscarded`]: a display removes that attempt's text. Text of attempts
//!   never discarded is part of the conversation.
//! - A sink must not block: it is called on the turn's hot path (forward into a channel).

use serde::Serialize;
use souz_protocol::{ApprovalStatus, ExpiryReason, RecordedDecision};

/// Something that happened during a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// More text of the model's answer.
    TextDelta {
        /// The model request this text belongs to (1 for the turn's first).
        attempt: u64,
        /// The text.
        text: String,
    },
    /// The answer of this request was thrown away because new input arrived; remove its text.
    AnswerDiscarded {
        /// The model request.
        attempt: u64,
    },
    /// Input sent while the turn ran was added to the conversation.
    InputApplied {
        /// The mailbox revision it brings the turn to (compare with what submitting returned).
        revision: u64,
    },
    /// Long-term memory was added to the prompt.
    MemoryRecalled {
        /// How many facts.
        facts: usize,
    },
    /// A tool call the model made is starting.
    ToolCallStarted {
        /// The model's id for the call.
        tool_call_id: String,
        /// The tool.
        tool: String,
        /// The arguments as the model wrote them.
        arguments: String,
    },
    /// The call waits for a person's decision.
    ApprovalRequested {
        /// The model's id for the call.
        tool_call_id: String,
        /// The gate's id for the call.
        call_id: String,
        /// The pending approval.
        approval_id: String,
        /// The catalog tool that asks (for `RunSkillCommand`, the skill it runs).
        tool: String,
        /// What the call will do, in one line (the gate's plan).
        summary: String,
    },
    /// The pending approval was decided, or expired (which is a denial). Comes before the
    /// call's own end.
    ApprovalResolved {
        /// The model's id for the call.
        tool_call_id: String,
        /// The gate's id for the call.
        call_id: String,
        /// The approval.
        approval_id: String,
        /// The catalog tool.
        tool: String,
        /// `approved`, `denied` or `expired`.
        status: ApprovalStatus,
        /// The person's decision, when one was made.
        decision: Option<RecordedDecision>,
        /// Why it expired, when it did.
        expiry_reason: Option<ExpiryReason>,
    },
    /// The running call reported progress (an external MCP server's `notifications/progress`).
    ToolCallProgress {
        /// The model's id for the call.
        tool_call_id: String,
        /// The tool.
        tool: String,
        /// How far along.
        progress: f64,
        /// The total, when known.
        total: Option<f64>,
        /// The tool's message.
        message: Option<String>,
    },
    /// The call produced a result.
    ToolCallFinished {
        /// The model's id for the call.
        tool_call_id: String,
        /// The tool.
        tool: String,
        /// How long it took, approval wait included.
        duration_ms: u64,
        /// The result, redacted and shortened like the audit's (original §1.17).
        result_preview: serde_json::Value,
        /// The gate's id for the call, when it went through the gate.
        call_id: Option<String>,
    },
    /// The call failed, was refused, or does not exist; the model gets the reason.
    ToolCallFailed {
        /// The model's id for the call.
        tool_call_id: String,
        /// The tool.
        tool: String,
        /// Why (redacted and shortened).
        error: String,
        /// How long it took.
        duration_ms: u64,
        /// The gate's id for the call, when it went through the gate.
        call_id: Option<String>,
    },
}

/// Receives a turn's events. Must return quickly.
pub trait TurnSink: Send + Sync {
    /// One event.
    fn send(&self, event: AgentEvent);
}

impl<F> TurnSink for F
where
    F: Fn(AgentEvent) + Send + Sync,
{
    fn send(&self, event: AgentEvent) {
        self(event);
    }
}

/// A sink that drops everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSink;

impl TurnSink for NoSink {
    fn send(&self, _: AgentEvent) {}
}
