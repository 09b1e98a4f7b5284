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
//!   answer (`waiting_option`) is not a crash: it can be answered after a restart.
//! - Each execution snapshots its effective settings; a resumed turn uses the snapshot.
//! - Every query is scoped by the user: foreign ids are 404, like missing ones. Models are
//!   offered, checked and called with the user's own provider keys, then the daemon's.

pub mod engine;
pub mod events;
pub mod live;
pub mod options;
pub mod records;
pub mod settings;
pub mod turns;

pub use crate::bus::FollowItem;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use chrono::Utc;
use serde_json::json;
use sha2::{Digest, Sha256};
use souz_protocol::chat::{
    Chat, ChatEventList, ChatList, CreateChat, CreateChatResponse, Execution, ExecutionStatus,
    MessageList, OptionStatus, PostMessage, PostMessageResponse, Settings, SettingsPatch, Usage,
};
use souz_protocol::llm::KeySource;
use souz_protocol::{Capabilities, ModelCapability, RuntimeEvent, ToolCapability};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::events::{ChatEvents, NewChatEvent};
use self::options::records::{self as option_records, OptionRow};
use self::records::ExecutionRow;
use self::settings::SettingsDefaults;
use self::turns::{
    SharedEngine, Turn, TurnEvent, TurnInput, TurnOutcome, add_usage, event_payload,
};
use crate::bus::EventBus;
use crate::llm::models::{ModelKind, Resolution, ResolvedModel};
use crate::llm::service::{LlmService, LlmServiceError};
use crate::store::codec::{now, to_json};
use crate::store::{Store, StoreError};

/// How long an execution's lease lasts, and how often it is renewed.
const LEASE: Duration = Duration::from_secs(120);
const LEASE_RENEWAL: Duration = Duration::from_secs(30);
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
    pause: RwLock<Option<crate::bus::PauseSwitch>>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// Wakes the question expiry task when a question is asked.
    asked: tokio::sync::Notify,
}

/// The chat service. Cheap to clone.
#[derive(Clone)]
pub struct Chats {
    inner: Arc<Inner>,
}

impl Chats {
    /// The service. `runtime`, `tasks` and `shutdown` come from the runtime: turns are its
    /// tasks, and questions are announced on its event bus too.
    pub fn new(
        store: Store,
        runtime: EventBus,
        llm: Arc<LlmService>,
        defaults: SettingsDefaults,
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                events: ChatEvents::new(store.clone(), runtime),
                store,
                llm,
                defaults: RwLock::new(defaults),
                engine: RwLock::new(None),
                owner: uuid::Uuid::new_v4().to_string(),
                running: Mutex::new(HashMap::new()),
                pause: RwLock::new(None),
                tasks,
                shutdown,
                asked: tokio::sync::Notify::new(),
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
        let count = orphans.len();
        for (execution_id, chat_id) in orphans {
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
        self.inner.tasks.spawn(self.clone().expire_questions());
        let chats = self.clone();
        self.inner.tasks.spawn(async move {
            let mut interval = tokio::time::interval(LEASE_RENEWAL);
            loop {
                tokio::select! {
                    () = chats.inner.shutdown.cancelled() => return,
                    _ = interval.tick() => {
                        let owner = chats.inner.owner.clone();
                        let until = now() + chrono::Duration::from_std(LEASE).unwrap_or_default();
                        if let Err(error) = chats.inner.store.write(move |tx| records::renew_leases(tx, &owner, until)).await {
                            tracing::warn!(%error, "could not renew execution leases");
                        }
                    }
                }
            }
        });
        Ok(count)
    }

    // ----- settings -------------------------------------------------------------------------

    /// Updates what the settings default to (after a config change or a new provider key).
    pub fn set_defaults(&self, defaults: SettingsDefaults) {
        *self
            .inner
            .defaults
            .write()
            .unwrap_or_else(PoisonError::into_inner) = defaults;
    }

    fn defaults(&self) -> SettingsDefaults {
        self.inner
            .defaults
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The user's effective settings (a default model is picked when none is set).
    pub async fn settings(&self, user: &ChatUser) -> Result<Settings, ChatError> {
        let (stored, _) = self.stored_settings(user).await?;
        let mut defaults = self.defaults();
        if defaults.default_model.is_empty()
            && let Ok(model) = self.llm(user).default_model().await
        {
            defaults.default_model = model.qualified();
        }
        Ok(settings::effective(&defaults, &stored))
    }

    /// Applies a validated patch; the default model must be usable now.
    pub async fn patch_settings(
        &self,
        user: &ChatUser,
        patch: SettingsPatch,
    ) -> Result<Settings, ChatError> {
        let patch =
            settings::normalize(&patch, &self.defaults().tools).map_err(ChatError::Invalid)?;
        if let Some(model) = &patch.default_model {
            self.require_available_model(
                user,
                model,
                "defaultModel must be available to the current user.",
            )
            .await?;
        }
        let (stored, _) = self.stored_settings(user).await?;
        let merged = settings::merge(&stored, &patch);
        let user_id = user.0.clone();
        self.inner
            .store
            .write(move |tx| records::save_settings(tx, &user_id, &merged, None, now()))
            .await?;
        self.settings(user).await
    }

    /// Whether onboarding is done, and what is missing.
    pub async fn onboarding(&self, user: &ChatUser) -> Result<(bool, bool), ChatError> {
        let (_, completed) = self.stored_settings(user).await?;
        let has_model = self.llm(user).default_model().await.is_ok();
        Ok((completed.is_some(), has_model))
    }

    /// Completes onboarding with optional preferences.
    pub async fn complete_onboarding(
        &self,
        user: &ChatUser,
        patch: SettingsPatch,
    ) -> Result<(), ChatError> {
        if self.llm(user).default_model().await.is_err() {
            return Err(ChatError::RequiresModelAccess(
                "Add a provider key or a local model before finishing onboarding.".into(),
            ));
        }
        let patch =
            settings::normalize(&patch, &self.defaults().tools).map_err(ChatError::Invalid)?;
        if let Some(model) = &patch.default_model {
            self.require_available_model(
                user,
                model,
                "defaultModel must be available to the current user.",
            )
            .await?;
        }
        let (stored, _) = self.stored_settings(user).await?;
        let merged = settings::merge(&stored, &patch);
        let user_id = user.0.clone();
        self.inner
            .store
            .write(move |tx| records::save_settings(tx, &user_id, &merged, Some(now()), now()))
            .await?;
        Ok(())
    }

    async fn stored_settings(
        &self,
        user: &ChatUser,
    ) -> Result<(SettingsPatch, Option<chrono::DateTime<Utc>>), ChatError> {
        let user_id = user.0.clone();
        Ok(self
            .inner
            .store
            .write(move |tx| {
                records::ensure_user(tx, &user_id, now())?;
                records::load_settings(tx, &user_id)
            })
            .await?)
    }

    /// The LLM service acting for `user`: their provider keys, then the daemon's.
    fn llm(&self, user: &ChatUser) -> LlmService {
        self.inner.llm.for_user(&user.0)
    }

    async fn require_available_model(
        &self,
        user: &ChatUser,
        name: &str,
        unavailable: &str,
    ) -> Result<(), ChatError> {
        let resolved = self.resolve_model("defaultModel", name)?;
        let available = self.llm(user).available_models(ModelKind::Chat).await?;
        if available
            .iter()
            .any(|model| model.qualified() == resolved.qualified())
        {
            Ok(())
        } else {
            Err(ChatError::Invalid(unavailable.to_owned()))
        }
    }

    /// Resolves a model a request names (`field` says where); see [`check_model`].
    fn resolve_model(&self, field: &str, name: &str) -> Result<ResolvedModel, ChatError> {
        check_model(field, self.inner.llm.resolution(name, ModelKind::Chat))
    }

    /// Usable chat models (with where their keys come from) and the tools with the user's
    /// enabled flags, for the bootstrap.
    pub async fn capabilities(
        &self,
        user: &ChatUser,
    ) -> Result<(Settings, Capabilities), ChatError> {
        let settings = self.settings(user).await?;
        let llm = self.llm(user);
        let keys = llm.provider_keys().await?;
        let models = llm
            .available_models(ModelKind::Chat)
            .await?
            .into_iter()
            .map(|model| {
                let source = keys
                    .iter()
                    .find(|key| key.provider == model.provider)
                    .map(|key| key.source);
                ModelCapability {
                    provider: model.provider.to_string(),
                    model: model.model,
                    server_managed_key: source == Some(KeySource::Environment),
                    user_managed_key: source == Some(KeySource::Stored),
                }
            })
            .collect();
        let mut tools: Vec<ToolCapability> = self
            .defaults()
            .tools
            .into_iter()
            .map(|name| ToolCapability {
                enabled: settings.enabled_tools.contains(&name),
                name,
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Ok((settings, Capabilities { models, tools }))
    }

    // ----- chats ----------------------------------------------------------------------------

    /// Creates a chat (idempotent by `requestId`). Returns whether it is new.
    pub async fn create_chat(
        &self,
        user: &ChatUser,
        request: CreateChat,
    ) -> Result<(CreateChatResponse, bool), ChatError> {
        if let Some(claimed) = &request.user_id
            && claimed.trim() != user.0
        {
            return Err(ChatError::Invalid(
                "userId must be the authenticated user.".into(),
            ));
        }
        if let Some(kind) = &request.client_type
            && !matches!(kind.as_str(), "backend" | "mobile_app")
        {
            return Err(ChatError::Invalid(
                "clientType must be backend or mobile_app.".into(),
            ));
        }
        let request_id = match &request.request_id {
            Some(id) if id.trim().is_empty() => {
                return Err(ChatError::Invalid("requestId must not be blank.".into()));
            }
            Some(id) => Some(id.trim().to_owned()),
            None => None,
        };
        let title = request
            .title
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        let hash = hex::encode(Sha256::digest(
            format!(
                "{}\u{0}{}",
                title.as_deref().unwrap_or_default(),
                request.client_type.as_deref().unwrap_or_default()
            )
            .as_bytes(),
        ));
        let user_id = user.0.clone();
        let chat_id = uuid::Uuid::now_v7().to_string();
        let stored_request = request_id.clone();
        let (chat, created) = self
            .inner
            .store
            .write(move |tx| {
                records::ensure_user(tx, &user_id, now())?;
                if let Some(request_id) = &stored_request
                    && let Some((existing, existing_hash)) =
                        records::chat_by_request(tx, &user_id, request_id)?
                {
                    if existing_hash.as_deref() != Some(hash.as_str()) {
                        return Err(ChatError::IdempotencyConflict);
                    }
                    let chat = records::load_chat(tx, &user_id, &existing)?
                        .ok_or(ChatError::ChatNotFound)?;
                    return Ok((chat, false));
                }
                let request = stored_request.as_deref().map(|id| (id, hash.as_str()));
                records::insert_chat(tx, &user_id, &chat_id, title.as_deref(), request, now())?;
                let chat =
                    records::load_chat(tx, &user_id, &chat_id)?.ok_or(ChatError::ChatNotFound)?;
                Ok::<_, ChatError>((chat, true))
            })
            .await?;
        Ok((
            CreateChatResponse {
                request_id,
                duplicate: !created,
                chat,
            },
            created,
        ))
    }

    /// The user's chats.
    pub async fn list_chats(
        &self,
        user: &ChatUser,
        limit: usize,
        include_archived: bool,
    ) -> Result<ChatList, ChatError> {
        let user_id = user.0.clone();
        let items = self
            .inner
            .store
            .read(move |c| records::list_chats(c, &user_id, include_archived, limit))
            .await?;
        Ok(ChatList {
            items,
            next_cursor: None,
        })
    }

    /// Renames a chat.
    pub async fn rename(
        &self,
        user: &ChatUser,
        chat_id: &str,
        title: &str,
    ) -> Result<Chat, ChatError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(ChatError::Invalid("title must not be blank.".into()));
        }
        self.update_chat(user, chat_id, Some(title.to_owned()), None)
            .await
    }

    /// Archives or unarchives a chat (reversible).
    pub async fn set_archived(
        &self,
        user: &ChatUser,
        chat_id: &str,
        archived: bool,
    ) -> Result<Chat, ChatError> {
        self.update_chat(user, chat_id, None, Some(archived)).await
    }

    async fn update_chat(
        &self,
        user: &ChatUser,
        chat_id: &str,
        title: Option<String>,
        archived: Option<bool>,
    ) -> Result<Chat, ChatError> {
        let (user_id, chat_id) = (user.0.clone(), chat_id.to_owned());
        self.inner
            .store
            .write(move |tx| {
                if !records::update_chat(tx, &user_id, &chat_id, title.as_deref(), archived, now())?
                {
                    return Err(ChatError::ChatNotFound);
                }
                records::load_chat(tx, &user_id, &chat_id)?.ok_or(ChatError::ChatNotFound)
            })
            .await
    }

    async fn require_chat(&self, user: &ChatUser, chat_id: &str) -> Result<Chat, ChatError> {
        let (user_id, chat_id) = (user.0.clone(), chat_id.to_owned());
        self.inner
            .store
            .read(move |c| {
                records::load_chat(c, &user_id, &chat_id)?.ok_or(ChatError::ChatNotFound)
            })
            .await
    }

    // ----- messages and turns ---------------------------------------------------------------

    /// Messages of a chat.
    pub async fn messages(
        &self,
        user: &ChatUser,
        chat_id: &str,
        before: Option<i64>,
        after: Option<i64>,
        limit: usize,
    ) -> Result<MessageList, ChatError> {
        self.require_chat(user, chat_id).await?;
        let chat_id = chat_id.to_owned();
        let items = self
            .inner
            .store
            .read(move |c| records::list_messages(c, &chat_id, before, after, limit))
            .await?;
        Ok(MessageList {
            items,
            next_before_seq: None,
        })
    }

    /// Stores the user's message and starts an agent turn on it.
    pub async fn post_message(
        &self,
        user: &ChatUser,
        chat_id: &str,
        request: PostMessage,
    ) -> Result<PostMessageResponse, ChatError> {
        let content = request.content.trim().to_owned();
        if content.is_empty() {
            return Err(ChatError::Invalid("content must not be blank.".into()));
        }
        self.refuse_if_paused()?;
        let client_message_id = request
            .client_message_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        self.require_chat(user, chat_id).await?;
        if let Some(key) = &client_message_id
            && let Some(existing) = self.by_client_message(chat_id, key).await?
        {
            return Ok(existing);
        }

        let mut snapshot = self.settings(user).await?;
        if let Some(options) = &request.options {
            let patch = settings::normalize(&settings::turn_patch(options), &self.defaults().tools)
                .map_err(ChatError::Invalid)?;
            if let Some(model) = &patch.default_model {
                self.resolve_model("model", model)?;
            }
            snapshot = settings::overlay(snapshot, &patch);
        }
        if snapshot.default_model.is_empty() {
            return Err(ChatError::UnsupportedModel(
                LlmServiceError::NoModel.to_string(),
            ));
        }
        // The effective model (maybe a stored or configured one) must serve chats (§1.7).
        let model = match self
            .inner
            .llm
            .resolution(&snapshot.default_model, ModelKind::Chat)
        {
            Resolution::Resolved(model) => model,
            other => return Err(ChatError::UnsupportedModel(other.describe())),
        };
        snapshot.default_model = model.qualified();

        let at = now();
        let execution = Execution {
            id: uuid::Uuid::now_v7().to_string(),
            chat_id: chat_id.to_owned(),
            user_message_id: Some(uuid::Uuid::now_v7().to_string()),
            assistant_message_id: None,
            status: ExecutionStatus::Running,
            request_id: None,
            client_message_id: client_message_id.clone(),
            model: Some(model.qualified()),
            provider: Some(model.provider.to_string().to_ascii_uppercase()),
            started_at: Some(at),
            finished_at: None,
            cancel_requested: false,
            error_code: None,
            error_message: None,
            usage: None,
            metadata: BTreeMap::new(),
        };
        let settings_json = to_json(&snapshot)?;
        // The answer's id, named by every `message.delta` of the execution (§1.8).
        let reply_message_id = uuid::Uuid::now_v7().to_string();
        let stored_reply_id = reply_message_id.clone();
        let owner = self.inner.owner.clone();
        let lease_until = at + chrono::Duration::from_std(LEASE).unwrap_or_default();
        let stored = execution.clone();
        let text = content.clone();
        let streaming = snapshot.streaming_messages;
        let result = self
            .inner
            .events
            .publish_with(move |tx| {
                let mut metadata = BTreeMap::new();
                if let Some(key) = &stored.client_message_id {
                    metadata.insert("clientMessageId".to_owned(), key.clone());
                }
                let message_id = stored.user_message_id.clone().unwrap_or_default();
                let message = records::insert_message(tx, &message_id, &stored.chat_id, "user", &text, &metadata, at)?;
                match records::insert_execution(tx, &stored, &settings_json, &stored_reply_id, &owner, lease_until, at) {
                    Ok(()) => {}
                    Err(rusqlite::Error::SqliteFailure(failure, _))
                        if failure.code == rusqlite::ErrorCode::ConstraintViolation =>
                    {
                        return Err(ChatError::ActiveExecution);
                    }
                    Err(error) => return Err(ChatError::Store(error.into())),
                }
                records::touch_chat(tx, &stored.chat_id, at)?;
                let mut created = json!({
                    "messageId": message.id, "seq": message.seq, "role": "user", "content": message.content,
                });
                if let Some(key) = &stored.client_message_id {
                    created["clientMessageId"] = json!(key);
                }
                let events = vec![
                    NewChatEvent { chat_id: stored.chat_id.clone(), execution_id: Some(stored.id.clone()), kind: "message.created", payload: created },
                    NewChatEvent {
                        chat_id: stored.chat_id.clone(),
                        execution_id: Some(stored.id.clone()),
                        kind: "execution.started",
                        payload: json!({
                            "executionId": stored.id, "userMessageId": message.id,
                            "model": stored.model, "provider": stored.provider, "streamingMessages": streaming,
                        }),
                    },
                ];
                Ok((message, events))
            })
            .await;
        let (message, _) = match result {
            Ok(done) => done,
            // A concurrent retry with the same key won the race: answer with its execution.
            Err(ChatError::ActiveExecution) if client_message_id.is_some() => {
                if let Some(existing) = self
                    .by_client_message(chat_id, client_message_id.as_deref().unwrap_or_default())
                    .await?
                {
                    return Ok(existing);
                }
                return Err(ChatError::ActiveExecution);
            }
            Err(error) => return Err(error),
        };
        let turn = Turn {
            user_id: user.0.clone(),
            chat_id: chat_id.to_owned(),
            execution_id: execution.id.clone(),
            message_id: reply_message_id,
            input: TurnInput::Message(content),
            settings: snapshot,
        };
        self.launch(turn, Usage::default())?;
        Ok(PostMessageResponse {
            message,
            assistant_message: None,
            execution,
        })
    }

    async fn by_client_message(
        &self,
        chat_id: &str,
        key: &str,
    ) -> Result<Option<PostMessageResponse>, ChatError> {
        let (chat_id, key) = (chat_id.to_owned(), key.to_owned());
        let found = self
            .inner
            .store
            .read(move |c| {
                let Some(row) = records::execution_by_client_message(c, &chat_id, &key)? else {
                    return Ok(None);
                };
                let execution = row.execution;
                let message = match &execution.user_message_id {
                    Some(id) => records::load_message(c, &chat_id, id)?,
                    None => None,
                };
                let assistant = match &execution.assistant_message_id {
                    Some(id) => records::load_message(c, &chat_id, id)?,
                    None => None,
                };
                Ok::<_, StoreError>(message.map(|message| PostMessageResponse {
                    message,
                    assistant_message: assistant,
                    execution,
                }))
            })
            .await?;
        Ok(found)
    }

    /// Adds input to the chat's running turn (steering); false when no turn can take it.
    pub fn steer(&self, chat_id: &str, input: &str) -> bool {
        self.engine()
            .is_some_and(|engine| engine.steer(chat_id, input))
    }

    fn engine(&self) -> Option<SharedEngine> {
        self.inner
            .engine
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs a turn as a runtime task.
    fn launch(&self, turn: Turn, usage_so_far: Usage) -> Result<(), ChatError> {
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
        let chats = self.clone();
        self.inner.tasks.spawn(async move {
            let execution_id = turn.execution_id.clone();
            let chat_id = turn.chat_id.clone();
            let mut outcome = chats.drive(turn, cancel).await;
            let (TurnOutcome::Completed { usage, .. }
            | TurnOutcome::Asked { usage, .. }
            | TurnOutcome::Failed { usage, .. }
            | TurnOutcome::Cancelled { usage }) = &mut outcome;
            let mut total = usage_so_far.clone();
            add_usage(&mut total, usage);
            *usage = total;
            let from = [ExecutionStatus::Running, ExecutionStatus::Cancelling];
            if let Err(error) = chats
                .end_execution(&chat_id, &execution_id, &from, outcome)
                .await
            {
                tracing::error!(%error, %execution_id, "could not record the end of an execution");
            }
            chats
                .inner
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&execution_id);
        });
        Ok(())
    }

    /// Runs the engine, turning its events into chat events as they come.
    async fn drive(&self, turn: Turn, cancel: CancellationToken) -> TurnOutcome {
        let Some(engine) = self.engine() else {
            return TurnOutcome::Failed {
                code: "agent_execution_failed".into(),
                message: "No agent is available in this daemon.".into(),
                usage: Usage::default(),
            };
        };
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

    async fn relay(&self, relay: &Relay, event: TurnEvent) {
        let (chat_id, execution_id) = (relay.chat_id.as_str(), relay.execution_id.as_str());
        match &event {
            // `messageId` is the answer's id (original §1.8); the rest tells steered attempts
            // apart.
            TurnEvent::Delta { attempt, text } => {
                if relay.streaming {
                    self.inner.events.publish_live(
                        chat_id,
                        Some(execution_id),
                        "message.delta",
                        json!({
                            "messageId": relay.message_id, "executionId": execution_id,
                            "attempt": attempt, "delta": text,
                        }),
                    );
                }
                return;
            }
            TurnEvent::Discarded { attempt } => {
                if relay.streaming {
                    self.inner.events.publish_live(
                        chat_id,
                        Some(execution_id),
                        "message.discarded",
                        json!({
                            "messageId": relay.message_id, "executionId": execution_id,
                            "attempt": attempt,
                        }),
                    );
                }
                return;
            }
            _ => {}
        }
        let Some((kind, payload)) = event_payload(&event, relay.show_tools) else {
            return;
        };
        let new = NewChatEvent {
            chat_id: chat_id.to_owned(),
            execution_id: Some(execution_id.to_owned()),
            kind,
            payload,
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
    async fn end_execution(
        &self,
        chat_id: &str,
        execution_id: &str,
        from: &[ExecutionStatus],
        outcome: TurnOutcome,
    ) -> Result<Option<Execution>, ChatError> {
        let (chat_id, execution_id) = (chat_id.to_owned(), execution_id.to_owned());
        let from = from.to_vec();
        let asks = matches!(outcome, TurnOutcome::Asked { .. });
        let (ended, _) = self
            .inner
            .events
            .publish_with_runtime(move |tx| {
                let Some(row) = records::load_execution(tx, &chat_id, &execution_id)? else {
                    return Ok((None, Vec::new(), Vec::new()));
                };
                let at = now();
                let mut events = Vec::new();
                let mut runtime = Vec::new();
                let event = |kind: &'static str, payload: serde_json::Value| NewChatEvent {
                    chat_id: chat_id.clone(),
                    execution_id: Some(execution_id.clone()),
                    kind,
                    payload,
                };
                // A turn that completed after cancellation was requested counts as cancelled.
                let outcome = match outcome {
                    TurnOutcome::Completed { usage, .. } | TurnOutcome::Asked { usage, .. }
                        if row.execution.status == ExecutionStatus::Cancelling =>
                    {
                        TurnOutcome::Cancelled { usage }
                    }
                    other => other,
                };
                let transitioned = match &outcome {
                    TurnOutcome::Completed { text, usage } => {
                        let message_id = row.reply_message_id.clone().unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
                        if !records::transition(tx, &execution_id, &from, ExecutionStatus::Completed, at, None, Some(usage), Some(&message_id))? {
                            return Ok((None, Vec::new(), Vec::new()));
                        }
                        let message = records::insert_message(tx, &message_id, &chat_id, "assistant", text, &BTreeMap::new(), at)?;
                        records::touch_chat(tx, &chat_id, at)?;
                        let body = json!({"messageId": message.id, "seq": message.seq, "role": "assistant", "content": message.content});
                        events.push(event("message.created", body.clone()));
                        events.push(event("message.completed", body));
                        events.push(event("execution.finished", json!({
                            "executionId": execution_id, "assistantMessageId": message.id, "status": "completed",
                            "promptTokens": usage.prompt_tokens, "completionTokens": usage.completion_tokens,
                            "totalTokens": usage.total_tokens, "precachedTokens": usage.precached_tokens,
                        })));
                        true
                    }
                    TurnOutcome::Asked { question, usage } => {
                        if !records::transition(tx, &execution_id, &from, ExecutionStatus::WaitingOption, at, None, Some(usage), None)? {
                            return Ok((None, Vec::new(), Vec::new()));
                        }
                        let option = OptionRow {
                            id: uuid::Uuid::now_v7().to_string(),
                            chat_id: chat_id.clone(),
                            execution_id: execution_id.clone(),
                            kind: question.kind.clone(),
                            title: question.title.clone(),
                            selection_mode: question.selection_mode,
                            choices: question.choices.clone(),
                            free_text: question.free_text,
                            status: OptionStatus::Pending,
                            expires_at: Some(at + OPTION_LIFETIME),
                        };
                        option_records::insert_option(tx, &option, at)?;
                        if let Some(asked) = option_records::question_by_id(tx, &option.id)? {
                            runtime.push(RuntimeEvent::OptionRequested { option: Box::new(asked) });
                        }
                        events.push(event("option.requested", json!({
                            "optionId": option.id, "kind": option.kind, "title": option.title,
                            "selectionMode": option.selection_mode, "options": option.choices,
                            "freeText": option.free_text, "expiresAt": option.expires_at,
                        })));
                        true
                    }
                    TurnOutcome::Failed { code, message, usage } => {
                        if !records::transition(tx, &execution_id, &from, ExecutionStatus::Failed, at, Some((code, message)), Some(usage), None)? {
                            return Ok((None, Vec::new(), Vec::new()));
                        }
                        runtime.extend(cancel_questions(tx, &chat_id, &execution_id, at)?);
                        events.push(event("execution.failed", json!({
                            "executionId": execution_id, "errorCode": code, "errorMessage": message,
                        })));
                        true
                    }
                    TurnOutcome::Cancelled { usage } => {
                        let error = ("agent_execution_cancelled", "Agent execution was cancelled.");
                        if !records::transition(tx, &execution_id, &from, ExecutionStatus::Cancelled, at, Some(error), Some(usage), None)? {
                            return Ok((None, Vec::new(), Vec::new()));
                        }
                        runtime.extend(cancel_questions(tx, &chat_id, &execution_id, at)?);
                        events.push(event("execution.cancelled", json!({"executionId": execution_id})));
                        true
                    }
                };
                let ended = if transitioned {
                    records::load_execution(tx, &chat_id, &execution_id)?.map(|row| row.execution)
                } else {
                    None
                };
                Ok::<_, ChatError>((ended, events, runtime))
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

    async fn cancel(&self, chat_id: &str, row: ExecutionRow) -> Result<Execution, ChatError> {
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

/// A model named in a request: a name that matches no model or several is a bad request
/// (§1.6); one that names a model that cannot serve chats is `unsupported_backend_model`
/// (§1.7).
fn check_model(field: &str, resolution: Resolution) -> Result<ResolvedModel, ChatError> {
    match resolution {
        Resolution::Resolved(model) => Ok(model),
        Resolution::Unknown { suggestions, .. } => {
            let mut message = format!("{field} must be a known model alias.");
            if !suggestions.is_empty() {
                message.push_str(&format!(" Did you mean {}?", suggestions.join(", ")));
            }
            Err(ChatError::Invalid(message))
        }
        Resolution::Ambiguous { candidates, .. } => Err(ChatError::Invalid(format!(
            "{field} is ambiguous; use a model enum name ({}).",
            candidates.join(", ")
        ))),
        unsupported @ Resolution::Unsupported { .. } => {
            Err(ChatError::UnsupportedModel(unsupported.describe()))
        }
    }
}

/// Where a running turn's events go.
struct Relay {
    chat_id: String,
    execution_id: String,
    message_id: String,
    streaming: bool,
    show_tools: bool,
}

/// Cancels the questions an ending execution left pending; returns their runtime events.
fn cancel_questions(
    tx: &rusqlite::Transaction<'_>,
    chat_id: &str,
    execution_id: &str,
    at: chrono::DateTime<Utc>,
) -> Result<Vec<RuntimeEvent>, StoreError> {
    let cancelled = option_records::cancel_options(tx, execution_id, at)?;
    Ok(cancelled
        .into_iter()
        .map(|option_id| RuntimeEvent::OptionCancelled {
            option_id,
            chat_id: chat_id.to_owned(),
            execution_id: execution_id.to_owned(),
        })
        .collect())
}

#[cfg(test)]
mod tests;
