//! The rows of `schedules` and `schedule_runs` (migration `schedules`): plain functions over a
//! connection or a transaction, called inside the store's blocking calls.
//!
//! Invariants:
//! - An occurrence is claimed by inserting its run row; `UNIQUE (schedule_id, fire_at)` lets
//!   exactly one insert succeed across every process sharing the database ([`claim`] returns
//!   `None` to the others).
//! - A run's state moves forward only: `claimed → running → parked ↔ running → ok | blocked |
//!   failed`, or `claimed → skipped`; every move is a conditional update, so a second writer
//!   finds nothing to change.
//! - Every query about a schedule a person asked for is scoped by its owner; a foreign id reads
//!   as missing.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use souz_protocol::schedules::{
    MissedPolicy, OverlapPolicy, RunState, Schedule, ScheduleAction, ScheduleEnvelope, ScheduleRun,
};

use crate::store::codec::{from_json, from_time, from_time_opt, to_json, to_time};
use crate::store::{CachedStatements, StoreError};

/// A schedule as stored: its wire form, its owner and where deciding its occurrences got to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredSchedule {
    /// What clients see.
    pub(crate) schedule: Schedule,
    /// The person it acts for.
    pub(crate) owner: String,
    /// Occurrences up to and including this instant were decided.
    pub(crate) handled_until: DateTime<Utc>,
}

const COLUMNS: &str = "id, owner, name, spec, zone, action, missed, overlap, envelope, enabled, \
                       chat_id, handled_until, next_fire, created_at, updated_at";

fn overlap_name(overlap: OverlapPolicy) -> &'static str {
    match overlap {
        OverlapPolicy::Skip => "skip",
        OverlapPolicy::QueueOne => "queue_one",
    }
}

fn schedule_row(row: &Row<'_>) -> rusqlite::Result<[Option<String>; 15]> {
    let mut columns: [Option<String>; 15] = Default::default();
    for (index, column) in columns.iter_mut().enumerate() {
        *column = match index {
            9 => Some(row.get::<_, i64>(index)?.to_string()),
            _ => row.get(index)?,
        };
    }
    Ok(columns)
}

fn decode_schedule(columns: [Option<String>; 15]) -> Result<StoredSchedule, StoreError> {
    let [
        id,
        owner,
        name,
        spec,
        zone,
        action,
        missed,
        overlap,
        envelope,
        enabled,
        chat_id,
        handled_until,
        next_fire,
        created_at,
        updated_at,
    ] = columns;
    let text = |column: &str, value: Option<String>| {
        value.ok_or_else(|| StoreError::Corrupt(format!("schedules.{column} is NULL")))
    };
    let overlap = match text("overlap", overlap)?.as_str() {
        "queue_one" => OverlapPolicy::QueueOne,
        _ => OverlapPolicy::Skip,
    };
    Ok(StoredSchedule {
        owner: text("owner", owner)?,
        handled_until: from_time("handled_until", &text("handled_until", handled_until)?)?,
        schedule: Schedule {
            id: text("id", id)?,
            name: text("name", name)?,
            spec: text("spec", spec)?,
            zone: text("zone", zone)?,
            action: from_json::<ScheduleAction>("action", &text("action", action)?)?,
            missed: from_json::<MissedPolicy>("missed", &text("missed", missed)?)?,
            overlap,
            envelope: from_json::<ScheduleEnvelope>("envelope", &text("envelope", envelope)?)?,
            enabled: enabled.as_deref() == Some("1"),
            chat_id,
            next_fire: from_time_opt("next_fire", next_fire)?,
            created_at: from_time("created_at", &text("created_at", created_at)?)?,
            updated_at: from_time("updated_at", &text("updated_at", updated_at)?)?,
        },
    })
}

/// Inserts a new schedule.
pub(crate) fn insert_schedule(
    connection: &Connection,
    stored: &StoredSchedule,
) -> Result<(), StoreError> {
    let schedule = &stored.schedule;
    connection.execute_cached(
        &format!("INSERT INTO schedules ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"),
        params![
            schedule.id,
            stored.owner,
            schedule.name,
            schedule.spec,
            schedule.zone,
            to_json(&schedule.action)?,
            to_json(&schedule.missed)?,
            overlap_name(schedule.overlap),
            to_json(&schedule.envelope)?,
            i64::from(schedule.enabled),
            schedule.chat_id,
            to_time(stored.handled_until),
            schedule.next_fire.map(to_time),
            to_time(schedule.created_at),
            to_time(schedule.updated_at),
        ],
    )?;
    Ok(())
}

/// Writes every column of an existing schedule; `false` when it is gone.
pub(crate) fn update_schedule(
    connection: &Connection,
    stored: &StoredSchedule,
) -> Result<bool, StoreError> {
    let schedule = &stored.schedule;
    let changed = connection.execute_cached(
        "UPDATE schedules SET name = ?2, spec = ?3, zone = ?4, action = ?5, missed = ?6,
                overlap = ?7, envelope = ?8, enabled = ?9, chat_id = ?10, handled_until = ?11,
                next_fire = ?12, updated_at = ?13
          WHERE id = ?1",
        params![
            schedule.id,
            schedule.name,
            schedule.spec,
            schedule.zone,
            to_json(&schedule.action)?,
            to_json(&schedule.missed)?,
            overlap_name(schedule.overlap),
            to_json(&schedule.envelope)?,
            i64::from(schedule.enabled),
            schedule.chat_id,
            to_time(stored.handled_until),
            schedule.next_fire.map(to_time),
            to_time(schedule.updated_at),
        ],
    )?;
    Ok(changed == 1)
}

/// Moves where deciding occurrences got to (never backwards) and the cached next fire.
pub(crate) fn set_handled(
    connection: &Connection,
    id: &str,
    handled_until: DateTime<Utc>,
    next_fire: Option<DateTime<Utc>>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "UPDATE schedules SET handled_until = max(handled_until, ?2), next_fire = ?3
          WHERE id = ?1",
        params![id, to_time(handled_until), next_fire.map(to_time)],
    )?;
    Ok(())
}

/// Records the schedule's chat, unless it has one; returns the chat it has now.
pub(crate) fn adopt_chat(
    connection: &Connection,
    id: &str,
    chat_id: &str,
) -> Result<Option<String>, StoreError> {
    connection.execute_cached(
        "UPDATE schedules SET chat_id = ?2 WHERE id = ?1 AND chat_id IS NULL",
        params![id, chat_id],
    )?;
    Ok(connection
        .query_row_cached("SELECT chat_id FROM schedules WHERE id = ?1", [id], |row| {
            row.get::<_, Option<String>>(0)
        })
        .optional()?
        .flatten())
}

/// The schedule `id`, of `owner` when one is given.
pub(crate) fn load_schedule(
    connection: &Connection,
    owner: Option<&str>,
    id: &str,
) -> Result<Option<StoredSchedule>, StoreError> {
    let columns = connection
        .query_row_cached(
            &format!(
                "SELECT {COLUMNS} FROM schedules WHERE id = ?1 AND (?2 IS NULL OR owner = ?2)"
            ),
            params![id, owner],
            schedule_row,
        )
        .optional()?;
    columns.map(decode_schedule).transpose()
}

/// The schedules of `owner` (every owner's with `None`), by name.
pub(crate) fn list_schedules(
    connection: &Connection,
    owner: Option<&str>,
) -> Result<Vec<StoredSchedule>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM schedules WHERE ?1 IS NULL OR owner = ?1 ORDER BY name, id"
    ))?;
    let rows = statement
        .query_map(params![owner], schedule_row)?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().map(decode_schedule).collect()
}

/// Every enabled schedule's id with its next fire, `next` (given the spec, zone and where
/// deciding got to) computed row by row as they are read; schedules without one are left out.
pub(crate) fn pending_fires(
    connection: &Connection,
    next: impl Fn(&str, &str, DateTime<Utc>) -> Option<DateTime<Utc>>,
) -> Result<Vec<(String, DateTime<Utc>)>, StoreError> {
    let mut statement = connection
        .prepare_cached("SELECT id, spec, zone, handled_until FROM schedules WHERE enabled = 1")?;
    let mut rows = statement.query([])?;
    let mut fires = Vec::new();
    while let Some(row) = rows.next()? {
        let (id, spec, zone): (String, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        let handled: String = row.get(3)?;
        let handled = from_time("schedules.handled_until", &handled)?;
        if let Some(at) = next(&spec, &zone, handled) {
            fires.push((id, at));
        }
    }
    Ok(fires)
}

/// Deletes the schedule (its runs go with it); `false` when there was none.
pub(crate) fn delete_schedule(
    connection: &Connection,
    owner: &str,
    id: &str,
) -> Result<bool, StoreError> {
    let deleted = connection.execute_cached(
        "DELETE FROM schedules WHERE id = ?1 AND owner = ?2",
        params![id, owner],
    )?;
    Ok(deleted == 1)
}

/// An occurrence to claim: which, by whom, when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Claim<'a> {
    /// The schedule.
    pub(crate) schedule_id: &'a str,
    /// The occurrence.
    pub(crate) fire_at: DateTime<Utc>,
    /// The claiming engine.
    pub(crate) by: &'a str,
    /// The clock time of the claim.
    pub(crate) at: DateTime<Utc>,
}

/// Claims an occurrence in `state` (`claimed`, or `skipped` with a reason); the new run's id, or
/// `None` when another claim (this process's or another's) got there first.
pub(crate) fn claim(
    connection: &Connection,
    claim: &Claim<'_>,
    state: RunState,
    reason: Option<&str>,
) -> Result<Option<i64>, StoreError> {
    let ended = state.is_final().then(|| to_time(claim.at));
    Ok(connection
        .query_row_cached(
            "INSERT INTO schedule_runs (schedule_id, fire_at, claimed_by, state, ended_at, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (schedule_id, fire_at) DO NOTHING
             RETURNING id",
            params![
                claim.schedule_id,
                to_time(claim.fire_at),
                claim.by,
                state.as_str(),
                ended,
                reason
            ],
            |row| row.get(0),
        )
        .optional()?)
}

/// How many runs of the schedule are going (running or parked) and how many wait (claimed).
pub(crate) fn open_runs(
    connection: &Connection,
    schedule_id: &str,
) -> Result<(u32, u32), StoreError> {
    Ok(connection.query_row_cached(
        "SELECT count(*) FILTER (WHERE state IN ('running', 'parked')),
                count(*) FILTER (WHERE state = 'claimed')
           FROM schedule_runs WHERE schedule_id = ?1 AND state IN ('claimed', 'running', 'parked')",
        [schedule_id],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?)
}

/// Starts the oldest waiting run of the schedule for `by`, unless one is going; its id and
/// occurrence.
pub(crate) fn start_next(
    connection: &Connection,
    schedule_id: &str,
    by: &str,
    at: DateTime<Utc>,
) -> Result<Option<(i64, DateTime<Utc>)>, StoreError> {
    let (going, _) = open_runs(connection, schedule_id)?;
    if going > 0 {
        return Ok(None);
    }
    let next: Option<(i64, String)> = connection
        .query_row_cached(
            "UPDATE schedule_runs SET state = 'running', claimed_by = ?2, started_at = ?3
              WHERE id = (SELECT id FROM schedule_runs
                           WHERE schedule_id = ?1 AND state = 'claimed'
                           ORDER BY fire_at LIMIT 1)
                AND state = 'claimed'
             RETURNING id, fire_at",
            params![schedule_id, by, to_time(at)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    next.map(|(id, fire_at)| Ok((id, from_time("fire_at", &fire_at)?)))
        .transpose()
}

/// How long a run may go unlinked to a chat execution before a starting engine counts it as
/// left by a process that died (an engine links its run as soon as the chat accepts it).
pub(crate) const UNLINKED_GRACE: chrono::Duration = chrono::Duration::minutes(10);

/// Ends the runs a process that died left going: those whose chat execution has ended (the
/// chat's own recovery fails an execution a dead process left running, before this runs) get
/// the execution's outcome (`ok` when it completed with the model's answer; `failed` with the
/// explanation and the end reason when Souz ended its turn — the `endReason` its stored
/// `execution.finished` names, as `firing::stopped_end` writes it — else with its error), and those
/// never linked to an execution and started before `at` − [`UNLINKED_GRACE`] are `failed`.
/// A run whose execution still goes (another live daemon's) is left alone; `stopped` is the
/// reason of a failed one whose execution says none. Returns the
/// schedules whose runs were ended, so their waiting runs can start.
pub(crate) fn end_orphaned_runs(
    connection: &Connection,
    at: DateTime<Utc>,
    stopped: &str,
) -> Result<Vec<String>, StoreError> {
    let mut statement = connection.prepare_cached(
        "UPDATE schedule_runs
            SET state = CASE WHEN e.status = 'completed' AND e.end_reason IS NULL THEN 'ok'
                             WHEN e.error_code IN ('approval_denied', 'approval_expired')
                                  THEN 'blocked'
                             ELSE 'failed' END,
                reason = CASE WHEN e.status = 'completed' AND e.end_reason IS NULL THEN NULL
                              WHEN e.status = 'completed'
                                   THEN coalesce(e.answer || ' (' || e.end_reason || ')',
                                                 e.end_reason)
                              ELSE coalesce(e.error_message, ?3) END,
                ended_at = ?1
           FROM (SELECT r.id AS run_id, x.status, x.error_message, x.error_code,
                        json_extract(v.payload, '$.endReason') AS end_reason,
                        m.content AS answer
                   FROM schedule_runs r LEFT JOIN executions x ON x.id = r.execution_id
                   LEFT JOIN chat_events v ON v.execution_id = x.id
                        AND v.type IN ('execution.finished', 'execution.failed',
                                       'execution.cancelled')
                   LEFT JOIN messages m ON m.id = x.assistant_message_id
                  WHERE r.state IN ('running', 'parked')
                    AND (x.status IN ('completed', 'failed', 'cancelled')
                         OR (r.execution_id IS NULL AND r.started_at < ?2))) AS e
          WHERE schedule_runs.id = e.run_id
         RETURNING schedule_runs.schedule_id",
    )?;
    let rows = statement.query_map(
        params![to_time(at), to_time(at - UNLINKED_GRACE), stopped],
        |row| row.get::<_, String>(0),
    )?;
    let mut schedules = rows.collect::<Result<Vec<_>, _>>()?;
    schedules.sort_unstable();
    schedules.dedup();
    Ok(schedules)
}

/// Moves a going run to `parked` on `approval_id`, or back to `running` (`None`); false when
/// it was not going.
pub(crate) fn set_parked(
    connection: &Connection,
    run_id: i64,
    approval_id: Option<&str>,
) -> Result<bool, StoreError> {
    let changed = connection.execute_cached(
        "UPDATE schedule_runs
            SET state = CASE WHEN ?2 IS NULL THEN 'running' ELSE 'parked' END,
                approval_id = coalesce(?2, approval_id)
          WHERE id = ?1 AND state IN ('running', 'parked')",
        params![run_id, approval_id],
    )?;
    Ok(changed == 1)
}

/// Runs left going whose chat execution waits for an approval (they outlive the process that
/// started them): schedule id, run id, occurrence, chat and execution.
pub(crate) fn parked_runs(connection: &Connection) -> Result<Vec<ParkedRunRow>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT r.schedule_id, r.id, r.fire_at, r.chat_id, r.execution_id
           FROM schedule_runs r JOIN executions x ON x.id = r.execution_id
          WHERE r.state IN ('running', 'parked') AND x.status = 'waiting_approval'",
    )?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, String>(4)?,
        ))
    })?;
    rows.map(|row| {
        let (schedule_id, run_id, fire_at, chat_id, execution_id) = row?;
        Ok(ParkedRunRow {
            schedule_id,
            run_id,
            fire_at: from_time("schedule_runs.fire_at", &fire_at)?,
            chat_id,
            execution_id,
        })
    })
    .collect()
}

/// A run parked across a restart.
#[derive(Debug, Clone)]
pub(crate) struct ParkedRunRow {
    pub schedule_id: String,
    pub run_id: i64,
    pub fire_at: DateTime<Utc>,
    pub chat_id: String,
    pub execution_id: String,
}

/// Records the chat and execution of a running run.
pub(crate) fn link_run(
    connection: &Connection,
    run_id: i64,
    chat_id: &str,
    execution_id: Option<&str>,
) -> Result<(), StoreError> {
    connection.execute_cached(
        "UPDATE schedule_runs SET chat_id = ?2, execution_id = coalesce(?3, execution_id)
          WHERE id = ?1",
        params![run_id, chat_id, execution_id],
    )?;
    Ok(())
}

/// Ends a run that has not ended: the chat it ran in (if it got that far), or `None` when it
/// had ended already.
pub(crate) fn end_run(
    connection: &Connection,
    run_id: i64,
    state: RunState,
    reason: Option<&str>,
    at: DateTime<Utc>,
) -> Result<Option<Option<String>>, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(connection
        .prepare_cached(
            "UPDATE schedule_runs SET state = ?2, reason = ?3, ended_at = ?4
              WHERE id = ?1 AND state IN ('claimed', 'running', 'parked')
              RETURNING chat_id",
        )?
        .query_row(
            params![run_id, state.as_str(), reason, to_time(at)],
            |row| row.get(0),
        )
        .optional()?)
}

/// The columns of a run, in the order [`decode_run`] reads them.
const RUN_COLUMNS: &str = "id, schedule_id, fire_at, state, started_at, ended_at, chat_id, \
                           execution_id, reason, approval_id";

/// A run row as read.
fn decode_run(row: &Row<'_>) -> rusqlite::Result<Result<ScheduleRun, StoreError>> {
    let fire_at: String = row.get(2)?;
    let state: String = row.get(3)?;
    let started: Option<String> = row.get(4)?;
    let ended: Option<String> = row.get(5)?;
    let (id, schedule_id) = (row.get(0)?, row.get(1)?);
    let (chat_id, execution_id, reason, approval_id) =
        (row.get(6)?, row.get(7)?, row.get(8)?, row.get(9)?);
    Ok((|| {
        Ok(ScheduleRun {
            id,
            schedule_id,
            fire_at: from_time("fire_at", &fire_at)?,
            state: RunState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("run state {state}")))?,
            started_at: from_time_opt("started_at", started)?,
            ended_at: from_time_opt("ended_at", ended)?,
            chat_id,
            execution_id,
            reason,
            approval_id,
        })
    })())
}

/// The schedule's runs, newest occurrence first, at most `limit`.
pub(crate) fn list_runs(
    connection: &Connection,
    schedule_id: &str,
    limit: usize,
) -> Result<Vec<ScheduleRun>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM schedule_runs WHERE schedule_id = ?1 \
         ORDER BY fire_at DESC, id DESC LIMIT ?2"
    ))?;
    let rows = statement
        .query_map(
            params![schedule_id, i64::try_from(limit).unwrap_or(i64::MAX)],
            decode_run,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().collect()
}

/// The run `run_id`.
pub(crate) fn load_run(
    connection: &Connection,
    run_id: i64,
) -> Result<Option<ScheduleRun>, StoreError> {
    connection
        .query_row(
            &format!("SELECT {RUN_COLUMNS} FROM schedule_runs WHERE id = ?1"),
            [run_id],
            decode_run,
        )
        .optional()?
        .transpose()
}
