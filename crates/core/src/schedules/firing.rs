//! What firing an occurrence does, behind the [`Firing`] trait the engine calls: the daemon's
//! [`ChatFiring`] runs it as a chat execution; engine tests count fires with a fake.
//!
//! A prompt schedule runs in the schedule's own chat (created on its first run, titled by the
//! schedule's name, recorded on the schedule), through the same chat engine a person's message
//! uses: its settings are set on the chat, the prompt is posted as a message (idempotent by the
//! run id), the execution id is recorded on the run at once, and the run ends `ok` when the
//! execution finishes, `failed` with its message otherwise.
//!
//! Approvals (the seam where parking goes): a tool call the policy does not allow unasked is
//! posted as a normal pending approval, and the run waits like any chat turn — the execution
//! stays running and the run `running`. Deny ends the call with an error the agent sees, as in
//! a chat. Durable parking must add, here and in the gate: mark the run `parked` with the
//! approval id when the gate queues an approval for the run's execution (and back to `running`
//! when it is decided); end the run `blocked` (never `ok`) when that approval is denied or
//! expires; and resume a parked run after a restart from the stored call instead of failing its
//! execution as `process_restarted`. The schedule's envelope (tools, folders, hosts allowed
//! unasked) is stored but not yet turned into a grant: until it is, everything outside the
//! person's standing policy asks.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use souz_protocol::chat::{ChatEventBody, ChatSettings, CreateChat, ExecutionStatus, PostMessage};
use souz_protocol::schedules::{RunState, ScheduleAction};
use tokio::sync::broadcast::error::RecvError;

use super::store::{self as rows, StoredSchedule};
use crate::chat::{ChatError, ChatUser, Chats, records};
use crate::store::Store;

/// A claimed occurrence being fired.
#[derive(Debug, Clone)]
pub(crate) struct FiringRun {
    /// The schedule as it was when the run started.
    pub(crate) schedule: StoredSchedule,
    /// The run's id.
    pub run_id: i64,
    /// The occurrence.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the chat firing does not name the occurrence yet")
    )]
    pub fire_at: DateTime<Utc>,
}

impl FiringRun {
    /// The schedule's id.
    #[cfg(test)]
    pub(crate) fn schedule_id(&self) -> &str {
        &self.schedule.schedule.id
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunEnd {
    /// `Ok`, `Failed` or `Blocked`.
    pub state: RunState,
    /// Why, when it did not end `ok`.
    pub reason: Option<String>,
}

impl RunEnd {
    /// Finished.
    pub(crate) fn ok() -> Self {
        Self {
            state: RunState::Ok,
            reason: None,
        }
    }

    /// Failed, for `reason`.
    pub(crate) fn failed(reason: impl Into<String>) -> Self {
        Self {
            state: RunState::Failed,
            reason: Some(reason.into()),
        }
    }
}

/// A run in progress, as a boxed future.
pub(crate) type RunFuture = Pin<Box<dyn Future<Output = RunEnd> + Send + 'static>>;

/// What runs an occurrence: starts it and completes when it ends.
pub(crate) trait Firing: Send + Sync + 'static {
    /// Runs `run` to its end.
    fn fire(&self, run: FiringRun) -> RunFuture;
}

/// Runs occurrences as chat executions.
#[derive(Clone)]
pub(crate) struct ChatFiring {
    pub(crate) chats: Chats,
    pub(crate) store: Store,
}

impl Firing for ChatFiring {
    fn fire(&self, run: FiringRun) -> RunFuture {
        let this = self.clone();
        Box::pin(async move {
            match this.run(&run).await {
                Ok(end) => end,
                Err(error) => RunEnd::failed(error.to_string()),
            }
        })
    }
}

impl ChatFiring {
    async fn run(&self, run: &FiringRun) -> Result<RunEnd, ChatError> {
        let user = ChatUser(run.schedule.owner.clone());
        let chat_id = self.chat_of(&user, &run.schedule).await?;
        let (settings, content) = match &run.schedule.schedule.action {
            ScheduleAction::Prompt { prompt, settings } => (settings.clone(), prompt.clone()),
            ScheduleAction::Skill { skill, prompt } => (
                ChatSettings {
                    agent: Some("skills".to_owned()),
                    ..ChatSettings::default()
                },
                match prompt {
                    Some(prompt) => format!("Use the skill '{skill}': {prompt}"),
                    None => format!("Use the skill '{skill}'."),
                },
            ),
        };
        self.chats
            .set_chat_settings(&user, &chat_id, settings)
            .await?;
        // Subscribed before posting, so the execution's end cannot pass unseen.
        let mut events = self.chats.events().subscribe_all();
        let posted = self
            .chats
            .post_message(
                &user,
                &chat_id,
                PostMessage {
                    content,
                    client_message_id: Some(format!("schedule-run-{}", run.run_id)),
                    options: None,
                    attachments: Vec::new(),
                },
            )
            .await?;
        let execution_id = posted.execution.id.clone();
        let (run_id, chat, execution) = (run.run_id, chat_id.clone(), execution_id.clone());
        self.store
            .write(move |tx| rows::link_run(tx, run_id, &chat, Some(&execution)))
            .await?;
        if let Some(end) = end_of(posted.execution.status, posted.execution.error_message) {
            return Ok(end);
        }
        loop {
            match events.recv().await {
                Ok(event) => {
                    if event.execution_id.as_deref() != Some(execution_id.as_str()) {
                        continue;
                    }
                    match &event.body {
                        ChatEventBody::ExecutionFinished(_) => return Ok(RunEnd::ok()),
                        ChatEventBody::ExecutionFailed(failed) => {
                            return Ok(RunEnd::failed(failed.error_message.clone()));
                        }
                        ChatEventBody::ExecutionCancelled(_) => {
                            return Ok(RunEnd::failed("The run was cancelled."));
                        }
                        _ => {}
                    }
                }
                // Fell behind: the stored execution says whether it ended meanwhile.
                Err(RecvError::Lagged(_)) => {
                    if let Some(end) = self.stored_end(&chat_id, &execution_id).await? {
                        return Ok(end);
                    }
                }
                Err(RecvError::Closed) => {
                    return Ok(self
                        .stored_end(&chat_id, &execution_id)
                        .await?
                        .unwrap_or_else(|| RunEnd::failed("Souz stopped during the run.")));
                }
            }
        }
    }

    /// The schedule's chat: the recorded one, or a new one titled by its name.
    async fn chat_of(
        &self,
        user: &ChatUser,
        schedule: &StoredSchedule,
    ) -> Result<String, ChatError> {
        if let Some(chat_id) = &schedule.schedule.chat_id {
            return Ok(chat_id.clone());
        }
        let (created, _) = self
            .chats
            .create_chat(
                user,
                CreateChat {
                    request_id: Some(format!("schedule-{}", schedule.schedule.id)),
                    title: Some(schedule.schedule.name.clone()),
                    user_id: None,
                    client_type: None,
                },
            )
            .await?;
        let (id, chat_id) = (schedule.schedule.id.clone(), created.chat.id.clone());
        let adopted = self
            .store
            .write(move |tx| rows::adopt_chat(tx, &id, &chat_id))
            .await?;
        Ok(adopted.unwrap_or(created.chat.id))
    }

    async fn stored_end(
        &self,
        chat_id: &str,
        execution_id: &str,
    ) -> Result<Option<RunEnd>, ChatError> {
        let (chat, id) = (chat_id.to_owned(), execution_id.to_owned());
        let row = self
            .store
            .read(move |c| records::load_execution(c, &chat, &id))
            .await?;
        Ok(row.and_then(|row| end_of(row.execution.status, row.execution.error_message)))
    }
}

/// How a run ends for an execution in `status`; `None` while it goes.
fn end_of(status: ExecutionStatus, message: Option<String>) -> Option<RunEnd> {
    match status {
        ExecutionStatus::Completed => Some(RunEnd::ok()),
        ExecutionStatus::Failed => Some(RunEnd::failed(
            message.unwrap_or_else(|| "The run failed.".to_owned()),
        )),
        ExecutionStatus::Cancelled => Some(RunEnd::failed("The run was cancelled.")),
        _ => None,
    }
}

/// Shared firing.
pub(crate) type SharedFiring = Arc<dyn Firing>;
