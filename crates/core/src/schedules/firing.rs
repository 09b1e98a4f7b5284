//! What firing an occurrence does, behind the [`Firing`] trait the engine calls: the daemon's
//! [`ChatFiring`] runs it as a chat execution; engine tests count fires with a fake.
//!
//! A prompt schedule runs in the schedule's own chat (created on its first run, titled by the
//! schedule's name, recorded on the schedule), through the same chat engine a person's message
//! uses: its settings are set on the chat, the prompt is posted as a message (idempotent by the
//! run id), the execution id is recorded on the run at once, and the run ends `ok` when the
//! execution finishes, `failed` with its message otherwise.
//!
//! Approvals park (see `chat::parking`): the execution is posted as the unattended run, so a
//! tool call the policy does not allow unasked becomes a pending approval naming the run, the
//! execution waits in `waiting_approval` and the run is `parked` on it (with the approval id),
//! across restarts. Approved, the run is `running` again and goes on from the call; denied or
//! expired, the execution fails `approval_denied`/`approval_expired` and the run ends
//! `blocked`, never `ok`. After a restart the engine follows a parked run again
//! ([`Firing::follow`]) instead of starting it over.
//!
//! The schedule's envelope (tools, folders, hosts it may use unasked, consented to when it
//! was made) goes with the run: the gate applies it as grants bound to the run's chat (see
//! `tools::gate::parking::Unattended`), so inside it a run goes on unasked.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use souz_protocol::chat::{
    ChatEventBody, ChatSettings, CreateChat, Execution, ExecutionStatus, PostMessage,
};
use souz_protocol::language::Language;
use souz_protocol::schedules::{RunState, ScheduleAction};
use tokio::sync::broadcast::error::RecvError;

use super::reasons::{RunReason, SharedLanguage};
use super::store::{self as rows, StoredSchedule};
use crate::chat::events::{self, TurnEnd};
use crate::chat::{ChatError, ChatUser, Chats, records};
use crate::store::{Store, StoreError};

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

    /// Follows `run`, started by an earlier process and parked in `chat_id`'s execution
    /// `execution_id`, to its end.
    fn follow(&self, run: FiringRun, chat_id: String, execution_id: String) -> RunFuture {
        let _ = (run, chat_id, execution_id);
        Box::pin(async { RunEnd::failed(RunReason::NotFollowed.text(Language::En)) })
    }
}

/// Runs occurrences as chat executions.
#[derive(Clone)]
pub(crate) struct ChatFiring {
    pub(crate) chats: Chats,
    pub(crate) store: Store,
    /// The language of the reasons it gives ([`RunReason`]).
    pub(crate) language: SharedLanguage,
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

    fn follow(&self, run: FiringRun, chat_id: String, execution_id: String) -> RunFuture {
        let this = self.clone();
        Box::pin(async move {
            let events = this.chats.events().subscribe_all();
            let watch = Watch {
                run_id: run.run_id,
                chat_id: &chat_id,
                execution_id: &execution_id,
            };
            match this.watch(watch, events).await {
                Ok(end) => end,
                Err(error) => RunEnd::failed(error.to_string()),
            }
        })
    }
}

/// The execution a run watches.
#[derive(Clone, Copy)]
struct Watch<'a> {
    run_id: i64,
    chat_id: &'a str,
    execution_id: &'a str,
}

impl ChatFiring {
    fn language(&self) -> Language {
        (self.language)()
    }

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
        let events = self.chats.events().subscribe_all();
        let schedule = &run.schedule.schedule;
        let unattended = crate::tools::gate::Unattended {
            run: souz_protocol::ParkedRun {
                schedule_id: schedule.id.clone(),
                schedule_name: schedule.name.clone(),
                run_id: run.run_id,
            },
            envelope: schedule.envelope.clone(),
        };
        let posted = self
            .chats
            .post_unattended(
                &user,
                &chat_id,
                PostMessage {
                    content,
                    client_message_id: Some(format!("schedule-run-{}", run.run_id)),
                    options: None,
                    attachments: Vec::new(),
                },
                unattended,
            )
            .await?;
        let execution_id = posted.execution.id.clone();
        let (run_id, chat, execution) = (run.run_id, chat_id.clone(), execution_id.clone());
        self.store
            .write(move |tx| rows::link_run(tx, run_id, &chat, Some(&execution)))
            .await?;
        // An execution that already ended (a retried post) is read back by the watch first.
        let watch = Watch {
            run_id: run.run_id,
            chat_id: &chat_id,
            execution_id: &execution_id,
        };
        self.watch(watch, events).await
    }

    /// Follows the run's execution to its end, moving the run to `parked` while it waits for
    /// an approval and back to `running` once approved. `events` was subscribed before the
    /// execution could move on.
    async fn watch(
        &self,
        watch: Watch<'_>,
        mut events: tokio::sync::broadcast::Receiver<Arc<souz_protocol::chat::ChatEvent>>,
    ) -> Result<RunEnd, ChatError> {
        let Watch {
            run_id,
            chat_id,
            execution_id,
        } = watch;
        // What happened before subscribing is in the stored execution.
        if let Some(end) = self.stored_end(chat_id, execution_id).await? {
            return Ok(end);
        }
        loop {
            match events.recv().await {
                Ok(event) => {
                    if event.execution_id.as_deref() != Some(execution_id) {
                        continue;
                    }
                    match &event.body {
                        ChatEventBody::ExecutionFinished(finished)
                            if finished.end_reason.is_answered() =>
                        {
                            return Ok(RunEnd::ok());
                        }
                        // Souz ended the turn (a limit, a model failure): the stored answer
                        // says why.
                        ChatEventBody::ExecutionFinished(finished) => {
                            let stored = self.stored_end(chat_id, execution_id).await?;
                            return Ok(stored.unwrap_or_else(|| {
                                stopped_end(&TurnEnd {
                                    reason: finished.end_reason,
                                    answer: None,
                                })
                            }));
                        }
                        ChatEventBody::ExecutionFailed(failed) => {
                            return Ok(failed_end(&failed.error_code, &failed.error_message));
                        }
                        ChatEventBody::ExecutionCancelled(_) => {
                            return Ok(RunEnd::failed(RunReason::Cancelled.text(self.language())));
                        }
                        // Every ask of an unattended run parks.
                        ChatEventBody::ApprovalRequested(asked) => {
                            self.set_parked(run_id, Some(asked.approval_id.clone()))
                                .await?;
                        }
                        ChatEventBody::ApprovalDecided(decided)
                            if decided.status == souz_protocol::ApprovalStatus::Approved =>
                        {
                            self.set_parked(run_id, None).await?;
                        }
                        _ => {}
                    }
                }
                // Fell behind: the stored execution says whether it ended meanwhile.
                Err(RecvError::Lagged(_)) => {
                    if let Some(end) = self.stored_end(chat_id, execution_id).await? {
                        return Ok(end);
                    }
                }
                Err(RecvError::Closed) => {
                    return Ok(self
                        .stored_end(chat_id, execution_id)
                        .await?
                        .unwrap_or_else(|| {
                            RunEnd::failed(RunReason::Stopped.text(self.language()))
                        }));
                }
            }
        }
    }

    async fn set_parked(&self, run_id: i64, approval_id: Option<String>) -> Result<(), ChatError> {
        self.store
            .write(move |tx| rows::set_parked(tx, run_id, approval_id.as_deref()))
            .await?;
        Ok(())
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
        let stored = self
            .store
            .read(move |c| {
                let Some(row) = records::load_execution(c, &chat, &id)? else {
                    return Ok::<_, StoreError>(None);
                };
                let turn = match row.execution.status {
                    ExecutionStatus::Completed => events::turn_end(c, &chat, &id)?,
                    _ => None,
                };
                Ok(Some((row.execution, turn)))
            })
            .await?;
        Ok(stored.and_then(|(execution, turn)| end_of(execution, turn, self.language())))
    }
}

/// How a run ends for `execution` (whose turn ended as `turn`, when it completed); `None`
/// while it goes (or waits).
fn end_of(execution: Execution, turn: Option<TurnEnd>, language: Language) -> Option<RunEnd> {
    match execution.status {
        ExecutionStatus::Completed => Some(match turn {
            Some(turn) if !turn.reason.is_answered() => stopped_end(&turn),
            _ => RunEnd::ok(),
        }),
        ExecutionStatus::Failed => Some(failed_end(
            execution.error_code.as_deref().unwrap_or_default(),
            execution
                .error_message
                .as_deref()
                .unwrap_or(RunReason::Failed.text(language)),
        )),
        ExecutionStatus::Cancelled => Some(RunEnd::failed(RunReason::Cancelled.text(language))),
        _ => None,
    }
}

/// The run end of a turn Souz ended (a repeated call, a tool-call or time limit, a model
/// failure): `failed`, for the explanation the person was given followed by the end reason's
/// code in brackets (`rows::end_orphaned_runs` writes the same).
fn stopped_end(turn: &TurnEnd) -> RunEnd {
    RunEnd::failed(match &turn.answer {
        Some(answer) => format!("{answer} ({})", turn.reason),
        None => turn.reason.to_string(),
    })
}

/// A failed execution's run end: `blocked` when a parked call was denied or expired.
fn failed_end(code: &str, message: &str) -> RunEnd {
    if matches!(code, "approval_denied" | "approval_expired") {
        RunEnd {
            state: RunState::Blocked,
            reason: Some(message.to_owned()),
        }
    } else {
        RunEnd::failed(message)
    }
}

/// Shared firing.
pub(crate) type SharedFiring = Arc<dyn Firing>;
