//! Sessions: every turn and every step of its graph, persisted per conversation, so a turn can
//! be inspected and its history replayed step by step.
//!
//! Tables: `agent_turns` (one row per turn, in order), `agent_steps` (one row per top-level
//! graph step, plus a `turn.start` step), `agent_conversations` (the history after the last
//! finished turn of each chat).
//!
//! A step stores how it changed the history as one splice ([`HistoryChange`]: keep a common
//! prefix and suffix, replace the middle), not a copy: the per-turn rewrite of the system
//! message costs one message, not the whole conversation. Invariants:
//! - Applying the changes of a turn's steps, in order, to the history before the turn gives the
//!   history after each step; for a finished turn, the last one is what `agent_conversations`
//!   holds. A turn the process died in is marked `interrupted` at the next start and its
//!   changes are not part of the conversation.
//! - Steps are written as they happen (in batches gathered over at most 20 ms, off the hot
//!   path), so a turn that crashes still shows how far it got.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use chrono::{DateTime, Utc};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::context::{AgentContext, ChatOutcome, Reply};
use crate::graph::Step;
use crate::llm::{Message, Usage};
use crate::store::CachedStatements;
use crate::store::codec::{
    from_json, from_json_opt, from_time, from_time_opt, now, to_json, to_time,
};
use crate::store::{Store, StoreError};

/// How a turn ended (or that it has not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// Still running.
    Running,
    /// It answered.
    Completed,
    /// It ended with an error (the reply explains it when there is one).
    Failed,
    /// It was cancelled.
    Cancelled,
    /// The process stopped while it ran.
    Interrupted,
}

impl TurnStatus {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Interrupted => "interrupted",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        Ok(match text {
            "running" => Self::Running,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            "interrupted" => Self::Interrupted,
            other => return Err(StoreError::Corrupt(format!("agent_turns.status: {other}"))),
        })
    }

    /// Whether the turn's final history became the conversation's.
    fn committed(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A turn as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredTurn {
    /// Turn id.
    pub turn_id: String,
    /// Its chat.
    pub chat_id: String,
    /// The agent (`graph`, `skills`).
    pub agent: String,
    /// The model.
    pub model: String,
    /// What the person asked.
    pub input: String,
    /// How it ended.
    pub status: TurnStatus,
    /// The reply, when there is one.
    pub reply: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// Tokens used.
    pub usage: Option<Usage>,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// The chat execution it ran for, if any.
    pub execution_id: Option<String>,
}

/// How one step changed the history: `removed` messages at `at` were replaced by `inserted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryChange {
    /// Index of the first changed message.
    pub at: usize,
    /// How many messages were removed there.
    pub removed: usize,
    /// What was put in their place.
    pub inserted: Vec<Message>,
}

impl HistoryChange {
    /// The change as it is stored: attached images become the note the conversation keeps
    /// (their bytes are sent to the model, never written to the step log).
    pub fn without_images(self) -> Self {
        Self {
            inserted: self
                .inserted
                .into_iter()
                .map(Message::without_images)
                .collect(),
            ..self
        }
    }

    /// The smallest single splice turning `before` into `after`; `None` when they are equal.
    pub fn between(before: &[Message], after: &[Message]) -> Option<Self> {
        let prefix = before
            .iter()
            .zip(after)
            .take_while(|(old, new)| old == new)
            .count();
        if prefix == before.len() && prefix == after.len() {
            return None;
        }
        let room = before.len().min(after.len()) - prefix;
        let suffix = before
            .iter()
            .rev()
            .zip(after.iter().rev())
            .take(room)
            .take_while(|(old, new)| old == new)
            .count();
        Some(Self {
            at: prefix,
            removed: before.len() - prefix - suffix,
            inserted: after[prefix..after.len() - suffix].to_vec(),
        })
    }

    /// Applies the change; fails if `history` is too short for it.
    pub fn apply(&self, history: &mut Vec<Message>) -> Result<(), StoreError> {
        if self.at + self.removed > history.len() {
            return Err(StoreError::Corrupt(format!(
                "a history change at {} removing {} does not fit a history of {}",
                self.at,
                self.removed,
                history.len()
            )));
        }
        history.splice(
            self.at..self.at + self.removed,
            self.inserted.iter().cloned(),
        );
        Ok(())
    }
}

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// Position in the turn (0 is `turn.start`).
    pub ordinal: u32,
    /// The graph's step number (`None` for `turn.start`).
    pub step_index: Option<usize>,
    /// The node.
    pub node: String,
    /// Its graph.
    pub graph: String,
    /// Nesting depth.
    pub depth: usize,
    /// Attempts it took.
    pub attempts: u32,
    /// How long it ran.
    pub elapsed_ms: u64,
    /// One line for people.
    pub summary: String,
    /// Node-specific details (tools advertised, categories chosen, tool calls, errors).
    pub data: Value,
    /// How it changed the history.
    pub history_change: Option<HistoryChange>,
    /// When it completed.
    pub at: DateTime<Utc>,
}

/// A step with the history right after it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedStep {
    /// The step.
    pub step: StepRecord,
    /// The history after it.
    pub history: Vec<Message>,
}

/// What a new turn row holds.
pub(crate) struct NewTurn<'a> {
    pub turn_id: &'a str,
    pub chat_id: &'a str,
    pub execution_id: Option<&'a str>,
    pub agent: &'a str,
    pub model: &'a str,
    pub input: &'a str,
}

/// Persisted sessions. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sessions {
    store: Store,
}

impl Sessions {
    /// Sessions kept in `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Marks turns left running by a process that died as interrupted; returns how many.
    pub async fn recover(&self) -> Result<usize, StoreError> {
        let finished_at = to_time(now());
        self.store
            .write(move |transaction| {
                transaction
                    .execute_cached(
                        "UPDATE agent_turns SET status = 'interrupted', finished_at = ?1
                         WHERE status = 'running'",
                        rusqlite::params![finished_at],
                    )
                    .map_err(StoreError::from)
            })
            .await
    }

    /// The history after the last finished turn of `chat_id`.
    pub async fn history(&self, chat_id: &str) -> Result<Option<Vec<Message>>, StoreError> {
        let chat_id = chat_id.to_owned();
        self.store
            .read(move |connection| {
                let text: Option<String> = connection
                    .query_row_cached(
                        "SELECT history FROM agent_conversations WHERE chat_id = ?1",
                        rusqlite::params![chat_id],
                        |row| row.get(0),
                    )
                    .optional()?;
                text.map(|text| from_json("agent_conversations.history", &text))
                    .transpose()
            })
            .await
    }

    /// Stores a new running turn and its `turn.start` step.
    pub(crate) async fn begin(
        &self,
        turn: &NewTurn<'_>,
        start: StepRecord,
    ) -> Result<(), StoreError> {
        let (turn_id, chat_id, agent, model, input) = (
            turn.turn_id.to_owned(),
            turn.chat_id.to_owned(),
            turn.agent.to_owned(),
            turn.model.to_owned(),
            turn.input.to_owned(),
        );
        let execution_id = turn.execution_id.map(str::to_owned);
        self.store
            .write(move |transaction| {
                transaction.execute_cached(
                    "INSERT INTO agent_turns (id, chat_id, agent, model, input, status, started_at,
                         execution_id)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7)",
                    rusqlite::params![
                        turn_id,
                        chat_id,
                        agent,
                        model,
                        input,
                        to_time(start.at),
                        execution_id
                    ],
                )?;
                insert_step(transaction, &turn_id, &start)
            })
            .await
    }

    /// Appends recorded steps of a running turn.
    pub(crate) async fn append_steps(
        &self,
        turn_id: &str,
        steps: Vec<StepRecord>,
    ) -> Result<(), StoreError> {
        let turn_id = turn_id.to_owned();
        self.store
            .write(move |transaction| {
                for step in &steps {
                    insert_step(transaction, &turn_id, step)?;
                }
                Ok(())
            })
            .await
    }

    /// Records how a turn ended and, unless it was interrupted, its history as the chat's.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn finish(
        &self,
        turn_id: &str,
        chat_id: &str,
        status: TurnStatus,
        reply: Option<&str>,
        error: Option<&str>,
        usage: Usage,
        history: &[Message],
    ) -> Result<(), StoreError> {
        let (turn_id, chat_id) = (turn_id.to_owned(), chat_id.to_owned());
        let (reply, error) = (reply.map(str::to_owned), error.map(str::to_owned));
        let usage = to_json(&usage)?;
        let history = to_json(history)?;
        let finished_at = to_time(now());
        self.store
            .write(move |transaction| {
                transaction.execute_cached(
                    "UPDATE agent_turns SET status = ?2, reply = ?3, error = ?4, usage = ?5,
                         finished_at = ?6
                     WHERE id = ?1",
                    rusqlite::params![turn_id, status.as_str(), reply, error, usage, finished_at],
                )?;
                if status.committed() {
                    transaction.execute_cached(
                        "INSERT INTO agent_conversations (chat_id, history, updated_at)
                         VALUES (?1, ?2, ?3)
                         ON CONFLICT (chat_id) DO UPDATE
                         SET history = excluded.history, updated_at = excluded.updated_at",
                        rusqlite::params![chat_id, history, finished_at],
                    )?;
                }
                Ok(())
            })
            .await
    }

    /// The turns of `chat_id`, oldest first.
    pub async fn turns(&self, chat_id: &str) -> Result<Vec<StoredTurn>, StoreError> {
        let chat_id = chat_id.to_owned();
        self.store
            .read(move |connection| load_turns(connection, "chat_id", &chat_id))
            .await
    }

    /// The turns that ran for chat execution `execution_id`, oldest first.
    pub async fn turns_of_execution(
        &self,
        execution_id: &str,
    ) -> Result<Vec<StoredTurn>, StoreError> {
        let execution_id = execution_id.to_owned();
        self.store
            .read(move |connection| load_turns(connection, "execution_id", &execution_id))
            .await
    }

    /// The steps of a turn, in order.
    pub async fn steps(&self, turn_id: &str) -> Result<Vec<StepRecord>, StoreError> {
        let turn_id = turn_id.to_owned();
        self.store
            .read(move |connection| load_steps(connection, &turn_id))
            .await
    }

    /// Every step of turn `turn_id` with the history right after it.
    pub async fn replay_turn(&self, turn_id: &str) -> Result<Vec<ReplayedStep>, StoreError> {
        Ok(self.replay_turn_from(turn_id).await?.1)
    }

    /// The chat's history before turn `turn_id`, and every step of the turn with the history
    /// right after it.
    pub async fn replay_turn_from(
        &self,
        turn_id: &str,
    ) -> Result<(Vec<Message>, Vec<ReplayedStep>), StoreError> {
        let turn_id = turn_id.to_owned();
        self.store
            .read(move |connection| {
                let chat_id: String = connection.query_row_cached(
                    "SELECT chat_id FROM agent_turns WHERE id = ?1",
                    rusqlite::params![turn_id],
                    |row| row.get(0),
                )?;
                let (mut history, turns) = fold(connection, &chat_id, Some(&turn_id))?;
                let before = history.clone();
                let mut replayed = Vec::new();
                if let Some((_, steps)) = turns {
                    for step in steps {
                        if let Some(change) = &step.history_change {
                            change.apply(&mut history)?;
                        }
                        replayed.push(ReplayedStep {
                            step,
                            history: history.clone(),
                        });
                    }
                }
                Ok((before, replayed))
            })
            .await
    }

    /// The conversation of `chat_id` rebuilt from its steps alone (equal to [`Self::history`]
    /// when the records are whole).
    pub async fn replay(&self, chat_id: &str) -> Result<Vec<Message>, StoreError> {
        let chat_id = chat_id.to_owned();
        self.store
            .read(move |connection| Ok(fold(connection, &chat_id, None)?.0))
            .await
    }

    /// Deletes every turn, step and stored history of `chat_id`.
    pub async fn forget_chat(&self, chat_id: &str) -> Result<(), StoreError> {
        let chat_id = chat_id.to_owned();
        self.store
            .write(move |transaction| {
                transaction.execute_cached(
                    "DELETE FROM agent_turns WHERE chat_id = ?1",
                    rusqlite::params![chat_id],
                )?;
                transaction.execute_cached(
                    "DELETE FROM agent_conversations WHERE chat_id = ?1",
                    rusqlite::params![chat_id],
                )?;
                Ok(())
            })
            .await
    }
}

type TurnSteps = (String, Vec<StepRecord>);

/// Folds the committed turns of `chat_id` before `stop` (all when `None`) into a history;
/// returns it and, when `stop` was found, that turn's steps.
fn fold(
    connection: &rusqlite::Connection,
    chat_id: &str,
    stop: Option<&str>,
) -> Result<(Vec<Message>, Option<TurnSteps>), StoreError> {
    let mut statement =
        connection.prepare("SELECT id, status FROM agent_turns WHERE chat_id = ?1 ORDER BY seq")?;
    let turns: Vec<(String, String)> = statement
        .query_map(rusqlite::params![chat_id], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut history = Vec::new();
    for (turn_id, status) in turns {
        let steps = load_steps(connection, &turn_id)?;
        if stop == Some(turn_id.as_str()) {
            return Ok((history, Some((turn_id, steps))));
        }
        if !TurnStatus::parse(&status)?.committed() {
            continue;
        }
        for step in &steps {
            if let Some(change) = &step.history_change {
                change.apply(&mut history)?;
            }
        }
    }
    Ok((history, None))
}

/// The turns whose `column` (`chat_id` or `execution_id`) is `value`, oldest first.
fn load_turns(
    connection: &rusqlite::Connection,
    column: &'static str,
    value: &str,
) -> Result<Vec<StoredTurn>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT id, chat_id, agent, model, input, status, reply, error, usage,
                started_at, finished_at, execution_id
         FROM agent_turns WHERE {column} = ?1 ORDER BY seq"
    ))?;
    let rows = statement.query_map(rusqlite::params![value], |row| {
        Ok((
            (
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, Option<String>>(11)?,
            ),
            (
                row.get::<_, String>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, Option<String>>(7)?,
                row.get::<_, Option<String>>(8)?,
                row.get::<_, String>(9)?,
                row.get::<_, Option<String>>(10)?,
            ),
        ))
    })?;
    let mut turns = Vec::new();
    for row in rows {
        let ((turn_id, chat_id, agent, model, input, execution_id), rest) = row?;
        let (status, reply, error, usage, started_at, finished_at) = rest;
        turns.push(StoredTurn {
            turn_id,
            chat_id,
            agent,
            model,
            input,
            status: TurnStatus::parse(&status)?,
            reply,
            error,
            usage: from_json_opt("agent_turns.usage", usage)?,
            started_at: from_time("agent_turns.started_at", &started_at)?,
            finished_at: from_time_opt("agent_turns.finished_at", finished_at)?,
            execution_id,
        });
    }
    Ok(turns)
}

fn insert_step(
    transaction: &rusqlite::Transaction<'_>,
    turn_id: &str,
    step: &StepRecord,
) -> Result<(), StoreError> {
    let change = step.history_change.as_ref().map(to_json).transpose()?;
    transaction.execute_cached(
        "INSERT INTO agent_steps (turn_id, ordinal, step_index, node, graph, depth, attempts,
             elapsed_ms, summary, data, history_change, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        rusqlite::params![
            turn_id,
            step.ordinal,
            step.step_index.map(|index| index as i64),
            step.node,
            step.graph,
            step.depth as i64,
            step.attempts,
            i64::try_from(step.elapsed_ms).unwrap_or(i64::MAX),
            step.summary,
            to_json(&step.data)?,
            change,
            to_time(step.at),
        ],
    )?;
    Ok(())
}

fn load_steps(
    connection: &rusqlite::Connection,
    turn_id: &str,
) -> Result<Vec<StepRecord>, StoreError> {
    let mut statement = connection.prepare(
        "SELECT ordinal, step_index, node, graph, depth, attempts, elapsed_ms, summary, data,
                history_change, at
         FROM agent_steps WHERE turn_id = ?1 ORDER BY ordinal",
    )?;
    let rows = statement.query_map(rusqlite::params![turn_id], |row| {
        Ok((
            (
                row.get::<_, u32>(0)?,
                row.get::<_, Option<i64>>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, i64>(4)?,
                row.get::<_, u32>(5)?,
            ),
            (
                row.get::<_, i64>(6)?,
                row.get::<_, String>(7)?,
                row.get::<_, String>(8)?,
                row.get::<_, Option<String>>(9)?,
                row.get::<_, String>(10)?,
            ),
        ))
    })?;
    let mut steps = Vec::new();
    for row in rows {
        let ((ordinal, step_index, node, graph, depth, attempts), rest) = row?;
        let (elapsed_ms, summary, data, change, at) = rest;
        steps.push(StepRecord {
            ordinal,
            step_index: step_index.and_then(|index| usize::try_from(index).ok()),
            node,
            graph,
            depth: usize::try_from(depth).unwrap_or_default(),
            attempts,
            elapsed_ms: u64::try_from(elapsed_ms).unwrap_or_default(),
            summary,
            data: from_json("agent_steps.data", &data)?,
            history_change: from_json_opt("agent_steps.history_change", change)?,
            at: from_time("agent_steps.at", &at)?,
        });
    }
    Ok(steps)
}

/// Turns graph steps into records while the graph runs; a writer drains them.
pub(crate) struct StepRecorder {
    sender: mpsc::UnboundedSender<StepRecord>,
    last_history: Mutex<Vec<Message>>,
    ordinal: AtomicU32,
}

impl StepRecorder {
    /// A recorder whose history starts at `history` (the turn's request history) and whose
    /// first step gets ordinal 1.
    pub(crate) fn new(history: Vec<Message>) -> (Self, mpsc::UnboundedReceiver<StepRecord>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (
            Self {
                sender,
                last_history: Mutex::new(history),
                ordinal: AtomicU32::new(1),
            },
            receiver,
        )
    }

    /// Records a completed top-level step (nested steps are covered by their parent's).
    pub(crate) fn record(&self, step: &Step<'_>) {
        if step.info.is_subgraph() {
            return;
        }
        let Some((history, summary, data)) = describe(step.output) else {
            return;
        };
        let change = {
            let mut last = self
                .last_history
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let change = HistoryChange::between(&last, history);
            if change.is_some() {
                *last = history.to_vec();
            }
            change.map(HistoryChange::without_images)
        };
        let record = StepRecord {
            ordinal: self.ordinal.fetch_add(1, Ordering::Relaxed),
            step_index: Some(step.info.index),
            node: step.info.node.clone(),
            graph: step.info.graph.clone(),
            depth: step.info.depth,
            attempts: step.info.attempts,
            elapsed_ms: u64::try_from(step.info.elapsed.as_millis()).unwrap_or(u64::MAX),
            summary,
            data,
            history_change: change,
            at: now(),
        };
        // The writer is gone only when the turn is over.
        let _ = self.sender.send(record);
    }
}

/// How long the step writer gathers steps before it writes them in one transaction.
const STEP_BATCH_WINDOW: std::time::Duration = std::time::Duration::from_millis(20);

/// Writes recorded steps in batches until the recorder is dropped. A batch is what arrives
/// within [`STEP_BATCH_WINDOW`] of its first step (the nodes before the model request finish
/// within microseconds of each other), so a turn costs a few transactions, written while the
/// model thinks; the end of the turn flushes at once.
pub(crate) async fn write_steps(
    sessions: Sessions,
    turn_id: String,
    mut receiver: mpsc::UnboundedReceiver<StepRecord>,
) {
    while let Some(first) = receiver.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + STEP_BATCH_WINDOW;
        while let Ok(Some(next)) = tokio::time::timeout_at(deadline, receiver.recv()).await {
            batch.push(next);
        }
        if let Err(error) = sessions.append_steps(&turn_id, batch).await {
            tracing::warn!(%error, turn_id, "could not record turn steps");
        }
    }
}

fn tool_names<I>(context: &AgentContext<I>) -> Vec<&str> {
    context
        .advertised
        .iter()
        .map(|spec| spec.name.as_str())
        .collect()
}

/// The history, one line and details of a step's output.
fn describe(output: &(dyn std::any::Any + Send)) -> Option<(&[Message], String, Value)> {
    if let Some(context) = output.downcast_ref::<AgentContext<String>>() {
        let summary = format!(
            "{} messages, {} tools advertised",
            context.history.len(),
            context.advertised.len()
        );
        let data = serde_json::json!({
            "advertised": tool_names(context),
            "categories": context.categories,
        });
        return Some((&context.history, summary, data));
    }
    if let Some(context) = output.downcast_ref::<AgentContext<ChatOutcome>>() {
        let (summary, data) = match &context.input {
            ChatOutcome::Answer(response) => (
                format!(
                    "answer of {} characters with {} tool call(s)",
                    response.content.chars().count(),
                    response.tool_calls.len()
                ),
                serde_json::json!({
                    "toolCalls": response.tool_calls,
                    "finishReason": response.finish_reason.to_string(),
                    "usage": response.usage,
                }),
            ),
            ChatOutcome::Failed(error) => (
                format!("request failed: {error}"),
                serde_json::json!({ "error": error.to_string() }),
            ),
        };
        return Some((&context.history, summary, data));
    }
    if let Some(context) = output.downcast_ref::<AgentContext<Reply>>() {
        let summary = format!("reply of {} characters", context.input.text.chars().count());
        let data = serde_json::json!({ "reply": context.input, "usage": context.usage });
        return Some((&context.history, summary, data));
    }
    None
}

#[cfg(test)]
mod tests;
