//! Messages Souz delivered to the person through another channel (a Telegram message sent by
//! `SendMessageToChannel`, original §1.15), recorded in the Souz chat that channel talks in, so
//! the conversation there shows what was said: an assistant message marked
//! `metadata.crossChannel = "true"` (and the channel's type), the chat touched, and a durable
//! `message.created` event without an execution (it belongs to no turn).
//!
//! The chat's next turn is told of such messages ([`Chats::delivered_for`]: those recorded
//! since the chat's previous execution was created, newest [`MAX_NOTES`]), and the agent adds
//! the ones its conversation does not hold yet as notes ([`crate::agent::delivered`] has the
//! design): the agent's own history is written only by its turns.
//!
//! Invariant: the message is stored and its event announced in one transaction, as every
//! message is; a message already recorded is never changed.

use std::collections::BTreeMap;

use souz_protocol::chat::events::MessagePayload;
use souz_protocol::chat::{ChatEventBody, Message};

use super::events::NewChatEvent;
use super::records::{self, NewMessage};
use super::{ChatError, ChatUser, Chats};
use crate::agent::Delivered;
use crate::store::codec::now;

/// The metadata key that marks a message delivered through another channel.
pub(crate) const CROSS_CHANNEL: &str = "crossChannel";

/// The most delivered messages one turn is told of (the newest).
pub(crate) const MAX_NOTES: usize = 20;

/// The messages of chat `?1` delivered through another channel since the creation of its
/// execution before `?2` (found through the index `executions_by_chat`), newest first, at most
/// `?3`.
pub(crate) const DELIVERED_SINCE_PREVIOUS: &str =
    "SELECT content, COALESCE(json_extract(metadata, '$.channelType'), '')
     FROM messages
     WHERE chat_id = ?1 AND role = 'assistant'
       AND json_extract(metadata, '$.crossChannel') = 'true'
       AND created_at >= COALESCE((
           SELECT MAX(previous.created_at) FROM executions AS previous
           WHERE previous.chat_id = ?1 AND previous.id <> ?2
             AND previous.created_at <= COALESCE(
                 (SELECT created_at FROM executions WHERE id = ?2),
                 previous.created_at)), '')
     ORDER BY seq DESC LIMIT ?3";

impl Chats {
    /// Records `content`, delivered through the channel `channel_type`, as an assistant
    /// message of the user's chat `chat_id`.
    pub async fn record_delivered(
        &self,
        user: &ChatUser,
        chat_id: &str,
        channel_type: &str,
        content: &str,
    ) -> Result<Message, ChatError> {
        self.require_chat(user, chat_id).await?;
        let (chat_id, channel_type, content) = (
            chat_id.to_owned(),
            channel_type.to_owned(),
            content.to_owned(),
        );
        let (message, _) = self
            .inner
            .events
            .publish_with(move |tx| {
                let metadata = BTreeMap::from([
                    (CROSS_CHANNEL.to_owned(), "true".to_owned()),
                    ("channelType".to_owned(), channel_type),
                ]);
                let at = now();
                let message = records::insert_message(
                    tx,
                    &NewMessage {
                        id: &uuid::Uuid::now_v7().to_string(),
                        chat_id: &chat_id,
                        role: "assistant",
                        content: &content,
                        metadata: &metadata,
                        attachments: &[],
                        at,
                    },
                )?;
                records::touch_chat(tx, &chat_id, at)?;
                let created = MessagePayload::of(&message, None);
                let event = NewChatEvent {
                    chat_id: chat_id.clone(),
                    execution_id: None,
                    body: ChatEventBody::MessageCreated(created),
                };
                Ok::<_, ChatError>((message, vec![event]))
            })
            .await?;
        Ok(message)
    }

    /// The messages delivered into `chat_id` through another channel since the chat's
    /// execution before `execution_id` was created (all of them when there was none), the
    /// newest [`MAX_NOTES`], oldest first: what `execution_id`'s turn is told of.
    pub(crate) async fn delivered_for(
        &self,
        chat_id: &str,
        execution_id: &str,
    ) -> Result<Vec<Delivered>, ChatError> {
        let (chat_id, execution_id) = (chat_id.to_owned(), execution_id.to_owned());
        let mut delivered = self
            .inner
            .store
            .read(move |connection| {
                let mut statement = connection.prepare_cached(DELIVERED_SINCE_PREVIOUS)?;
                let rows = statement.query_map(
                    rusqlite::params![chat_id, execution_id, MAX_NOTES as i64],
                    |row| {
                        Ok(Delivered {
                            content: row.get(0)?,
                            channel_type: row.get(1)?,
                        })
                    },
                )?;
                rows.collect::<Result<Vec<_>, _>>()
                    .map_err(crate::store::StoreError::from)
            })
            .await?;
        delivered.reverse();
        Ok(delivered)
    }
}
