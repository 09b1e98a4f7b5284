//! The batch recorder: calls that changed nothing (an allowed read-only call, a refusal, an
//! invalid call) are answered at once and stored here, many per transaction: a batch waits
//! [`LINGER`] for more, so that one commit stores many. A call is forgotten by the
//! live table only after its row is committed; `flushed` waits for the rows.

use std::time::Duration;

use souz_protocol::Action;
use tokio::sync::{mpsc, oneshot};

use super::Gate;
use super::record::{Finished, end_event, started_event, store_end};
use crate::store::StoreError;

impl Gate {
    /// Waits until every call that ended so far is stored (read-your-writes for audits).
    pub async fn flushed(&self) {
        let (done, wait) = oneshot::channel();
        if self.inner.recorder.send(Recording::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }

    /// Stores ended calls in batches: one transaction per batch, then their events are
    /// announced and the calls forgotten. Runs until shutdown, then drains what is left.
    pub(super) async fn record_in_batches(
        &self,
        mut recordings: mpsc::UnboundedReceiver<Recording>,
    ) {
        loop {
            let first = tokio::select! {
                biased;
                recording = recordings.recv() => match recording {
                    Some(recording) => recording,
                    None => return,
                },
                () = self.inner.shutdown.cancelled() => break,
            };
            self.record_batch(first, &mut recordings).await;
        }
        // Shutdown: calls still ending (they were cancelled) arrive shortly; take them too.
        while let Ok(Some(recording)) =
            tokio::time::timeout(Duration::from_millis(200), recordings.recv()).await
        {
            self.record_batch(recording, &mut recordings).await;
        }
    }

    pub(super) async fn record_batch(
        &self,
        first: Recording,
        recordings: &mut mpsc::UnboundedReceiver<Recording>,
    ) {
        let mut batch = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        let mut lingered = false;
        loop {
            while let Some(recording) = next.take() {
                match recording {
                    Recording::Call(finished) => batch.push(*finished),
                    Recording::Flush(done) => flushes.push(done),
                }
                if batch.len() < MAX_BATCH {
                    next = recordings.try_recv().ok();
                }
            }
            // Wait a moment for more calls, so that one commit stores many (a reader waiting
            // for the rows has them at once).
            if lingered || batch.len() >= MAX_BATCH || !flushes.is_empty() {
                break;
            }
            lingered = true;
            tokio::time::sleep(LINGER).await;
            next = recordings.try_recv().ok();
        }
        let ids: Vec<String> = batch
            .iter()
            .map(|finished| finished.record.call_id.clone())
            .collect();
        if !batch.is_empty()
            && let Err(error) = self.persist(batch).await
        {
            tracing::error!(%error, calls = ids.len(), "could not record ended tool calls");
        }
        {
            let mut live = self.live();
            for id in &ids {
                live.remove(id);
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }

    pub(super) async fn persist(&self, batch: Vec<Finished>) -> Result<(), StoreError> {
        self.inner
            .events
            .publish_with(move |transaction| {
                let mut events = Vec::new();
                for finished in &batch {
                    let (outcome, event) = end_event(finished);
                    if finished.record.decision == Some(Action::Allow) {
                        events.push(started_event(&finished.record));
                    }
                    store_end(transaction, finished, outcome)?;
                    events.push(event);
                }
                Ok::<_, StoreError>(((), events))
            })
            .await
            .map(|_| ())
    }
}

/// What the batch recorder receives.
pub(super) enum Recording {
    /// An ended call to store.
    Call(Box<Finished>),
    /// Answer once everything before it is stored.
    Flush(oneshot::Sender<()>),
}

/// Most calls stored in one transaction.
pub(super) const MAX_BATCH: usize = 256;

/// How long a batch waits for more calls before it is stored (unless a reader waits for it).
const LINGER: Duration = Duration::from_millis(2);
