//! What one turn may spend, and how it notices it is stuck: the turn's [`Watch`].
//!
//! A small model can call the same failing tool again and again (seven identical calls and
//! errors over seven minutes were seen). The watch counts every call that ran and ends the turn
//! with an explanation for the person, in their language, when
//! - the same call (same tool, same arguments, same result) has come back
//!   [`TurnLimits::repeated_call_limit`] times: trying again teaches the model nothing;
//! - the turn made [`TurnLimits::max_tool_calls`] calls;
//! - the turn ran for [`TurnLimits::max_duration`] (see `agent::turn`: the deadline cancels
//!   whatever runs then, a model request or a call waiting for approval).
//!
//! Invariants:
//! - Only calls that ran count; a call answered "not run" after the turn stopped does not.
//! - The first limit reached wins and is never replaced: the turn stops after the call that
//!   reached it, and the calls after it in the same batch are answered "not run" (every call
//!   still gets its result, as the wire formats require).
//! - Repeats are counted over the whole turn, not only in a row: a model alternating between
//!   two hopeless calls is stuck too. Arguments are compared as JSON values (key order and
//!   spacing do not matter); results by their exact text and error flag, so a call whose
//!   result changes (a file that appeared, a page that loaded) is never a repeat.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use souz_protocol::chat::events::TurnEndReason;
use souz_protocol::language::Language;

use crate::config::AgentConfig;
use crate::llm::{Message, ToolCall};
use crate::tools::words::Noun;

/// How much one turn may spend before it is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnLimits {
    /// The most tool calls one turn may make.
    pub max_tool_calls: u32,
    /// The longest one turn may run.
    pub max_duration: Duration,
    /// How many times the same call with the same result may come back before the turn stops.
    pub repeated_call_limit: u32,
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self::from_config(&AgentConfig::default())
    }
}

impl TurnLimits {
    /// The limits `[agent]` sets.
    pub fn from_config(config: &AgentConfig) -> Self {
        Self {
            max_tool_calls: config.max_tool_calls,
            max_duration: Duration::from_secs(config.max_turn_seconds),
            repeated_call_limit: config.repeated_call_limit,
        }
    }
}

/// Why a turn was stopped, with what the person and the trace are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stop {
    /// The reason, as `execution.finished` reports it.
    pub reason: TurnEndReason,
    /// The tool that was repeated (repeats only).
    pub tool: Option<String>,
    /// The count that reached its limit: repeats, calls, or seconds.
    pub count: u64,
}

impl Stop {
    /// One line for logs and the trace (English, like every log line).
    pub(crate) fn detail(&self) -> String {
        let tool = self.tool.as_deref().unwrap_or("a tool");
        match self.reason {
            TurnEndReason::RepeatedToolCall => format!(
                "{tool} was called {} times with the same arguments and the same result",
                self.count
            ),
            TurnEndReason::ToolCallLimit => format!(
                "the turn made {} tool calls ([agent] max_tool_calls)",
                self.count
            ),
            TurnEndReason::TimeLimit => format!(
                "the turn ran for {} s ([agent] max_turn_seconds)",
                self.count
            ),
            other => other.as_str().to_owned(),
        }
    }

    /// What the person is told, in their language.
    pub(crate) fn text(&self, language: Language) -> String {
        let tool = self.tool.as_deref().unwrap_or("?");
        let count = |noun: Noun| noun.count(self.count, language);
        match (self.reason, language) {
            (TurnEndReason::RepeatedToolCall, Language::En) => format!(
                "I stopped: I called {tool} {} with the same arguments and got the same result \
                 each time, so trying again would not help. Please check the request or tell \
                 me more about what you need.",
                count(TIMES)
            ),
            (TurnEndReason::RepeatedToolCall, Language::Ru) => format!(
                "Я остановился: вызвал {tool} {} с одними и теми же аргументами и каждый раз \
                 получал один и тот же результат, так что повторять бесполезно. Проверьте \
                 запрос или расскажите подробнее, что нужно.",
                count(TIMES)
            ),
            (TurnEndReason::TimeLimit, Language::En) => format!(
                "I stopped: this request ran for {}, the longest one request may run \
                 (max_turn_seconds in the agent settings). Ask me to go on, or split the task \
                 into smaller steps.",
                count(SECONDS)
            ),
            (TurnEndReason::TimeLimit, Language::Ru) => format!(
                "Я остановился: этот запрос выполнялся {} — дольше одному запросу нельзя \
                 (max_turn_seconds в настройках агента). Попросите продолжить или разбейте \
                 задачу на шаги поменьше.",
                count(SECONDS)
            ),
            // The watch makes stops with the three reasons only: this is the call limit.
            (_, Language::En) => format!(
                "I stopped: this request used {}, the most one request may use \
                 (max_tool_calls in the agent settings). Ask me to go on, or split the task \
                 into smaller steps.",
                count(TOOL_CALLS)
            ),
            (_, Language::Ru) => format!(
                "Я остановился: на этот запрос ушло {} — больше одному запросу нельзя \
                 (max_tool_calls в настройках агента). Попросите продолжить или разбейте \
                 задачу на шаги поменьше.",
                count(TOOL_CALLS)
            ),
        }
    }
}

const TIMES: Noun = Noun {
    en: ["time", "times"],
    ru: ["раз", "раза", "раз"],
};

const SECONDS: Noun = Noun {
    en: ["second", "seconds"],
    ru: ["секунду", "секунды", "секунд"],
};

const TOOL_CALLS: Noun = Noun {
    en: ["tool call", "tool calls"],
    ru: [
        "вызов инструмента",
        "вызова инструментов",
        "вызовов инструментов",
    ],
};

/// The result of a call the model made after the turn was stopped.
pub(crate) const NOT_RUN_AFTER_STOP: &str = "Not run: the turn was stopped before this call \
                                             (a limit of the turn was reached).";

#[derive(Debug, Default)]
struct State {
    calls: u64,
    repeats: HashMap<u64, u64>,
    stopped: Option<Stop>,
}

/// One turn's count of its calls, and the stop, once a limit was reached.
#[derive(Debug)]
pub(crate) struct Watch {
    limits: TurnLimits,
    deadline: tokio::time::Instant,
    state: Mutex<State>,
}

impl Watch {
    /// A watch for a turn starting now.
    pub(crate) fn new(limits: TurnLimits) -> Self {
        Self {
            limits,
            deadline: tokio::time::Instant::now() + limits.max_duration,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the turn must end.
    pub(crate) fn deadline(&self) -> tokio::time::Instant {
        self.deadline
    }

    /// Why the turn was stopped, if it was.
    pub(crate) fn stopped(&self) -> Option<Stop> {
        self.state().stopped.clone()
    }

    /// Counts a call that ran with the tool message it produced; the stop, when this call
    /// reached a limit (or one was reached before).
    pub(crate) fn record(&self, call: &ToolCall, result: &Message) -> Option<Stop> {
        let mut state = self.state();
        if state.stopped.is_some() {
            return state.stopped.clone();
        }
        state.calls += 1;
        let seen = state.repeats.entry(signature(call, result)).or_default();
        *seen += 1;
        let seen = *seen;
        let stop = if seen >= u64::from(self.limits.repeated_call_limit) {
            Some(Stop {
                reason: TurnEndReason::RepeatedToolCall,
                tool: Some(call.name.clone()),
                count: seen,
            })
        } else if state.calls >= u64::from(self.limits.max_tool_calls) {
            Some(Stop {
                reason: TurnEndReason::ToolCallLimit,
                tool: None,
                count: state.calls,
            })
        } else {
            None
        };
        if let Some(stop) = &stop {
            tracing::warn!(reason = %stop.reason, detail = %stop.detail(), "a turn was stopped");
        }
        state.stopped.clone_from(&stop);
        stop
    }

    /// The turn reached its deadline (nothing changes if it was stopped for another reason).
    pub(crate) fn stop_for_time(&self) -> Stop {
        let mut state = self.state();
        let stop = state.stopped.get_or_insert(Stop {
            reason: TurnEndReason::TimeLimit,
            tool: None,
            count: self.limits.max_duration.as_secs(),
        });
        tracing::warn!(reason = %stop.reason, detail = %stop.detail(), "a turn was stopped");
        stop.clone()
    }
}

/// What makes two calls "the same": the tool, the arguments as a JSON value, the result.
fn signature(call: &ToolCall, result: &Message) -> u64 {
    let mut hasher = DefaultHasher::new();
    call.name.hash(&mut hasher);
    // serde_json's maps are ordered by key, so the same object always prints the same.
    match serde_json::from_str::<serde_json::Value>(&call.arguments) {
        Ok(arguments) => arguments.to_string().hash(&mut hasher),
        Err(_) => call.arguments.hash(&mut hasher),
    }
    if let Message::Tool {
        content, is_error, ..
    } = result
    {
        content.hash(&mut hasher);
        is_error.hash(&mut hasher);
    }
    hasher.finish()
}

/// Gives every tool call of the history's last assistant message that has no result a "not
/// run" result, so the history can be sent again (a turn cut by its deadline mid-batch).
pub(crate) fn answer_open_calls(history: &mut Vec<Message>) {
    let Some(last_assistant) = history
        .iter()
        .rposition(|message| matches!(message, Message::Assistant { .. }))
    else {
        return;
    };
    let Message::Assistant { tool_calls, .. } = &history[last_assistant] else {
        return;
    };
    let answered: Vec<&str> = history[last_assistant..]
        .iter()
        .filter_map(|message| match message {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let open: Vec<Message> = tool_calls
        .iter()
        .filter(|call| !answered.contains(&call.id.as_str()))
        .map(|call| Message::Tool {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: NOT_RUN_AFTER_STOP.to_owned(),
            is_error: true,
        })
        .collect();
    history.extend(open);
}

#[cfg(test)]
mod tests;
