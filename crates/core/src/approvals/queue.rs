//! Rows of the `approvals` table: pending approvals and their decisions.
//!
//! Every state change is a conditional update (`... WHERE status = 'pending'`) run on the
//! single writer connection, so the first decision wins and later ones see the new state.
//! Reads for a reader go through its [`Audience`]: rows it does not own are never loaded.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use souz_protocol::{Approval, ApprovalStatus, ExpiryReason, ParkedRun, RecordedDecision};

use super::audience::Audience;
use crate::store::CachedStatements;
use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, from_time, to_json, to_time};

const COLUMNS: &str = "id, call_id, status, requester, tool, risk, arguments, summary, diff, \
                       reason, suggested, created_at, expires_at, decision, expiry_reason, server, parked";

/// The columns read back: the stored ones, then the title of the chat that asked (when a chat
/// asked and has one), read at each load so a renamed chat is named by its new title.
const READ: &str = "id, call_id, status, requester, tool, risk, arguments, summary, diff, \
                    reason, suggested, created_at, expires_at, decision, expiry_reason, server, parked, \
                    (SELECT title FROM chats WHERE chats.id = json_extract(approvals.requester, '$.chat_id'))";

/// Who asked, as people read it: a scheduled run's name, a chat's title (`chat “Trip”`), else
/// the requester's own label (`Souz chat 01a2491c`, a client's name).
pub(crate) fn requester_label(
    requester: &souz_protocol::Requester,
    parked: Option<&ParkedRun>,
    chat_title: Option<&str>,
) -> String {
    if let Some(parked) = parked {
        return parked.label();
    }
    match (requester, chat_title.map(str::trim)) {
        (souz_protocol::Requester::Chat { .. }, Some(title)) if !title.is_empty() => {
            format!("chat “{title}”")
        }
        _ => requester.label(),
    }
}

/// The title of the chat `requester` is, if it is a chat with a title.
pub(crate) fn chat_title(
    connection: &Connection,
    requester: &souz_protocol::Requester,
) -> Result<Option<String>, StoreError> {
    let souz_protocol::Requester::Chat { chat_id } = requester else {
        return Ok(None);
    };
    Ok(connection
        .query_row(
            "SELECT title FROM chats WHERE id = ?1",
            params![chat_id],
            |row| row.get::<_, Option<String>>(0),
        )
        .optional()?
        .flatten())
}

/// Inserts a new pending approval.
pub(crate) fn insert(connection: &Connection, approval: &Approval) -> Result<(), StoreError> {
    connection.execute(
        &format!("INSERT INTO approvals ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, NULL, NULL, ?14, ?15)"),
        params![
            approval.id,
            approval.call_id,
            approval.status.as_str(),
            to_json(&approval.requester)?,
            approval.tool,
            approval.risk.as_str(),
            to_json(&approval.arguments)?,
            approval.summary,
            approval.diff,
            approval.reason,
            to_json(&approval.suggested)?,
            to_time(approval.created_at),
            to_time(approval.expires_at),
            approval.server,
            approval.parked.as_ref().map(to_json).transpose()?,
        ],
    )?;
    Ok(())
}

/// Loads one approval.
pub(crate) fn load(connection: &Connection, id: &str) -> Result<Option<Approval>, StoreError> {
    load_for(connection, id, &Audience::Everyone)
}

/// Loads one approval if `audience` owns it (`None` for a foreign one, as for a missing one).
pub(crate) fn load_for(
    connection: &Connection,
    id: &str,
    audience: &Audience,
) -> Result<Option<Approval>, StoreError> {
    connection
        .query_row(
            &format!(
                "SELECT {READ} FROM approvals WHERE id = ?1 AND {}",
                Audience::condition(2, 3)
            ),
            params![id, audience.sees_everything(), audience.owner()],
            RawApproval::from_row,
        )
        .optional()?
        .map(RawApproval::decode)
        .transpose()
}

/// The approvals `audience` owns, newest first, optionally only those with `status`, large
/// ones as [`super::preview`]s.
pub(crate) fn list(
    connection: &Connection,
    audience: &Audience,
    status: Option<ApprovalStatus>,
    limit: usize,
) -> Result<Vec<Approval>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {READ} FROM approvals WHERE (?1 IS NULL OR status = ?1) AND {} \
         ORDER BY created_at DESC, id DESC LIMIT ?2",
        Audience::condition(3, 4)
    ))?;
    let rows = statement.query_map(
        params![
            status.map(ApprovalStatus::as_str),
            i64::try_from(limit).unwrap_or(i64::MAX),
            audience.sees_everything(),
            audience.owner(),
        ],
        RawApproval::from_row,
    )?;
    // A page of approvals holds previews: each row is cut as it is read, so listing many large
    // pending calls never holds all of their arguments at once (one approval has them all).
    rows.map(|row| {
        row.map_err(StoreError::from)
            .and_then(RawApproval::decode)
            .map(super::preview::approval)
    })
    .collect()
}

/// Ids of every pending approval.
pub(crate) fn pending_ids(connection: &Connection) -> Result<Vec<String>, StoreError> {
    let mut statement =
        connection.prepare_cached("SELECT id FROM approvals WHERE status = 'pending'")?;
    let ids = statement
        .query_map([], |row| row.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(ids)
}

/// Ids of the pending approvals a call waits for in a process (not parked ones, which outlive
/// it).
pub(crate) fn waited_ids(connection: &Connection) -> Result<Vec<String>, StoreError> {
    let mut statement = connection
        .prepare_cached("SELECT id FROM approvals WHERE status = 'pending' AND parked IS NULL")?;
    let ids = statement
        .query_map([], |row| row.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(ids)
}

/// When the first pending parked approval runs out, and its id.
pub(crate) fn next_parked_expiry(
    connection: &Connection,
) -> Result<Option<(String, DateTime<Utc>)>, StoreError> {
    let row = connection
        .query_row(
            "SELECT id, expires_at FROM approvals WHERE status = 'pending' \
             AND parked IS NOT NULL ORDER BY expires_at LIMIT 1",
            [],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
        )
        .optional()?;
    row.map(|(id, at)| Ok((id, from_time("approvals.expires_at", &at)?)))
        .transpose()
}

/// The newest pending approval parked for the scheduled run `run_id`, if any.
pub(crate) fn pending_parked_for_run(
    connection: &Connection,
    run_id: i64,
) -> Result<Option<String>, StoreError> {
    Ok(connection
        .query_row(
            "SELECT id FROM approvals WHERE status = 'pending' AND parked IS NOT NULL \
             AND json_extract(parked, '$.run_id') = ?1 ORDER BY created_at DESC LIMIT 1",
            [run_id],
            |row| row.get(0),
        )
        .optional()?)
}

/// Marks an approved parked approval used by `call_id`; false when it is not approved, not
/// parked, or was used already (a parked approval runs its call once).
pub(crate) fn use_parked(
    connection: &Connection,
    id: &str,
    call_id: &str,
) -> Result<bool, StoreError> {
    let changed = connection.execute(
        "UPDATE approvals SET used_by = ?2 WHERE id = ?1 AND status = 'approved' \
         AND parked IS NOT NULL AND used_by IS NULL",
        params![id, call_id],
    )?;
    Ok(changed == 1)
}

/// Records a decision if the approval is still pending. Returns whether it was.
pub(crate) fn decide(
    connection: &Connection,
    id: &str,
    status: ApprovalStatus,
    decision: &RecordedDecision,
    expiry: Option<ExpiryReason>,
) -> Result<bool, StoreError> {
    let changed = connection.execute_cached(
        "UPDATE approvals SET status = ?2, decision = ?3, expiry_reason = ?4 \
         WHERE id = ?1 AND status = 'pending'",
        params![
            id,
            status.as_str(),
            to_json(decision)?,
            expiry.map(|reason| to_json(&reason)).transpose()?,
        ],
    )?;
    Ok(changed == 1)
}

struct RawApproval {
    id: String,
    call_id: String,
    status: String,
    requester: String,
    tool: String,
    risk: String,
    arguments: String,
    summary: String,
    diff: Option<String>,
    reason: String,
    suggested: String,
    created_at: String,
    expires_at: String,
    decision: Option<String>,
    expiry_reason: Option<String>,
    server: Option<String>,
    parked: Option<String>,
    chat_title: Option<String>,
}

impl RawApproval {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            call_id: row.get(1)?,
            status: row.get(2)?,
            requester: row.get(3)?,
            tool: row.get(4)?,
            risk: row.get(5)?,
            arguments: row.get(6)?,
            summary: row.get(7)?,
            diff: row.get(8)?,
            reason: row.get(9)?,
            suggested: row.get(10)?,
            created_at: row.get(11)?,
            expires_at: row.get(12)?,
            decision: row.get(13)?,
            expiry_reason: row.get(14)?,
            server: row.get(15)?,
            parked: row.get(16)?,
            chat_title: row.get(17)?,
        })
    }

    fn decode(self) -> Result<Approval, StoreError> {
        let requester: souz_protocol::Requester =
            from_json("approvals.requester", &self.requester)?;
        let parked: Option<ParkedRun> = from_json_opt("approvals.parked", self.parked)?;
        Ok(Approval {
            status: from_json("approvals.status", &format!("\"{}\"", self.status))?,
            requester_label: requester_label(
                &requester,
                parked.as_ref(),
                self.chat_title.as_deref(),
            ),
            parked,
            requester,
            risk: from_json("approvals.risk", &format!("\"{}\"", self.risk))?,
            arguments: from_json("approvals.arguments", &self.arguments)?,
            suggested: from_json("approvals.suggested", &self.suggested)?,
            created_at: from_time("approvals.created_at", &self.created_at)?,
            expires_at: from_time("approvals.expires_at", &self.expires_at)?,
            decision: from_json_opt("approvals.decision", self.decision)?,
            expiry_reason: from_json_opt("approvals.expiry_reason", self.expiry_reason)?,
            id: self.id,
            call_id: self.call_id,
            tool: self.tool,
            server: self.server,
            summary: self.summary,
            diff: self.diff,
            reason: self.reason,
        })
    }
}

/// When an approval created now expires.
pub(crate) fn expiry(created_at: DateTime<Utc>, timeout: std::time::Duration) -> DateTime<Utc> {
    created_at + chrono::Duration::from_std(timeout).unwrap_or(chrono::Duration::MAX)
}
