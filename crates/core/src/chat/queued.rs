//! Rows of `chat_queued_inputs`: input sent while a chat's turn ran that the turn could not
//! take (see `followups`), kept until the chat's next turn takes it — across restarts.

use rusqlite::{Connection, params};
use souz_protocol::chat::Message;

use crate::store::CachedStatements;
use crate::store::StoreError;
use crate::store::codec::{from_json, now, to_json, to_time};

/// One queued input: the person's text and its stored message.
pub(super) struct QueuedInput {
    pub chat_id: String,
    pub user_id: String,
    pub content: String,
    pub message: Message,
}

/// What a chat's next turn takes: the texts in the order sent, and the latest message (the
/// turn's user message).
pub(super) struct Taken {
    pub user_id: String,
    pub texts: Vec<String>,
    pub message: Message,
}

/// Queues `input` for its chat's next turn.
pub(super) fn push(connection: &Connection, input: &QueuedInput) -> Result<(), StoreError> {
    connection.execute_cached(
        "INSERT INTO chat_queued_inputs (message_id, chat_id, user_id, content, message, \
         queued_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            input.message.id,
            input.chat_id,
            input.user_id,
            input.content,
            to_json(&input.message)?,
            to_time(now()),
        ],
    )?;
    Ok(())
}

/// Takes every input queued for `chat_id`, oldest first, and removes them: in one write
/// transaction, so they are taken exactly once whoever asks.
pub(super) fn take(connection: &Connection, chat_id: &str) -> Result<Option<Taken>, StoreError> {
    let rows = {
        let mut statement = connection.prepare_cached(
            "SELECT user_id, content, message FROM chat_queued_inputs WHERE chat_id = ?1 \
             ORDER BY rowid",
        )?;
        statement
            .query_map([chat_id], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?
    };
    let Some((user_id, _, latest)) = rows.last().cloned() else {
        return Ok(None);
    };
    connection.execute_cached(
        "DELETE FROM chat_queued_inputs WHERE chat_id = ?1",
        [chat_id],
    )?;
    Ok(Some(Taken {
        user_id,
        texts: rows.into_iter().map(|(_, content, _)| content).collect(),
        message: from_json("chat_queued_inputs.message", &latest)?,
    }))
}

/// The chats with queued input.
pub(super) fn chats(connection: &Connection) -> Result<Vec<String>, StoreError> {
    let mut statement =
        connection.prepare_cached("SELECT DISTINCT chat_id FROM chat_queued_inputs")?;
    let chats = statement
        .query_map([], |row| row.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(chats)
}
