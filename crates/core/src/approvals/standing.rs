//! Standing consent asked ahead of any call. [`Approvals::ask_standing`] stores one pending
//! approval for a tool name (a skill bundle's, when it is installed) and returns at once; a task
//! waits for the decision and, on approval, writes the standing allow grant
//! ([`Approvals::grant_standing`]) before the ask counts as settled. A call of that tool in the
//! meantime waits on the same approval ([`Approvals::standing_decision`]) instead of asking a
//! second time.
//!
//! Invariants: at most one open ask per tool (asking again while one is open returns the open
//! one); the grant exists before anyone waiting hears "approved"; a denial or an expiry writes
//! nothing and ends the ask, so the next call of the tool asks again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};

use tokio::sync::watch;

use super::{Approvals, NewApproval, RequestError, Resolution};
use crate::store::StoreError;

/// An open ask: its approval and whether it ended in a recorded consent.
pub(crate) struct Asked {
    approval_id: String,
    settled: watch::Receiver<Option<bool>>,
    /// Calls waiting on it now.
    waiters: Arc<AtomicUsize>,
}

/// One call counted as waiting on an ask while it lives.
struct Waiting(Arc<AtomicUsize>);

impl Waiting {
    fn new(waiters: &Arc<AtomicUsize>) -> Self {
        waiters.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(waiters))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Approvals {
    fn standing(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Asked>> {
        self.inner
            .standing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks, without waiting for the answer, for a standing consent to every call of
    /// `new.tool`; the id of the pending approval (the open one if that tool has one already).
    /// `record` stores the call row the approval refers to (as [`Approvals::request_with`]'s
    /// prelude); `settle` records its end, given whether the consent was recorded.
    pub(crate) async fn ask_standing<F, S>(
        &self,
        new: NewApproval,
        record: F,
        settle: S,
    ) -> Result<String, RequestError>
    where
        F: FnOnce(&rusqlite::Transaction<'_>, &str) -> Result<(), StoreError> + Send + 'static,
        S: FnOnce(&rusqlite::Transaction<'_>, bool) -> Result<(), StoreError> + Send + 'static,
    {
        let tool = new.tool.clone();
        if let Some(asked) = self.standing().get(&tool) {
            return Ok(asked.approval_id.clone());
        }
        let mut pending = self.request_with(new, record).await?;
        let id = pending.approval.id.clone();
        let (sender, settled) = watch::channel(None);
        self.standing().insert(
            tool.clone(),
            Asked {
                approval_id: id.clone(),
                settled,
                waiters: Arc::default(),
            },
        );
        // Weak: a pending ask does not keep a stopped service alive (its waiter then drops,
        // which resolves the approval as withdrawn). On the runtime's tasks: shutdown drops the
        // wait the same way, and waits for a settlement being written.
        let inner = Arc::downgrade(&self.inner);
        let approval_id = id.clone();
        self.tasks().spawn(async move {
            let resolution = pending.resolved().await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let approvals = Approvals { inner };
            let approved = match resolution {
                Resolution::Approved(_) => {
                    match approvals
                        .grant_standing(&tool, Some(approval_id.clone()))
                        .await
                    {
                        Ok(_) => true,
                        Err(error) => {
                            tracing::warn!(%error, tool, "could not record a standing consent");
                            false
                        }
                    }
                }
                Resolution::Denied(_) | Resolution::Expired(_) => false,
            };
            let recorded = approvals
                .inner
                .store
                .write(move |transaction| settle(transaction, approved))
                .await;
            if let Err(error) = recorded {
                tracing::warn!(%error, tool, "could not record how a consent ended");
            }
            {
                let mut standing = approvals.standing();
                if standing
                    .get(&tool)
                    .is_some_and(|asked| asked.approval_id == approval_id)
                {
                    standing.remove(&tool);
                }
            }
            let _ = sender.send(Some(approved));
        });
        Ok(id)
    }

    /// If a standing consent to `tool` is being asked, waits for it to settle: `Some(true)`
    /// once approved and recorded, `Some(false)` if denied or expired; `None` when nothing is
    /// being asked.
    pub(crate) async fn standing_decision(&self, tool: &str) -> Option<bool> {
        let (mut settled, _waiting) = self
            .standing()
            .get(tool)
            .map(|asked| (asked.settled.clone(), Waiting::new(&asked.waiters)))?;
        let approved = settled
            .wait_for(Option::is_some)
            .await
            .map(|settled| *settled == Some(true))
            .unwrap_or(false);
        Some(approved)
    }

    /// How many calls wait on the open ask for `tool` now (tests decide once one waits).
    #[cfg(test)]
    pub(crate) fn standing_waiters(&self, tool: &str) -> usize {
        self.standing()
            .get(tool)
            .map_or(0, |asked| asked.waiters.load(Ordering::SeqCst))
    }
}
