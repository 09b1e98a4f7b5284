//! Posting a user's message: it is stored with its execution (one active per chat, enforced by
//! a unique index) and their events in one transaction, idempotently by `clientMessageId`,
//! and only then is the agent turn launched. Input queued while a turn ran starts its turn the
//! same way, on its already stored message.

use std::collections::BTreeMap;

use souz_protocol::chat::events::{ExecutionStartedPayload, MessagePayload};
use souz_protocol::chat::{
    ChatEventBody, ChatSettings, Execution, ExecutionStatus, Message, PostMessage,
    PostMessageResponse, Settings, TurnOptions, Usage,
};

use super::attachments::Prepared;
use super::events::NewChatEvent;
use super::records::{NewExecution, NewMessage};
use super::turns::{Turn, TurnInput};
use super::{ChatError, ChatUser, Chats, LEASE, per_chat, records, settings};
use crate::agent::AgentKind;
use crate::llm::models::{ModelKind, Resolution, ResolvedModel};
use crate::llm::service::LlmServiceError;
use crate::store::StoreError;
use crate::store::codec::{now, to_json};

impl Chats {
    /// Stores the user's message and starts an agent turn on it.
    pub async fn post_message(
        &self,
        user: &ChatUser,
        chat_id: &str,
        request: PostMessage,
    ) -> Result<PostMessageResponse, ChatError> {
        self.post_message_as(user, chat_id, request, None).await
    }

    /// [`Chats::post_message`], as the unattended run `unattended` when it is one.
    pub(super) async fn post_message_as(
        &self,
        user: &ChatUser,
        chat_id: &str,
        request: PostMessage,
        unattended: Option<crate::tools::gate::Unattended>,
    ) -> Result<PostMessageResponse, ChatError> {
        let origin = Origin {
            unattended,
            device: None,
        };
        self.post_message_from(user, chat_id, request, origin).await
    }

    /// [`Chats::post_message_as`] from `origin`: an unattended run, or a device (whose turn
    /// offers the device's client tools).
    pub(super) async fn post_message_from(
        &self,
        user: &ChatUser,
        chat_id: &str,
        request: PostMessage,
        origin: Origin,
    ) -> Result<PostMessageResponse, ChatError> {
        let Origin { unattended, device } = origin;
        let content = request.content.trim().to_owned();
        if content.is_empty() && request.attachments.is_empty() {
            // The original API's words; a message of attachments alone may have no text.
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

        let attachments = self
            .prepare_attachments(chat_id, request.attachments)
            .await?;
        self.start_turn(
            user,
            chat_id,
            NewTurn {
                content,
                client_message_id,
                options: request.options,
                stored: None,
                attachments,
                unattended,
                device,
            },
        )
        .await
    }

    /// Starts a turn on `new.content`: stores the message (unless it is stored already) with a
    /// running execution and their events in one transaction, then launches the turn.
    pub(super) async fn start_turn(
        &self,
        user: &ChatUser,
        chat_id: &str,
        new: NewTurn,
    ) -> Result<PostMessageResponse, ChatError> {
        let NewTurn {
            content,
            client_message_id,
            options,
            stored: stored_message,
            attachments,
            unattended,
            device,
        } = new;
        let chat_settings = self.stored_chat_settings(chat_id).await?;
        let (snapshot, model) = self
            .turn_settings(user, &chat_settings, options.as_ref())
            .await?;
        let (records, attached, images) = attachments.for_model(&model)?;

        let at = now();
        let mut execution = new_execution(chat_id, client_message_id.clone(), &model, at);
        if let Some(message) = &stored_message {
            execution.user_message_id = Some(message.id.clone());
        }
        let settings_json = to_json(&snapshot)?;
        // The answer's id, named by every `message.delta` of the execution (§1.8).
        let reply_message_id = uuid::Uuid::now_v7().to_string();
        let stored_reply_id = reply_message_id.clone();
        let owner = self.inner.owner.clone();
        let lease_until = at + chrono::Duration::from_std(LEASE).unwrap_or_default();
        let stored = execution.clone();
        let text = content.clone();
        let streaming = snapshot.streaming_messages;
        let (run, submitted_from) = (unattended.clone(), device.clone());
        let result = self
            .inner
            .events
            .publish_with(move |tx| {
                let metadata = user_metadata(stored.client_message_id.as_deref());
                let message_id = stored.user_message_id.clone().unwrap_or_default();
                let fresh = stored_message.is_none();
                let message = match stored_message {
                    Some(message) => message,
                    None => records::insert_message(
                        tx,
                        &NewMessage {
                            id: &message_id,
                            chat_id: &stored.chat_id,
                            role: "user",
                            content: &text,
                            metadata: &metadata,
                            attachments: &records,
                            at,
                        },
                    )?,
                };
                let new = NewExecution {
                    execution: &stored,
                    settings: &settings_json,
                    reply_message_id: &stored_reply_id,
                    owner: &owner,
                    lease_until,
                    at,
                };
                insert_running(tx, &new, run.as_ref(), submitted_from.as_ref())?;
                records::touch_chat(tx, &stored.chat_id, at)?;
                let events = started_events(&stored, &message, streaming, fresh);
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
            agent: chat_settings.agent.as_deref().map(AgentKind::parse),
            core_off: per_chat::core_off(&chat_settings),
            user_id: user.0.clone(),
            chat_id: chat_id.to_owned(),
            execution_id: execution.id.clone(),
            message_id: reply_message_id,
            input: TurnInput::Message(content),
            attached,
            images,
            settings: snapshot,
            unattended,
            delivered: Vec::new(),
            client_tools: self.device_tools(chat_id, &execution.id, device),
        };
        self.launch(turn, Usage::default())?;
        Ok(PostMessageResponse {
            message,
            assistant_message: None,
            execution,
        })
    }

    /// The settings a new turn runs with (the user's, overlaid with the chat's own, then with
    /// the message's options) and its model, which must serve chats.
    async fn turn_settings(
        &self,
        user: &ChatUser,
        chat: &ChatSettings,
        options: Option<&TurnOptions>,
    ) -> Result<(Settings, ResolvedModel), ChatError> {
        let mut snapshot = settings::overlay(self.settings(user).await?, &per_chat::as_patch(chat));
        if let Some(options) = options {
            let patch = settings::normalize(&settings::turn_patch(options), &self.defaults().tools)
                .map_err(ChatError::Invalid)?;
            if let Some(model) = &patch.default_model {
                self.resolve_model("model", model)?;
            }
            snapshot = settings::overlay(snapshot, &patch);
        }
        if snapshot.default_model.is_empty() {
            return Err(ChatError::RequiresModelAccess(
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
        Ok((snapshot, model))
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
}

/// The metadata of a person's message: the client's id for it, when it named one.
fn user_metadata(client_message_id: Option<&str>) -> BTreeMap<String, String> {
    client_message_id
        .map(|key| ("clientMessageId".to_owned(), key.to_owned()))
        .into_iter()
        .collect()
}

/// Where a posted message comes from besides the person: an unattended run, a device.
#[derive(Debug, Default)]
pub(super) struct Origin {
    /// The unattended run it is (a schedule's), if it is one.
    pub unattended: Option<crate::tools::gate::Unattended>,
    /// The device that submitted it, if one did.
    pub device: Option<super::client_tools::DeviceContext>,
}

/// A turn to start (see [`Chats::start_turn`]).
pub(super) struct NewTurn {
    /// What the person said.
    pub content: String,
    /// The idempotency key.
    pub client_message_id: Option<String>,
    /// Per-turn overrides.
    pub options: Option<TurnOptions>,
    /// The person's message when it is stored already (input queued while a turn ran).
    pub stored: Option<Message>,
    /// The files attached to it, checked and read.
    pub attachments: Prepared,
    /// The unattended run it is (a schedule's), if it is one.
    pub unattended: Option<crate::tools::gate::Unattended>,
    /// The device that submitted it, if one did.
    pub device: Option<super::client_tools::DeviceContext>,
}

/// Stores a running execution (the unattended run `run`, when it is one; the device that
/// submitted it, when one did); a chat that has one already is [`ChatError::ActiveExecution`].
fn insert_running(
    tx: &rusqlite::Connection,
    new: &NewExecution<'_>,
    run: Option<&crate::tools::gate::Unattended>,
    device: Option<&super::client_tools::DeviceContext>,
) -> Result<(), ChatError> {
    match records::insert_execution(tx, new) {
        Ok(()) => {
            if let Some(run) = run {
                super::parking::set_unattended(tx, &new.execution.id, run)?;
            }
            if let Some(device) = device {
                super::client_tools::store_device(tx, &new.execution.id, device)?;
            }
            Ok(())
        }
        Err(rusqlite::Error::SqliteFailure(failure, _))
            if failure.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Err(ChatError::ActiveExecution)
        }
        Err(error) => Err(ChatError::Store(error.into())),
    }
}

/// A new running execution of `chat_id` on `model`.
fn new_execution(
    chat_id: &str,
    client_message_id: Option<String>,
    model: &ResolvedModel,
    at: chrono::DateTime<chrono::Utc>,
) -> Execution {
    Execution {
        id: uuid::Uuid::now_v7().to_string(),
        chat_id: chat_id.to_owned(),
        user_message_id: Some(uuid::Uuid::now_v7().to_string()),
        assistant_message_id: None,
        status: ExecutionStatus::Running,
        request_id: None,
        client_message_id,
        model: Some(model.qualified()),
        provider: Some(model.provider.to_string().to_ascii_uppercase()),
        started_at: Some(at),
        finished_at: None,
        cancel_requested: false,
        error_code: None,
        error_message: None,
        usage: None,
        metadata: BTreeMap::new(),
    }
}

/// The events of a started execution: the user's message (when it is `fresh`, not stored and
/// announced before), then `execution.started`.
fn started_events(
    execution: &Execution,
    message: &Message,
    streaming: bool,
    fresh: bool,
) -> Vec<NewChatEvent> {
    let created = MessagePayload::of(message, execution.client_message_id.clone());
    let started = ExecutionStartedPayload {
        execution_id: execution.id.clone(),
        user_message_id: message.id.clone(),
        model: execution.model.clone(),
        provider: execution.provider.clone(),
        streaming_messages: streaming,
    };
    [
        fresh.then_some(ChatEventBody::MessageCreated(created)),
        Some(ChatEventBody::ExecutionStarted(started)),
    ]
    .into_iter()
    .flatten()
    .map(|body| NewChatEvent {
        chat_id: execution.chat_id.clone(),
        execution_id: Some(execution.id.clone()),
        body,
    })
    .collect()
}
