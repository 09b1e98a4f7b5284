//! The gate's part in the history of file changes (see [`crate::history`]): a plan that would
//! change a file the history cannot keep says so before anyone approves it, and a call that
//! changes files is recorded around its run — before-states committed before the tool runs,
//! after-states once it ended.
//!
//! Invariants:
//! - Only calls whose plan names paths to write or remove are recorded, and never commands
//!   (`Exec`): a command's plan names only its folder, not what it writes.
//! - A call whose checkpoint cannot be recorded does not run (it fails, saying why).
//! - A recorded call's change is settled as soon as its tool's work is over, however the call
//!   ends (done, failed, cancelled): a tool that overstays its cancellation is let finish by a
//!   runtime task, which then settles it. Only a process that dies (or stops) first leaves it
//!   pending, for the next start to settle against the disk.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use souz_protocol::Risk;
use tokio_util::sync::CancellationToken;

use super::Gate;
use super::drive::{CANCEL_GRACE, unwound};
use super::record::Record;
use crate::history::checkpoint::changed_paths;
use crate::history::{Checkpoint, Checkpointed};
use crate::sandbox::Sandbox;
use crate::tools::{Plan, ToolError, ToolOutput, localized, words};

/// How long a tool that overstayed its cancellation is let finish before its change is
/// recorded as the disk holds it then.
const SETTLE_LIMIT: Duration = Duration::from_secs(60);

impl Gate {
    /// Adds to `plan`'s summary the files it would change that the history cannot keep.
    pub(super) fn note_unrestorable(&self, plan: &mut Plan, sandbox: &Sandbox) {
        let Some(history) = self.history() else {
            return;
        };
        let language = self.language();
        let limit = words::size(history.limits().max_file_bytes, language);
        for (path, size) in history.unrestorable_files(&plan.targets, sandbox) {
            let shown = sandbox.display(&path);
            let size = words::size(size, language);
            plan.summary.push_str(&localized!(
                language,
                " (not restorable: {shown} is {size}, over the history's limit of {limit})",
                " (отменить не получится: {shown} весит {size}, больше предела истории в {limit})"
            ));
        }
    }

    /// `plan`'s summary, once [`Gate::note_unrestorable`] added to it.
    pub(super) fn noted_summary(&self, plan: &mut Plan, sandbox: &Sandbox) -> String {
        self.note_unrestorable(plan, sandbox);
        plan.summary.clone()
    }

    /// Records the before-states of what `plan` changes, when the call is one the history
    /// records. `Err` says why the call must not run.
    pub(super) async fn checkpoint(
        &self,
        record: &Record,
        risk: Option<Risk>,
        plan: &Plan,
        sandbox: &Arc<Sandbox>,
    ) -> Result<Option<Checkpointed>, String> {
        let Some(history) = self.history() else {
            return Ok(None);
        };
        let paths = changed_paths(&plan.targets);
        if paths.is_empty() || matches!(risk, Some(Risk::Exec | Risk::ReadOnly)) {
            return Ok(None);
        }
        let checkpoint = Checkpoint {
            call_id: record.call_id.clone(),
            tool: record.request.tool.clone(),
            requester: record.request.requester.clone(),
            summary: record.summary.clone().unwrap_or_default(),
            paths,
            undoes: None,
        };
        match history.begin(Arc::clone(sandbox), checkpoint).await {
            Ok(checkpointed) => Ok(Some(checkpointed)),
            Err(error) => {
                tracing::error!(%error, call_id = %record.call_id, "could not record a file change before it");
                Err(format!(
                    "Souz could not record what this call changes ({error}), so it did not run: \
                     a change that cannot be taken back is not made silently."
                ))
            }
        }
    }

    /// Runs a recorded call's tool (`task`) like the drive's `guarded`, and records the
    /// after-states of its change as soon as the tool's work is over, however the call ends:
    /// done, failed, panicked, cancelled. A tool that overstays its cancellation may still be
    /// writing (its file work runs off the async runtime): the call ends cancelled at once and
    /// a runtime task lets the tool finish, then records what it did (bounded by
    /// [`SETTLE_LIMIT`]; at shutdown the next start settles it).
    pub(super) async fn run_recorded(
        &self,
        task: BoxFuture<'static, Result<ToolOutput, ToolError>>,
        checkpointed: Checkpointed,
        sandbox: Arc<Sandbox>,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let mut task = Box::pin(std::panic::AssertUnwindSafe(task).catch_unwind());
        let joined = tokio::select! {
            joined = &mut task => joined,
            () = cancel.cancelled() => {
                match tokio::time::timeout(CANCEL_GRACE, &mut task).await {
                    Ok(joined) => joined,
                    Err(_) => {
                        let gate = self.clone();
                        let shutdown = self.inner.shutdown.clone();
                        self.inner.tasks.spawn(async move {
                            tokio::select! {
                                _ = tokio::time::timeout(SETTLE_LIMIT, task) => {}
                                () = shutdown.cancelled() => return,
                            }
                            gate.settle_checkpoint(&checkpointed, sandbox).await;
                        });
                        return Err(ToolError::Cancelled);
                    }
                }
            }
        };
        self.settle_checkpoint(&checkpointed, sandbox).await;
        unwound(joined)
    }

    /// Records the after-states of a recorded call whose tool is over.
    async fn settle_checkpoint(&self, checkpointed: &Checkpointed, sandbox: Arc<Sandbox>) {
        let Some(history) = self.history() else {
            return;
        };
        if let Err(error) = history.finish(sandbox, checkpointed).await {
            tracing::error!(%error, change = checkpointed.id, "could not record a file change after it; the next start settles it");
        }
    }
}
