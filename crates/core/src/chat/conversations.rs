//! Conversations: creating, listing (and searching by title), renaming, archiving and deleting a
//! user's chats, and reading their messages. Every query is scoped by the user: a foreign chat is
//! "not found", like a missing one.

use sha2::{Digest, Sha256};
use souz_protocol::chat::{
    Chat, ChatList, CreateChat, CreateChatResponse, ExecutionStatus, MessageList,
};

use super::records::ChatKey;
use super::{ChatError, ChatUser, Chats, records};
use crate::store::codec::now;

impl Chats {
    /// Creates a chat (idempotent by `requestId`). Returns whether it is new.
    pub async fn create_chat(
        &self,
        user: &ChatUser,
        request: CreateChat,
    ) -> Result<(CreateChatResponse, bool), ChatError> {
        self.create_chat_as(user, request, None).await
    }

    /// Creates a chat of `user` made by the `chats`-scoped client `client_id`, which may then
    /// reach it (and only the chats it made). A `requestId` replayed by another client, or naming
    /// a chat the person made, is a conflict.
    pub async fn create_client_chat(
        &self,
        user: &ChatUser,
        request: CreateChat,
        client_id: &str,
    ) -> Result<(CreateChatResponse, bool), ChatError> {
        self.create_chat_as(user, request, Some(client_id.to_owned()))
            .await
    }

    /// Whether the `chats`-scoped client `client_id` made the chat `chat_id`.
    pub async fn client_made(&self, client_id: &str, chat_id: &str) -> Result<bool, ChatError> {
        let (client_id, chat_id) = (client_id.to_owned(), chat_id.to_owned());
        Ok(self
            .inner
            .store
            .read(move |connection| records::client_made(connection, &client_id, &chat_id))
            .await?)
    }

    async fn create_chat_as(
        &self,
        user: &ChatUser,
        request: CreateChat,
        client: Option<String>,
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
                    if let Some(client) = &client
                        && !records::client_made(tx, client, &existing)?
                    {
                        return Err(ChatError::IdempotencyConflict);
                    }
                    let chat = records::load_chat(tx, &user_id, &existing)?
                        .ok_or(ChatError::ChatNotFound)?;
                    return Ok((chat, false));
                }
                let request = stored_request.as_deref().map(|id| (id, hash.as_str()));
                records::insert_chat(
                    tx,
                    ChatKey {
                        user_id: &user_id,
                        chat_id: &chat_id,
                    },
                    title.as_deref(),
                    request,
                    now(),
                )?;
                if let Some(client) = &client {
                    records::insert_client_chat(tx, client, &chat_id, now())?;
                }
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

    /// The user's chats; with `title_contains`, those whose title contains it (any case).
    pub async fn list_chats(
        &self,
        user: &ChatUser,
        limit: usize,
        include_archived: bool,
        title_contains: Option<String>,
    ) -> Result<ChatList, ChatError> {
        let user_id = user.0.clone();
        let needle = title_contains
            .map(|text| text.trim().to_owned())
            .filter(|text| !text.is_empty());
        let items = self
            .inner
            .store
            .read(move |c| {
                records::list_chats(c, &user_id, include_archived, needle.as_deref(), limit)
            })
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

    /// Refuses when the chat is missing (or foreign) or a turn runs in it (a question waiting
    /// for its answer is no turn running). Checked before the agents forget the chat.
    pub async fn check_deletable(&self, user: &ChatUser, chat_id: &str) -> Result<(), ChatError> {
        self.require_chat(user, chat_id).await?;
        refuse_running(self.active(chat_id).await?.as_ref())
    }

    /// Deletes a chat with its messages, executions, events and questions (for good), then the
    /// files uploaded to it. The agents' memory of it is forgotten by the caller first (see
    /// the facade).
    pub async fn delete_chat(&self, user: &ChatUser, chat_id: &str) -> Result<(), ChatError> {
        // Taken while the chat exists: a proxied user's chat names its owner only until then.
        let uploads = self.chat_sandbox(chat_id).await.ok();
        let (user_id, id) = (user.0.clone(), chat_id.to_owned());
        self.inner
            .store
            .write(move |tx| {
                refuse_running(records::active_execution(tx, &id)?.as_ref())?;
                let key = ChatKey {
                    user_id: &user_id,
                    chat_id: &id,
                };
                if records::delete_chat(tx, key)? {
                    Ok(())
                } else {
                    Err(ChatError::ChatNotFound)
                }
            })
            .await?;
        if let Some(sandbox) = uploads {
            self.remove_uploads(sandbox, chat_id).await;
        }
        Ok(())
    }

    pub(super) async fn update_chat(
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
                if !records::update_chat(
                    tx,
                    ChatKey {
                        user_id: &user_id,
                        chat_id: &chat_id,
                    },
                    title.as_deref(),
                    archived,
                    now(),
                )? {
                    return Err(ChatError::ChatNotFound);
                }
                records::load_chat(tx, &user_id, &chat_id)?.ok_or(ChatError::ChatNotFound)
            })
            .await
    }

    pub(super) async fn require_chat(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<Chat, ChatError> {
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
        page: MessagePage,
    ) -> Result<MessageList, ChatError> {
        let MessagePage {
            before,
            after,
            limit,
        } = page;
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
}

/// Which messages of a chat to read: those before and after the given sequence numbers (when
/// given), at most `limit`.
#[derive(Debug, Clone, Copy)]
pub struct MessagePage {
    pub before: Option<i64>,
    pub after: Option<i64>,
    pub limit: usize,
}

/// A chat with a turn running is not deleted (a question waiting for its answer is no turn
/// running).
fn refuse_running(active: Option<&records::ExecutionRow>) -> Result<(), ChatError> {
    match active {
        Some(row) if row.execution.status != ExecutionStatus::WaitingOption => {
            Err(ChatError::ActiveExecution)
        }
        _ => Ok(()),
    }
}
