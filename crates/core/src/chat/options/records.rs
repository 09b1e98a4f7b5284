//! SQL for the `options` table: the questions agents ask. Reads for people are scoped by the
//! chat's owner (a foreign id is a missing one); a question is read together with its chat's
//! title, so every surface can say who asks.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use souz_protocol::chat::{OptionAnswer, OptionChoice, OptionStatus, Question, SelectionMode};

use crate::store::CachedStatements;
use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, from_time, from_time_opt, to_json, to_time};

/// A question an agent asked the person, as the chat service handles it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OptionRow {
    /// Option id.
    pub id: String,
    /// Chat id.
    pub chat_id: String,
    /// Execution id.
    pub execution_id: String,
    /// Kind (`generic_selection`, ...).
    pub kind: String,
    /// The question.
    pub title: String,
    /// One choice or several.
    pub selection_mode: SelectionMode,
    /// The choices.
    pub choices: Vec<OptionChoice>,
    /// Whether a free-text answer is accepted.
    pub free_text: bool,
    /// Where it stands.
    pub status: OptionStatus,
    /// When it expires.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Inserts a pending option.
pub(crate) fn insert_option(
    connection: &Connection,
    option: &OptionRow,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "INSERT INTO options (id, chat_id, execution_id, kind, title, selection_mode, choices, \
         free_text, status, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            option.id,
            option.chat_id,
            option.execution_id,
            option.kind,
            option.title,
            option.selection_mode.as_str(),
            to_json(&option.choices)?,
            option.free_text,
            option.status.as_str(),
            to_time(at),
            option.expires_at.map(to_time),
        ],
    )?;
    Ok(())
}

/// The columns every read selects, in the order [`decode`] reads them.
const COLUMNS: &str = "o.id, o.chat_id, o.execution_id, o.kind, o.title, o.selection_mode, \
                       o.choices, o.free_text, o.status, o.expires_at, o.created_at, \
                       o.answered_at, o.answer, c.title";

/// A row as read, before its JSON and times are parsed.
struct RawQuestion {
    id: String,
    chat_id: String,
    execution_id: String,
    kind: String,
    title: String,
    selection_mode: String,
    choices: String,
    free_text: bool,
    status: String,
    expires_at: Option<String>,
    created_at: String,
    answered_at: Option<String>,
    answer: Option<String>,
    chat_title: Option<String>,
}

fn raw(row: &Row<'_>) -> rusqlite::Result<RawQuestion> {
    Ok(RawQuestion {
        id: row.get(0)?,
        chat_id: row.get(1)?,
        execution_id: row.get(2)?,
        kind: row.get(3)?,
        title: row.get(4)?,
        selection_mode: row.get(5)?,
        choices: row.get(6)?,
        free_text: row.get(7)?,
        status: row.get(8)?,
        expires_at: row.get(9)?,
        created_at: row.get(10)?,
        answered_at: row.get(11)?,
        answer: row.get(12)?,
        chat_title: row.get(13)?,
    })
}

fn decode(raw: RawQuestion) -> Result<Question, StoreError> {
    let selection_mode = SelectionMode::parse(&raw.selection_mode).ok_or_else(|| {
        StoreError::Corrupt(format!("options.selection_mode: {}", raw.selection_mode))
    })?;
    let status = OptionStatus::parse(&raw.status)
        .ok_or_else(|| StoreError::Corrupt(format!("options.status: {}", raw.status)))?;
    Ok(Question {
        id: raw.id,
        chat_id: raw.chat_id,
        chat_title: raw.chat_title,
        execution_id: raw.execution_id,
        kind: raw.kind,
        title: raw.title,
        selection_mode,
        options: from_json("options.choices", &raw.choices)?,
        free_text: raw.free_text,
        status,
        created_at: from_time("options.created_at", &raw.created_at)?,
        expires_at: from_time_opt("options.expires_at", raw.expires_at)?,
        answered_at: from_time_opt("options.answered_at", raw.answered_at)?,
        answer: from_json_opt::<OptionAnswer>("options.answer", raw.answer)?,
    })
}

/// The question `id` of a chat owned by `user_id`; `None` for a foreign or missing id.
pub(crate) fn load_question(
    connection: &Connection,
    user_id: &str,
    id: &str,
) -> Result<Option<Question>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM options o JOIN chats c ON c.id = o.chat_id \
         WHERE c.user_id = ?1 AND o.id = ?2"
    );
    connection
        .query_row(&sql, params![user_id, id], raw)
        .optional()?
        .map(decode)
        .transpose()
}

/// The question `id`, whoever owns it (for the events the service itself publishes).
pub(crate) fn question_by_id(
    connection: &Connection,
    id: &str,
) -> Result<Option<Question>, StoreError> {
    let sql =
        format!("SELECT {COLUMNS} FROM options o JOIN chats c ON c.id = o.chat_id WHERE o.id = ?1");
    connection
        .query_row(&sql, params![id], raw)
        .optional()?
        .map(decode)
        .transpose()
}

/// Pending questions of `user_id`'s chats that have not expired at `at`, oldest first.
pub(crate) fn pending_questions(
    connection: &Connection,
    user_id: &str,
    at: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<Question>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM options o JOIN chats c ON c.id = o.chat_id \
         WHERE c.user_id = ?1 AND o.status = 'pending' \
           AND (o.expires_at IS NULL OR o.expires_at > ?2) \
         ORDER BY o.created_at, o.id LIMIT ?3"
    );
    let mut statement = connection.prepare_cached(&sql)?;
    let rows = statement
        .query_map(
            params![
                user_id,
                to_time(at),
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            raw,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().map(decode).collect()
}

/// When the first pending question with a time limit expires.
pub(crate) fn next_expiry(connection: &Connection) -> Result<Option<DateTime<Utc>>, StoreError> {
    let next: Option<String> = connection.query_row_cached(
        "SELECT min(expires_at) FROM options WHERE status = 'pending' AND expires_at IS NOT NULL",
        [],
        |row| row.get(0),
    )?;
    next.map(|text| from_time("options.expires_at", &text))
        .transpose()
}

/// Pending questions whose time ran out by `at`, of every user.
pub(crate) fn due_questions(
    connection: &Connection,
    at: DateTime<Utc>,
) -> Result<Vec<Question>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM options o JOIN chats c ON c.id = o.chat_id \
         WHERE o.status = 'pending' AND o.expires_at IS NOT NULL AND o.expires_at <= ?1 \
         ORDER BY o.expires_at"
    );
    let mut statement = connection.prepare_cached(&sql)?;
    let rows = statement
        .query_map(params![to_time(at)], raw)?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().map(decode).collect()
}

/// Records an answer (or an expiry) if the option is still pending.
pub(crate) fn settle_option(
    connection: &Connection,
    id: &str,
    status: OptionStatus,
    answer: Option<&serde_json::Value>,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let changed = connection.execute_cached(
        "UPDATE options SET status = ?2, answer = ?3, answered_at = ?4 WHERE id = ?1 AND status = 'pending'",
        params![id, status.as_str(), answer.map(to_json).transpose()?, to_time(at)],
    )?;
    Ok(changed == 1)
}

/// Cancels the pending options of an execution; returns their ids.
pub(crate) fn cancel_options(
    connection: &Connection,
    execution_id: &str,
    at: DateTime<Utc>,
) -> Result<Vec<String>, StoreError> {
    let mut statement = connection.prepare_cached(
        "UPDATE options SET status = 'cancelled', answered_at = ?2 \
         WHERE execution_id = ?1 AND status = 'pending' RETURNING id",
    )?;
    let ids = statement
        .query_map(params![execution_id, to_time(at)], |row| row.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(ids)
}
