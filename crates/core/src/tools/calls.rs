//! Rows of the `tool_calls` table: every call through the gate, from request to result, so
//! `GET /v1/tool-calls/{id}` and `AwaitApproval` can report on calls that outlive a request.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use souz_protocol::{Requester, ToolCall, ToolCallStatus, ToolResult};

use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, from_time, from_time_opt, to_json, to_time};

/// Inserts a call in the `planning` state unless it is stored already. Calls are stored lazily,
/// in the same transaction as their first state change, to keep the gate's hot path short.
pub fn ensure(
    connection: &Connection,
    id: &str,
    tool: &str,
    requester: &Requester,
    arguments: &Value,
    created_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute(
        "INSERT INTO tool_calls (id, tool, requester, arguments, status, created_at) \
         VALUES (?1, ?2, ?3, ?4, 'planning', ?5) ON CONFLICT (id) DO NOTHING",
        params![
            id,
            tool,
            to_json(requester)?,
            to_json(arguments)?,
            to_time(created_at)
        ],
    )?;
    Ok(())
}

/// Moves an unfinished call to a new non-final state.
pub fn advance(
    connection: &Connection,
    id: &str,
    status: ToolCallStatus,
    summary: Option<&str>,
    approval_id: Option<&str>,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE tool_calls SET status = ?2, summary = coalesce(?3, summary), \
         approval_id = coalesce(?4, approval_id) WHERE id = ?1 AND finished_at IS NULL",
        params![id, status.as_str(), summary, approval_id],
    )?;
    Ok(())
}

/// Records the end of a call.
pub fn finish(
    connection: &Connection,
    id: &str,
    status: ToolCallStatus,
    result: &ToolResult,
    finished_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE tool_calls SET status = ?2, result = ?3, finished_at = ?4 \
         WHERE id = ?1 AND finished_at IS NULL",
        params![id, status.as_str(), to_json(result)?, to_time(finished_at)],
    )?;
    Ok(())
}

/// Marks a finished call's result as handed to its requester; returns false if it already was
/// (`AwaitApproval` delivers a result once).
pub fn mark_delivered(
    connection: &Connection,
    id: &str,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let changed = connection.execute(
        "UPDATE tool_calls SET delivered_at = ?2 \
         WHERE id = ?1 AND finished_at IS NOT NULL AND delivered_at IS NULL",
        params![id, to_time(at)],
    )?;
    Ok(changed == 1)
}

/// One call.
pub fn load(connection: &Connection, id: &str) -> Result<Option<ToolCall>, StoreError> {
    connection
        .query_row(
            "SELECT id, tool, requester, status, summary, approval_id, result, created_at, \
             finished_at FROM tool_calls WHERE id = ?1",
            [id],
            RawCall::from_row,
        )
        .optional()?
        .map(RawCall::decode)
        .transpose()
}

/// A call that never finished (left by a process that died).
#[derive(Debug, Clone)]
pub struct UnfinishedCall {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub tool: String,
    /// Who asked.
    pub requester: Requester,
    /// Arguments.
    pub arguments: Value,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
}

/// Calls that never finished.
pub fn unfinished(connection: &Connection) -> Result<Vec<UnfinishedCall>, StoreError> {
    let mut statement = connection.prepare(
        "SELECT id, tool, requester, arguments, created_at FROM tool_calls WHERE finished_at IS NULL",
    )?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, String>(4)?,
        ))
    })?;
    rows.map(|row| {
        let (id, tool, requester, arguments, created_at) = row?;
        Ok(UnfinishedCall {
            id,
            tool,
            requester: from_json("tool_calls.requester", &requester)?,
            arguments: from_json("tool_calls.arguments", &arguments)?,
            created_at: from_time("tool_calls.created_at", &created_at)?,
        })
    })
    .collect()
}

struct RawCall {
    id: String,
    tool: String,
    requester: String,
    status: String,
    summary: Option<String>,
    approval_id: Option<String>,
    result: Option<String>,
    created_at: String,
    finished_at: Option<String>,
}

impl RawCall {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            tool: row.get(1)?,
            requester: row.get(2)?,
            status: row.get(3)?,
            summary: row.get(4)?,
            approval_id: row.get(5)?,
            result: row.get(6)?,
            created_at: row.get(7)?,
            finished_at: row.get(8)?,
        })
    }

    fn decode(self) -> Result<ToolCall, StoreError> {
        Ok(ToolCall {
            id: self.id,
            tool: self.tool,
            requester: from_json("tool_calls.requester", &self.requester)?,
            status: from_json("tool_calls.status", &format!("\"{}\"", self.status))?,
            summary: self.summary,
            approval_id: self.approval_id,
            result: from_json_opt("tool_calls.result", self.result)?,
            created_at: from_time("tool_calls.created_at", &self.created_at)?,
            finished_at: from_time_opt("tool_calls.finished_at", self.finished_at)?,
        })
    }
}
