//! The history's rows: `history_changes` (one per call that changed files, and one per undo),
//! `history_paths` (what each path held before and after), `history_blobs` (the kept contents
//! and the bytes each takes).
//!
//! Invariants:
//! - A change is inserted `pending` with its paths' before-states and the rows of the blobs
//!   they name, in one transaction; its after-states and `done` come in another.
//! - A blob row goes only when no path names its hash any more ([`forget_unnamed`]).
//! - Paths are stored as their bytes (a file name need not be UTF-8).

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use souz_protocol::Requester;
use souz_protocol::history::{ChangeStatus, ChangedPath, HistoryChange, PathKind};

use super::snapshot::Snapshot;
use crate::store::codec::{from_json, from_time, to_json, to_time};
use crate::store::{CachedStatements, StoreError};

/// A change as stored.
#[derive(Debug, Clone)]
pub(crate) struct StoredChange {
    pub id: i64,
    pub call_id: String,
    pub tool: String,
    pub requester: Requester,
    pub client: String,
    pub chat_id: Option<String>,
    pub execution_id: Option<String>,
    pub summary: String,
    pub status: ChangeStatus,
    pub undoes: Option<i64>,
    pub undone_by: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub paths: Vec<StoredPath>,
}

/// One path of a change as stored.
#[derive(Debug, Clone)]
pub(crate) struct StoredPath {
    pub path: PathBuf,
    pub created_parent: bool,
    pub before: Snapshot,
    pub after: Option<Snapshot>,
}

impl StoredChange {
    /// As the wire shows it.
    pub(crate) fn wire(&self) -> HistoryChange {
        HistoryChange {
            id: self.id,
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            requester: self.requester.clone(),
            client: self.client.clone(),
            chat_id: self.chat_id.clone(),
            execution_id: self.execution_id.clone(),
            summary: self.summary.clone(),
            status: self.status,
            undoes: self.undoes,
            undone_by: self.undone_by,
            created_at: self.created_at,
            paths: self
                .paths
                .iter()
                .map(|path| ChangedPath {
                    path: path.path.to_string_lossy().into_owned(),
                    before: path.before.wire(),
                    after: path.after.as_ref().map(Snapshot::wire),
                    created_parent: path.created_parent,
                })
                .collect(),
        }
    }
}

/// What a new change records before its write.
pub(crate) struct NewChange<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub requester: &'a Requester,
    pub summary: &'a str,
    pub undoes: Option<i64>,
    pub created_at: DateTime<Utc>,
    /// Each path, whether it is a parent folder the call may create, and what it holds now.
    pub paths: &'a [(PathBuf, bool, Snapshot)],
    /// The blobs written for it: hash and bytes on disk.
    pub blobs: &'a [(String, u64)],
}

/// Inserts `change` as pending; returns its id.
pub(crate) fn insert_pending(
    transaction: &Transaction<'_>,
    change: &NewChange<'_>,
) -> Result<i64, StoreError> {
    let chat_id = match change.requester {
        Requester::Chat { chat_id } => Some(chat_id.clone()),
        _ => None,
    };
    let execution_id = match &chat_id {
        Some(chat_id) => running_execution(transaction, chat_id)?,
        None => None,
    };
    transaction.execute_cached(
        "INSERT INTO history_changes (call_id, tool, requester, client, chat_id, execution_id, \
             summary, status, undoes, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?9)",
        params![
            change.call_id,
            change.tool,
            to_json(change.requester)?,
            super::client_of(change.requester),
            chat_id,
            execution_id,
            change.summary,
            change.undoes,
            to_time(change.created_at),
        ],
    )?;
    let id = transaction.last_insert_rowid();
    let created = to_time(change.created_at);
    for (hash, stored) in change.blobs {
        transaction.execute_cached(
            "INSERT OR IGNORE INTO history_blobs (hash, stored, created_at) VALUES (?1, ?2, ?3)",
            params![hash, i64::try_from(*stored).unwrap_or(i64::MAX), created],
        )?;
    }
    for (position, (path, created_parent, before)) in change.paths.iter().enumerate() {
        transaction.execute_cached(
            "INSERT INTO history_paths (change_id, position, path, created_parent, before_kind, \
                 before_size, before_mode, before_hash, before_link, before_kept) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                id,
                position as i64,
                path.as_os_str().as_bytes(),
                created_parent,
                kind_name(before.kind),
                before.size.map(clamp),
                before.mode,
                before.hash,
                before.link,
                before.kept,
            ],
        )?;
    }
    Ok(id)
}

/// Records the after-states of pending change `id` (in the order of its paths) and marks it
/// done, with the blobs written for them. Paths that did not change are dropped; a change
/// that changed nothing is deleted. Returns whether it was kept, and the hashes of blobs no
/// row names any more (whose files the caller removes).
pub(crate) fn finish(
    transaction: &Transaction<'_>,
    id: i64,
    after: &[Snapshot],
    blobs: &[(String, u64)],
    finished_at: DateTime<Utc>,
) -> Result<(bool, Vec<String>), StoreError> {
    let stored = load_paths(transaction, id)?;
    let created = to_time(finished_at);
    for (hash, bytes) in blobs {
        transaction.execute_cached(
            "INSERT OR IGNORE INTO history_blobs (hash, stored, created_at) VALUES (?1, ?2, ?3)",
            params![hash, clamp(*bytes), created],
        )?;
    }
    let mut changed = 0;
    for ((position, path), now) in stored.iter().enumerate().zip(after) {
        if path.before == *now {
            transaction.execute_cached(
                "DELETE FROM history_paths WHERE change_id = ?1 AND position = ?2",
                params![id, position as i64],
            )?;
            continue;
        }
        changed += 1;
        transaction.execute_cached(
            "UPDATE history_paths SET after_kind = ?3, after_size = ?4, after_mode = ?5, \
                 after_hash = ?6, after_link = ?7, after_kept = ?8 \
             WHERE change_id = ?1 AND position = ?2",
            params![
                id,
                position as i64,
                kind_name(now.kind),
                now.size.map(clamp),
                now.mode,
                now.hash,
                now.link,
                now.kept,
            ],
        )?;
    }
    if changed == 0 {
        transaction.execute_cached("DELETE FROM history_changes WHERE id = ?1", [id])?;
        let named = stored
            .iter()
            .filter_map(|path| path.before.hash.clone())
            .chain(blobs.iter().map(|(hash, _)| hash.clone()));
        return Ok((false, forget_unnamed_among(transaction, named)?));
    }
    transaction.execute_cached(
        "UPDATE history_changes SET status = 'done', finished_at = ?2 WHERE id = ?1",
        params![id, created],
    )?;
    Ok((true, Vec::new()))
}

/// Adds the rows of `blobs` (hash and bytes on disk) not there yet.
pub(crate) fn add_blobs(
    transaction: &Transaction<'_>,
    blobs: &[(String, u64)],
    created_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let created = to_time(created_at);
    let mut statement = transaction.prepare_cached(
        "INSERT OR IGNORE INTO history_blobs (hash, stored, created_at) VALUES (?1, ?2, ?3)",
    )?;
    for (hash, bytes) in blobs {
        statement.execute(params![hash, clamp(*bytes), created])?;
    }
    Ok(())
}

/// Settles pending change `id` with the states its paths held before and after it (each
/// path, whether it is a parent folder created on the way, before, after), replacing the
/// before-states it was recorded with: paths that did not change are dropped, and a change
/// that changed nothing is deleted. The rows of the blobs they name must be there
/// ([`add_blobs`]). Returns whether the change was kept.
pub(crate) fn settle(
    transaction: &Transaction<'_>,
    id: i64,
    paths: &[(PathBuf, bool, Snapshot, Snapshot)],
    finished_at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    transaction.execute_cached("DELETE FROM history_paths WHERE change_id = ?1", [id])?;
    let mut insert = transaction.prepare_cached(
        "INSERT INTO history_paths (change_id, position, path, created_parent, before_kind, \
             before_size, before_mode, before_hash, before_link, before_kept, after_kind, \
             after_size, after_mode, after_hash, after_link, after_kept) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?;
    let mut position = 0i64;
    for (path, created_parent, before, after) in paths {
        if before == after {
            continue;
        }
        insert.execute(params![
            id,
            position,
            path.as_os_str().as_bytes(),
            created_parent,
            kind_name(before.kind),
            before.size.map(clamp),
            before.mode,
            before.hash,
            before.link,
            before.kept,
            kind_name(after.kind),
            after.size.map(clamp),
            after.mode,
            after.hash,
            after.link,
            after.kept,
        ])?;
        position += 1;
    }
    if position == 0 {
        transaction.execute_cached("DELETE FROM history_changes WHERE id = ?1", [id])?;
        return Ok(false);
    }
    transaction.execute_cached(
        "UPDATE history_changes SET status = 'done', finished_at = ?2 WHERE id = ?1",
        params![id, to_time(finished_at)],
    )?;
    Ok(true)
}

/// Marks `id` undone by `undo_id`; when `id` is itself an undo, the change it took back is
/// done again (its effect is back).
pub(crate) fn mark_undone(
    transaction: &Transaction<'_>,
    id: i64,
    undo_id: Option<i64>,
) -> Result<(), StoreError> {
    transaction.execute_cached(
        "UPDATE history_changes SET status = 'undone', undone_by = ?2 WHERE id = ?1",
        params![id, undo_id],
    )?;
    let undoes: Option<i64> = transaction
        .query_row(
            "SELECT undoes FROM history_changes WHERE id = ?1",
            [id],
            |row| row.get(0),
        )
        .optional()?
        .flatten();
    if let Some(original) = undoes {
        transaction.execute_cached(
            "UPDATE history_changes SET status = 'done', undone_by = NULL \
             WHERE id = ?1 AND status = 'undone'",
            [original],
        )?;
    }
    Ok(())
}

/// The chat's execution that runs now (the turn a change or a staged write of the chat belongs
/// to).
pub(crate) fn running_execution(
    connection: &Connection,
    chat_id: &str,
) -> Result<Option<String>, StoreError> {
    Ok(connection
        .query_row_cached(
            "SELECT id FROM executions WHERE chat_id = ?1 \
                 AND status IN ('queued', 'running', 'waiting_option', 'waiting_approval', \
                                'cancelling') \
             ORDER BY created_at DESC LIMIT 1",
            [chat_id],
            |row| row.get(0),
        )
        .optional()?)
}

const CHANGE_COLUMNS: &str = "id, call_id, tool, requester, client, chat_id, execution_id, \
     summary, status, undoes, undone_by, created_at";

/// The change `id`.
pub(crate) fn load(connection: &Connection, id: i64) -> Result<Option<StoredChange>, StoreError> {
    let sql = format!("SELECT {CHANGE_COLUMNS} FROM history_changes WHERE id = ?1");
    let change = connection
        .query_row_cached(&sql, [id], change_row)
        .optional()?
        .transpose()?;
    match change {
        Some(mut change) => {
            change.paths = load_paths(connection, change.id)?;
            Ok(Some(change))
        }
        None => Ok(None),
    }
}

/// Changes matching `filter` (SQL over `history_changes`, with `values`), newest first, at
/// most `limit`.
pub(crate) fn select(
    connection: &Connection,
    filter: &str,
    values: &[&dyn rusqlite::ToSql],
    limit: usize,
) -> Result<Vec<StoredChange>, StoreError> {
    let sql = format!(
        "SELECT {CHANGE_COLUMNS} FROM history_changes WHERE {filter} ORDER BY id DESC LIMIT {limit}"
    );
    let mut statement = connection.prepare_cached(&sql)?;
    let rows = statement.query_map(values, change_row)?;
    let mut changes = Vec::new();
    for row in rows {
        let mut change = row??;
        change.paths = load_paths(connection, change.id)?;
        changes.push(change);
    }
    Ok(changes)
}

type Row = Result<StoredChange, StoreError>;

fn change_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let requester: String = row.get(3)?;
    let status: String = row.get(8)?;
    let created_at: String = row.get(11)?;
    let (id, call_id, tool, client, chat_id, execution_id, summary, undoes, undone_by) = (
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(9)?,
        row.get(10)?,
    );
    Ok((|| {
        Ok(StoredChange {
            id,
            call_id,
            tool,
            requester: from_json("requester", &requester)?,
            client,
            chat_id,
            execution_id,
            summary,
            status: match status.as_str() {
                "pending" => ChangeStatus::Pending,
                "done" => ChangeStatus::Done,
                "undone" => ChangeStatus::Undone,
                other => return Err(StoreError::Corrupt(format!("history status `{other}`"))),
            },
            undoes,
            undone_by,
            created_at: from_time("created_at", &created_at)?,
            paths: Vec::new(),
        })
    })())
}

fn load_paths(connection: &Connection, id: i64) -> Result<Vec<StoredPath>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT path, created_parent, before_kind, before_size, before_mode, before_hash, \
             before_link, before_kept, after_kind, after_size, after_mode, after_hash, \
             after_link, after_kept \
         FROM history_paths WHERE change_id = ?1 ORDER BY position",
    )?;
    let rows = statement.query_map([id], |row| {
        let path: Vec<u8> = row.get(0)?;
        let before_kind: String = row.get(2)?;
        let after_kind: Option<String> = row.get(8)?;
        let before = (
            before_kind,
            row.get::<_, Option<i64>>(3)?,
            row.get::<_, Option<u32>>(4)?,
            row.get::<_, Option<String>>(5)?,
            row.get::<_, Option<Vec<u8>>>(6)?,
            row.get::<_, bool>(7)?,
        );
        let after = match after_kind {
            Some(kind) => Some((
                kind,
                row.get::<_, Option<i64>>(9)?,
                row.get::<_, Option<u32>>(10)?,
                row.get::<_, Option<String>>(11)?,
                row.get::<_, Option<Vec<u8>>>(12)?,
                row.get::<_, Option<bool>>(13)?.unwrap_or(false),
            )),
            None => None,
        };
        Ok((path, row.get::<_, bool>(1)?, before, after))
    })?;
    let mut paths = Vec::new();
    for row in rows {
        let (path, created_parent, before, after) = row?;
        paths.push(StoredPath {
            path: PathBuf::from(std::ffi::OsString::from_vec(path)),
            created_parent,
            before: snapshot(before)?,
            after: after.map(snapshot).transpose()?,
        });
    }
    Ok(paths)
}

type Columns = (
    String,
    Option<i64>,
    Option<u32>,
    Option<String>,
    Option<Vec<u8>>,
    bool,
);

fn snapshot((kind, size, mode, hash, link, kept): Columns) -> Result<Snapshot, StoreError> {
    Ok(Snapshot {
        kind: parse_kind(&kind)?,
        size: size.map(|size| u64::try_from(size).unwrap_or(0)),
        mode,
        hash,
        link,
        kept,
    })
}

fn kind_name(kind: PathKind) -> &'static str {
    match kind {
        PathKind::Absent => "absent",
        PathKind::File => "file",
        PathKind::Folder => "folder",
        PathKind::Symlink => "symlink",
        PathKind::Other => "other",
    }
}

fn parse_kind(text: &str) -> Result<PathKind, StoreError> {
    Ok(match text {
        "absent" => PathKind::Absent,
        "file" => PathKind::File,
        "folder" => PathKind::Folder,
        "symlink" => PathKind::Symlink,
        "other" => PathKind::Other,
        other => return Err(StoreError::Corrupt(format!("history path kind `{other}`"))),
    })
}

fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The announcement of the recorded change `id` (`None` when it is not there).
pub(crate) fn recorded_event(
    connection: &Connection,
    id: i64,
) -> Result<Option<souz_protocol::RuntimeEvent>, StoreError> {
    Ok(load(connection, id)?.map(
        |change| souz_protocol::RuntimeEvent::HistoryChangeRecorded {
            change_id: change.id,
            call_id: change.call_id,
            tool: change.tool,
            client: change.client,
            chat_id: change.chat_id,
            summary: change.summary,
            paths: change
                .paths
                .iter()
                .filter(|path| !path.created_parent)
                .map(|path| path.path.to_string_lossy().into_owned())
                .collect(),
            undoes: change.undoes,
        },
    ))
}

/// Deletes the rows of blobs no path names any more; returns their hashes (whose files the
/// caller removes after the commit).
pub(crate) fn forget_unnamed(transaction: &Transaction<'_>) -> Result<Vec<String>, StoreError> {
    let mut statement = transaction.prepare_cached(
        "DELETE FROM history_blobs WHERE NOT EXISTS \
             (SELECT 1 FROM history_paths WHERE before_hash = history_blobs.hash) \
         AND NOT EXISTS (SELECT 1 FROM history_paths WHERE after_hash = history_blobs.hash) \
         RETURNING hash",
    )?;
    let hashes = statement
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(hashes)
}

/// Forgets changes past the limits: older than `keep_before`, then the oldest until the kept
/// contents take at most `max_bytes`. Pending changes stay (their write may be under way).
/// Only the blobs the forgotten changes named are looked at again, so a prune costs what it
/// forgets, not the size of the history; `thorough` (at start) also forgets any blob row no
/// path names, whatever left it. Returns the hashes whose blobs go.
pub(crate) fn prune(
    transaction: &Transaction<'_>,
    keep_before: DateTime<Utc>,
    max_bytes: u64,
    thorough: bool,
) -> Result<Vec<String>, StoreError> {
    let mut gone = if thorough {
        forget_unnamed(transaction)?
    } else {
        Vec::new()
    };
    let old: Vec<i64> = {
        let mut statement = transaction.prepare_cached(
            "SELECT id FROM history_changes WHERE status != 'pending' AND created_at < ?1",
        )?;
        statement
            .query_map([to_time(keep_before)], |row| row.get(0))?
            .collect::<Result<_, _>>()?
    };
    for id in old {
        gone.extend(forget_change(transaction, id)?);
    }
    loop {
        let total: i64 = transaction.query_row_cached(
            "SELECT COALESCE(SUM(stored), 0) FROM history_blobs",
            [],
            |row| row.get(0),
        )?;
        if u64::try_from(total).unwrap_or(0) <= max_bytes {
            break;
        }
        let oldest: Option<i64> = transaction
            .query_row_cached(
                "SELECT id FROM history_changes WHERE status != 'pending' ORDER BY id LIMIT 1",
                [],
                |row| row.get(0),
            )
            .optional()?;
        let Some(oldest) = oldest else { break };
        gone.extend(forget_change(transaction, oldest)?);
    }
    Ok(gone)
}

/// Deletes change `id` (its paths go with it) and the rows of the blobs it named that no path
/// names any more; returns their hashes.
fn forget_change(transaction: &Transaction<'_>, id: i64) -> Result<Vec<String>, StoreError> {
    let named: Vec<String> = {
        let mut statement = transaction.prepare_cached(
            "SELECT before_hash FROM history_paths WHERE change_id = ?1 AND before_hash IS NOT NULL \
             UNION SELECT after_hash FROM history_paths WHERE change_id = ?1 AND after_hash IS NOT NULL",
        )?;
        statement
            .query_map([id], |row| row.get(0))?
            .collect::<Result<_, _>>()?
    };
    transaction.execute_cached("DELETE FROM history_changes WHERE id = ?1", [id])?;
    forget_unnamed_among(transaction, named)
}

/// Deletes the rows among the blobs `hashes` that no path names; returns their hashes.
fn forget_unnamed_among(
    transaction: &Transaction<'_>,
    hashes: impl IntoIterator<Item = String>,
) -> Result<Vec<String>, StoreError> {
    let mut gone = Vec::new();
    let mut forget = transaction.prepare_cached(
        "DELETE FROM history_blobs WHERE hash = ?1 \
         AND NOT EXISTS (SELECT 1 FROM history_paths WHERE before_hash = ?1) \
         AND NOT EXISTS (SELECT 1 FROM history_paths WHERE after_hash = ?1) \
         RETURNING hash",
    )?;
    for hash in hashes {
        if let Some(hash) = forget
            .query_row([&hash], |row| row.get::<_, String>(0))
            .optional()?
        {
            gone.push(hash);
        }
    }
    Ok(gone)
}

/// Every hash a blob row names.
pub(crate) fn blob_hashes(connection: &Connection) -> Result<Vec<String>, StoreError> {
    let mut statement = connection.prepare_cached("SELECT hash FROM history_blobs")?;
    let hashes = statement
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(hashes)
}
