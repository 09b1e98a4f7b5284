//! A chat execution's trace, "why did it do that": its agent turns with their graph steps,
//! each model request's prompt and answer, the tool calls and their results, and timings, for
//! people to read (`GET /v1/chats/{chatId}/executions/{executionId}/trace`).
//!
//! Built only from what [`sessions`](super::sessions) already stores (turns, steps and the
//! history each step changed); nothing is recorded for it. Invariants: every text goes through
//! the redactor before it is cut, tool arguments and node details through the redacted
//! preview; a message keeps at most [`MAX_TEXT`] characters and a prompt its first message
//! (the system prompt) and the last [`MAX_PROMPT`] others. A step's `added` messages are those
//! of the history after it that were not in the history before it.

use souz_protocol::chat::{ExecutionTrace, TraceMessage, TraceStep, TraceToolCall, TurnTrace};

use super::sessions::{ReplayedStep, Sessions, StepRecord, StoredTurn};
use crate::llm::{Message, Usage};
use crate::redact;
use crate::store::StoreError;

/// Characters of one message's text a trace keeps.
pub(crate) const MAX_TEXT: usize = 2_000;
/// Messages of a prompt a trace keeps after the first.
pub(crate) const MAX_PROMPT: usize = 40;

/// The trace of execution `execution_id` of chat `chat_id` (no turns: it ran none).
pub(crate) async fn execution_trace(
    sessions: &Sessions,
    chat_id: &str,
    execution_id: &str,
) -> Result<ExecutionTrace, StoreError> {
    let mut turns = Vec::new();
    for turn in sessions.turns_of_execution(execution_id).await? {
        if turn.chat_id != chat_id {
            continue;
        }
        let (before, steps) = sessions.replay_turn_from(&turn.turn_id).await?;
        turns.push(turn_trace(turn, &before, &steps));
    }
    Ok(ExecutionTrace {
        execution_id: execution_id.to_owned(),
        chat_id: chat_id.to_owned(),
        turns,
    })
}

fn turn_trace(turn: StoredTurn, start: &[Message], replayed: &[ReplayedStep]) -> TurnTrace {
    let mut before = start;
    let mut steps = Vec::with_capacity(replayed.len());
    for ReplayedStep { step, history } in replayed {
        steps.push(step_trace(step, before, history));
        before = history;
    }
    TurnTrace {
        elapsed_ms: turn.finished_at.map(|finished| {
            u64::try_from((finished - turn.started_at).num_milliseconds()).unwrap_or_default()
        }),
        turn_id: turn.turn_id,
        agent: turn.agent,
        model: turn.model,
        status: turn.status.as_str().to_owned(),
        started_at: turn.started_at,
        finished_at: turn.finished_at,
        usage: turn.usage.as_ref().map(Usage::on_wire),
        error: turn.error.as_deref().map(redact::redact_text),
        steps,
    }
}

/// What a stored step was, from the details its node recorded.
fn kind(step: &StepRecord) -> &'static str {
    let has = |key: &str| step.data.get(key).is_some();
    if step.step_index.is_none() {
        "start"
    } else if has("finishReason") {
        "model"
    } else if has("error") {
        "model_failed"
    } else if has("reply") {
        "reply"
    } else {
        "step"
    }
}

fn step_trace(step: &StepRecord, before: &[Message], after: &[Message]) -> TraceStep {
    let kind = kind(step);
    let prompt = if matches!(kind, "model" | "model_failed") {
        prompt(before)
    } else {
        Vec::new()
    };
    let usage = (kind == "model")
        .then(|| step.data.get("usage").cloned())
        .flatten()
        .and_then(|usage| serde_json::from_value::<Usage>(usage).ok())
        .map(|usage| usage.on_wire());
    TraceStep {
        ordinal: step.ordinal,
        kind: kind.to_owned(),
        node: step.node.clone(),
        graph: step.graph.clone(),
        depth: u32::try_from(step.depth).unwrap_or(u32::MAX),
        attempts: step.attempts,
        elapsed_ms: step.elapsed_ms,
        summary: redact::redact_text(&step.summary),
        at: step.at,
        usage,
        prompt,
        // What is new after the step; a splice may also move messages that were there.
        added: after
            .iter()
            .filter(|message| !before.contains(message))
            .map(message)
            .collect(),
        data: redact::preview(&step.data),
    }
}

/// The messages a request was sent with: the first and the last [`MAX_PROMPT`].
fn prompt(history: &[Message]) -> Vec<TraceMessage> {
    let skip = history.len().saturating_sub(MAX_PROMPT + 1);
    history
        .first()
        .into_iter()
        .chain(history.iter().skip(1 + skip))
        .map(message)
        .collect()
}

/// `text` redacted, then cut to [`MAX_TEXT`] characters; whether it was cut.
fn cut(text: &str) -> (String, bool) {
    let redacted = redact::redact_text(text);
    match redacted.char_indices().nth(MAX_TEXT) {
        Some((end, _)) => (redacted[..end].to_owned(), true),
        None => (redacted, false),
    }
}

fn message(message: &Message) -> TraceMessage {
    let (role, text, tool, is_error, calls) = match message {
        Message::System { content } => ("system", content, None, false, &[][..]),
        Message::User { content, .. } => ("user", content, None, false, &[][..]),
        Message::Assistant {
            content,
            tool_calls,
        } => ("assistant", content, None, false, tool_calls.as_slice()),
        Message::Tool {
            name,
            content,
            is_error,
            ..
        } => ("tool", content, Some(name.clone()), *is_error, &[][..]),
    };
    let (text, truncated) = cut(text);
    TraceMessage {
        role: role.to_owned(),
        text,
        truncated,
        tool,
        is_error,
        tool_calls: calls
            .iter()
            .map(|call| TraceToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: match call.arguments_json() {
                    Ok(arguments) => redact::preview(&arguments),
                    Err(_) => redact::preview_text(&call.arguments),
                },
            })
            .collect(),
    }
}
