//! What the gate remembers about a call while it runs ([`Record`]), and how its state
//! changes, its start and its end are published and stored (row, audit row and event in one
//! transaction).

use std::time::Duration;

use souz_protocol::{
    Action, DecisionSource, Outcome, Risk, RuntimeEvent, ToolCallStatus, ToolResult,
};
use tokio::sync::watch;

use super::{CallRequest, CallState, Gate, calls};
use crate::approvals::audit::{self, NewAuditEntry};
use crate::redact;
use crate::store::StoreError;
use crate::store::codec::now;

impl Gate {
    pub(super) fn advance(
        &self,
        record: &Record,
        status: ToolCallStatus,
        state: &watch::Sender<CallState>,
    ) {
        let _ = state.send(CallState {
            status,
            summary: record.summary.clone(),
            approval_id: record.approval_id.clone(),
            result: None,
            progress: None,
        });
    }

    pub(super) async fn start_running(&self, record: &Record, state: &watch::Sender<CallState>) {
        let event = started_event(record);
        let store_running = record.store_as(ToolCallStatus::Running);
        let approval_id = record.approval_id.clone();
        let stored = self
            .inner
            .events
            .publish_with(move |transaction| {
                store_running(transaction, approval_id.as_deref().unwrap_or_default())?;
                Ok::<_, StoreError>(((), vec![event]))
            })
            .await;
        if let Err(error) = stored {
            tracing::warn!(%error, "could not record that a tool call started");
        }
        self.advance(record, ToolCallStatus::Running, state);
    }

    pub(super) async fn finish(&self, finished: Finished) -> Result<(), StoreError> {
        let (outcome, event) = end_event(&finished);
        self.inner
            .events
            .publish_with(move |transaction| {
                store_end(transaction, &finished, outcome)?;
                Ok::<_, StoreError>(((), vec![event]))
            })
            .await
            .map(|_| ())
    }
}

/// The `tool.call.started` event of a call.
pub(super) fn started_event(record: &Record) -> RuntimeEvent {
    RuntimeEvent::ToolCallStarted {
        call_id: record.call_id.clone(),
        tool: record.request.tool.clone(),
        requester: record.request.requester.clone(),
        // Events are kept and fanned out to every follower: the summary is redacted like an
        // audit row (the pending approval, which a person decides on, keeps the whole text).
        summary: redact::redact_text(record.summary.as_deref().unwrap_or_default()),
    }
}

/// How a call ended, and its `tool.call.finished` or `tool.call.failed` event.
pub(super) fn end_event(finished: &Finished) -> (Outcome, RuntimeEvent) {
    let Finished {
        record,
        status,
        result,
        elapsed,
    } = finished;
    let (status, elapsed) = (*status, *elapsed);
    let outcome = match status {
        ToolCallStatus::Succeeded => Outcome::Succeeded,
        ToolCallStatus::Denied => Outcome::Denied,
        ToolCallStatus::Cancelled => Outcome::Cancelled,
        ToolCallStatus::Parked => Outcome::Parked,
        _ => Outcome::Failed,
    };
    let event = if outcome == Outcome::Succeeded {
        RuntimeEvent::ToolCallFinished {
            call_id: record.call_id.clone(),
            tool: record.request.tool.clone(),
            duration_ms: millis(elapsed),
        }
    } else {
        RuntimeEvent::ToolCallFailed {
            call_id: record.call_id.clone(),
            tool: record.request.tool.clone(),
            outcome,
            error: redact::error_preview(&result.text),
        }
    };
    (outcome, event)
}

/// Stores a call's end: its row (created if it was never stored) and its audit row.
pub(super) fn store_end(
    transaction: &rusqlite::Transaction<'_>,
    finished: &Finished,
    outcome: Outcome,
) -> Result<(), StoreError> {
    let Finished {
        record,
        status,
        result,
        elapsed,
    } = finished;
    let (status, elapsed) = (*status, *elapsed);
    calls::store_finished(
        transaction,
        &calls::FinishedCall {
            id: &record.call_id,
            tool: &record.request.tool,
            requester: &record.request.requester,
            arguments: &record.request.arguments,
            status,
            summary: record.summary.as_deref(),
            approval_id: record.approval_id.as_deref().filter(|id| !id.is_empty()),
            result,
            created_at: record.created_at,
            finished_at: now(),
        },
    )?;
    audit::append(
        transaction,
        &NewAuditEntry {
            call_id: &record.call_id,
            requester: &record.request.requester,
            tool: &record.request.tool,
            risk: record.risk,
            arguments: &record.request.arguments,
            result: Some(result),
            decision: record.decision,
            decided_by: &record.decided_by,
            outcome,
            duration_ms: millis(elapsed),
        },
    )?;
    Ok(())
}

pub(super) fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// What the gate remembers about a call while it runs.
#[derive(Debug, Clone)]
pub(super) struct Record {
    pub(super) call_id: String,
    pub(super) created_at: chrono::DateTime<chrono::Utc>,
    pub(super) request: CallRequest,
    pub(super) risk: Option<Risk>,
    pub(super) decision: Option<Action>,
    pub(super) decided_by: DecisionSource,
    pub(super) summary: Option<String>,
    pub(super) approval_id: Option<String>,
    /// Whether the call may have changed something (it ran a non-read-only tool or a person
    /// was asked): then its start and end are stored before they are answered.
    pub(super) side_effects: bool,
    /// How the call meets a person.
    pub(super) mode: super::CallMode,
}

/// A call that ended, with how it ended (stored at once, or by the batch recorder).
pub(super) struct Finished {
    pub(super) record: Record,
    pub(super) status: ToolCallStatus,
    pub(super) result: ToolResult,
    pub(super) elapsed: Duration,
}

impl Record {
    /// Stores the call (if not stored yet) and moves it to `status`, in the caller's
    /// transaction; the approval id is taken when non-empty.
    pub(super) fn store_as(
        &self,
        status: ToolCallStatus,
    ) -> impl FnOnce(&rusqlite::Transaction<'_>, &str) -> Result<(), StoreError> + Send + 'static
    {
        let (id, tool, requester, arguments, created_at, summary) = (
            self.call_id.clone(),
            self.request.tool.clone(),
            self.request.requester.clone(),
            self.request.arguments.clone(),
            self.created_at,
            self.summary.clone(),
        );
        move |transaction, approval_id| {
            let call = calls::NewCall {
                id: &id,
                tool: &tool,
                requester: &requester,
                arguments: &arguments,
                created_at,
            };
            calls::ensure(transaction, &call)?;
            let approval_id = Some(approval_id).filter(|id| !id.is_empty());
            calls::advance(transaction, &id, status, summary.as_deref(), approval_id)
        }
    }
}
