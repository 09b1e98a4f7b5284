//! Keeping history and disk in agreement: on start, the changes a killed process left
//! `pending` are settled against what the disk holds ([`History::reconcile`]), blob files no
//! row names are removed, and the limits are applied ([`History::prune`]).
//!
//! Invariants:
//! - A pending change has every before-state kept (they were committed before its write). If
//!   its paths still hold their before-states, the write never happened and the change is
//!   dropped; otherwise what they hold now is recorded as its after-state and it is done. Either
//!   way nothing on disk is left without its record, and no record claims a write that did
//!   not happen.
//! - Before a pending change is settled, what its write left half done is removed: Souz's own
//!   temporary siblings of its paths (`.<name>.souz-<id>.tmp`, the file tools' atomic writes
//!   and undo's staged contents, renamed into place only when whole). Only names of that exact
//!   shape next to a path the change names are touched; at start no write of this process
//!   runs, so none of them is in use.
//! - A pending change whose paths cannot be looked at (a root removed from the configuration)
//!   stays pending and is reported; it is never guessed.
//! - Blob files are removed only under the blob lock held alone, after their rows are gone.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::Duration;

use super::checkpoint::blocking;
use super::records;
use super::{History, HistoryError};
use crate::sandbox::Sandbox;
use crate::sandbox::beneath::walk::is_staging_name_of;
use crate::store::codec::now;

/// What [`History::reconcile`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// Pending changes whose write had happened: recorded as done.
    pub completed: usize,
    /// Pending changes whose write never happened: dropped.
    pub dropped: usize,
    /// Pending changes left pending (their paths could not be looked at).
    pub left: usize,
    /// Blob files no row named, removed.
    pub orphans: usize,
    /// Temporary files a write cut short left next to a pending change's paths, removed.
    pub leftovers: usize,
}

impl History {
    /// Settles the pending changes of a process that died, removes unnamed blob files, and
    /// prunes. Run on start, before any call can begin a change.
    pub async fn reconcile(&self, sandbox: Arc<Sandbox>) -> Result<Reconciled, HistoryError> {
        let mut report = Reconciled::default();
        let pending = self
            .store()
            .read(|connection| records::select(connection, "status = 'pending'", &[], 10_000))
            .await?;
        for change in pending {
            let history = self.clone();
            let sandbox = Arc::clone(&sandbox);
            let paths: Vec<(PathBuf, bool)> = change
                .paths
                .iter()
                .map(|path| (path.path.clone(), path.created_parent))
                .collect();
            let captured = blocking(move || {
                let removed = remove_leftovers(&sandbox, &paths);
                Ok((removed, history.capture_all(&sandbox, &paths)?))
            })
            .await;
            let (now_held, blobs) = match captured {
                Ok((removed, captured)) => {
                    report.leftovers += removed;
                    captured
                }
                Err(error) => {
                    tracing::warn!(%error, change = change.id, "a pending file change cannot be checked; left pending");
                    report.left += 1;
                    continue;
                }
            };
            let after: Vec<_> = now_held
                .into_iter()
                .map(|(_, _, snapshot)| snapshot)
                .collect();
            let (id, undoes) = (change.id, change.undoes);
            let (kept, _) = self
                .store()
                .write(move |transaction| {
                    let (kept, unnamed) = records::finish(transaction, id, &after, &blobs, now())?;
                    // An undo whose restore happened: the change it took back is undone.
                    if let (true, Some(original)) = (kept, undoes) {
                        records::mark_undone(transaction, original, Some(id))?;
                    }
                    Ok::<_, crate::store::StoreError>((kept, unnamed))
                })
                .await?;
            if kept {
                report.completed += 1;
            } else {
                report.dropped += 1;
            }
        }
        report.orphans = self.remove_orphans().await?;
        self.prune_with(true).await?;
        Ok(report)
    }

    /// Removes the blob files of `hashes` that no row names (checked again under the blob lock
    /// held alone: a checkpoint may have named one meanwhile).
    pub(crate) async fn remove_unnamed(&self, hashes: Vec<String>) -> Result<(), HistoryError> {
        let _alone = self.inner.blob_lock.write().await;
        let unnamed = self
            .store()
            .read(move |connection| {
                let mut unnamed = Vec::new();
                for hash in hashes {
                    let named: bool = connection.query_row(
                        "SELECT EXISTS (SELECT 1 FROM history_blobs WHERE hash = ?1)",
                        [&hash],
                        |row| row.get(0),
                    )?;
                    if !named {
                        unnamed.push(hash);
                    }
                }
                Ok::<_, crate::store::StoreError>(unnamed)
            })
            .await?;
        let history = self.clone();
        blocking(move || {
            for hash in unnamed {
                history.blobs().remove(&hash)?;
            }
            Ok(())
        })
        .await
    }

    /// Removes blob files no row names (a process killed between a blob's write and its row's
    /// commit leaves one).
    async fn remove_orphans(&self) -> Result<usize, HistoryError> {
        let _alone = self.inner.blob_lock.write().await;
        let named: HashSet<String> = self
            .store()
            .read(records::blob_hashes)
            .await?
            .into_iter()
            .collect();
        let history = self.clone();
        blocking(move || {
            let mut removed = 0;
            for hash in history.blobs().all()? {
                if !named.contains(&hash) {
                    history.blobs().remove(&hash)?;
                    removed += 1;
                }
            }
            Ok(removed)
        })
        .await
    }

    /// Applies the limits: changes older than `keep_days` go, then the oldest until the kept
    /// contents fit `max_bytes`. Returns how many blobs were removed.
    pub async fn prune(&self) -> Result<usize, HistoryError> {
        self.prune_with(false).await
    }

    /// [`History::prune`]; `thorough` also forgets every blob row no path names (at start).
    async fn prune_with(&self, thorough: bool) -> Result<usize, HistoryError> {
        let _alone = self.inner.blob_lock.write().await;
        let limits = self.limits();
        let days = i64::try_from(limits.keep_days).unwrap_or(i64::MAX / 86_400_000);
        let keep_before = now() - Duration::try_days(days).unwrap_or(Duration::MAX);
        let gone = self
            .store()
            .write(move |transaction| {
                records::prune(transaction, keep_before, limits.max_bytes, thorough)
            })
            .await?;
        let history = self.clone();
        let count = gone.len();
        blocking(move || {
            for hash in gone {
                history.blobs().remove(&hash)?;
            }
            Ok(())
        })
        .await?;
        Ok(count)
    }
}

/// Removes the temporary siblings a write cut short left next to `paths` (see the module
/// header); returns how many.
fn remove_leftovers(sandbox: &Sandbox, paths: &[(PathBuf, bool)]) -> usize {
    let beneath = sandbox.beneath();
    let mut removed = 0;
    for (path, _) in paths {
        let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        let Ok(entries) = beneath.read_dir(folder) else {
            continue;
        };
        for entry in entries {
            if !is_staging_name_of(&entry.name, name) {
                continue;
            }
            match beneath.remove_all(&folder.join(&entry.name)) {
                Ok(()) => removed += 1,
                Err(error) => tracing::warn!(
                    %error,
                    path = %sandbox.display(&folder.join(&entry.name)),
                    "could not remove a temporary file a cut-short write left"
                ),
            }
        }
    }
    removed
}
