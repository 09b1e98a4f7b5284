//! How a turn ends: the [`AgentOutcome`] made of its graph's result, and the reply of a turn
//! its [`Watch`](super::limits::Watch) stopped.
//!
//! Invariants:
//! - A turn stopped by a limit ends `Failed` with a reply that tells the person why, in their
//!   language, and the reason as the reply's failure code and the turn's error (which the
//!   trace shows). Its history stays sendable: every tool call has a result, and the
//!   explanation is the last assistant message, so the next turn's model knows it stopped.
//! - A turn cancelled by its deadline is not "cancelled": the deadline is a stop like the
//!   others; only the person's (or the caller's) cancellation makes a cancelled turn.
//! - Tokens used are kept whatever the end: the last context the graph reached carries them.

use souz_protocol::language::Language;

use super::context::{AgentContext, ChatOutcome, Reply, ReplyFailure};
use super::gate_call::ParkedCall;
use super::limits::{Stop, answer_open_calls};
use super::nodes::names;
use super::sessions::TurnStatus;
use crate::graph::{GraphError, LastContext};
use crate::llm::{Message, Usage};

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutcome {
    /// The turn.
    pub turn_id: String,
    /// How it ended.
    pub status: TurnStatus,
    /// The reply (also an explanation of a failed model request, or of a stop); `None` when
    /// cancelled or broken.
    pub reply: Option<Reply>,
    /// Why it failed: always when it failed without a reply; for a stopped turn, the stop.
    pub error: Option<String>,
    /// The history to continue from.
    pub history: Vec<Message>,
    /// Tokens used.
    pub usage: Usage,
    /// Inputs sent while it ran that it never read (start a new turn with them).
    pub undelivered: Vec<String>,
    /// The model that answered.
    pub model: String,
    /// The call the turn parked on (an unattended turn's); it ended there.
    pub parked: Option<ParkedCall>,
}

/// What [`conclude`] needs of the turn besides its graph's result.
pub(crate) struct Ending<'a> {
    /// The turn.
    pub turn_id: &'a str,
    /// The model's label.
    pub model: &'a str,
    /// The history the turn started from (kept when nothing later survives).
    pub history: &'a [Message],
    /// Inputs it never read.
    pub undelivered: Vec<String>,
    /// Why its watch stopped it, if it did.
    pub stop: Option<Stop>,
    /// The person's language.
    pub language: Language,
    /// Tokens of summary attempts that failed.
    pub summary_usage: Usage,
}

/// What a context of any node type holds that an outcome needs.
fn history_and_usage(last: LastContext) -> Option<(Vec<Message>, Usage)> {
    let last = match last.downcast::<AgentContext<String>>() {
        Ok(context) => return Some((context.history, context.usage)),
        Err(last) => last,
    };
    let last = match last.downcast::<AgentContext<ChatOutcome>>() {
        Ok(context) => return Some((context.history, context.usage)),
        Err(last) => last,
    };
    last.downcast::<AgentContext<Reply>>()
        .ok()
        .map(|context| (context.history, context.usage))
}

/// The reply of a stopped turn, and its history with the explanation appended.
fn stopped(stop: &Stop, language: Language, history: &mut Vec<Message>) -> Reply {
    let text = stop.text(language);
    answer_open_calls(history);
    history.push(Message::assistant(text.clone()));
    Reply {
        text,
        failure: Some(ReplyFailure {
            code: stop.reason,
            detail: stop.detail(),
        }),
        question: None,
    }
}

/// The node a turn goes to when its watch stopped it after a tool batch.
pub(crate) fn stopped_reply(
    stop: &Stop,
    language: Language,
    mut context: AgentContext<String>,
) -> AgentContext<Reply> {
    let reply = stopped(stop, language, &mut context.history);
    context.with(reply)
}

/// The outcome of a graph run.
pub(crate) fn conclude(
    ending: Ending<'_>,
    result: Result<AgentContext<Reply>, GraphError>,
) -> AgentOutcome {
    let mut outcome = AgentOutcome {
        turn_id: ending.turn_id.to_owned(),
        status: TurnStatus::Completed,
        reply: None,
        error: None,
        history: Vec::new(),
        usage: Usage::default(),
        undelivered: ending.undelivered,
        model: ending.model.to_owned(),
        parked: None,
    };
    match result {
        Ok(context) => {
            if let Some(failure) = &context.input.failure {
                outcome.status = TurnStatus::Failed;
                if ending.stop.is_some() {
                    outcome.error = Some(format!("{}: {}", failure.code, failure.detail));
                }
            }
            outcome.history = context.history;
            outcome.usage = context.usage;
            outcome.reply = Some(context.input);
        }
        // The answer exists and the person saw it; only its summary failed.
        Err(GraphError::Node {
            node,
            source,
            last_context,
            ..
        }) if node == names::FINISH && last_context.is::<AgentContext<ChatOutcome>>() => {
            tracing::warn!(error = %source, "summarizing the history failed; keeping it whole");
            if let Ok(context) = last_context.downcast::<AgentContext<ChatOutcome>>() {
                outcome.reply = Some(Reply {
                    text: match &context.input {
                        ChatOutcome::Answer(response) => response.content.clone(),
                        ChatOutcome::Failed(error) => error.to_string(),
                    },
                    failure: None,
                    question: None,
                });
                outcome.history = context.history;
                outcome.usage = context.usage;
                outcome.usage.add(ending.summary_usage);
            }
        }
        Err(error) => {
            let stop = match (&error, ending.stop) {
                (GraphError::Cancelled { .. }, Some(stop)) => Some(stop),
                _ => None,
            };
            if let Some(stop) = &stop {
                outcome.status = TurnStatus::Failed;
                outcome.error = Some(format!("{}: {}", stop.reason, stop.detail()));
            } else if let GraphError::Cancelled { .. } = error {
                outcome.status = TurnStatus::Cancelled;
            } else {
                tracing::warn!(%error, turn_id = %ending.turn_id, "a turn failed");
                outcome.status = TurnStatus::Failed;
                outcome.error = Some(error.to_string());
            }
            let (history, usage) = history_and_usage(error.into_last_context())
                .unwrap_or_else(|| (ending.history.to_vec(), Usage::default()));
            outcome.history = history;
            outcome.usage = usage;
            if let Some(stop) = &stop {
                outcome.reply = Some(stopped(stop, ending.language, &mut outcome.history));
            }
        }
    }
    // Attached images are sent with the turn they came with; the conversation keeps a
    // note in their place (the bytes are neither stored again nor re-sent every turn).
    outcome.history = std::mem::take(&mut outcome.history)
        .into_iter()
        .map(Message::without_images)
        .collect();
    outcome
}
