//! One undo of many changes (see [`super`]), at a cost that does not grow with transactions
//! and syncs per file:
//! 1. the undos' records, one per change taken back, are committed `pending` together, each
//!    with the before-states it will replace (what is on disk now, or what a newer undo of the
//!    batch leaves there), so a crash in the middle loses nothing ([`super::super::reconcile`]
//!    settles them);
//! 2. on the blocking pool, the file contents to write back are staged and synced once
//!    ([`super::staging`]), then each change is restored newest first — checked first again
//!    unless forced, and bracketed by looks at its paths that become its undo's states;
//! 3. one transaction settles every undo (its states, `done`, the change it took back marked
//!    `undone`) and drops the records of undos never reached.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use souz_protocol::RuntimeEvent;
use souz_protocol::history::{PathKind, UndoConflict, UndoReport, UndoneChange};

use super::super::checkpoint::{CapturedPath, WrittenBlobs, blocking, with_parents};
use super::super::records::{self, NewChange, StoredChange};
use super::super::snapshot::Snapshot;
use super::super::{History, HistoryError};
use super::staging::Staging;
use super::{UndoOrder, conflicts_of, restore};
use crate::sandbox::Sandbox;
use crate::store::codec::now;

/// An undo's record: its id and the change it takes back.
#[derive(Debug, Clone, Copy)]
struct Pending {
    undo_id: i64,
    change_id: i64,
}

/// One undo done: its paths' states before and after.
struct Done {
    pending: Pending,
    paths: Vec<(PathBuf, bool, Snapshot, Snapshot)>,
}

/// What the restore of a batch did.
#[derive(Default)]
struct Restored {
    done: Vec<Done>,
    /// Undos restored but not looked at afterwards: left pending for the next start.
    unsettled: Vec<i64>,
    blobs: WrittenBlobs,
    notes: Vec<String>,
    conflicts: Vec<UndoConflict>,
    failure: Option<HistoryError>,
}

/// Undoes `changes` (newest first), each recorded as an undo of its own.
pub(super) async fn undo_all(
    history: &History,
    sandbox: Arc<Sandbox>,
    changes: Vec<StoredChange>,
    order: &UndoOrder,
) -> Result<UndoReport, HistoryError> {
    let changes = Arc::new(changes);
    let (report, unnamed, failure) = {
        let _shared = history.inner.blob_lock.read().await;
        let pending = record_pending(history, &sandbox, &changes, order).await?;
        let restoring = (
            history.clone(),
            Arc::clone(&sandbox),
            Arc::clone(&changes),
            pending.clone(),
        );
        let force = order.force;
        let restored = blocking(move || {
            let (history, sandbox, changes, pending) = restoring;
            Ok(restore_all(&history, &sandbox, &changes, &pending, force))
        })
        .await?;
        let Restored {
            done,
            unsettled,
            blobs,
            notes,
            conflicts,
            failure,
        } = restored;
        let reached: Vec<i64> = done
            .iter()
            .map(|done| done.pending.undo_id)
            .chain(unsettled)
            .collect();
        let unreached: Vec<i64> = pending
            .iter()
            .map(|pending| pending.undo_id)
            .filter(|id| !reached.contains(id))
            .collect();
        let (client, forced) = (crate::history::client_of(&order.requester), order.force);
        let (undone, unnamed) = history
            .write_announcing(move |transaction| {
                records::add_blobs(transaction, &blobs, now())?;
                let mut undone = Vec::with_capacity(done.len());
                let mut events = Vec::with_capacity(done.len() + 1);
                for done in &done {
                    let Pending { undo_id, change_id } = done.pending;
                    let kept = records::settle(transaction, undo_id, &done.paths, now())?;
                    records::mark_undone(transaction, change_id, kept.then_some(undo_id))?;
                    if kept {
                        events.extend(records::recorded_event(transaction, undo_id)?);
                    }
                    undone.push(UndoneChange {
                        change_id,
                        undo_id: if kept { undo_id } else { 0 },
                    });
                }
                for id in unreached {
                    transaction.execute("DELETE FROM history_changes WHERE id = ?1", [id])?;
                }
                if !undone.is_empty() {
                    events.push(RuntimeEvent::HistoryUndone {
                        client,
                        undone: undone.clone(),
                        forced,
                    });
                }
                Ok(((undone, records::forget_unnamed(transaction)?), events))
            })
            .await?;
        let report = UndoReport {
            undone,
            conflicts,
            notes,
        };
        (report, unnamed, failure)
    };
    if !unnamed.is_empty() {
        history.remove_unnamed(unnamed).await?;
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(report),
    }
}

/// Commits one pending undo per change, with the before-states each will replace.
async fn record_pending(
    history: &History,
    sandbox: &Arc<Sandbox>,
    changes: &Arc<Vec<StoredChange>>,
    order: &UndoOrder,
) -> Result<Vec<Pending>, HistoryError> {
    let predicting = (history.clone(), Arc::clone(sandbox), Arc::clone(changes));
    let (predicted, blobs) = blocking(move || {
        let (history, sandbox, changes) = predicting;
        Ok(predict(&history, &sandbox, &changes))
    })
    .await?;
    let changes = Arc::clone(changes);
    let requester = order.requester.clone();
    let pending = history
        .store()
        .write(move |transaction| {
            let created_at = now();
            let mut pending = Vec::with_capacity(changes.len());
            for (index, (change, paths)) in changes.iter().zip(&predicted).enumerate() {
                let call_id = uuid::Uuid::now_v7().to_string();
                let summary = format!("Undo change {}: {}", change.id, change.summary);
                let undo_id = records::insert_pending(
                    transaction,
                    &NewChange {
                        call_id: &call_id,
                        tool: "Undo",
                        requester: &requester,
                        summary: &summary,
                        undoes: Some(change.id),
                        created_at,
                        paths,
                        blobs: if index == 0 { &blobs[..] } else { &[] },
                    },
                )?;
                pending.push(Pending {
                    undo_id,
                    change_id: change.id,
                });
            }
            Ok::<_, crate::store::StoreError>(pending)
        })
        .await?;
    Ok(pending)
}

/// Each undo's paths and the states it will replace: what is on disk now, or — for a path a
/// newer change of the batch also touched — what that change's undo leaves there.
fn predict(
    history: &History,
    sandbox: &Sandbox,
    changes: &[StoredChange],
) -> (Vec<Vec<CapturedPath>>, WrittenBlobs) {
    let mut expected: HashMap<PathBuf, Snapshot> = HashMap::new();
    let mut predicted = Vec::with_capacity(changes.len());
    let mut blobs = Vec::new();
    for change in changes {
        let named: Vec<PathBuf> = change.paths.iter().map(|path| path.path.clone()).collect();
        let listed = with_parents(sandbox, &named);
        let mut paths = Vec::with_capacity(listed.len());
        for (path, parent) in listed {
            let before = match expected.get(&path) {
                Some(snapshot) => snapshot.clone(),
                // A path that cannot be looked at now (under what is a file now, say) holds
                // nothing to keep; what it holds once the newer undos are done is looked at
                // then, before its own restore.
                None => match history.capture_all(sandbox, &[(path.clone(), parent)]) {
                    Ok((mut captured, written)) => {
                        blobs.extend(written);
                        captured
                            .pop()
                            .map_or_else(Snapshot::absent, |(_, _, snapshot)| snapshot)
                    }
                    Err(_) => Snapshot::absent(),
                },
            };
            paths.push((path, parent, before));
        }
        for path in &change.paths {
            expected.insert(path.path.clone(), path.before.clone());
        }
        predicted.push(paths);
    }
    (predicted, blobs)
}

/// Restores `changes` newest first (see the module header); stops at the first conflict
/// (unless `force`) or failure.
fn restore_all(
    history: &History,
    sandbox: &Arc<Sandbox>,
    changes: &[StoredChange],
    pending: &[Pending],
    force: bool,
) -> Restored {
    let staging = RefCell::new(stage(history, sandbox, changes));
    let mut restored = Restored::default();
    for (change, pending) in changes.iter().zip(pending) {
        if !force {
            match conflicts_of(history, sandbox, std::slice::from_ref(change)) {
                Ok(found) if found.is_empty() => {}
                Ok(found) => {
                    restored.conflicts = found;
                    break;
                }
                Err(error) => {
                    restored.failure = Some(error);
                    break;
                }
            }
        }
        let named: Vec<PathBuf> = change.paths.iter().map(|path| path.path.clone()).collect();
        let listed = with_parents(sandbox, &named);
        let before = match history.capture_all(sandbox, &listed) {
            Ok((before, written)) => {
                restored.blobs.extend(written);
                before
            }
            Err(error) => {
                restored.failure = Some(error);
                break;
            }
        };
        let outcome = restore::restore(history, sandbox, change, &staging);
        match history.capture_all(sandbox, &listed) {
            Ok((after, written)) => {
                restored.blobs.extend(written);
                restored.done.push(Done {
                    pending: *pending,
                    paths: before
                        .into_iter()
                        .zip(after)
                        .map(|((path, parent, before), (_, _, after))| {
                            (path, parent, before, after)
                        })
                        .collect(),
                });
            }
            Err(error) => {
                restored.unsettled.push(pending.undo_id);
                restored.failure = Some(error);
                break;
            }
        }
        match outcome {
            Ok(notes) => restored.notes.extend(notes),
            Err(error) => {
                restored.failure = Some(error);
                break;
            }
        }
    }
    staging.into_inner().finish();
    restored
}

/// Stages the kept file contents the batch writes back (those no other path of the batch
/// contains, see [`Staging`]) and syncs them once.
fn stage(history: &History, sandbox: &Sandbox, changes: &[StoredChange]) -> Staging {
    let mut staging = Staging::default();
    let beneath = sandbox.beneath();
    let limit = history.limits().max_file_bytes;
    let all: Vec<&PathBuf> = changes
        .iter()
        .flat_map(|change| change.paths.iter().map(|path| &path.path))
        .collect();
    for path in changes.iter().flat_map(|change| &change.paths) {
        let before = &path.before;
        let Some(hash) = before.hash.as_deref() else {
            continue;
        };
        let contained = all
            .iter()
            .any(|other| **other != path.path && path.path.starts_with(other));
        if path.created_parent || before.kind != PathKind::File || !before.kept || contained {
            continue;
        }
        if let Ok(content) = history.blobs().get(hash, limit) {
            let mode = before.mode.unwrap_or(0o644);
            staging.stage(&beneath, &path.path, (hash, mode, &content));
        }
    }
    staging.sync_staged();
    staging
}
