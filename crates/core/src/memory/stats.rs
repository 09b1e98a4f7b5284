//! Retrieval counts kept off the recall path: a recall notes the facts it chose and returns;
//! one background task at a time writes the noted ids to `memory_fact_stats` in a single
//! transaction, [`FLUSH_DELAY`] after the first of them, so a burst of recalls costs one write
//! instead of one each (and a write does not land in the middle of the next recall, which
//! would also empty the readers' page caches).
//!
//! Invariants: the counts are advisory (nothing decides on them), so a failed write is logged
//! and dropped. The flush task runs on the runtime's [`Tasks`]: when shutdown begins it writes
//! at once instead of waiting out the delay, and shutdown waits for it before the database
//! closes, so ids noted before a clean stop are counted. At most one flush task runs per
//! [`RetrievalLog`]; an id noted while one runs is written by it or by the next.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::facts;
use crate::store::{Store, StoreError};
use crate::tasks::Tasks;

/// How long noted ids wait before they are written.
pub(crate) const FLUSH_DELAY: Duration = Duration::from_secs(1);

/// Retrieved fact ids waiting to be counted.
#[derive(Debug, Default)]
pub(crate) struct RetrievalLog {
    pending: Mutex<Vec<String>>,
    scheduled: AtomicBool,
}

impl RetrievalLog {
    /// Notes a retrieval of `ids` and makes sure a flush task on `tasks` will write it.
    pub(crate) fn note(self: &Arc<Self>, store: &Store, tasks: &Tasks, ids: Vec<String>) {
        if ids.is_empty() {
            return;
        }
        if let Ok(mut pending) = self.pending.lock() {
            pending.extend(ids);
        }
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let (log, store) = (Arc::clone(self), store.clone());
        let stopping = tasks.stopping().clone();
        tasks.spawn_to_end(async move {
            tokio::select! {
                () = tokio::time::sleep(FLUSH_DELAY) => {}
                () = stopping.cancelled() => {}
            }
            log.flush(&store).await;
        });
    }

    /// Writes every noted id (the scheduled flag is cleared first, so ids noted during the
    /// write schedule another flush).
    pub(crate) async fn flush(&self, store: &Store) {
        self.scheduled.store(false, Ordering::Release);
        let ids = self
            .pending
            .lock()
            .map(|mut pending| std::mem::take(&mut *pending))
            .unwrap_or_default();
        if ids.is_empty() {
            return;
        }
        if let Err(error) = store
            .write(move |tx| Ok::<_, StoreError>(facts::record_retrieval(tx, &ids)?))
            .await
        {
            tracing::warn!(%error, "could not record memory retrieval stats");
        }
    }
}
