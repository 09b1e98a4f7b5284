//! An execution's life after it starts: the agent turn runs as a runtime task, its events are
//! relayed as chat events as they come, and it ends exactly once (a conditional state
//! transition with its terminal event in one transaction), by finishing, asking a question,
//! failing or being cancelled.

use std::collections::BTreeMap;
use std::sync::PoisonError;

use chrono::Utc;
use souz_protocol::RuntimeEvent;
use souz_protocol::chat::events::{
    ExecutionCancelledPayload, ExecutionFailedPayload, ExecutionFinishedPayload,
    MessageDeltaPayload, MessageDiscardedPayload, MessagePayload, OptionRequestedPayload,
    ToolCallProgressPayload, TurnEndReason,
};
use souz_protocol::chat::{ChatEventBody, Execution, ExecutionStatus, OptionStatus, Usage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::NewChatEvent;
use super::options::records::{self as option_records, OptionRow};
use super::records::{ExecutionRow, NewMessage};
use super::turns::{
    NewQuestion, SharedEngine, Turn, TurnEvent, TurnOutcome, add_usage, event_body,
};
use super::{ChatError, ChatUser, Chats, OPTION_LIFETIME, records};
use crate::store::StoreError;
use crate::store::codec::now;

impl Chats {
    /// Adds input to the chat's running turn (steering); false when no turn can take it.
    pub fn steer(&self, chat_id: &str, input: &str) -> bool {
        self.engine()
            .is_some_and(|engine| engine.steer(chat_id, input))
    }

    pub(super) fn engine(&self) -> Option<SharedEngine> {
        self.inner
            .engine
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs a turn as a runtime task.
    pub(super) fn launch(&self, turn: Turn, usage_so_far: Usage) -> Result<(), ChatError> {
        let cancel = self.inner.shutdown.child_token();
        // Paused after the caller's check: the turn starts cancelled, so it ends at once.
        if self.is_paused() {
            cancel.cancel();
        }
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(turn.execution_id.clone(), cancel.clone());
        self.inner.launched.notify_one();
        let chats = self.clone();
        self.inner.tasks.spawn(async move {
            let execution_id = turn.execution_id.clone();
            let chat_id = turn.chat_id.clone();
            let mut outcome = chats.drive(turn, cancel).await;
            let (TurnOutcome::Completed { usage, .. }
            | TurnOutcome::Asked { usage, .. }
            | TurnOutcome::Failed { usage, .. }
            | TurnOutcome::Cancelled { usage }
            | TurnOutcome::Parked { usage, .. }) = &mut outcome;
            let mut total = usage_so_far.clone();
            add_usage(&mut total, usage);
            *usage = total;
            let from = [ExecutionStatus::Running, ExecutionStatus::Cancelling];
            let parked_on = match &outcome {
                TurnOutcome::Parked { approval_id, .. } => Some(approval_id.clone()),
                _ => None,
            };
            // A parked execution may be resumed (and launched again) as soon as it is stored:
            // it stops being this task's first.
            if parked_on.is_some() {
                chats.forget_running(&execution_id);
            }
            if let Err(error) = chats
                .end_execution(&chat_id, &execution_id, &from, outcome)
                .await
            {
                tracing::error!(%error, %execution_id, "could not record the end of an execution");
            }
            match parked_on {
                // Decided before it was parked: its decision's event found nothing waiting.
                Some(approval_id) => {
                    if let Err(error) = chats.resume_parked(&approval_id).await {
                        tracing::warn!(%error, %approval_id, "could not resume a parked run");
                    }
                }
                None => chats.forget_running(&execution_id),
            }
            // Input that came while it ran and that it could not take starts the next turn.
            chats.start_queued(&chat_id).await;
        });
        Ok(())
    }

    /// This process no longer runs `execution_id`'s turn.
    fn forget_running(&self, execution_id: &str) {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(execution_id);
    }

    /// Runs the engine, turning its events into chat events as they come.
    pub(super) async fn drive(&self, mut turn: Turn, cancel: CancellationToken) -> TurnOutcome {
        let Some(engine) = self.engine() else {
            return TurnOutcome::Failed {
                code: "agent_execution_failed".into(),
                message: "No agent is available in this daemon.".into(),
                usage: Usage::default(),
            };
        };
        // What was delivered into the chat through another channel since its previous turn:
        // told to this one. Not knowing it is no reason to fail the turn.
        match self.delivered_for(&turn.chat_id, &turn.execution_id).await {
            Ok(delivered) => turn.delivered = delivered,
            Err(error) => {
                tracing::warn!(%error, chat_id = %turn.chat_id, "could not read the messages delivered into a chat");
            }
        }
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let relay = Relay {
            chat_id: turn.chat_id.clone(),
            execution_id: turn.execution_id.clone(),
            message_id: turn.message_id.clone(),
            streaming: turn.settings.streaming_messages,
            show_tools: turn.settings.show_tool_events,
        };
        let mut running = engine.run(turn, sender, cancel);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(event) = receiver.recv() => self.relay(&relay, event).await,
                outcome = &mut running => break outcome,
            }
        };
        while let Ok(event) = receiver.try_recv() {
            self.relay(&relay, event).await;
        }
        outcome
    }

    pub(super) async fn relay(&self, relay: &Relay, event: TurnEvent) {
        let (chat_id, execution_id) = (relay.chat_id.as_str(), relay.execution_id.as_str());
        match &event {
            // `messageId` is the answer's id (original §1.8); the rest tells steered attempts
            // apart.
            TurnEvent::Delta { attempt, text } => {
                if relay.streaming {
                    let body = ChatEventBody::MessageDelta(MessageDeltaPayload {
                        message_id: relay.message_id.clone(),
                        execution_id: execution_id.to_owned(),
                        attempt: *attempt,
                        delta: text.clone(),
                    });
                    self.inner
                        .events
                        .publish_live(chat_id, Some(execution_id), body);
                }
                return;
            }
            TurnEvent::Discarded { attempt } => {
                if relay.streaming {
                    let body = ChatEventBody::MessageDiscarded(MessageDiscardedPayload {
                        message_id: relay.message_id.clone(),
                        execution_id: execution_id.to_owned(),
                        attempt: *attempt,
                    });
                    self.inner
                        .events
                        .publish_live(chat_id, Some(execution_id), body);
                }
                return;
            }
            TurnEvent::ToolCallProgress {
                call_id,
                tool,
                progress,
                total,
                message,
            } => {
                if relay.show_tools {
                    let body = ChatEventBody::ToolCallProgress(ToolCallProgressPayload {
                        tool_call_id: call_id.clone(),
                        name: tool.clone(),
                        progress: *progress,
                        total: *total,
                        message: message.clone(),
                    });
                    self.inner
                        .events
                        .publish_live(chat_id, Some(execution_id), body);
                }
                return;
            }
            _ => {}
        }
        let Some(body) = event_body(&event, relay.show_tools) else {
            return;
        };
        let new = NewChatEvent {
            chat_id: chat_id.to_owned(),
            execution_id: Some(execution_id.to_owned()),
            body,
        };
        if let Err(error) = self
            .inner
            .events
            .publish_with(move |_| Ok::<_, StoreError>(((), vec![new])))
            .await
        {
            tracing::warn!(%error, "could not record a chat event");
        }
    }

    /// Ends an execution once: the outcome's state, its data, and its event, in one
    /// transaction, only if the execution is in one of `from`.
    pub(super) async fn end_execution(
        &self,
        chat_id: &str,
        execution_id: &str,
        from: &[ExecutionStatus],
        outcome: TurnOutcome,
    ) -> Result<Option<Execution>, ChatError> {
        self.end_execution_after(chat_id, execution_id, (from, outcome), None)
            .await
    }

    /// [`Chats::end_execution`] (from one of `end.0` with `end.1`), storing `before` (an event
    /// that led to the end) first, in the same transaction, when the execution does end.
    pub(super) async fn end_execution_after(
        &self,
        chat_id: &str,
        execution_id: &str,
        end: (&[ExecutionStatus], TurnOutcome),
        before: Option<ChatEventBody>,
    ) -> Result<Option<Execution>, ChatError> {
        let (from, outcome) = end;
        let (chat_id, execution_id) = (chat_id.to_owned(), execution_id.to_owned());
        let from = from.to_vec();
        let asks = matches!(outcome, TurnOutcome::Asked { .. });
        let (ended, _) = self
            .inner
            .events
            .publish_with_runtime(move |tx| {
                let ending = Ending {
                    tx,
                    chat_id: &chat_id,
                    execution_id: &execution_id,
                    from: &from,
                    at: now(),
                };
                let (execution, mut events, runtime) = ending.end(outcome)?;
                if execution.is_some()
                    && let Some(body) = before
                {
                    events.insert(
                        0,
                        NewChatEvent {
                            chat_id: chat_id.clone(),
                            execution_id: Some(execution_id.clone()),
                            body,
                        },
                    );
                }
                Ok::<_, ChatError>((execution, events, runtime))
            })
            .await?;
        if asks && ended.is_some() {
            // A new question: the expiry task learns when it runs out.
            self.inner.asked.notify_one();
        }
        Ok(ended)
    }

    /// Cancels the chat's active execution.
    pub async fn cancel_active(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<Execution, ChatError> {
        self.require_chat(user, chat_id).await?;
        let chat = chat_id.to_owned();
        let active = self
            .inner
            .store
            .read(move |c| records::active_execution(c, &chat))
            .await?
            .ok_or_else(|| ChatError::Invalid("Chat has no active execution.".into()))?;
        self.cancel(chat_id, active).await
    }

    /// Cancels one execution of a chat.
    pub async fn cancel_execution(
        &self,
        user: &ChatUser,
        chat_id: &str,
        execution_id: &str,
    ) -> Result<Execution, ChatError> {
        self.require_chat(user, chat_id).await?;
        let (chat, id) = (chat_id.to_owned(), execution_id.to_owned());
        let row = self
            .inner
            .store
            .read(move |c| records::load_execution(c, &chat, &id))
            .await?
            .ok_or(ChatError::ExecutionNotFound)?;
        if !row.execution.status.is_active() {
            return Err(ChatError::Invalid("Execution is not active.".into()));
        }
        self.cancel(chat_id, row).await
    }

    /// Fails unless `execution_id` is an execution of the user's chat `chat_id`.
    pub async fn require_execution(
        &self,
        user: &ChatUser,
        chat_id: &str,
        execution_id: &str,
    ) -> Result<(), ChatError> {
        self.require_chat(user, chat_id).await?;
        let (chat, id) = (chat_id.to_owned(), execution_id.to_owned());
        self.inner
            .store
            .read(move |c| records::load_execution(c, &chat, &id))
            .await?
            .ok_or(ChatError::ExecutionNotFound)?;
        Ok(())
    }

    pub(super) async fn cancel(
        &self,
        chat_id: &str,
        row: ExecutionRow,
    ) -> Result<Execution, ChatError> {
        let execution_id = row.execution.id.clone();
        let local = self
            .inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&execution_id)
            .cloned();
        match local {
            Some(cancel) => {
                let (chat, id) = (chat_id.to_owned(), execution_id.clone());
                let marked = self
                    .inner
                    .store
                    .write(move |tx| {
                        records::transition(
                            tx,
                            &id,
                            &[ExecutionStatus::Queued, ExecutionStatus::Running],
                            ExecutionStatus::Cancelling,
                            now(),
                            None,
                            None,
                            None,
                        )?;
                        Ok::<_, StoreError>(
                            records::load_execution(tx, &chat, &id)?.map(|row| row.execution),
                        )
                    })
                    .await?;
                cancel.cancel();
                marked.ok_or(ChatError::ExecutionNotFound)
            }
            None => {
                // Not running here (waiting for an answer, or left by another process).
                let from = [
                    ExecutionStatus::Queued,
                    ExecutionStatus::Running,
                    ExecutionStatus::WaitingOption,
                    ExecutionStatus::WaitingApproval,
                    ExecutionStatus::Cancelling,
                ];
                let ended = self
                    .end_execution(
                        chat_id,
                        &execution_id,
                        &from,
                        TurnOutcome::Cancelled {
                            usage: Usage::default(),
                        },
                    )
                    .await?;
                match ended {
                    Some(execution) => Ok(execution),
                    None => Err(ChatError::Invalid("Execution is not active.".into())),
                }
            }
        }
    }
}

/// Where a running turn's events go.
pub(super) struct Relay {
    chat_id: String,
    execution_id: String,
    message_id: String,
    streaming: bool,
    show_tools: bool,
}

/// Cancels the questions an ending execution left pending, and withdraws the approval it was
/// parked on; returns their runtime events.
pub(super) fn cancel_questions(
    tx: &rusqlite::Transaction<'_>,
    chat_id: &str,
    execution_id: &str,
    at: chrono::DateTime<Utc>,
) -> Result<Vec<RuntimeEvent>, StoreError> {
    let cancelled = option_records::cancel_options(tx, execution_id, at)?;
    let mut events: Vec<RuntimeEvent> = cancelled
        .into_iter()
        .map(|option_id| RuntimeEvent::OptionCancelled {
            option_id,
            chat_id: chat_id.to_owned(),
            execution_id: execution_id.to_owned(),
        })
        .collect();
    events.extend(super::parking::withdraw_parked(tx, execution_id, at)?);
    Ok(events)
}

/// Chat events (bodies) and runtime events of an execution that ended; `None` when it was no
/// longer in a state it could end from.
type Ended = Option<(Vec<ChatEventBody>, Vec<RuntimeEvent>)>;

/// What the ending transaction gives back: the ended execution, its chat and runtime events.
type Recorded = (Option<Execution>, Vec<NewChatEvent>, Vec<RuntimeEvent>);

/// An execution's end, inside the transaction that records it.
struct Ending<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    chat_id: &'a str,
    execution_id: &'a str,
    /// The states it may end from.
    from: &'a [ExecutionStatus],
    at: chrono::DateTime<Utc>,
}

impl Ending<'_> {
    /// Ends the execution with `outcome` if it is still in one of `from`: its state, its data
    /// and its events; the execution as it ended, or `None` when another end won.
    fn end(&self, outcome: TurnOutcome) -> Result<Recorded, ChatError> {
        let Some(row) = records::load_execution(self.tx, self.chat_id, self.execution_id)? else {
            return Ok((None, Vec::new(), Vec::new()));
        };
        // A turn that completed after cancellation was requested counts as cancelled.
        let outcome = match outcome {
            TurnOutcome::Completed { usage, .. }
            | TurnOutcome::Asked { usage, .. }
            | TurnOutcome::Parked { usage, .. }
                if row.execution.status == ExecutionStatus::Cancelling =>
            {
                TurnOutcome::Cancelled { usage }
            }
            other => other,
        };
        let ended = match &outcome {
            TurnOutcome::Completed {
                text,
                usage,
                end_reason,
            } => self.completed(row.reply_message_id, text, usage, *end_reason)?,
            TurnOutcome::Asked { question, usage } => self.asked(question, usage)?,
            TurnOutcome::Failed {
                code,
                message,
                usage,
            } => self.failed(code, message, usage)?,
            TurnOutcome::Cancelled { usage } => self.cancelled(usage)?,
            TurnOutcome::Parked {
                approval_id,
                tool_call_id,
                usage,
            } => self.parked(approval_id, tool_call_id, usage)?,
        };
        let Some((bodies, mut runtime)) = ended else {
            return Ok((None, Vec::new(), Vec::new()));
        };
        // A device's call the turn still waited on ends with it (a process killed mid-call).
        super::client_tools::cancel_pending_of(self.tx, self.execution_id, self.at)?;
        // The writes this turn staged in review mode now wait for the person, as one review.
        runtime.extend(crate::history::review::open_turn_review(
            self.tx,
            self.execution_id,
        )?);
        let execution = records::load_execution(self.tx, self.chat_id, self.execution_id)?
            .map(|row| row.execution);
        let events = bodies
            .into_iter()
            .map(|body| NewChatEvent {
                chat_id: self.chat_id.to_owned(),
                execution_id: Some(self.execution_id.to_owned()),
                body,
            })
            .collect();
        Ok((execution, events, runtime))
    }

    /// Moves the execution to `to`; false when it is no longer in one of `from`.
    fn transition(
        &self,
        to: ExecutionStatus,
        error: Option<(&str, &str)>,
        usage: &Usage,
        message_id: Option<&str>,
    ) -> Result<bool, StoreError> {
        let (tx, id, from, at) = (self.tx, self.execution_id, self.from, self.at);
        records::transition(tx, id, from, to, at, error, Some(usage), message_id)
    }

    /// The answer is stored under the id allocated at the start (deltas named it).
    fn completed(
        &self,
        reply_message_id: Option<String>,
        text: &str,
        usage: &Usage,
        end_reason: TurnEndReason,
    ) -> Result<Ended, ChatError> {
        let message_id = reply_message_id.unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        if !self.transition(ExecutionStatus::Completed, None, usage, Some(&message_id))? {
            return Ok(None);
        }
        // The execution it answers: its trace (`GET .../executions/{id}/trace`) says why.
        let metadata = BTreeMap::from([("executionId".to_owned(), self.execution_id.to_owned())]);
        let new = NewMessage {
            id: &message_id,
            chat_id: self.chat_id,
            role: "assistant",
            content: text,
            metadata: &metadata,
            attachments: &[],
            at: self.at,
        };
        let message = records::insert_message(self.tx, &new)?;
        records::touch_chat(self.tx, self.chat_id, self.at)?;
        let body = MessagePayload::of(&message, None);
        let finished = ExecutionFinishedPayload {
            execution_id: self.execution_id.to_owned(),
            assistant_message_id: message.id,
            status: "completed".into(),
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            total_tokens: usage.total_tokens,
            precached_tokens: usage.precached_tokens,
            end_reason,
        };
        let bodies = vec![
            ChatEventBody::MessageCreated(body.clone()),
            ChatEventBody::MessageCompleted(body),
            ChatEventBody::ExecutionFinished(finished),
        ];
        Ok(Some((bodies, Vec::new())))
    }

    /// Parked on an approval: the execution waits for the person's decision (see
    /// `chat::parking`); no event (the approval's own `approval.requested` was sent).
    fn parked(
        &self,
        approval_id: &str,
        tool_call_id: &str,
        usage: &Usage,
    ) -> Result<Ended, ChatError> {
        if !self.transition(ExecutionStatus::WaitingApproval, None, usage, None)? {
            return Ok(None);
        }
        super::parking::park(self.tx, self.execution_id, approval_id, tool_call_id)?;
        Ok(Some((Vec::new(), Vec::new())))
    }

    /// The question is stored as a pending option; the execution waits for its answer.
    fn asked(&self, question: &NewQuestion, usage: &Usage) -> Result<Ended, ChatError> {
        if !self.transition(ExecutionStatus::WaitingOption, None, usage, None)? {
            return Ok(None);
        }
        let option = new_option(self.chat_id, self.execution_id, question, self.at);
        option_records::insert_option(self.tx, &option, self.at)?;
        let runtime = option_records::question_by_id(self.tx, &option.id)?
            .map(|asked| RuntimeEvent::OptionRequested {
                option: Box::new(asked),
            })
            .into_iter()
            .collect();
        let body = ChatEventBody::OptionRequested(OptionRequestedPayload {
            option_id: option.id,
            kind: option.kind,
            title: option.title,
            selection_mode: option.selection_mode,
            options: option.choices,
            free_text: option.free_text,
            expires_at: option.expires_at,
        });
        Ok(Some((vec![body], runtime)))
    }

    /// Failed: its questions are withdrawn.
    fn failed(&self, code: &str, message: &str, usage: &Usage) -> Result<Ended, ChatError> {
        if !self.transition(ExecutionStatus::Failed, Some((code, message)), usage, None)? {
            return Ok(None);
        }
        let runtime = cancel_questions(self.tx, self.chat_id, self.execution_id, self.at)?;
        let body = ChatEventBody::ExecutionFailed(ExecutionFailedPayload {
            execution_id: self.execution_id.to_owned(),
            error_code: code.to_owned(),
            error_message: message.to_owned(),
        });
        Ok(Some((vec![body], runtime)))
    }

    /// Cancelled: its questions are withdrawn.
    fn cancelled(&self, usage: &Usage) -> Result<Ended, ChatError> {
        let error = (
            "agent_execution_cancelled",
            "Agent execution was cancelled.",
        );
        if !self.transition(ExecutionStatus::Cancelled, Some(error), usage, None)? {
            return Ok(None);
        }
        let runtime = cancel_questions(self.tx, self.chat_id, self.execution_id, self.at)?;
        let body = ChatEventBody::ExecutionCancelled(ExecutionCancelledPayload {
            execution_id: self.execution_id.to_owned(),
        });
        Ok(Some((vec![body], runtime)))
    }
}

/// The question an execution asks, pending until it expires.
fn new_option(
    chat_id: &str,
    execution_id: &str,
    question: &NewQuestion,
    at: chrono::DateTime<Utc>,
) -> OptionRow {
    OptionRow {
        id: uuid::Uuid::now_v7().to_string(),
        chat_id: chat_id.to_owned(),
        execution_id: execution_id.to_owned(),
        kind: question.kind.clone(),
        title: question.title.clone(),
        selection_mode: question.selection_mode,
        choices: question.choices.clone(),
        free_text: question.free_text,
        status: OptionStatus::Pending,
        expires_at: Some(at + OPTION_LIFETIME),
    }
}
