//! The audit log: one row per tool call, decided or automatic, with redacted and truncated
//! previews of arguments and results. Rows are only ever appended. A reader sees the rows its
//! [`Audience`] owns.

use rusqlite::{Connection, Row, params};
use serde_json::Value;
use souz_protocol::{Action, AuditEntry, DecisionSource, Outcome, Requester, Risk, ToolResult};

use super::audience::Audience;
use crate::redact;
use crate::store::CachedStatements;
use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, from_time, now, to_json, to_time};

/// A row about to be written; previews are made here.
#[derive(Debug, Clone)]
pub(crate) struct NewAuditEntry<'a> {
    /// Call id.
    pub call_id: &'a str,
    /// Who asked.
    pub requester: &'a Requester,
    /// Tool name.
    pub tool: &'a str,
    /// Risk class, when known.
    pub risk: Option<Risk>,
    /// The arguments as sent.
    pub arguments: &'a Value,
    /// The result, when there is one.
    pub result: Option<&'a ToolResult>,
    /// Allow or deny, when a decision was reached.
    pub decision: Option<Action>,
    /// What decided.
    pub decided_by: &'a DecisionSource,
    /// How it ended.
    pub outcome: Outcome,
    /// Milliseconds from request to end.
    pub duration_ms: u64,
}

/// Appends a row; returns its id.
pub(crate) fn append(
    connection: &Connection,
    entry: &NewAuditEntry<'_>,
) -> Result<i64, StoreError> {
    let result = entry.result.map(redact::result_preview);
    connection.execute_cached(
        "INSERT INTO audit_log (at, call_id, requester, tool, risk, arguments, result, decision, \
         decided_by, outcome, duration_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            to_time(now()),
            entry.call_id,
            to_json(entry.requester)?,
            entry.tool,
            entry.risk.map(Risk::as_str),
            to_json(&redact::preview(entry.arguments))?,
            result.map(|value| to_json(&value)).transpose()?,
            entry.decision.map(|action| to_json(&action)).transpose()?,
            to_json(entry.decided_by)?,
            entry.outcome.as_str(),
            i64::try_from(entry.duration_ms).unwrap_or(i64::MAX),
        ],
    )?;
    Ok(connection.last_insert_rowid())
}

/// Filters for reading the log.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Only rows older than this id.
    pub before: Option<i64>,
    /// At most this many rows.
    pub limit: usize,
    /// Only this tool.
    pub tool: Option<String>,
    /// Only this outcome.
    pub outcome: Option<Outcome>,
    /// Only this call.
    pub call_id: Option<String>,
    /// Only this kind of requester (`chat`, `mcp`, `cli`, `api`, `skill`).
    pub requester: Option<String>,
    /// Only calls from this chat.
    pub chat_id: Option<String>,
    /// Whose rows (default: everyone's).
    pub audience: Audience,
}

/// Per MCP client token: its latest call and how many it made since `since`.
pub(crate) fn recent_mcp_calls(
    connection: &Connection,
    since: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<(String, chrono::DateTime<chrono::Utc>, u64)>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT json_extract(requester, '$.token_id') AS token, MAX(at), COUNT(*) \
         FROM audit_log \
         WHERE json_extract(requester, '$.kind') = 'mcp' AND at >= ?1 \
         GROUP BY token",
    )?;
    let rows = statement.query_map([to_time(since)], |row| {
        Ok((
            row.get::<_, Option<String>>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, i64>(2)?,
        ))
    })?;
    let mut recent = Vec::new();
    for row in rows {
        let (token, at, count) = row?;
        if let Some(token) = token {
            recent.push((
                token,
                from_time("audit_log.at", &at)?,
                u64::try_from(count).unwrap_or_default(),
            ));
        }
    }
    Ok(recent)
}

/// Rows matching `query`, newest first.
pub(crate) fn page(
    connection: &Connection,
    query: &AuditQuery,
) -> Result<Vec<AuditEntry>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT id, at, call_id, requester, tool, risk, arguments, result, decision, decided_by, \
         outcome, duration_ms FROM audit_log \
         WHERE (?1 IS NULL OR id < ?1) AND (?2 IS NULL OR tool = ?2) \
           AND (?3 IS NULL OR outcome = ?3) AND (?4 IS NULL OR call_id = ?4) \
           AND (?6 IS NULL OR json_extract(requester, '$.kind') = ?6) \
           AND (?7 IS NULL OR json_extract(requester, '$.chat_id') = ?7) \
           AND {} \
         ORDER BY id DESC LIMIT ?5",
        Audience::condition(8, 9)
    ))?;
    let rows = statement.query_map(
        params![
            query.before,
            query.tool,
            query.outcome.map(Outcome::as_str),
            query.call_id,
            i64::try_from(query.limit).unwrap_or(i64::MAX),
            query.requester,
            query.chat_id,
            query.audience.sees_everything(),
            query.audience.owner(),
        ],
        RawEntry::from_row,
    )?;
    rows.map(|row| row.map_err(StoreError::from).and_then(RawEntry::decode))
        .collect()
}

struct RawEntry {
    id: i64,
    at: String,
    call_id: String,
    requester: String,
    tool: String,
    risk: Option<String>,
    arguments: String,
    result: Option<String>,
    decision: Option<String>,
    decided_by: String,
    outcome: String,
    duration_ms: i64,
}

impl RawEntry {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            at: row.get(1)?,
            call_id: row.get(2)?,
            requester: row.get(3)?,
            tool: row.get(4)?,
            risk: row.get(5)?,
            arguments: row.get(6)?,
            result: row.get(7)?,
            decision: row.get(8)?,
            decided_by: row.get(9)?,
            outcome: row.get(10)?,
            duration_ms: row.get(11)?,
        })
    }

    fn decode(self) -> Result<AuditEntry, StoreError> {
        Ok(AuditEntry {
            id: self.id,
            at: from_time("audit_log.at", &self.at)?,
            call_id: self.call_id,
            requester: from_json("audit_log.requester", &self.requester)?,
            tool: self.tool,
            risk: self
                .risk
                .map(|risk| from_json("audit_log.risk", &format!("\"{risk}\"")))
                .transpose()?,
            arguments: from_json("audit_log.arguments", &self.arguments)?,
            result: from_json_opt("audit_log.result", self.result)?,
            decision: from_json_opt("audit_log.decision", self.decision)?,
            decided_by: from_json("audit_log.decided_by", &self.decided_by)?,
            outcome: from_json("audit_log.outcome", &format!("\"{}\"", self.outcome))?,
            duration_ms: u64::try_from(self.duration_ms).unwrap_or_default(),
        })
    }
}
