//! Input sent while a chat's agent is working (`POST /v1/chats/{chatId}/input`, original §2.5).
//!
//! The message is stored and announced first, whatever happens next, so nothing the person
//! typed is lost. Then: with no turn running it starts one (as posting a message does); a
//! running skills-agent turn takes it at its next step (steering); otherwise (the graph agent,
//! or a turn that already accepted its final answer) it is queued, and the queued inputs of a
//! chat start its next turn, together, as soon as the running one ends.
//!
//! Invariant: a queued input is taken exactly once. It is pushed before its turn is checked
//! for having ended, and a turn's end removes the turn from `running` before it takes the
//! queue, so whichever of the two comes second starts the follow-up turn.
//! The queue is stored (`chat_queued_inputs`, taken in one write transaction): a restart keeps
//! it, and the next start runs its turn ([`Chats::resume_queued`]).

use std::collections::BTreeMap;
use std::sync::PoisonError;

use souz_protocol::chat::events::MessagePayload;
use souz_protocol::chat::{
    ChatEventBody, ChatInput, ChatInputResponse, ExecutionStatus, InputDelivery, Message,
    PostMessage,
};

use super::events::NewChatEvent;
use super::posting::NewTurn;
use super::queued::{self, QueuedInput, Taken};
use super::records::{self, ExecutionRow, NewMessage};
use super::{ChatError, ChatUser, Chats};
use crate::store::codec::now;

impl Chats {
    /// Sends `input` to the chat: starts a turn, steers the running one, or queues it for the
    /// next (see the module documentation).
    pub async fn send_input(
        &self,
        user: &ChatUser,
        chat_id: &str,
        input: ChatInput,
    ) -> Result<ChatInputResponse, ChatError> {
        let content = input.content.trim().to_owned();
        if content.is_empty() && input.attachments.is_empty() {
            // The original API's words; a message of attachments alone may have no text.
            return Err(ChatError::Invalid("content must not be blank.".into()));
        }
        self.refuse_if_paused()?;
        self.require_chat(user, chat_id).await?;
        let running = match self.active(chat_id).await? {
            Some(row) => row,
            None => {
                let request = PostMessage {
                    content: content.clone(),
                    client_message_id: input.client_message_id.clone(),
                    options: None,
                    attachments: input.attachments.clone(),
                };
                match self.post_message(user, chat_id, request).await {
                    Ok(posted) => {
                        return Ok(ChatInputResponse {
                            message: posted.message,
                            delivery: InputDelivery::Turn,
                            execution: posted.execution,
                        });
                    }
                    // A turn started a moment ago: this input goes to it.
                    Err(ChatError::ActiveExecution) => self
                        .active(chat_id)
                        .await?
                        .ok_or(ChatError::ActiveExecution)?,
                    Err(error) => return Err(error),
                }
            }
        };
        if running.execution.status == ExecutionStatus::WaitingOption {
            return Err(ChatError::AwaitingAnswer);
        }
        if running.execution.status == ExecutionStatus::WaitingApproval {
            return Err(ChatError::AwaitingApproval);
        }
        if !input.attachments.is_empty() {
            return Err(ChatError::Invalid(
                "Files can be attached only to a message that starts a turn; send them once the \
                 agent has finished, or stop it first."
                    .into(),
            ));
        }
        let execution = running.execution;
        let message = self
            .store_input(chat_id, &execution.id, &content, input.client_message_id)
            .await?;
        if self.steer(chat_id, &content) {
            return Ok(ChatInputResponse {
                message,
                delivery: InputDelivery::Steered,
                execution,
            });
        }
        self.queue_input(user, chat_id, content, &message).await?;
        if !self.is_running(&execution.id) {
            self.start_queued(chat_id).await;
        }
        Ok(ChatInputResponse {
            message,
            delivery: InputDelivery::Queued,
            execution,
        })
    }

    /// Starts the next turn of `chat_id` on the inputs queued for it, if any. Called when a
    /// turn ends; a failure to start is logged (the messages stay in the chat).
    pub(super) async fn start_queued(&self, chat_id: &str) {
        let chat = chat_id.to_owned();
        let taken = match self
            .inner
            .store
            .write(move |transaction| queued::take(transaction, &chat))
            .await
        {
            Ok(taken) => taken,
            Err(error) => {
                tracing::warn!(%error, %chat_id, "could not take the queued input");
                return;
            }
        };
        let Some(Taken {
            user_id,
            texts,
            message,
        }) = taken
        else {
            return;
        };
        let user = ChatUser(user_id);
        let turn = NewTurn {
            unattended: None,
            device: None,
            content: texts.join("\n\n"),
            client_message_id: None,
            options: None,
            stored: Some(message),
            attachments: Default::default(),
        };
        if let Err(error) = self.start_turn(&user, chat_id, turn).await {
            tracing::warn!(%error, %chat_id, "could not start the turn of queued input");
        }
    }

    /// Starts the turns of input queued before a restart: each chat's queued inputs, together,
    /// as its next turn, unless a turn is still active there (a question waiting for its
    /// answer: the queue starts when that turn ends). Call once at start, after
    /// [`Chats::recover`] and once the engine is set. Returns how many chats it started.
    pub async fn resume_queued(&self) -> Result<usize, ChatError> {
        let chats = self.inner.store.read(queued::chats).await?;
        let mut started = 0;
        for chat_id in &chats {
            if self.active(chat_id).await?.is_none() {
                self.start_queued(chat_id).await;
                started += 1;
            }
        }
        Ok(started)
    }

    /// Stores `text` (its stored `message`) for the next turn of `chat_id`.
    async fn queue_input(
        &self,
        user: &ChatUser,
        chat_id: &str,
        text: String,
        message: &Message,
    ) -> Result<(), ChatError> {
        let input = QueuedInput {
            chat_id: chat_id.to_owned(),
            user_id: user.0.clone(),
            content: text,
            message: message.clone(),
        };
        self.inner
            .store
            .write(move |transaction| queued::push(transaction, &input))
            .await?;
        Ok(())
    }

    pub(super) fn is_running(&self, execution_id: &str) -> bool {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(execution_id)
    }

    /// The chat's active execution (running or waiting for an answer), if any.
    pub(super) async fn active(&self, chat_id: &str) -> Result<Option<ExecutionRow>, ChatError> {
        let chat_id = chat_id.to_owned();
        Ok(self
            .inner
            .store
            .read(move |c| records::active_execution(c, &chat_id))
            .await?)
    }

    /// Stores and announces the person's message sent while `execution_id` runs.
    pub(super) async fn store_input(
        &self,
        chat_id: &str,
        execution_id: &str,
        content: &str,
        client_message_id: Option<String>,
    ) -> Result<Message, ChatError> {
        let (chat_id, execution_id, text) = (
            chat_id.to_owned(),
            execution_id.to_owned(),
            content.to_owned(),
        );
        let (message, _) = self
            .inner
            .events
            .publish_with(move |tx| {
                let mut metadata = BTreeMap::new();
                metadata.insert("sentDuring".to_owned(), execution_id.clone());
                if let Some(key) = &client_message_id {
                    metadata.insert("clientMessageId".to_owned(), key.clone());
                }
                let at = now();
                let message = records::insert_message(
                    tx,
                    &NewMessage {
                        id: &uuid::Uuid::now_v7().to_string(),
                        chat_id: &chat_id,
                        role: "user",
                        content: &text,
                        metadata: &metadata,
                        attachments: &[],
                        at,
                    },
                )?;
                records::touch_chat(tx, &chat_id, at)?;
                let created = MessagePayload::of(&message, client_message_id);
                let event = NewChatEvent {
                    chat_id: chat_id.clone(),
                    execution_id: Some(execution_id.clone()),
                    body: ChatEventBody::MessageCreated(created),
                };
                Ok::<_, ChatError>((message, vec![event]))
            })
            .await?;
        Ok(message)
    }
}
