//! Chats for the adapters: the user's settings and onboarding, chats (deleting one makes the
//! agents forget it) and messages, posting a message (an agent turn), a chat's events (replay
//! and follow), cancelling turns, the agents' questions, and the turns running now. Every call
//! acts for one [`ChatUser`]; a foreign id is "not found".

use std::sync::Arc;

use futures::Stream;
use souz_protocol::chat::{
    ActiveTurn, Attachment, Chat, ChatEvent, ChatEventList, ChatInput, ChatInputResponse, ChatList,
    ChatSettings, ChatTools, CreateChat, CreateChatResponse, Execution, ExecutionTrace, Message,
    MessageList, OnboardingState, OptionAnswer, OptionAnswerResponse, PostMessage,
    PostMessageResponse, Question, QuestionList, Settings, SettingsPatch,
};
use tokio::sync::broadcast;

use super::ServiceError;
use crate::agent::{AgentError, AgentKind, trace};
use crate::bus::FollowItem;
use crate::chat::{ChatError, ChatUser, MessagePage};
use crate::runtime::RuntimeHandle;

impl RuntimeHandle {
    /// The user's effective settings.
    pub async fn settings(&self, user: &ChatUser) -> Result<Settings, ServiceError> {
        Ok(self.chats().settings(user).await?)
    }

    /// Changes the user's settings; absent fields keep their value.
    pub async fn patch_settings(
        &self,
        user: &ChatUser,
        patch: SettingsPatch,
    ) -> Result<Settings, ServiceError> {
        let settings = self.chats().patch_settings(user, patch).await?;
        crate::runtime::follow_language(self.gate(), user, &settings);
        // Clients that show settings (the tray's language) read theirs again; a failure to
        // announce it loses nothing stored.
        if let Err(error) = self
            .events()
            .publish(souz_protocol::RuntimeEvent::SettingsChanged {})
            .await
        {
            tracing::warn!(%error, "could not announce a settings change");
        }
        Ok(settings)
    }

    /// Whether onboarding is needed, what is missing, and the step to show.
    pub async fn onboarding_state(&self, user: &ChatUser) -> Result<OnboardingState, ServiceError> {
        let (completed, has_model) = self.chats().onboarding(user).await?;
        let settings = self.chats().settings(user).await?;
        let mut reasons = Vec::new();
        if !has_model {
            reasons.push("missing_model_access".to_owned());
        }
        if !completed {
            reasons.push("preferences_incomplete".to_owned());
        }
        let current_step = if !has_model {
            "provider"
        } else if !completed {
            "preferences"
        } else {
            "done"
        };
        Ok(OnboardingState {
            required: !reasons.is_empty(),
            completed,
            current_step: current_step.to_owned(),
            reasons,
            recommended_default_model: Some(settings.default_model)
                .filter(|model| !model.is_empty()),
        })
    }

    /// Finishes onboarding with optional preferences.
    pub async fn complete_onboarding(
        &self,
        user: &ChatUser,
        patch: SettingsPatch,
    ) -> Result<(), ServiceError> {
        self.chats().complete_onboarding(user, patch).await?;
        let settings = self.chats().settings(user).await?;
        crate::runtime::follow_language(self.gate(), user, &settings);
        Ok(())
    }

    /// The user's chats, most recently changed first; with `title_contains`, only those whose
    /// title contains it (any case).
    pub async fn list_chats(
        &self,
        user: &ChatUser,
        limit: usize,
        include_archived: bool,
        title_contains: Option<String>,
    ) -> Result<ChatList, ServiceError> {
        Ok(self
            .chats()
            .list_chats(user, limit, include_archived, title_contains)
            .await?)
    }

    /// Deletes a chat for good: refused while a turn runs in it; first the agents forget it
    /// (its session memory is closed and its session facts, turns and Knowledge deleted), then
    /// its messages, executions, events and questions go. A failure part-way leaves the chat
    /// in place, so deleting again finishes the job.
    pub async fn delete_chat(&self, user: &ChatUser, chat_id: &str) -> Result<(), ServiceError> {
        self.chats().check_deletable(user, chat_id).await?;
        self.agents()
            .forget_chat(Some(&user.0), chat_id)
            .await
            .map_err(|error| match error {
                AgentError::Busy { .. } => ChatError::ActiveExecution.into(),
                other => ServiceError::Internal(other.to_string()),
            })?;
        Ok(self.chats().delete_chat(user, chat_id).await?)
    }

    /// Creates a chat (idempotent by `requestId`); `true` when it is new.
    pub async fn create_chat(
        &self,
        user: &ChatUser,
        request: CreateChat,
    ) -> Result<(CreateChatResponse, bool), ServiceError> {
        Ok(self.chats().create_chat(user, request).await?)
    }

    /// Creates a chat made by the `chats`-scoped client `client_id` (`souz acp`).
    pub async fn create_client_chat(
        &self,
        user: &ChatUser,
        request: CreateChat,
        client_id: &str,
    ) -> Result<(CreateChatResponse, bool), ServiceError> {
        Ok(self
            .chats()
            .create_client_chat(user, request, client_id)
            .await?)
    }

    /// Whether the `chats`-scoped client `client_id` made the chat `chat_id`.
    pub async fn client_made_chat(
        &self,
        client_id: &str,
        chat_id: &str,
    ) -> Result<bool, ServiceError> {
        Ok(self.chats().client_made(client_id, chat_id).await?)
    }

    /// `Ok` when the `chats`-scoped client `client_id` made the chat `chat_id`, else the error
    /// a missing chat gets (the client learns nothing of the person's other chats).
    pub async fn client_reaches_chat(
        &self,
        client_id: &str,
        chat_id: &str,
    ) -> Result<(), ServiceError> {
        if self.client_made_chat(client_id, chat_id).await? {
            Ok(())
        } else {
            Err(ChatError::ChatNotFound.into())
        }
    }

    /// `Ok` when the approval `approval_id` was asked by a turn of a chat the `chats`-scoped
    /// client `client_id` made, else the error a missing approval gets.
    pub async fn client_reaches_approval(
        &self,
        client_id: &str,
        approval_id: &str,
    ) -> Result<(), ServiceError> {
        let chat = match self.approvals().get(approval_id).await {
            Ok(approval) => match approval.requester {
                souz_protocol::Requester::Chat { chat_id } => Some(chat_id),
                _ => None,
            },
            Err(crate::approvals::ApprovalError::NotFound(_)) => None,
            Err(error) => return Err(error.into()),
        };
        match chat {
            Some(chat_id) if self.client_made_chat(client_id, &chat_id).await? => Ok(()),
            _ => Err(crate::approvals::ApprovalError::NotFound(approval_id.to_owned()).into()),
        }
    }

    /// Renames a chat.
    pub async fn rename_chat(
        &self,
        user: &ChatUser,
        chat_id: &str,
        title: &str,
    ) -> Result<Chat, ServiceError> {
        Ok(self.chats().rename(user, chat_id, title).await?)
    }

    /// Archives (or unarchives) a chat.
    pub async fn set_chat_archived(
        &self,
        user: &ChatUser,
        chat_id: &str,
        archived: bool,
    ) -> Result<Chat, ServiceError> {
        Ok(self.chats().set_archived(user, chat_id, archived).await?)
    }

    /// The chat's own settings (model, agent, enabled tools; `null`: the user's).
    pub async fn chat_settings(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<ChatSettings, ServiceError> {
        Ok(self.chats().chat_settings(user, chat_id).await?)
    }

    /// The tools the chat's next turn offers its agent: its enabled catalog tools (the chat's
    /// own choice, else the user's), the MCP servers' tools, and the agent's core tools.
    pub async fn chat_tools(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<ChatTools, ServiceError> {
        let chat = self.chats().chat_settings(user, chat_id).await?;
        let core_off = crate::chat::core_off(&chat);
        let enabled = match chat.enabled_tools {
            Some(enabled) => enabled,
            None => self.chats().settings(user).await?.enabled_tools,
        };
        let kind = chat
            .agent
            .as_deref()
            .map_or_else(|| self.agents().default_agent(), AgentKind::parse);
        Ok(crate::agent::offered::offered_tools(
            self.gate(),
            kind,
            enabled,
            &core_off,
        ))
    }

    /// Replaces the chat's own settings; its next turns use them.
    pub async fn set_chat_settings(
        &self,
        user: &ChatUser,
        chat_id: &str,
        settings: ChatSettings,
    ) -> Result<ChatSettings, ServiceError> {
        Ok(self
            .chats()
            .set_chat_settings(user, chat_id, settings)
            .await?)
    }

    /// A page of a chat's messages, ascending.
    pub async fn messages(
        &self,
        user: &ChatUser,
        chat_id: &str,
        page: MessagePage,
    ) -> Result<MessageList, ServiceError> {
        Ok(self.chats().messages(user, chat_id, page).await?)
    }

    /// Stores a message and starts its agent turn.
    pub async fn post_message(
        &self,
        user: &ChatUser,
        chat_id: &str,
        request: PostMessage,
    ) -> Result<PostMessageResponse, ServiceError> {
        Ok(self.chats().post_message(user, chat_id, request).await?)
    }

    /// Saves an uploaded file in the chat's folder, to attach to a message by its path.
    pub async fn upload_attachment(
        &self,
        user: &ChatUser,
        chat_id: &str,
        name: &str,
        bytes: bytes::Bytes,
    ) -> Result<Attachment, ServiceError> {
        Ok(self
            .chats()
            .upload_attachment(user, chat_id, name, bytes)
            .await?)
    }

    /// Records `content`, delivered to the person through the channel `channel_type`, as an
    /// assistant message of the user's chat `chat_id` (marked `crossChannel`).
    pub async fn record_delivered(
        &self,
        user: &ChatUser,
        chat_id: &str,
        channel_type: &str,
        content: &str,
    ) -> Result<Message, ServiceError> {
        Ok(self
            .chats()
            .record_delivered(user, chat_id, channel_type, content)
            .await?)
    }

    /// Removes an upload of the chat that no message took (its path as
    /// [`RuntimeHandle::upload_attachment`] gave it).
    pub async fn discard_upload(
        &self,
        user: &ChatUser,
        chat_id: &str,
        path: &str,
    ) -> Result<(), ServiceError> {
        Ok(self.chats().discard_upload(user, chat_id, path).await?)
    }

    /// The most bytes an upload named `name` is taken with: `[server] body_limit`, and for an
    /// image (by its name) also the cap on images sent to a model.
    pub fn upload_limit(&self, name: &str) -> u64 {
        let body = self.config().server.body_limit.bytes();
        let image = crate::tools::builtin::internet::images::media_type(std::path::Path::new(name));
        if image.is_some() {
            body.min(crate::chat::attachments::MAX_IMAGE_BYTES)
        } else {
            body
        }
    }

    /// Sends input to the chat whether or not its agent works: it starts a turn, steers the
    /// running one (the skills agent), or waits for the next turn (the graph agent).
    pub async fn send_input(
        &self,
        user: &ChatUser,
        chat_id: &str,
        input: ChatInput,
    ) -> Result<ChatInputResponse, ServiceError> {
        Ok(self.chats().send_input(user, chat_id, input).await?)
    }

    /// A chat's stored events after `after_seq`, ascending.
    pub async fn replay_chat(
        &self,
        user: &ChatUser,
        chat_id: &str,
        after_seq: i64,
        limit: usize,
    ) -> Result<ChatEventList, ServiceError> {
        Ok(self.chats().replay(user, chat_id, after_seq, limit).await?)
    }

    /// Checks that the user may follow a chat (before a WebSocket upgrade).
    pub async fn authorize_chat_stream(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<(), ServiceError> {
        Ok(self.chats().authorize_stream(user, chat_id).await?)
    }

    /// A chat's stored events after `after_seq`, then `Live`, then live events (deltas
    /// included). Check access first with [`RuntimeHandle::authorize_chat_stream`].
    pub fn follow_chat(
        &self,
        chat_id: &str,
        after_seq: i64,
    ) -> impl Stream<Item = FollowItem<ChatEvent>> + Send + 'static {
        self.chats().events().follow(chat_id, after_seq)
    }

    /// Cancels the chat's running turn.
    pub async fn cancel_active(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<Execution, ServiceError> {
        Ok(self.chats().cancel_active(user, chat_id).await?)
    }

    /// Cancels one execution of a chat.
    pub async fn cancel_execution(
        &self,
        user: &ChatUser,
        chat_id: &str,
        execution_id: &str,
    ) -> Result<Execution, ServiceError> {
        Ok(self
            .chats()
            .cancel_execution(user, chat_id, execution_id)
            .await?)
    }

    /// Why the agent did what it did in one execution of the user's chat: its turns, graph
    /// steps, model requests and tool calls (see [`crate::agent::trace`]).
    pub async fn execution_trace(
        &self,
        user: &ChatUser,
        chat_id: &str,
        execution_id: &str,
    ) -> Result<ExecutionTrace, ServiceError> {
        self.chats()
            .require_execution(user, chat_id, execution_id)
            .await?;
        Ok(trace::execution_trace(self.agents().sessions(), chat_id, execution_id).await?)
    }

    /// The questions the agents of the user's chats wait on, oldest first.
    pub async fn questions(
        &self,
        user: &ChatUser,
        limit: usize,
    ) -> Result<QuestionList, ServiceError> {
        Ok(self.chats().questions(user, limit).await?)
    }

    /// One question, whatever its status.
    pub async fn question(
        &self,
        user: &ChatUser,
        option_id: &str,
    ) -> Result<Question, ServiceError> {
        Ok(self.chats().question(user, option_id).await?)
    }

    /// Answers a question; its turn resumes.
    pub async fn answer_question(
        &self,
        user: &ChatUser,
        option_id: &str,
        answer: OptionAnswer,
    ) -> Result<OptionAnswerResponse, ServiceError> {
        Ok(self.chats().answer_option(user, option_id, answer).await?)
    }

    /// The user's turns running now, oldest first.
    pub async fn active_turns(&self, user: &ChatUser) -> Result<Vec<ActiveTurn>, ServiceError> {
        Ok(self.chats().active_turns(user).await?)
    }

    /// Every event of every chat announced from now on (filter with
    /// [`RuntimeHandle::owns_chat`]).
    pub fn subscribe_chat_events(&self) -> broadcast::Receiver<Arc<ChatEvent>> {
        self.chats().events().subscribe_all()
    }

    /// Whether the chat is the user's.
    pub async fn owns_chat(&self, user: &ChatUser, chat_id: &str) -> Result<bool, ServiceError> {
        Ok(self.chats().owns(user, chat_id).await?)
    }
}
