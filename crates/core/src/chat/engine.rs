//! The agent runtime as the chat's turn engine: a chat turn is an agent turn on the chat's
//! stored history, with the execution's settings snapshot, the `AskUser` tool, and the agent's
//! events turned into chat events.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use souz_protocol::chat::{OptionChoice, SelectionMode, Usage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::turns::{NewQuestion, Turn, TurnEngine, TurnEvent, TurnInput, TurnOutcome};
use crate::agent::sessions::TurnStatus;
use crate::agent::turn::TurnRequest;
use crate::agent::{AgentError, Agents, events as agent_events};

/// Runs chat turns on the agents.
#[derive(Clone)]
pub(crate) struct AgentEngine {
    agents: Agents,
}

impl AgentEngine {
    /// An engine over `agents`.
    pub(crate) fn new(agents: Agents) -> Self {
        Self { agents }
    }
}

/// The text an option answer becomes as the person's next message.
pub(crate) fn answer_text(
    question: &str,
    selected: &[OptionChoice],
    free_text: Option<&str>,
) -> String {
    let mut parts: Vec<String> = selected.iter().map(|choice| choice.label.clone()).collect();
    if let Some(text) = free_text {
        parts.push(text.to_owned());
    }
    crate::agent::ask_user::answer_text(question, &parts)
}

fn question(asked: &crate::agent::context::AskedQuestion) -> NewQuestion {
    NewQuestion {
        kind: "generic_selection".to_owned(),
        title: asked.title.clone(),
        selection_mode: if asked.multiple {
            SelectionMode::Multiple
        } else {
            SelectionMode::Single
        },
        choices: asked
            .choices
            .iter()
            .map(|(id, label)| OptionChoice {
                id: id.clone(),
                label: label.clone(),
                content: None,
            })
            .collect(),
        free_text: asked.free_text,
    }
}

/// The chat's view of an agent event (`None`: not shown in chats).
fn relay(event: agent_events::AgentEvent) -> Option<TurnEvent> {
    use agent_events::AgentEvent as Agent;
    match event {
        Agent::TextDelta { attempt, text } => Some(TurnEvent::Delta { attempt, text }),
        Agent::AnswerDiscarded { attempt } => Some(TurnEvent::Discarded { attempt }),
        Agent::ToolCallStarted {
            tool_call_id,
            tool,
            arguments,
        } => Some(TurnEvent::ToolCallStarted {
            call_id: tool_call_id,
            tool,
            arguments: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
        }),
        Agent::ToolCallFinished {
            tool_call_id,
            tool,
            duration_ms,
            result_preview,
            call_id,
        } => Some(TurnEvent::ToolCallFinished {
            call_id: tool_call_id,
            tool,
            duration_ms,
            result_preview,
            gate_call_id: call_id,
        }),
        Agent::ToolCallProgress {
            tool_call_id,
            tool,
            progress,
            total,
            message,
        } => Some(TurnEvent::ToolCallProgress {
            call_id: tool_call_id,
            tool,
            progress,
            total,
            message,
        }),
        Agent::ToolCallFailed {
            tool_call_id,
            tool,
            error,
            duration_ms,
            call_id,
        } => Some(TurnEvent::ToolCallFailed {
            call_id: tool_call_id,
            tool,
            duration_ms,
            error,
            gate_call_id: call_id,
        }),
        Agent::ApprovalRequested {
            tool_call_id,
            call_id,
            approval_id,
            tool,
            summary,
        } => Some(TurnEvent::ApprovalRequested {
            approval_id,
            call_id: tool_call_id,
            gate_call_id: call_id,
            tool,
            summary,
        }),
        Agent::ApprovalResolved {
            tool_call_id,
            call_id,
            approval_id,
            tool,
            status,
            decision,
            expiry_reason,
        } => Some(TurnEvent::ApprovalResolved {
            approval_id,
            call_id: tool_call_id,
            gate_call_id: call_id,
            tool,
            status,
            decision,
            expiry_reason,
        }),
        Agent::InputApplied { .. } | Agent::MemoryRecalled { .. } => None,
    }
}

impl TurnEngine for AgentEngine {
    fn run(
        &self,
        mut turn: Turn,
        events: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, TurnOutcome> {
        let agents = self.agents.clone();
        Box::pin(async move {
            let (input, approved) = match &turn.input {
                TurnInput::Message(text) => (text.clone(), None),
                TurnInput::OptionAnswer {
                    question,
                    selected,
                    free_text,
                    ..
                } => (answer_text(question, selected, free_text.as_deref()), None),
                TurnInput::Approved { approval_id, task } => {
                    (task.clone(), Some(approval_id.clone()))
                }
            };
            let request = TurnRequest {
                chat_id: turn.chat_id.clone(),
                // The chat owner's provider keys pay for the turn (original §1.11).
                user_id: Some(turn.user_id.clone()),
                input,
                attached: std::mem::take(&mut turn.attached),
                images: std::mem::take(&mut turn.images),
                history: None,
                delivered: std::mem::take(&mut turn.delivered),
                agent: turn.agent,
                model: Some(turn.settings.default_model.clone()),
                temperature: Some(turn.settings.temperature),
                context_size: Some(turn.settings.context_size),
                system_prompt: turn.settings.system_prompt.clone(),
                language: turn.settings.language(),
                ask_user: true,
                // The snapshot's list: only these catalog tools are shown and run (§1.7).
                enabled_tools: Some(turn.settings.enabled_tools.clone()),
                core_off: turn.core_off.clone(),
                request_timeout: Some(Duration::from_millis(turn.settings.request_timeout_millis)),
                execution_id: Some(turn.execution_id.clone()),
                unattended: turn.unattended.clone(),
                approved,
                client_tools: turn.client_tools.clone(),
            };
            let sink = Arc::new(move |event: agent_events::AgentEvent| {
                if let Some(event) = relay(event) {
                    let _ = events.send(event);
                }
            });
            match agents.run_turn(request, sink, cancel).await {
                Err(AgentError::Busy { .. }) => TurnOutcome::Failed {
                    code: "chat_already_has_active_execution".to_owned(),
                    message: "An agent turn is already running in this chat.".to_owned(),
                    usage: Usage::default(),
                },
                Err(error) => TurnOutcome::Failed {
                    code: "agent_execution_failed".to_owned(),
                    message: error.to_string(),
                    usage: Usage::default(),
                },
                Ok(outcome) => {
                    let used = outcome.usage.on_wire();
                    let parked = outcome.parked;
                    match (outcome.status, outcome.reply) {
                        (TurnStatus::Cancelled, _) => TurnOutcome::Cancelled { usage: used },
                        (_, _) if let Some(parked) = parked => TurnOutcome::Parked {
                            approval_id: parked.approval_id,
                            tool_call_id: parked.tool_call_id,
                            usage: used,
                        },
                        (_, Some(reply)) if reply.question.is_some() => TurnOutcome::Asked {
                            question: reply.question.as_ref().map(question).unwrap_or_else(|| {
                                question(&crate::agent::context::AskedQuestion {
                                    title: reply.text.clone(),
                                    choices: Vec::new(),
                                    multiple: false,
                                    free_text: true,
                                })
                            }),
                            usage: used,
                        },
                        // The error node's explanation is the answer (original §2.4).
                        (TurnStatus::Completed | TurnStatus::Failed, Some(reply)) => {
                            TurnOutcome::Completed {
                                end_reason: reply.end_reason(),
                                text: reply.text,
                                usage: used,
                            }
                        }
                        _ => TurnOutcome::Failed {
                            code: "agent_execution_failed".to_owned(),
                            message: outcome.error.unwrap_or_else(|| {
                                "The agent stopped without an answer.".to_owned()
                            }),
                            usage: used,
                        },
                    }
                }
            }
        })
    }

    fn steer(&self, chat_id: &str, input: &str) -> bool {
        self.agents.submit_input(chat_id, input).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_naturally() {
        let choice = |label: &str| OptionChoice {
            id: "x".into(),
            label: label.into(),
            content: None,
        };
        assert_eq!(
            answer_text("Which?", &[choice("A"), choice("B")], Some("and quickly")),
            "Answer to \"Which?\": A; B; and quickly"
        );
    }
}
