//! The rows of review mode: `review_modes`, `reviews`, `review_changes` (see the migration
//! `file_reviews`). Every function runs inside the caller's connection or transaction; the
//! ones that change a review return the events to announce in the same transaction.

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};
use souz_protocol::review::{
    ChangeDecision, ReviewModes, ReviewStatus, ReviewSummary, ReviewedChange,
};
use souz_protocol::{Requester, RuntimeEvent};

use super::{Base, Staged, Staging, StoredStaged, opened_event};
use crate::history::records::running_execution;
use crate::store::StoreError;
use crate::store::codec::{from_json, from_time, now, to_json, to_time};

/// Whether review mode is on for (`scope`, `key`).
pub(super) fn mode_on(connection: &Connection, scope: &str, key: &str) -> Result<bool, StoreError> {
    Ok(connection
        .query_row(
            "SELECT 1 FROM review_modes WHERE scope = ?1 AND key = ?2",
            params![scope, key],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Who is in review mode.
pub(super) fn modes(connection: &Connection) -> Result<ReviewModes, StoreError> {
    let mut statement =
        connection.prepare("SELECT scope, key FROM review_modes ORDER BY scope, key")?;
    let mut modes = ReviewModes::default();
    let rows = statement.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
    })?;
    for row in rows {
        let (scope, key) = row?;
        if scope == "chat" {
            modes.chats.push(key);
        } else {
            modes.clients.push(key);
        }
    }
    Ok(modes)
}

/// Turns review mode on or off for (`scope`, `key`).
pub(super) fn set_mode(
    transaction: &Transaction<'_>,
    scope: &str,
    key: &str,
    on: bool,
) -> Result<(), StoreError> {
    if on {
        transaction.execute(
            "INSERT OR IGNORE INTO review_modes (scope, key, created_at) VALUES (?1, ?2, ?3)",
            params![scope, key, to_time(now())],
        )?;
    } else {
        transaction.execute(
            "DELETE FROM review_modes WHERE scope = ?1 AND key = ?2",
            params![scope, key],
        )?;
    }
    Ok(())
}

/// The review a change `requester` stages now joins: who and which turn, and the review's id
/// when it exists already.
struct Joining {
    client: String,
    chat_id: Option<String>,
    execution_id: Option<String>,
    review_id: Option<i64>,
}

fn joining(connection: &Connection, requester: &Requester) -> Result<Joining, StoreError> {
    let client = crate::history::client_of(requester);
    let chat_id = match requester {
        Requester::Chat { chat_id } => Some(chat_id.clone()),
        _ => None,
    };
    let execution_id = match &chat_id {
        Some(chat_id) => running_execution(connection, chat_id)?,
        None => None,
    };
    // A turn collects into its own review; anyone else into their one open review.
    let review_id: Option<i64> = match &execution_id {
        Some(execution_id) => connection
            .query_row(
                "SELECT id FROM reviews WHERE execution_id = ?1 AND status = 'collecting'",
                [execution_id],
                |row| row.get(0),
            )
            .optional()?,
        None => connection
            .query_row(
                "SELECT id FROM reviews WHERE client = ?1 AND chat_id IS ?2 \
                     AND execution_id IS NULL AND status = 'open' ORDER BY id LIMIT 1",
                params![client, chat_id],
                |row| row.get(0),
            )
            .optional()?,
    };
    Ok(Joining {
        client,
        chat_id,
        execution_id,
        review_id,
    })
}

/// The undecided changes (being applied included), in staging order, of the review a change
/// `requester` stages now would join; empty when there is no such review yet.
pub(super) fn undecided_of_joining(
    connection: &Connection,
    requester: &Requester,
) -> Result<Vec<StoredStaged>, StoreError> {
    let Some(review_id) = joining(connection, requester)?.review_id else {
        return Ok(Vec::new());
    };
    Ok(changes(connection, review_id)?
        .into_iter()
        .filter(|change| matches!(change.decision, None | Some(ChangeDecision::Applying)))
        .collect())
}

/// Adds `staging` (with its paths' `base`) to its review, making the review if need be.
/// Announces `review.opened` when the change joins an open review (a client's).
pub(super) fn stage(
    transaction: &Transaction<'_>,
    staging: &Staging,
    base: &[Base],
) -> Result<(Staged, Vec<RuntimeEvent>), StoreError> {
    let Joining {
        client,
        chat_id,
        execution_id,
        review_id: found,
    } = joining(transaction, &staging.requester)?;
    let at = to_time(now());
    let review_id = match found {
        Some(id) => id,
        None => {
            let (status, opened_at) = match execution_id {
                Some(_) => ("collecting", None),
                None => ("open", Some(at.clone())),
            };
            transaction.execute(
                "INSERT INTO reviews (client, chat_id, execution_id, status, created_at, opened_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![client, chat_id, execution_id, status, at, opened_at],
            )?;
            transaction.last_insert_rowid()
        }
    };
    transaction.execute(
        "INSERT INTO review_changes (review_id, call_id, tool, requester, arguments, summary, \
             diff, base, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            review_id,
            staging.call_id,
            staging.tool,
            to_json(&staging.requester)?,
            to_json(&staging.arguments)?,
            staging.summary,
            staging.diff,
            to_json(base)?,
            at,
        ],
    )?;
    let change_id = transaction.last_insert_rowid();
    let mut events = Vec::new();
    if execution_id.is_none() {
        events.extend(opened_event(transaction, review_id)?);
    }
    Ok((
        Staged {
            review_id,
            change_id,
        },
        events,
    ))
}

/// Opens the review turn `execution_id` collected into, if any: called in the transaction
/// that ends the execution. Returns its `review.opened` event.
pub(crate) fn open_turn_review(
    transaction: &Transaction<'_>,
    execution_id: &str,
) -> Result<Option<RuntimeEvent>, StoreError> {
    let found: Option<i64> = transaction
        .query_row(
            "SELECT id FROM reviews WHERE execution_id = ?1 AND status = 'collecting'",
            [execution_id],
            |row| row.get(0),
        )
        .optional()?;
    let Some(id) = found else {
        return Ok(None);
    };
    transaction.execute(
        "UPDATE reviews SET status = 'open', opened_at = ?2 WHERE id = ?1",
        params![id, to_time(now())],
    )?;
    opened_event(transaction, id)
}

const SUMMARY: &str = "SELECT r.id, r.client, r.chat_id, r.execution_id, r.status, r.created_at, \
         (SELECT COUNT(*) FROM review_changes c WHERE c.review_id = r.id), \
         (SELECT COUNT(*) FROM review_changes c WHERE c.review_id = r.id \
              AND (c.decision IS NULL OR c.decision = 'applying')) \
     FROM reviews r";

fn summary_row(row: &Row<'_>) -> rusqlite::Result<(ReviewSummary, String, String)> {
    let status: String = row.get(4)?;
    let created: String = row.get(5)?;
    Ok((
        ReviewSummary {
            id: row.get(0)?,
            client: row.get(1)?,
            chat_id: row.get(2)?,
            execution_id: row.get(3)?,
            status: ReviewStatus::Open,
            changes: row.get::<_, i64>(6)?.max(0) as usize,
            undecided: row.get::<_, i64>(7)?.max(0) as usize,
            created_at: chrono::DateTime::UNIX_EPOCH,
        },
        status,
        created,
    ))
}

fn finish_summary(
    (mut summary, status, created): (ReviewSummary, String, String),
) -> Result<ReviewSummary, StoreError> {
    summary.status = match status.as_str() {
        "collecting" => ReviewStatus::Collecting,
        "open" => ReviewStatus::Open,
        "closed" => ReviewStatus::Closed,
        other => return Err(StoreError::Corrupt(format!("review status `{other}`"))),
    };
    summary.created_at = from_time("reviews.created_at", &created)?;
    Ok(summary)
}

/// Review `id`.
pub(super) fn summary(
    connection: &Connection,
    id: i64,
) -> Result<Option<ReviewSummary>, StoreError> {
    connection
        .query_row(&format!("{SUMMARY} WHERE r.id = ?1"), [id], summary_row)
        .optional()?
        .map(finish_summary)
        .transpose()
}

/// The open reviews, oldest first.
pub(super) fn open_reviews(connection: &Connection) -> Result<Vec<ReviewSummary>, StoreError> {
    let mut statement =
        connection.prepare(&format!("{SUMMARY} WHERE r.status = 'open' ORDER BY r.id"))?;
    let rows = statement.query_map([], summary_row)?;
    rows.map(|row| finish_summary(row?)).collect()
}

const CHANGE: &str = "SELECT id, review_id, call_id, tool, requester, arguments, summary, diff, \
     base, decision, result, applied_call_id FROM review_changes";

type RawChange = (StoredStaged, String, String, String, Option<String>);

fn change_row(row: &Row<'_>) -> rusqlite::Result<RawChange> {
    Ok((
        StoredStaged {
            id: row.get(0)?,
            review_id: row.get(1)?,
            call_id: row.get(2)?,
            tool: row.get(3)?,
            requester: Requester::Cli,
            arguments: serde_json::Value::Null,
            summary: row.get(6)?,
            diff: row.get(7)?,
            base: Vec::new(),
            decision: None,
            result: row.get(10)?,
            applied_call_id: row.get(11)?,
        },
        row.get(4)?,
        row.get(5)?,
        row.get(8)?,
        row.get(9)?,
    ))
}

fn finish_change(
    (mut change, requester, arguments, base, decision): RawChange,
) -> Result<StoredStaged, StoreError> {
    change.requester = from_json("review_changes.requester", &requester)?;
    change.arguments = from_json("review_changes.arguments", &arguments)?;
    change.base = from_json("review_changes.base", &base)?;
    change.decision = decision.as_deref().map(decision_of).transpose()?;
    Ok(change)
}

fn decision_of(text: &str) -> Result<ChangeDecision, StoreError> {
    Ok(match text {
        "applying" => ChangeDecision::Applying,
        "applied" => ChangeDecision::Applied,
        "discarded" => ChangeDecision::Discarded,
        "failed" => ChangeDecision::Failed,
        other => return Err(StoreError::Corrupt(format!("review decision `{other}`"))),
    })
}

fn decision_name(decision: ChangeDecision) -> &'static str {
    match decision {
        ChangeDecision::Applying => "applying",
        ChangeDecision::Applied => "applied",
        ChangeDecision::Discarded => "discarded",
        ChangeDecision::Failed => "failed",
    }
}

/// The changes of review `review_id`, in the order they were staged.
pub(super) fn changes(
    connection: &Connection,
    review_id: i64,
) -> Result<Vec<StoredStaged>, StoreError> {
    let mut statement =
        connection.prepare(&format!("{CHANGE} WHERE review_id = ?1 ORDER BY id"))?;
    let rows = statement.query_map([review_id], change_row)?;
    rows.map(|row| finish_change(row?)).collect()
}

/// Change `id`.
pub(super) fn change(connection: &Connection, id: i64) -> Result<Option<StoredStaged>, StoreError> {
    connection
        .query_row(&format!("{CHANGE} WHERE id = ?1"), [id], change_row)
        .optional()?
        .map(finish_change)
        .transpose()
}

/// Marks undecided change `change_id` of open review `review_id` as being applied.
pub(super) fn claim(
    transaction: &Transaction<'_>,
    review_id: i64,
    change_id: i64,
) -> Result<bool, StoreError> {
    let updated = transaction.execute(
        "UPDATE review_changes SET decision = 'applying' WHERE id = ?1 AND review_id = ?2 \
             AND decision IS NULL \
             AND EXISTS (SELECT 1 FROM reviews WHERE id = ?2 AND status = 'open')",
        params![change_id, review_id],
    )?;
    Ok(updated == 1)
}

/// Records `outcome` (decision, result, applying call) on change `change_id`: discarding only
/// an undecided change, the end of an apply only a change being applied. Closes the review
/// when nothing in it is undecided any more.
pub(super) fn decide(
    transaction: &Transaction<'_>,
    review_id: i64,
    change_id: i64,
    outcome: (ChangeDecision, Option<String>, Option<String>),
) -> Result<(bool, Vec<RuntimeEvent>), StoreError> {
    let (decision, result, applied_call_id) = outcome;
    let from = match decision {
        ChangeDecision::Discarded => {
            "decision IS NULL \
             AND EXISTS (SELECT 1 FROM reviews WHERE id = ?2 AND status = 'open')"
        }
        _ => "decision = 'applying'",
    };
    let updated = transaction.execute(
        &format!(
            "UPDATE review_changes SET decision = ?3, result = ?4, applied_call_id = ?5, \
                 decided_at = ?6 WHERE id = ?1 AND review_id = ?2 AND {from}"
        ),
        params![
            change_id,
            review_id,
            decision_name(decision),
            result,
            applied_call_id,
            to_time(now())
        ],
    )?;
    if updated != 1 {
        return Ok((false, Vec::new()));
    }
    let mut events = vec![RuntimeEvent::ReviewDecided {
        review_id,
        change: ReviewedChange {
            change_id,
            decision,
        },
    }];
    let undecided: i64 = transaction.query_row(
        "SELECT COUNT(*) FROM review_changes WHERE review_id = ?1 \
             AND (decision IS NULL OR decision = 'applying')",
        [review_id],
        |row| row.get(0),
    )?;
    if undecided == 0 {
        let closed = transaction.execute(
            "UPDATE reviews SET status = 'closed', closed_at = ?2 WHERE id = ?1 \
                 AND status = 'open'",
            params![review_id, to_time(now())],
        )?;
        if closed == 1 {
            events.push(RuntimeEvent::ReviewClosed { review_id });
        }
    }
    Ok((true, events))
}
