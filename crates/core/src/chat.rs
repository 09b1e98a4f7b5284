//! Chats: conversations with Souz's agents, their messages, executions (one agent turn per user
//! message), durable per-chat events with live streaming, questions the agent asks (options),
//! and the user's settings — the original `/v1` chat API (§1.3–1.13), done safely.
//!
//! Invariants:
//! - One active execution per chat, enforced by a unique index (409 otherwise).
//! - A message or event is durable before it is announced; `message.delta` is live-only.
//! - Exactly one terminal event per execution: every end is a conditional state transition,
//!   and a unique index on terminal events backs it up.
//! - Executions carry an owner and a lease; at start, executions left running by a dead process
//!   are failed with `process_restarted` and get their terminal event. A question waiting for an
//!   answer (`waiting_option`) is not a crash: it can be answered after a restart, and neither
//!   is an unattended run parked on an approval (`waiting_approval`, see [`parking`]).
//! - A turn whose execution this process no longer holds (its lease could not be renewed in
//!   time, or recovery elsewhere ended it) is cancelled at the next renewal: it calls no more
//!   tools and its end records nothing (the execution has its one terminal event already).
//! - Each execution snapshots its effective settings; a resumed turn uses the snapshot.
//! - Every query is scoped by the user: foreign ids are 404, like missing ones. Models are
//!   offered, checked and called with the user's own provider keys, then the daemon's.

pub(crate) mod attachments;
pub mod client_tools;
mod conversations;
mod delivered;
pub mod devices;
pub(crate) mod engine;
pub(crate) mod events;
mod execution;
mod followups;
pub(crate) mod live;
pub(crate) mod options;
mod parking;
mod per_chat;
mod posting;
mod preferences;
mod queued;
pub(crate) mod records;
pub(crate) mod settings;
pub(crate) mod turns;

pub(crate) use self::attachments::ChatFiles;
pub use self::attachments::{MAX_ATTACHMENTS, UPLOAD_FOLDER};
pub use self::conversations::MessagePage;
pub(crate) use self::per_chat::core_off;
pub use crate::bus::FollowItem;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use souz_protocol::chat::{ChatEventList, ExecutionStatus, Usage};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::events::ChatEvents;
use self::settings::SettingsDefaults;
use self::turns::{SharedEngine, TurnOutcome};
use crate::bus::EventBus;
use crate::llm::service::{LlmService, LlmServiceError};
use crate::store::codec::now;
use crate::store::{Store, StoreError};

/// How long an execution's lease lasts, and how often it is renewed while this process runs
/// one (no timer at all while it runs none: an idle daemon does not wake up).
const LEASE: Duration = Duration::from_secs(120);
const LEASE_RENEWAL: Duration = Duration::from_secs(30);
/// [`LEASE`] as a time span.
fn lease_length() -> chrono::Duration {
    chrono::Duration::from_std(LEASE).unwrap_or_default()
}

/// How long an agent's question waits for an answer.
const OPTION_LIFETIME: chrono::Duration = chrono::Duration::hours(24);

/// Why a chat operation failed. Messages follow the original API's where it had them.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// No such chat for this user.
    #[error("Chat not found.")]
    ChatNotFound,
    /// No such execution in this chat.
    #[error("Execution not found.")]
    ExecutionNotFound,
    /// No such option for this user.
    #[error("Option not found.")]
    OptionNotFound,
    /// The request is invalid.
    #[error("{0}")]
    Invalid(String),
    /// The thread (execution) has ended; it takes no more input and cannot be cancelled.
    #[error("The thread has already ended.")]
    ThreadEnded,
    /// The thread is active but its turn does not take input now (it waits for the person, runs
    /// in another process, or has its answer already).
    #[error("The thread does not take input now.")]
    NoInputNow,
    /// The chat already has an active execution.
    #[error("The chat already has an active execution.")]
    ActiveExecution,
    /// The idempotency key was used for a different request.
    #[error("requestId was already used with a different payload.")]
    IdempotencyConflict,
    /// The model cannot serve chats.
    #[error("{0}")]
    UnsupportedModel(String),
    /// No model is reachable, so onboarding cannot finish.
    #[error("{0}")]
    RequiresModelAccess(String),
    /// The agent turn could not be started.
    #[error("the agent could not be started: {0}")]
    StartFailed(String),
    /// The agent waits for the answer to its question; input goes there first.
    #[error(
        "The agent is waiting for the answer to its question; answer it (or cancel the turn) first."
    )]
    AwaitingAnswer,
    /// An unattended run waits for the person's approval of a call; input waits for that.
    #[error(
        "This chat's run waits for your approval of a call; approve or deny it (or cancel the \
         run) first."
    )]
    AwaitingApproval,
    /// Souz is paused; turns start again once the person resumes it.
    #[error("Souz is paused; resume it to start agent turns.")]
    Paused,
    /// The LLM layer failed (provider keys, models); the HTTP edge maps it as it maps the
    /// LLM layer's own errors.
    #[error(transparent)]
    Llm(#[from] LlmServiceError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Souz itself failed (a file task panicked); the detail is for the log.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The person a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatUser(pub String);

struct Inner {
    store: Store,
    events: ChatEvents,
    llm: Arc<LlmService>,
    defaults: RwLock<SettingsDefaults>,
    engine: RwLock<Option<SharedEngine>>,
    owner: String,
    running: Mutex<HashMap<String, CancellationToken>>,
    pause: crate::bus::PauseSwitch,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// Wakes the question expiry task when a question is asked.
    asked: tokio::sync::Notify,
    /// Wakes the lease renewal task when a turn is launched.
    launched: tokio::sync::Notify,
    /// Where attachments are read and uploads written.
    files: Arc<dyn ChatFiles>,
    /// Serialises each chat's device requests (`devices`).
    device_locks: devices::RequestLocks,
    /// The turns waiting for a device's `tool.result` (`client_tools`).
    client_waiters: client_tools::Waiters,
    /// Every client tool's deadline, when set (tests); else each skill's own.
    client_tool_deadline: RwLock<Option<Duration>>,
}

/// What the chat service is made of (see [`Chats::new`]).
pub(crate) struct ChatsParts {
    pub(crate) store: Store,
    pub(crate) events: EventBus,
    pub(crate) llm: Arc<LlmService>,
    pub(crate) defaults: SettingsDefaults,
    pub(crate) tasks: TaskTracker,
    pub(crate) shutdown: CancellationToken,
    /// The runtime's pause switch: while it is on, new turns are refused.
    pub(crate) pause: crate::bus::PauseSwitch,
    /// The sandbox of each chat's files (attachments).
    pub(crate) files: Arc<dyn ChatFiles>,
}

/// The chat service. Cheap to clone.
#[derive(Clone)]
pub struct Chats {
    inner: Arc<Inner>,
}

impl Chats {
    /// The service. `events`, `tasks` and `shutdown` come from the runtime: turns are its
    /// tasks, and questions are announced on its event bus too.
    pub(crate) fn new(parts: ChatsParts) -> Self {
        let ChatsParts {
            store,
            events: runtime,
            llm,
            defaults,
            tasks,
            shutdown,
            pause,
            files,
        } = parts;
        Self {
            inner: Arc::new(Inner {
                events: ChatEvents::new(store.clone(), runtime),
                store,
                llm,
                defaults: RwLock::new(defaults),
                engine: RwLock::new(None),
                owner: uuid::Uuid::new_v4().to_string(),
                running: Mutex::new(HashMap::new()),
                pause,
                tasks,
                shutdown,
                asked: tokio::sync::Notify::new(),
                launched: tokio::sync::Notify::new(),
                files,
                device_locks: devices::RequestLocks::default(),
                client_waiters: client_tools::Waiters::default(),
                client_tool_deadline: RwLock::new(Self::deadline_from_environment()),
            }),
        }
    }

    /// Sets the engine that runs agent turns.
    pub fn set_engine(&self, engine: SharedEngine) {
        *self
            .inner
            .engine
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(engine);
    }

    /// The chat event streams.
    pub fn events(&self) -> &ChatEvents {
        &self.inner.events
    }

    /// This process's owner id for execution leases.
    pub fn owner(&self) -> &str {
        &self.inner.owner
    }

    /// Fails executions a dead process left running, with their terminal events; then keeps
    /// this process's leases fresh and ends questions nobody answered in time, until shutdown.
    /// Call once at start.
    pub async fn recover(&self) -> Result<usize, ChatError> {
        let owner = self.inner.owner.clone();
        let orphans = self
            .inner
            .store
            .read(move |connection| records::orphaned_executions(connection, &owner))
            .await?;
        let count = self.fail_orphans(orphans).await?;
        self.inner.tasks.spawn(self.clone().expire_questions());
        self.inner.tasks.spawn(self.clone().follow_parked());
        self.inner.tasks.spawn(self.clone().renew_leases());
        Ok(count)
    }

    /// Fails `orphans` (execution and chat ids) with `process_restarted` and their terminal
    /// events (each end is a conditional transition: one that ended meanwhile stays as it is).
    async fn fail_orphans(&self, orphans: Vec<(String, String)>) -> Result<usize, ChatError> {
        let count = orphans.len();
        for (execution_id, chat_id) in orphans {
            // Killed between parking its call and recording that it waits: it waits now.
            if self.adopt_parked(&execution_id).await? {
                continue;
            }
            self.end_execution(
                &chat_id,
                &execution_id,
                &[
                    ExecutionStatus::Queued,
                    ExecutionStatus::Running,
                    ExecutionStatus::Cancelling,
                ],
                TurnOutcome::Failed {
                    code: "process_restarted".into(),
                    message: "The execution stopped because Souz restarted.".into(),
                    usage: Usage::default(),
                },
            )
            .await?;
        }
        Ok(count)
    }

    /// Fails executions another process holds whose lease ran out (that process died, or
    /// shares the database and stopped renewing).
    async fn sweep_expired_leases(&self) -> Result<usize, ChatError> {
        let owner = self.inner.owner.clone();
        let at = now();
        let expired = self
            .inner
            .store
            .read(move |connection| records::expired_executions(connection, &owner, at))
            .await?;
        self.fail_orphans(expired).await
    }

    /// Renews the leases of this process's running executions every [`LEASE_RENEWAL`] while
    /// any runs; while none runs it waits for a launch without a timer.
    async fn renew_leases(self) {
        // Until when this process surely holds its running executions: the lease a launch
        // gave them, then each successful renewal's.
        let mut held_until = None;
        loop {
            if self.running_count() == 0 {
                held_until = None;
                tokio::select! {
                    () = self.inner.shutdown.cancelled() => return,
                    () = self.inner.launched.notified() => continue,
                }
            }
            let held = *held_until.get_or_insert_with(|| now() + lease_length());
            tokio::select! {
                () = self.inner.shutdown.cancelled() => return,
                () = tokio::time::sleep(LEASE_RENEWAL) => {}
            }
            held_until = Some(self.renew_once(held).await);
        }
    }

    /// One renewal: extends the leases of this process's running executions, cancels the turns
    /// whose executions it no longer holds, and ends what other processes left with an expired
    /// lease. `held_until` is how long the leases held before; returns how long they hold now.
    ///
    /// A turn whose execution is no longer this process's — its lease could not be renewed
    /// before it ran out, or recovery elsewhere ended it (`failed`, `process_restarted`) — is
    /// cancelled here, so it calls no more tools and writes no more events after its end; its
    /// own end then finds the execution ended and records nothing (one terminal event).
    pub(crate) async fn renew_once(
        &self,
        held_until: chrono::DateTime<chrono::Utc>,
    ) -> chrono::DateTime<chrono::Utc> {
        let owner = self.inner.owner.clone();
        let until = now() + lease_length();
        let renewed = self
            .inner
            .store
            .write(move |tx| records::renew_leases(tx, &owner, until))
            .await;
        let held_until = match renewed {
            Ok(_) => until,
            Err(error) => {
                tracing::warn!(%error, "could not renew execution leases");
                if now() >= held_until {
                    // Past the lease: another process may have taken these executions over.
                    for (execution_id, cancel) in self.running_tokens() {
                        tracing::warn!(%execution_id, "a turn lost its lease; cancelling it");
                        cancel.cancel();
                    }
                }
                held_until
            }
        };
        let running: Vec<String> = self
            .running_tokens()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let owner = self.inner.owner.clone();
        match self
            .inner
            .store
            .read(move |c| records::not_held(c, &owner, &running))
            .await
        {
            Ok(lost) => {
                let tokens = self.running_tokens();
                for (execution_id, cancel) in tokens {
                    if lost.contains(&execution_id) {
                        tracing::warn!(%execution_id, "a turn's execution is no longer this process's; cancelling it");
                        cancel.cancel();
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "could not check the leases of running turns"),
        }
        // Every renewal also ends what another process left behind with an expired lease.
        if let Err(error) = self.sweep_expired_leases().await {
            tracing::warn!(%error, "could not end executions with expired leases");
        }
        held_until
    }

    /// The running turns of this process and their cancellation.
    fn running_tokens(&self) -> Vec<(String, CancellationToken)> {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(id, cancel)| (id.clone(), cancel.clone()))
            .collect()
    }

    /// How many turns this process runs now.
    fn running_count(&self) -> usize {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    // ----- events ---------------------------------------------------------------------------

    /// Stored events of a chat after `after_seq`.
    pub async fn replay(
        &self,
        user: &ChatUser,
        chat_id: &str,
        after_seq: i64,
        limit: usize,
    ) -> Result<ChatEventList, ChatError> {
        self.require_chat(user, chat_id).await?;
        let items = self.inner.events.replay(chat_id, after_seq, limit).await?;
        Ok(ChatEventList { items })
    }

    /// Checks the chat exists for the user before a live stream is opened.
    pub async fn authorize_stream(&self, user: &ChatUser, chat_id: &str) -> Result<(), ChatError> {
        self.require_chat(user, chat_id).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests;
