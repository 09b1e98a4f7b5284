//! SQL for the chat domain's tables: users and their settings, chats, messages and executions
//! (options are in `options::records`). Every query that reads or changes a chat is scoped by
//! its owner, so a foreign id behaves exactly like a missing one.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use souz_protocol::chat::{
    Attachment, Chat, Execution, ExecutionStatus, Message, SettingsPatch, Usage,
};

use crate::store::CachedStatements;
use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, from_time, from_time_opt, to_json, to_time};

/// Makes sure `user_id` exists; refreshes `last_seen_at` at most every 10 minutes.
pub(crate) fn ensure_user(
    connection: &Connection,
    user_id: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let stale = to_time(at - chrono::Duration::minutes(10));
    connection.execute_cached(
        "INSERT INTO users (id, created_at, last_seen_at) VALUES (?1, ?2, ?2) \
         ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at \
         WHERE users.last_seen_at < ?3",
        params![user_id, to_time(at), stale],
    )?;
    Ok(())
}

/// The stored settings patch and onboarding time of a user.
pub(crate) fn load_settings(
    connection: &Connection,
    user_id: &str,
) -> Result<(SettingsPatch, Option<DateTime<Utc>>), StoreError> {
    let row: Option<(String, Option<String>)> = connection
        .query_row_cached(
            "SELECT settings, onboarding_completed_at FROM user_settings WHERE user_id = ?1",
            [user_id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    match row {
        None => Ok((SettingsPatch::default(), None)),
        Some((settings, completed)) => Ok((
            from_json("user_settings.settings", &settings)?,
            from_time_opt("user_settings.onboarding_completed_at", completed)?,
        )),
    }
}

/// Stores a settings patch (and, if given, the onboarding time — set once).
pub(crate) fn save_settings(
    connection: &Connection,
    user_id: &str,
    patch: &SettingsPatch,
    onboarding_completed_at: Option<DateTime<Utc>>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "INSERT INTO user_settings (user_id, settings, onboarding_completed_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (user_id) DO UPDATE SET settings = excluded.settings, \
         onboarding_completed_at = coalesce(user_settings.onboarding_completed_at, excluded.onboarding_completed_at), \
         updated_at = excluded.updated_at",
        params![user_id, to_json(patch)?, onboarding_completed_at.map(to_time), to_time(at)],
    )?;
    Ok(())
}

const CHAT_COLUMNS: &str = "c.id, c.title, c.archived, c.created_at, c.updated_at, \
    (SELECT content FROM messages m WHERE m.chat_id = c.id ORDER BY seq DESC LIMIT 1)";

/// A chat row before its times are parsed.
type RawChat = (String, Option<String>, bool, String, String, Option<String>);

fn chat_from_row(row: &Row<'_>) -> rusqlite::Result<RawChat> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get::<_, i64>(2)? != 0,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
    ))
}

fn decode_chat(raw: RawChat) -> Result<Chat, StoreError> {
    let (id, title, archived, created_at, updated_at, preview) = raw;
    Ok(Chat {
        id,
        title,
        archived,
        created_at: from_time("chats.created_at", &created_at)?,
        updated_at: from_time("chats.updated_at", &updated_at)?,
        last_message_preview: preview,
    })
}

/// One chat of `user_id`.
pub(crate) fn load_chat(
    connection: &Connection,
    user_id: &str,
    chat_id: &str,
) -> Result<Option<Chat>, StoreError> {
    connection
        .query_row(
            &format!("SELECT {CHAT_COLUMNS} FROM chats c WHERE c.user_id = ?1 AND c.id = ?2"),
            params![user_id, chat_id],
            chat_from_row,
        )
        .optional()?
        .map(decode_chat)
        .transpose()
}

/// The chat a `request_id` created for `user_id`, with the hash of that request.
pub(crate) fn chat_by_request(
    connection: &Connection,
    user_id: &str,
    request_id: &str,
) -> Result<Option<(String, Option<String>)>, StoreError> {
    Ok(connection
        .query_row_cached(
            "SELECT id, payload_hash FROM chats WHERE user_id = ?1 AND request_id = ?2",
            params![user_id, request_id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?)
}

/// A chat of a user, as rows name it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChatKey<'a> {
    pub user_id: &'a str,
    pub chat_id: &'a str,
}

/// Inserts a chat.
pub(crate) fn insert_chat(
    connection: &Connection,
    chat: ChatKey<'_>,
    title: Option<&str>,
    request: Option<(&str, &str)>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let ChatKey { user_id, chat_id } = chat;
    connection.execute_cached(
        "INSERT INTO chats (id, user_id, title, archived, request_id, payload_hash, created_at, updated_at) \
         VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?6)",
        params![
            chat_id,
            user_id,
            title,
            request.map(|(id, _)| id),
            request.map(|(_, hash)| hash),
            to_time(at)
        ],
    )?;
    Ok(())
}

/// Records that the `chats`-scoped client `client_id` made the chat `chat_id`.
pub(crate) fn insert_client_chat(
    connection: &Connection,
    client_id: &str,
    chat_id: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "INSERT INTO client_chats (chat_id, client_id, created_at) VALUES (?1, ?2, ?3)",
        params![chat_id, client_id, to_time(at)],
    )?;
    Ok(())
}

/// Whether the client `client_id` made the chat `chat_id`.
pub(crate) fn client_made(
    connection: &Connection,
    client_id: &str,
    chat_id: &str,
) -> Result<bool, StoreError> {
    Ok(connection
        .query_row_cached(
            "SELECT 1 FROM client_chats WHERE chat_id = ?1 AND client_id = ?2",
            params![chat_id, client_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Chats of `user_id`, most recently changed first; with `title_contains`, only those whose
/// title contains it, ignoring case (Unicode-aware, so it is matched here rather than in SQL,
/// whose `lower()` folds ASCII only).
pub(crate) fn list_chats(
    connection: &Connection,
    user_id: &str,
    include_archived: bool,
    title_contains: Option<&str>,
    limit: usize,
) -> Result<Vec<Chat>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {CHAT_COLUMNS} FROM chats c WHERE c.user_id = ?1 AND (?2 OR c.archived = 0) \
         ORDER BY c.updated_at DESC, c.id DESC LIMIT ?3"
    ))?;
    let sql_limit = match title_contains {
        Some(_) => -1,
        None => i64::try_from(limit).unwrap_or(i64::MAX),
    };
    let needle = title_contains.map(str::to_lowercase);
    let rows = statement.query_map(params![user_id, include_archived, sql_limit], chat_from_row)?;
    let mut chats = Vec::new();
    for row in rows {
        let chat = decode_chat(row?)?;
        let wanted = needle.as_deref().is_none_or(|needle| {
            chat.title
                .as_deref()
                .is_some_and(|title| title.to_lowercase().contains(needle))
        });
        if wanted {
            chats.push(chat);
            if chats.len() >= limit {
                break;
            }
        }
    }
    Ok(chats)
}

/// Deletes a chat of `user_id` with its messages, executions, events and questions. Returns
/// whether it existed.
pub(crate) fn delete_chat(connection: &Connection, chat: ChatKey<'_>) -> Result<bool, StoreError> {
    let ChatKey { user_id, chat_id } = chat;
    let owned: bool = connection.query_row_cached(
        "SELECT EXISTS (SELECT 1 FROM chats WHERE user_id = ?1 AND id = ?2)",
        params![user_id, chat_id],
        |row| row.get(0),
    )?;
    if !owned {
        return Ok(false);
    }
    for table in [
        "options",
        "client_requests",
        "chat_queued_inputs",
        "chat_events",
        "executions",
        "messages",
        "chat_settings",
    ] {
        connection.execute(
            &format!("DELETE FROM {table} WHERE chat_id = ?1"),
            [chat_id],
        )?;
    }
    connection.execute_cached(
        "DELETE FROM chats WHERE user_id = ?1 AND id = ?2",
        params![user_id, chat_id],
    )?;
    Ok(true)
}

/// Changes a chat's title or archived flag; bumps `updated_at`. Returns whether it exists.
pub(crate) fn update_chat(
    connection: &Connection,
    chat: ChatKey<'_>,
    title: Option<&str>,
    archived: Option<bool>,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let ChatKey { user_id, chat_id } = chat;
    let changed = connection.execute_cached(
        "UPDATE chats SET title = coalesce(?3, title), archived = coalesce(?4, archived), \
         updated_at = ?5 WHERE user_id = ?1 AND id = ?2",
        params![user_id, chat_id, title, archived, to_time(at)],
    )?;
    Ok(changed == 1)
}

/// Bumps a chat's `updated_at`.
pub(crate) fn touch_chat(
    connection: &Connection,
    chat_id: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "UPDATE chats SET updated_at = ?2 WHERE id = ?1",
        params![chat_id, to_time(at)],
    )?;
    Ok(())
}

const MESSAGE_COLUMNS: &str = "id, chat_id, seq, role, content, metadata, created_at, attachments";

/// A message row as read.
struct MessageRow {
    id: String,
    chat_id: String,
    seq: i64,
    role: String,
    content: String,
    metadata: String,
    created_at: String,
    attachments: Option<String>,
}

fn message_from_row(row: &Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        id: row.get(0)?,
        chat_id: row.get(1)?,
        seq: row.get(2)?,
        role: row.get(3)?,
        content: row.get(4)?,
        metadata: row.get(5)?,
        created_at: row.get(6)?,
        attachments: row.get(7)?,
    })
}

fn decode_message(raw: MessageRow) -> Result<Message, StoreError> {
    Ok(Message {
        id: raw.id,
        chat_id: raw.chat_id,
        seq: raw.seq,
        role: raw.role,
        content: raw.content,
        metadata: from_json("messages.metadata", &raw.metadata)?,
        attachments: match &raw.attachments {
            Some(json) => from_json("messages.attachments", json)?,
            None => Vec::new(),
        },
        created_at: from_time("messages.created_at", &raw.created_at)?,
    })
}

/// A message to store.
#[derive(Debug)]
pub(crate) struct NewMessage<'a> {
    pub id: &'a str,
    pub chat_id: &'a str,
    pub role: &'a str,
    pub content: &'a str,
    pub metadata: &'a BTreeMap<String, String>,
    /// Files the person attached (user messages).
    pub attachments: &'a [Attachment],
    pub at: DateTime<Utc>,
}

/// Appends a message with the chat's next sequence number.
pub(crate) fn insert_message(
    connection: &Connection,
    message: &NewMessage<'_>,
) -> Result<Message, StoreError> {
    let &NewMessage {
        id,
        chat_id,
        role,
        content,
        metadata,
        attachments,
        at,
    } = message;
    let seq: i64 = connection.query_row_cached(
        "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE chat_id = ?1",
        [chat_id],
        |row| row.get(0),
    )?;
    connection.execute(
        &format!(
            "INSERT INTO messages ({MESSAGE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        ),
        params![
            id,
            chat_id,
            seq,
            role,
            content,
            to_json(metadata)?,
            to_time(at),
            if attachments.is_empty() {
                None
            } else {
                Some(to_json(&attachments)?)
            }
        ],
    )?;
    Ok(Message {
        id: id.to_owned(),
        chat_id: chat_id.to_owned(),
        seq,
        role: role.to_owned(),
        content: content.to_owned(),
        metadata: metadata.clone(),
        attachments: attachments.to_vec(),
        created_at: at,
    })
}

/// One message of a chat.
pub(crate) fn load_message(
    connection: &Connection,
    chat_id: &str,
    id: &str,
) -> Result<Option<Message>, StoreError> {
    connection
        .query_row(
            &format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE chat_id = ?1 AND id = ?2"),
            params![chat_id, id],
            message_from_row,
        )
        .optional()?
        .map(decode_message)
        .transpose()
}

/// Messages of a chat, ascending, `after < seq < before`, at most `limit`; with `before`
/// the newest such messages are returned.
pub(crate) fn list_messages(
    connection: &Connection,
    chat_id: &str,
    before: Option<i64>,
    after: Option<i64>,
    limit: usize,
) -> Result<Vec<Message>, StoreError> {
    let order = if before.is_some() && after.is_none() {
        "DESC"
    } else {
        "ASC"
    };
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages WHERE chat_id = ?1 \
         AND (?2 IS NULL OR seq < ?2) AND (?3 IS NULL OR seq > ?3) ORDER BY seq {order} LIMIT ?4"
    ))?;
    let rows = statement.query_map(
        params![
            chat_id,
            before,
            after,
            i64::try_from(limit).unwrap_or(i64::MAX)
        ],
        message_from_row,
    )?;
    let mut messages = rows
        .map(|row| row.map_err(StoreError::from).and_then(decode_message))
        .collect::<Result<Vec<_>, _>>()?;
    if order == "DESC" {
        messages.reverse();
    }
    Ok(messages)
}

/// An execution as stored, with the internal columns the API never shows.
#[derive(Debug, Clone)]
pub(crate) struct ExecutionRow {
    /// The public view.
    pub execution: Execution,
    /// The settings snapshot the turn runs with (JSON of `Settings`).
    pub settings: String,
    /// The id allocated for the answer when the execution started (`None` for executions
    /// stored before it was allocated).
    pub reply_message_id: Option<String>,
}

const EXECUTION_COLUMNS: &str = "id, chat_id, user_message_id, assistant_message_id, status, \
    client_message_id, model, provider, settings, started_at, finished_at, cancel_requested, \
    error_code, error_message, usage, reply_message_id";

type RawExecution = (
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn execution_from_row(row: &Row<'_>) -> rusqlite::Result<RawExecution> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
        row.get(9)?,
        row.get(10)?,
        row.get(11)?,
        row.get(12)?,
        row.get(13)?,
        row.get(14)?,
        row.get(15)?,
    ))
}

fn decode_execution(raw: RawExecution) -> Result<ExecutionRow, StoreError> {
    let (
        id,
        chat_id,
        user_message_id,
        assistant_message_id,
        status,
        client_message_id,
        model,
        provider,
        settings,
        started_at,
        finished_at,
        cancel_requested,
        error_code,
        error_message,
        usage,
        reply_message_id,
    ) = raw;
    Ok(ExecutionRow {
        execution: Execution {
            id,
            chat_id,
            user_message_id,
            assistant_message_id,
            status: from_json("executions.status", &format!("\"{status}\""))?,
            request_id: None,
            client_message_id,
            model,
            provider,
            started_at: from_time_opt("executions.started_at", started_at)?,
            finished_at: from_time_opt("executions.finished_at", finished_at)?,
            cancel_requested: cancel_requested != 0,
            error_code,
            error_message,
            usage: from_json_opt::<Usage>("executions.usage", usage)?,
            metadata: BTreeMap::new(),
        },
        settings,
        reply_message_id,
    })
}

/// A running execution to store: its settings snapshot (JSON), the id its answer will have,
/// and the process that owns it until `lease_until`.
#[derive(Debug)]
pub(crate) struct NewExecution<'a> {
    pub execution: &'a Execution,
    pub settings: &'a str,
    pub reply_message_id: &'a str,
    pub owner: &'a str,
    pub lease_until: DateTime<Utc>,
    pub at: DateTime<Utc>,
}

/// Inserts a running execution. A second active execution in the chat violates the unique
/// index: the caller maps that to 409.
pub(crate) fn insert_execution(
    connection: &Connection,
    new: &NewExecution<'_>,
) -> Result<(), rusqlite::Error> {
    let &NewExecution {
        execution,
        settings,
        reply_message_id,
        owner,
        lease_until,
        at,
    } = new;
    connection.execute(
        &format!(
            "INSERT INTO executions ({EXECUTION_COLUMNS}, owner, lease_until, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL, 0, NULL, NULL, NULL, ?14, ?11, ?12, ?13)"
        ),
        params![
            execution.id,
            execution.chat_id,
            execution.user_message_id,
            execution.assistant_message_id,
            execution.status.as_str(),
            execution.client_message_id,
            execution.model,
            execution.provider,
            settings,
            execution.started_at.map(to_time),
            owner,
            to_time(lease_until),
            to_time(at),
            reply_message_id,
        ],
    )?;
    Ok(())
}

/// One execution of a chat.
pub(crate) fn load_execution(
    connection: &Connection,
    chat_id: &str,
    id: &str,
) -> Result<Option<ExecutionRow>, StoreError> {
    connection
        .query_row(
            &format!("SELECT {EXECUTION_COLUMNS} FROM executions WHERE chat_id = ?1 AND id = ?2"),
            params![chat_id, id],
            execution_from_row,
        )
        .optional()?
        .map(decode_execution)
        .transpose()
}

/// The statuses of an active execution (the set `ExecutionStatus::is_active` names), as SQL:
/// `status IN {ACTIVE_STATUSES}`.
pub(crate) const ACTIVE_STATUSES: &str =
    "('queued', 'running', 'waiting_option', 'waiting_approval', 'cancelling')";

/// The active execution of a chat, if any.
pub(crate) fn active_execution(
    connection: &Connection,
    chat_id: &str,
) -> Result<Option<ExecutionRow>, StoreError> {
    connection
        .query_row(
            &format!(
                "SELECT {EXECUTION_COLUMNS} FROM executions WHERE chat_id = ?1 \
                 AND status IN {ACTIVE_STATUSES}"
            ),
            [chat_id],
            execution_from_row,
        )
        .optional()?
        .map(decode_execution)
        .transpose()
}

/// The execution started by a `client_message_id`.
pub(crate) fn execution_by_client_message(
    connection: &Connection,
    chat_id: &str,
    client_message_id: &str,
) -> Result<Option<ExecutionRow>, StoreError> {
    connection
        .query_row(
            &format!("SELECT {EXECUTION_COLUMNS} FROM executions WHERE chat_id = ?1 AND client_message_id = ?2"),
            params![chat_id, client_message_id],
            execution_from_row,
        )
        .optional()?
        .map(decode_execution)
        .transpose()
}

/// Moves an execution from one of `from` to `to`, with optional end data. Returns whether it
/// was in one of `from` (the transition is conditional, so racing ends cannot both win).
#[allow(clippy::too_many_arguments)]
pub(crate) fn transition(
    connection: &Connection,
    id: &str,
    from: &[ExecutionStatus],
    to: ExecutionStatus,
    at: DateTime<Utc>,
    error: Option<(&str, &str)>,
    usage: Option<&Usage>,
    assistant_message_id: Option<&str>,
) -> Result<bool, StoreError> {
    let from: Vec<&str> = from.iter().map(|status| status.as_str()).collect();
    let placeholders = (0..from.len())
        .map(|i| format!("?{}", i + 8))
        .collect::<Vec<_>>()
        .join(", ");
    let finished = !to.is_active();
    let mut values: Vec<Box<dyn rusqlite::ToSql>> = vec![
        Box::new(id.to_owned()),
        Box::new(to.as_str()),
        Box::new(finished.then(|| to_time(at))),
        Box::new(error.map(|(code, _)| code.to_owned())),
        Box::new(error.map(|(_, message)| message.to_owned())),
        Box::new(usage.map(to_json).transpose()?),
        Box::new(assistant_message_id.map(str::to_owned)),
    ];
    for status in from {
        values.push(Box::new(status));
    }
    let changed = connection.execute(
        &format!(
            "UPDATE executions SET status = ?2, finished_at = coalesce(?3, finished_at), \
             error_code = ?4, error_message = ?5, usage = coalesce(?6, usage), \
             assistant_message_id = coalesce(?7, assistant_message_id), \
             cancel_requested = cancel_requested OR ?2 IN ('cancelling', 'cancelled'), \
             started_at = CASE WHEN ?2 = 'running' AND started_at IS NULL THEN ?3 ELSE started_at END \
             WHERE id = ?1 AND status IN ({placeholders})"
        ),
        rusqlite::params_from_iter(values.iter().map(|value| value.as_ref())),
    )?;
    Ok(changed == 1)
}

/// Extends the lease of this process's running executions.
pub(crate) fn renew_leases(
    connection: &Connection,
    owner: &str,
    until: DateTime<Utc>,
) -> Result<usize, StoreError> {
    Ok(connection.execute_cached(
        "UPDATE executions SET lease_until = ?2 WHERE owner = ?1 \
         AND status IN ('queued', 'running', 'cancelling')",
        params![owner, to_time(until)],
    )?)
}

/// Of `ids` (executions this process runs), those it no longer holds: gone, owned by another
/// process, or no longer queued, running or cancelling (ended, e.g. failed by recovery
/// elsewhere after their lease ran out).
pub(crate) fn not_held(
    connection: &Connection,
    owner: &str,
    ids: &[String],
) -> Result<Vec<String>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT owner IS ?2 AND status IN ('queued', 'running', 'cancelling') \
         FROM executions WHERE id = ?1",
    )?;
    let mut lost = Vec::new();
    for id in ids {
        let held: Option<bool> = statement
            .query_row(params![id, owner], |row| row.get(0))
            .optional()?;
        if held != Some(true) {
            lost.push(id.clone());
        }
    }
    Ok(lost)
}

/// Executions another process than `owner` holds (queued, running or cancelling) whose lease
/// ran out before `at`.
pub(crate) fn expired_executions(
    connection: &Connection,
    owner: &str,
    at: DateTime<Utc>,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT id, chat_id FROM executions WHERE status IN ('queued', 'running', 'cancelling') \
         AND (owner IS NULL OR owner <> ?1) AND (lease_until IS NULL OR lease_until < ?2)",
    )?;
    let rows = statement
        .query_map(params![owner, to_time(at)], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<Result<Vec<(String, String)>, _>>()?;
    Ok(rows)
}

/// Executions some process left running (queued, running or cancelling) that `owner` does not
/// own. `waiting_option` is not a crash: a question can be answered after a restart.
pub(crate) fn orphaned_executions(
    connection: &Connection,
    owner: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut statement = connection.prepare(
        "SELECT id, chat_id FROM executions WHERE status IN ('queued', 'running', 'cancelling') \
         AND (owner IS NULL OR owner <> ?1)",
    )?;
    let rows = statement
        .query_map([owner], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<Vec<(String, String)>, _>>()?;
    Ok(rows)
}
