//! What the live views need from chats: the agent turns running now (across chats, scoped to
//! the user), and the pause switch's hold on turns (refuse new ones, stop the running ones).

use rusqlite::params;
use souz_protocol::chat::ActiveTurn;

use super::records::{self, ExecutionRow};
use super::{ChatError, ChatUser, Chats};
use crate::store::CachedStatements;
use crate::store::StoreError;
use std::sync::PoisonError;

/// At most this many active turns are listed (one per chat can run at once).
const MAX_ACTIVE_TURNS: usize = 500;

impl Chats {
    pub(super) fn is_paused(&self) -> bool {
        self.inner.pause.is_paused()
    }

    pub(super) fn refuse_if_paused(&self) -> Result<(), ChatError> {
        if self.is_paused() {
            Err(ChatError::Paused)
        } else {
            Ok(())
        }
    }

    /// The user's active turns, oldest first, each with the chat event its events start after.
    pub async fn active_turns(&self, user: &ChatUser) -> Result<Vec<ActiveTurn>, ChatError> {
        let user_id = user.0.clone();
        let turns = self
            .inner
            .store
            .read(move |connection| {
                let mut statement = connection.prepare_cached(&format!(
                    "SELECT e.chat_id, e.id, c.title, \
                            (SELECT coalesce(min(seq), 1) - 1 FROM chat_events \
                              WHERE execution_id = e.id) \
                     FROM executions e JOIN chats c ON c.id = e.chat_id \
                     WHERE c.user_id = ?1 AND e.status IN {} \
                     ORDER BY e.created_at LIMIT ?2",
                    super::records::ACTIVE_STATUSES
                ))?;
                let rows = statement
                    .query_map(params![user_id, MAX_ACTIVE_TURNS as i64], |row| {
                        Ok((
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, Option<String>>(2)?,
                            row.get::<_, i64>(3)?,
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                let mut turns = Vec::with_capacity(rows.len());
                for (chat_id, execution_id, chat_title, after_seq) in rows {
                    if let Some(ExecutionRow { execution, .. }) =
                        records::load_execution(connection, &chat_id, &execution_id)?
                    {
                        turns.push(ActiveTurn {
                            execution,
                            chat_title,
                            after_seq,
                        });
                    }
                }
                Ok::<_, StoreError>(turns)
            })
            .await?;
        Ok(turns)
    }

    /// Whether `chat_id` belongs to `user` (for filtering the all-chats event stream).
    pub async fn owns(&self, user: &ChatUser, chat_id: &str) -> Result<bool, ChatError> {
        match self.require_chat(user, chat_id).await {
            Ok(_) => Ok(true),
            Err(ChatError::ChatNotFound) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Cancels every turn running in this process (the pause switch); returns how many.
    pub async fn stop_running(&self) -> Result<usize, ChatError> {
        let running: Vec<String> = self
            .inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        let mut stopped = 0;
        for execution_id in running {
            let id = execution_id.clone();
            let row = self
                .inner
                .store
                .read(move |connection| {
                    let chat_id: Option<String> =
                        rusqlite::OptionalExtension::optional(connection.query_row_cached(
                            "SELECT chat_id FROM executions WHERE id = ?1",
                            [&id],
                            |row| row.get(0),
                        ))?;
                    match chat_id {
                        Some(chat_id) => records::load_execution(connection, &chat_id, &id),
                        None => Ok(None),
                    }
                })
                .await?;
            let Some(row) = row else { continue };
            if !row.execution.status.is_active() {
                continue;
            }
            let chat_id = row.execution.chat_id.clone();
            match self.cancel(&chat_id, row).await {
                Ok(_) => stopped += 1,
                Err(error) => {
                    tracing::warn!(%error, %execution_id, "could not stop a turn while pausing");
                }
            }
        }
        Ok(stopped)
    }
}
