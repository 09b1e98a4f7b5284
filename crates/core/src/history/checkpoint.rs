//! Recording one change around its write: [`History::begin`] before (the before-states kept,
//! the change committed `pending`), [`History::finish`] after (the after-states kept, the
//! change `done`, or dropped when nothing changed). The gate calls both around a file tool's
//! run; an undo calls them around its own restore, so it is recorded like any change.
//!
//! The paths recorded are the ones named (the plan's `Write` and `Delete` targets) and every
//! missing folder above them inside their root: a tool may create those on the way, and an
//! undo removes them again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use souz_protocol::Requester;

use super::records::{self, NewChange};
use super::snapshot::{Snapshot, capture};
use super::{History, HistoryError};
use crate::approvals::CallTarget;
use crate::sandbox::{Access, Sandbox};
use crate::store::codec::now;

/// The blobs written for a capture: each hash and the bytes it takes on disk.
pub(crate) type WrittenBlobs = Vec<(String, u64)>;

/// A path, whether it is a parent folder the call may create, and what it holds.
pub(crate) type CapturedPath = (PathBuf, bool, Snapshot);

/// Prune the history once every this many recorded changes.
const PRUNE_EVERY: i64 = 32;

/// What a change to record is.
#[derive(Debug, Clone)]
pub(crate) struct Checkpoint {
    /// The gate's call id (an undo's own id).
    pub call_id: String,
    /// The tool (`Undo` for an undo).
    pub tool: String,
    /// Who asked.
    pub requester: Requester,
    /// What it does, in one line.
    pub summary: String,
    /// The paths it may change.
    pub paths: Vec<PathBuf>,
    /// For an undo: the change it takes back.
    pub undoes: Option<i64>,
}

/// A change recorded as pending, whose write is under way.
#[derive(Debug, Clone)]
pub(crate) struct Checkpointed {
    /// The change's id.
    pub id: i64,
    /// Its paths, in order (parent folders included).
    pub paths: Vec<PathBuf>,
}

/// The paths a planned call may change: its `Write` and `Delete` path targets. Commands are
/// left out (their targets name only the folder they run in; what they write is unknown).
pub(crate) fn changed_paths(targets: &[CallTarget]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for target in targets {
        if let CallTarget::Path {
            path,
            access: Access::Write | Access::Delete,
            ..
        } = target
            && !paths.contains(path)
        {
            paths.push(path.clone());
        }
    }
    paths
}

impl History {
    /// Keeps the before-states of `checkpoint`'s paths and commits the change as pending.
    pub(crate) async fn begin(
        &self,
        sandbox: Arc<Sandbox>,
        checkpoint: Checkpoint,
    ) -> Result<Checkpointed, HistoryError> {
        let _shared = self.inner.blob_lock.read().await;
        let history = self.clone();
        let requested = checkpoint.paths.clone();
        let (paths, blobs) =
            blocking(move || history.capture_all(&sandbox, &with_parents(&sandbox, &requested)))
                .await?;
        let ordered: Vec<PathBuf> = paths.iter().map(|(path, _, _)| path.clone()).collect();
        let id = self
            .store()
            .write(move |transaction| {
                records::insert_pending(
                    transaction,
                    &NewChange {
                        call_id: &checkpoint.call_id,
                        tool: &checkpoint.tool,
                        requester: &checkpoint.requester,
                        summary: &checkpoint.summary,
                        undoes: checkpoint.undoes,
                        created_at: now(),
                        paths: &paths,
                        blobs: &blobs,
                    },
                )
            })
            .await?;
        #[cfg(debug_assertions)]
        super::crash_point::reached(super::crash_point::CrashPoint::AfterCheckpoint);
        Ok(Checkpointed { id, paths: ordered })
    }

    /// Keeps the after-states of `change`'s paths and marks it done (or drops it when nothing
    /// changed). Returns whether the change was kept.
    pub(crate) async fn finish(
        &self,
        sandbox: Arc<Sandbox>,
        change: &Checkpointed,
    ) -> Result<bool, HistoryError> {
        #[cfg(debug_assertions)]
        super::crash_point::reached(super::crash_point::CrashPoint::AfterWrite);
        let (kept, unnamed) = {
            let _shared = self.inner.blob_lock.read().await;
            let history = self.clone();
            let paths = change.paths.clone();
            let (after, blobs) = blocking(move || history.capture_after(&sandbox, &paths)).await?;
            let id = change.id;
            self.write_announcing(move |transaction| {
                let (kept, unnamed) = records::finish(transaction, id, &after, &blobs, now())?;
                let events = if kept {
                    records::recorded_event(transaction, id)?
                        .into_iter()
                        .collect()
                } else {
                    Vec::new()
                };
                Ok(((kept, unnamed), events))
            })
            .await?
        };
        if !unnamed.is_empty() {
            self.remove_unnamed(unnamed).await?;
        }
        if change.id % PRUNE_EVERY == 0 {
            self.prune_in_background();
        }
        Ok(kept)
    }

    /// Applies the limits on a task of its own, so that the call whose change came due does
    /// not wait for it (a prune scans every blob); at most one runs at a time.
    fn prune_in_background(&self) {
        use std::sync::atomic::Ordering;
        if self.inner.pruning.swap(true, Ordering::AcqRel) {
            return;
        }
        let history = self.clone();
        self.tasks().spawn_to_end(async move {
            if let Err(error) = history.prune().await {
                tracing::warn!(%error, "could not prune the file history");
            }
            history.inner.pruning.store(false, Ordering::Release);
        });
    }

    /// What each of `paths` holds now, with the blobs written for the files among them.
    fn capture_after(
        &self,
        sandbox: &Sandbox,
        paths: &[PathBuf],
    ) -> Result<(Vec<Snapshot>, WrittenBlobs), HistoryError> {
        let listed: Vec<(PathBuf, bool)> = paths.iter().map(|path| (path.clone(), false)).collect();
        let (captured, blobs) = self.capture_all(sandbox, &listed)?;
        Ok((
            captured
                .into_iter()
                .map(|(_, _, snapshot)| snapshot)
                .collect(),
            blobs,
        ))
    }

    /// Captures each path (keeping the contents of files under the limit as blobs).
    pub(crate) fn capture_all(
        &self,
        sandbox: &Sandbox,
        paths: &[(PathBuf, bool)],
    ) -> Result<(Vec<CapturedPath>, WrittenBlobs), HistoryError> {
        let beneath = sandbox.beneath();
        let limit = self.limits().max_file_bytes;
        let mut captured = Vec::with_capacity(paths.len());
        let mut blobs = Vec::new();
        for (path, created_parent) in paths {
            let taken = capture(&beneath, path, limit).map_err(|error| HistoryError::Path {
                path: sandbox.display(path),
                message: error.to_string(),
            })?;
            if let (Some(content), Some(hash)) = (&taken.content, &taken.snapshot.hash) {
                let stored = self.blobs().put(hash, content)?;
                blobs.push((hash.clone(), stored));
            }
            captured.push((path.clone(), *created_parent, taken.snapshot));
        }
        Ok((captured, blobs))
    }

    /// The files among `targets` a call would change without a way back (over
    /// `max_file_bytes`), with their sizes: the gate says so in the plan a person approves.
    pub(crate) fn unrestorable_files(
        &self,
        targets: &[CallTarget],
        sandbox: &Sandbox,
    ) -> Vec<(PathBuf, u64)> {
        let limit = self.limits().max_file_bytes;
        let beneath = sandbox.beneath();
        changed_paths(targets)
            .into_iter()
            .filter_map(|path| {
                let stat = beneath.stat(&path).ok()?;
                let size = u64::try_from(stat.st_size).unwrap_or(0);
                let regular = rustix::fs::FileType::from_raw_mode(stat.st_mode as _)
                    == rustix::fs::FileType::RegularFile;
                (regular && size > limit).then_some((path, size))
            })
            .collect()
    }
}

/// `paths`, each followed by its missing ancestors inside its root (deepest last), marked as
/// parents.
pub(crate) fn with_parents(sandbox: &Sandbox, paths: &[PathBuf]) -> Vec<(PathBuf, bool)> {
    let beneath = sandbox.beneath();
    let mut listed: Vec<(PathBuf, bool)> = paths.iter().map(|path| (path.clone(), false)).collect();
    for path in paths {
        let Some(root) = sandbox
            .roots()
            .iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
        else {
            continue;
        };
        let mut missing = Vec::new();
        let mut ancestor: &Path = path;
        while let Some(parent) = ancestor.parent() {
            if parent == root.as_path() || !parent.starts_with(root) {
                break;
            }
            match beneath.stat(parent) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    missing.push(parent.to_path_buf());
                }
                _ => break,
            }
            ancestor = parent;
        }
        for folder in missing.into_iter().rev() {
            if !listed.iter().any(|(listed, _)| *listed == folder) {
                listed.push((folder, true));
            }
        }
    }
    listed
}

/// Runs filesystem work on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, HistoryError> + Send + 'static,
) -> Result<T, HistoryError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| HistoryError::Task(error.to_string()))?
}
