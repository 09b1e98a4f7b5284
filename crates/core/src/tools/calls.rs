//! Rows of the `tool_calls` table: every call through the gate, from request to result, so
//! `GET /v1/tool-calls/{id}` and `AwaitApproval` can report on calls that outlive a request.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use souz_protocol::{Requester, ToolCall, ToolCallStatus, ToolResult};

use crate::store::CachedStatements;
use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, from_time, from_time_opt, to_json, to_time};

/// A call as first stored.
#[derive(Debug)]
pub(crate) struct NewCall<'a> {
    pub id: &'a str,
    pub tool: &'a str,
    pub requester: &'a Requester,
    pub arguments: &'a Value,
    pub created_at: DateTime<Utc>,
}

/// Inserts a call in the `planning` state unless it is stored already. Calls are stored lazily,
/// in the same transaction as their first state change, to keep the gate's hot path short.
pub(crate) fn ensure(connection: &Connection, call: &NewCall<'_>) -> Result<(), StoreError> {
    let &NewCall {
        id,
        tool,
        requester,
        arguments,
        created_at,
    } = call;
    connection.execute_cached(
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
pub(crate) fn advance(
    connection: &Connection,
    id: &str,
    status: ToolCallStatus,
    summary: Option<&str>,
    approval_id: Option<&str>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "UPDATE tool_calls SET status = ?2, summary = coalesce(?3, summary), \
         approval_id = coalesce(?4, approval_id) WHERE id = ?1 AND finished_at IS NULL",
        params![id, status.as_str(), summary, approval_id],
    )?;
    Ok(())
}

/// Records the end of a call.
pub(crate) fn finish(
    connection: &Connection,
    id: &str,
    status: ToolCallStatus,
    result: &ToolResult,
    finished_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "UPDATE tool_calls SET status = ?2, result = ?3, finished_at = ?4 \
         WHERE id = ?1 AND finished_at IS NULL",
        params![id, status.as_str(), to_json(result)?, to_time(finished_at)],
    )?;
    Ok(())
}

/// A call's whole story, for [`store_finished`].
pub(crate) struct FinishedCall<'a> {
    /// Call id.
    pub id: &'a str,
    /// Tool name.
    pub tool: &'a str,
    /// Who asked.
    pub requester: &'a Requester,
    /// The arguments as sent.
    pub arguments: &'a Value,
    /// The final status.
    pub status: ToolCallStatus,
    /// What the person was shown, when planning got that far.
    pub summary: Option<&'a str>,
    /// The approval, when a person was asked.
    pub approval_id: Option<&'a str>,
    /// The result.
    pub result: &'a ToolResult,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: DateTime<Utc>,
}

/// Records the end of a call in one statement: the same as [`ensure`], [`advance`] and
/// [`finish`] in a row (a call that was never stored is inserted finished; a stored one is
/// finished unless it already was), for the gate's batch of ended calls.
pub(crate) fn store_finished(
    connection: &Connection,
    call: &FinishedCall<'_>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "INSERT INTO tool_calls (id, tool, requester, arguments, status, summary, approval_id, \
         result, created_at, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, \
         summary = coalesce(excluded.summary, tool_calls.summary), \
         approval_id = coalesce(excluded.approval_id, tool_calls.approval_id), \
         result = excluded.result, finished_at = excluded.finished_at \
         WHERE tool_calls.finished_at IS NULL",
        params![
            call.id,
            call.tool,
            to_json(call.requester)?,
            to_json(call.arguments)?,
            call.status.as_str(),
            call.summary,
            call.approval_id,
            to_json(call.result)?,
            to_time(call.created_at),
            to_time(call.finished_at)
        ],
    )?;
    Ok(())
}

/// Marks a finished call's result as handed to its requester; returns false if it already was
/// (`AwaitApproval` delivers a result once).
pub(crate) fn mark_delivered(
    connection: &Connection,
    id: &str,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let changed = connection.execute_cached(
        "UPDATE tool_calls SET delivered_at = ?2 \
         WHERE id = ?1 AND finished_at IS NOT NULL AND delivered_at IS NULL",
        params![id, to_time(at)],
    )?;
    Ok(changed == 1)
}

/// One call.
pub(crate) fn load(connection: &Connection, id: &str) -> Result<Option<ToolCall>, StoreError> {
    connection
        .query_row_cached(
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
pub(crate) struct UnfinishedCall {
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
pub(crate) fn unfinished(connection: &Connection) -> Result<Vec<UnfinishedCall>, StoreError> {
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
