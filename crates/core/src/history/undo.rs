//! Undo: taking back recorded changes — one, a chat turn's, or a client's since a time —
//! newest first, each bringing its paths back to what they held before it, byte for byte and
//! with their permission bits.
//!
//! Invariants:
//! - Nothing is touched unless every path to restore still holds what Souz left there (the
//!   changes are checked together, newest first, each against the state the newer ones will
//!   leave). Otherwise the undo refuses and reports each path that changed with the three
//!   versions ([`conflicts`]); with `force` it restores anyway.
//! - An undo is a change like any other, one per change it takes back: recorded around its
//!   restore (pending with its before-states before anything is restored, done after), so
//!   whatever it replaces (a file someone changed since, with `force`) is kept, and the undo
//!   itself can be undone. A batch is recorded in two transactions and synced to disk twice,
//!   whatever its size ([`batch`], [`staging`]).
//! - A moved path is moved back; a trashed one comes back from the Trash (checked to be the
//!   same content, or the same tree), a file with kept content is written from it; a folder
//!   the change created is removed only when empty (else it is moved to the Trash, never
//!   deleted for good), a file Souz created is removed only when its content is kept.
//! - Every file operation goes beneath the sandbox's roots ([`crate::sandbox::beneath`]).
//!
//! It sits above `tools` (it moves things to and from the Trash and writes files atomically
//! with the file tools' own helpers); the rest of `history` sits below, for the gate.

mod batch;
mod conflicts;
mod restore;
mod staging;
pub mod tool;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use souz_protocol::Requester;
use souz_protocol::history::{ChangeStatus, HistoryChange, UndoReport, UndoSelection};

use super::checkpoint::blocking;
use super::records::{self, StoredChange};
use super::snapshot::{Snapshot, capture};
use super::{History, HistoryError};
use crate::sandbox::Sandbox;

/// Most changes one undo takes back.
pub const MAX_UNDO: usize = 1_000;
/// Most changes a listing returns.
pub const MAX_LISTED: usize = 500;

/// What to undo, and for whom.
#[derive(Debug, Clone)]
pub struct UndoOrder {
    /// Which changes.
    pub selection: UndoSelection,
    /// Restore anyway where a path changed since.
    pub force: bool,
    /// Who asks (recorded on the undo's own change).
    pub requester: Requester,
}

/// Which changes a listing shows.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    /// Only this client's.
    pub client: Option<String>,
    /// Only this execution's (turn's).
    pub execution_id: Option<String>,
    /// Only this call's.
    pub call_id: Option<String>,
    /// Only changes older than this id (paging, newest first).
    pub before_id: Option<i64>,
    /// At most this many (capped at [`MAX_LISTED`]).
    pub limit: usize,
}

impl History {
    /// Recorded changes, newest first.
    pub async fn list(&self, query: HistoryQuery) -> Result<Vec<HistoryChange>, HistoryError> {
        let limit = if query.limit == 0 {
            50
        } else {
            query.limit.min(MAX_LISTED)
        };
        let changes = self
            .store()
            .read(move |connection| {
                let mut filter = vec!["status != 'pending'".to_owned()];
                let mut values: Vec<Box<dyn rusqlite::ToSql>> = Vec::new();
                let mut add = |clause: &str, value: Box<dyn rusqlite::ToSql>| {
                    values.push(value);
                    filter.push(format!("{clause} ?{}", values.len()));
                };
                if let Some(client) = query.client {
                    add("client =", Box::new(client));
                }
                if let Some(execution) = query.execution_id {
                    add("execution_id =", Box::new(execution));
                }
                if let Some(call) = query.call_id {
                    add("call_id =", Box::new(call));
                }
                if let Some(before) = query.before_id {
                    add("id <", Box::new(before));
                }
                let refs: Vec<&dyn rusqlite::ToSql> = values.iter().map(AsRef::as_ref).collect();
                records::select(connection, &filter.join(" AND "), &refs, limit)
            })
            .await?;
        Ok(changes.iter().map(StoredChange::wire).collect())
    }

    /// Undoes the changes `order` selects (see the module header).
    pub async fn undo(
        &self,
        sandbox: Arc<Sandbox>,
        order: UndoOrder,
    ) -> Result<UndoReport, HistoryError> {
        let changes = self.select(order.selection.clone()).await?;
        if changes.is_empty() {
            return Err(HistoryError::NotFound(
                "no recorded change matches; nothing was undone".into(),
            ));
        }
        let conflicts = self.check(&sandbox, &changes).await?;
        if !conflicts.is_empty() && !order.force {
            return Ok(UndoReport {
                conflicts,
                ..UndoReport::default()
            });
        }
        let mut report = batch::undo_all(self, sandbox, changes, &order).await?;
        if report.conflicts.is_empty() {
            report.conflicts = conflicts;
        }
        Ok(report)
    }

    /// What an undo of `selection` would take back (newest first), and the paths that
    /// changed since Souz wrote them: what the approval of an undo shows.
    pub(crate) async fn preview(
        &self,
        sandbox: Arc<Sandbox>,
        selection: UndoSelection,
    ) -> Result<(Vec<StoredChange>, Vec<souz_protocol::history::UndoConflict>), HistoryError> {
        let changes = self.select(selection).await?;
        if changes.is_empty() {
            return Err(HistoryError::NotFound(
                "no recorded change matches; nothing would be undone".into(),
            ));
        }
        let conflicts = self.check(&sandbox, &changes).await?;
        Ok((changes, conflicts))
    }

    /// The done changes `selection` names, newest first.
    async fn select(&self, selection: UndoSelection) -> Result<Vec<StoredChange>, HistoryError> {
        let changes = self
            .store()
            .read(move |connection| match &selection {
                UndoSelection::Change { id } => {
                    Ok(records::load(connection, *id)?.into_iter().collect())
                }
                UndoSelection::Call { call_id } => {
                    records::select(connection, "call_id = ?1", &[call_id], MAX_UNDO)
                }
                UndoSelection::Turn { execution_id } => records::select(
                    connection,
                    "execution_id = ?1 AND status = 'done'",
                    &[execution_id],
                    MAX_UNDO,
                ),
                UndoSelection::Since { since, client } => {
                    let since = crate::store::codec::to_time(*since);
                    match client {
                        Some(client) => records::select(
                            connection,
                            "created_at >= ?1 AND client = ?2 AND status = 'done'",
                            &[&since, client],
                            MAX_UNDO,
                        ),
                        None => records::select(
                            connection,
                            "created_at >= ?1 AND status = 'done'",
                            &[&since],
                            MAX_UNDO,
                        ),
                    }
                }
            })
            .await?;
        if let Some(change) = changes
            .iter()
            .find(|change| change.status != ChangeStatus::Done)
        {
            let state = match change.status {
                ChangeStatus::Pending => "still being written",
                _ => "undone already",
            };
            return Err(HistoryError::Invalid(format!(
                "change {} is {state}; nothing was undone",
                change.id
            )));
        }
        Ok(changes)
    }

    /// The paths that changed since Souz wrote them, checking `changes` newest first, each
    /// against what the newer ones will leave.
    async fn check(
        &self,
        sandbox: &Arc<Sandbox>,
        changes: &[StoredChange],
    ) -> Result<Vec<souz_protocol::history::UndoConflict>, HistoryError> {
        let history = self.clone();
        let sandbox = Arc::clone(sandbox);
        let changes = changes.to_vec();
        blocking(move || conflicts_of(&history, &sandbox, &changes)).await
    }
}

/// See [`History::check`] (on the blocking pool already).
pub(super) fn conflicts_of(
    history: &History,
    sandbox: &Arc<Sandbox>,
    changes: &[StoredChange],
) -> Result<Vec<souz_protocol::history::UndoConflict>, HistoryError> {
    let beneath = sandbox.beneath();
    let limit = history.limits().max_file_bytes;
    let mut expected: HashMap<PathBuf, Snapshot> = HashMap::new();
    // Folders an undo of a newer change brings back whole (moved back, out of the Trash):
    // what is under them is known only once that is done.
    let mut returning: Vec<PathBuf> = Vec::new();
    let mut found = Vec::new();
    for change in changes {
        for path in &change.paths {
            let Some(after) = &path.after else { continue };
            let under_returning = returning
                .iter()
                .any(|folder| path.path != *folder && path.path.starts_with(folder));
            let current = match expected.get(&path.path) {
                Some(snapshot) => Some(snapshot.clone()),
                None if under_returning => None,
                None => {
                    let now = capture(&beneath, &path.path, limit)
                        .map_err(|error| HistoryError::Path {
                            path: sandbox.display(&path.path),
                            message: error.to_string(),
                        })?
                        .snapshot;
                    Some(now)
                }
            };
            // A parent folder the change created may hold new things: it stays then.
            if let Some(current) = current
                && !path.created_parent
                && !after.matches(&current)
            {
                found.push(conflicts::describe(
                    history, sandbox, change.id, path, &current,
                ));
            }
            expected.insert(path.path.clone(), path.before.clone());
            if path.before.kind == souz_protocol::history::PathKind::Folder
                && !after.matches(&path.before)
            {
                let folder = path.path.clone();
                expected.retain(|known, _| *known == folder || !known.starts_with(&folder));
                returning.push(folder);
            }
        }
    }
    Ok(found)
}
