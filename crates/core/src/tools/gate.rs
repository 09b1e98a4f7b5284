//! The gate every tool call passes, whoever asks (Souz's agents, MCP clients, the CLI, scripts,
//! skills): plan → policy → (ask a person) → run → record.
//!
//! Each call is a task owned by the runtime (tracked, cancelled on shutdown) and a row in
//! `tool_calls`, so a call can outlive the request that started it: `POST /v1/tool-calls`
//! answers 202 and the MCP server answers "waiting for approval" while the call keeps waiting.
//! The [`CallHandle`] a caller gets cancels the call when dropped (a dropped waiter is a
//! denial) unless it is detached.
//!
//! Fail closed: a call runs only after `Decision::Allow` or an explicit approval; expiry,
//! withdrawal, shutdown and restart are denials. Every call, whatever happens to it, ends with
//! one audit row and one `tool.call.finished` or `tool.call.failed` event, written in the same
//! transaction as its final state.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;
use souz_protocol::{
    Action, DecisionSource, ExpiryReason, Outcome, Requester, Risk, RuntimeEvent, ToolCall,
    ToolCallStatus, ToolInfo, ToolResult,
};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Catalog, PlannedCall, ToolError, calls};
use crate::approvals::audit::{self, NewAuditEntry};
use crate::approvals::{
    Approvals, CallFacts, Decision, NewApproval, RequestError, Resolution, suggest::suggest,
};
use crate::bus::EventBus;
use crate::redact;
use crate::sandbox::Sandbox;
use crate::store::codec::now;
use crate::store::{Store, StoreError};

/// How long a cancelled tool gets to stop on its own before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// A call to make.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// Tool name.
    pub tool: String,
    /// Arguments (an object, or a JSON string holding one).
    pub arguments: Value,
    /// Who asks.
    pub requester: Requester,
}

/// Where a call stands, as its watchers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallState {
    /// Status.
    pub status: ToolCallStatus,
    /// What it does, once planned.
    pub summary: Option<String>,
    /// The approval it waits for or waited for.
    pub approval_id: Option<String>,
    /// The result, once final.
    pub result: Option<ToolResult>,
}

impl CallState {
    fn planning() -> Self {
        Self {
            status: ToolCallStatus::Planning,
            summary: None,
            approval_id: None,
            result: None,
        }
    }
}

/// A started call. Dropping it cancels the call (withdrawing a pending approval) unless it was
/// [`detach`](CallHandle::detach)ed.
pub struct CallHandle {
    /// Call id.
    pub call_id: String,
    state: watch::Receiver<CallState>,
    cancel: CancellationToken,
    armed: bool,
}

impl CallHandle {
    /// The state now.
    pub fn state(&self) -> CallState {
        self.state.borrow().clone()
    }

    /// Waits until the call is over.
    pub async fn finished(&mut self) -> CallState {
        wait_final(&mut self.state).await
    }

    /// Waits until the call is over or `limit` passes; returns the state then.
    pub async fn wait_for(&mut self, limit: Duration) -> CallState {
        match tokio::time::timeout(limit, wait_final(&mut self.state)).await {
            Ok(state) => state,
            Err(_) => self.state(),
        }
    }

    /// Waits until the call is over or waits for an approval, whichever comes first.
    pub async fn settled(&mut self) -> CallState {
        let result = self
            .state
            .wait_for(|state| {
                state.status.is_final() || state.status == ToolCallStatus::WaitingApproval
            })
            .await
            .map(|state| state.clone());
        result.unwrap_or_else(|_| self.state())
    }

    /// Waits until the call no longer waits for a person (decided, expired, or over). By then
    /// the approval's outcome is stored.
    pub async fn past_approval(&mut self) -> CallState {
        let result = self
            .state
            .wait_for(|state| state.status != ToolCallStatus::WaitingApproval)
            .await
            .map(|state| state.clone());
        result.unwrap_or_else(|_| self.state())
    }

    /// Lets the call go on without this handle.
    pub fn detach(mut self) -> String {
        self.armed = false;
        self.call_id.clone()
    }

    /// Cancels the call.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

impl Drop for CallHandle {
    fn drop(&mut self) {
        if self.armed {
            self.cancel.cancel();
        }
    }
}

async fn wait_final(state: &mut watch::Receiver<CallState>) -> CallState {
    let result = state
        .wait_for(|state| state.status.is_final())
        .await
        .map(|state| state.clone());
    result.unwrap_or_else(|_| state.borrow().clone())
}

struct Inner {
    catalog: Catalog,
    sandbox: Arc<Sandbox>,
    approvals: Approvals,
    events: EventBus,
    store: Store,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    live: Mutex<LiveCalls>,
    recorder: mpsc::UnboundedSender<Recording>,
    workspaces: workspace::Workspaces,
}

/// Calls running in this process: their state, their cancellation, and what they are (a call
/// is stored only at its first state change, so `get` can still answer before that).
type LiveCalls = HashMap<String, LiveCall>;

struct LiveCall {
    state: watch::Receiver<CallState>,
    cancel: CancellationToken,
    tool: String,
    requester: Requester,
    created_at: chrono::DateTime<chrono::Utc>,
}

/// The gate. Cheap to clone.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

impl Gate {
    /// A gate over `catalog`. Calls run as tasks on `tasks` and stop when `shutdown` fires.
    pub fn new(
        catalog: Catalog,
        sandbox: Arc<Sandbox>,
        approvals: Approvals,
        events: EventBus,
        store: Store,
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> Self {
        let (recorder, recordings) = mpsc::unbounded_channel();
        let gate = Self {
            inner: Arc::new(Inner {
                catalog,
                sandbox,
                approvals,
                events,
                store,
                tasks,
                shutdown,
                live: Mutex::new(HashMap::new()),
                recorder,
                workspaces: workspace::Workspaces::default(),
            }),
        };
        let recording = gate.clone();
        gate.inner
            .tasks
            .spawn(async move { recording.record_in_batches(recordings).await });
        gate
    }

    /// Trusted-proxy mode: the folder template (`[server] proxy_user_roots`) of the sandbox
    /// that calls in proxied users' chats run in (empty: such calls get no folder).
    pub fn set_proxy_user_roots(&self, template: &str) {
        self.inner.workspaces.set_template(template);
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The approval service.
    pub fn approvals(&self) -> &Approvals {
        &self.inner.approvals
    }

    /// The sandbox tools run in.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.inner.sandbox
    }

    /// The catalog with each tool's effective policy.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.inner
            .catalog
            .iter()
            .map(|tool| {
                let spec = tool.spec();
                ToolInfo {
                    name: spec.name.to_owned(),
                    description: spec.description.to_owned(),
                    category: spec.category,
                    risk: spec.risk,
                    annotations: spec.annotations,
                    input_schema: spec.input_schema.clone(),
                    output_schema: spec.output_schema.clone(),
                    policy: self.inner.approvals.effective(spec.name, spec.risk, true),
                }
            })
            .collect()
    }

    /// Marks calls left unfinished by a process that died as failed, with an audit row each.
    pub async fn recover(&self) -> Result<usize, StoreError> {
        let (count, _) = self
            .inner
            .events
            .publish_with(|transaction| {
                let unfinished = calls::unfinished(transaction)?;
                let result = ToolResult {
                    text: "Souz restarted before this call finished; it did not complete.".into(),
                    structured: None,
                    is_error: true,
                };
                let mut events = Vec::new();
                let finished_at = now();
                for call in &unfinished {
                    calls::finish(
                        transaction,
                        &call.id,
                        ToolCallStatus::Failed,
                        &result,
                        finished_at,
                    )?;
                    audit::append(
                        transaction,
                        &NewAuditEntry {
                            call_id: &call.id,
                            requester: &call.requester,
                            tool: &call.tool,
                            risk: None,
                            arguments: &call.arguments,
                            result: Some(&result),
                            decision: None,
                            decided_by: &DecisionSource::NotReached,
                            outcome: Outcome::Failed,
                            duration_ms: u64::try_from(
                                (finished_at - call.created_at).num_milliseconds(),
                            )
                            .unwrap_or_default(),
                        },
                    )?;
                    events.push(RuntimeEvent::ToolCallFailed {
                        call_id: call.id.clone(),
                        tool: call.tool.clone(),
                        outcome: Outcome::Failed,
                        error: result.text.clone(),
                    });
                }
                Ok::<_, StoreError>((unfinished.len(), events))
            })
            .await?;
        Ok(count)
    }

    /// Starts a call: stores it, then runs it as a task. The handle cancels it when dropped.
    pub async fn start(&self, request: CallRequest) -> Result<CallHandle, StoreError> {
        let call_id = uuid::Uuid::now_v7().to_string();
        let created_at = now();
        let cancel = self.inner.shutdown.child_token();
        let (sender, receiver) = watch::channel(CallState::planning());
        self.live().insert(
            call_id.clone(),
            LiveCall {
                state: receiver.clone(),
                cancel: cancel.clone(),
                tool: request.tool.clone(),
                requester: request.requester.clone(),
                created_at,
            },
        );
        let gate = self.clone();
        let task_id = call_id.clone();
        let task_cancel = cancel.clone();
        self.inner.tasks.spawn(async move {
            let recorded = gate
                .run(task_id.clone(), request, created_at, task_cancel, sender)
                .await;
            if recorded {
                gate.live().remove(&task_id);
            }
        });
        Ok(CallHandle {
            call_id,
            state: receiver,
            cancel,
            armed: true,
        })
    }

    /// Runs a call to its end.
    pub async fn call(&self, request: CallRequest) -> Result<CallState, StoreError> {
        let mut handle = self.start(request).await?;
        Ok(handle.finished().await)
    }

    /// Watches a call that is still running in this process.
    pub fn watch(&self, call_id: &str) -> Option<watch::Receiver<CallState>> {
        self.live().get(call_id).map(|call| call.state.clone())
    }

    /// Cancels a call that is still running in this process; returns whether there was one.
    pub fn cancel(&self, call_id: &str) -> bool {
        match self.live().get(call_id) {
            Some(call) => {
                call.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// A call: as stored, or (before its first state change is stored) as it runs here.
    ///
    /// The live snapshot is taken before the database is read: the recorder forgets a live
    /// call only after its row is committed, so one of the two always sees the call.
    pub async fn get(&self, call_id: &str) -> Result<Option<ToolCall>, StoreError> {
        let live = self.live().get(call_id).map(|call| {
            let state = call.state.borrow().clone();
            ToolCall {
                id: call_id.to_owned(),
                tool: call.tool.clone(),
                requester: call.requester.clone(),
                status: state.status,
                summary: state.summary,
                approval_id: state.approval_id,
                result: state.result,
                created_at: call.created_at,
                finished_at: None,
            }
        });
        let id = call_id.to_owned();
        let stored = self
            .inner
            .store
            .read(move |connection| calls::load(connection, &id))
            .await?;
        Ok(stored.or(live))
    }

    /// Marks a finished call's result as delivered; false if it already was.
    pub async fn mark_delivered(&self, call_id: &str) -> Result<bool, StoreError> {
        self.flushed().await;
        let id = call_id.to_owned();
        self.inner
            .store
            .write(move |transaction| calls::mark_delivered(transaction, &id, now()))
            .await
    }

    fn live(&self) -> std::sync::MutexGuard<'_, LiveCalls> {
        self.inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Drives a call to its end and records it. Returns whether the record is already stored;
    /// if not, it was queued for the batch recorder, which forgets the live call once stored.
    async fn run(
        &self,
        call_id: String,
        request: CallRequest,
        created_at: chrono::DateTime<chrono::Utc>,
        cancel: CancellationToken,
        state: watch::Sender<CallState>,
    ) -> bool {
        let started = Instant::now();
        let mut record = Record {
            call_id: call_id.clone(),
            created_at,
            request,
            risk: None,
            decision: None,
            decided_by: DecisionSource::NotReached,
            summary: None,
            approval_id: None,
            side_effects: false,
        };
        let (status, result) = self.drive(&mut record, &cancel, &state).await;
        let final_state = CallState {
            status,
            summary: record.summary.clone(),
            approval_id: record.approval_id.clone(),
            result: Some(result.clone()),
        };
        if !record.side_effects {
            // Nothing ran that could change anything (an allowed read-only call, a refusal, an
            // invalid call): answer at once and store the record in the next batch.
            let recording = Recording::Call(Box::new(Finished {
                record,
                status,
                result,
                elapsed: started.elapsed(),
            }));
            let _ = state.send(final_state);
            if let Err(mpsc::error::SendError(Recording::Call(finished))) =
                self.inner.recorder.send(recording)
            {
                // The recorder is gone (shutdown): store it here.
                if let Err(error) = self.persist(vec![*finished]).await {
                    tracing::error!(%error, call_id = %call_id, "could not record the end of a tool call");
                }
                return true;
            }
            return false;
        }
        if let Err(error) = self
            .finish(&record, status, &result, started.elapsed())
            .await
        {
            tracing::error!(%error, call_id = %call_id, "could not record the end of a tool call");
        }
        let _ = state.send(final_state);
        true
    }

    /// Waits until every call that ended so far is stored (read-your-writes for audits).
    pub async fn flushed(&self) {
        let (done, wait) = oneshot::channel();
        if self.inner.recorder.send(Recording::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }

    /// Stores ended calls in batches: one transaction per batch, then their events are
    /// announced and the calls forgotten. Runs until shutdown, then drains what is left.
    async fn record_in_batches(&self, mut recordings: mpsc::UnboundedReceiver<Recording>) {
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

    async fn record_batch(
        &self,
        first: Recording,
        recordings: &mut mpsc::UnboundedReceiver<Recording>,
    ) {
        let mut batch = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(recording) = next.take() {
            match recording {
                Recording::Call(finished) => batch.push(*finished),
                Recording::Flush(done) => flushes.push(done),
            }
            if batch.len() < MAX_BATCH {
                next = recordings.try_recv().ok();
            }
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

    async fn persist(&self, batch: Vec<Finished>) -> Result<(), StoreError> {
        self.inner
            .events
            .publish_with(move |transaction| {
                let mut events = Vec::new();
                for finished in &batch {
                    let (outcome, event) = end_event(
                        &finished.record,
                        finished.status,
                        &finished.result,
                        finished.elapsed,
                    );
                    if finished.record.decision == Some(Action::Allow) {
                        events.push(started_event(&finished.record));
                    }
                    store_end(
                        transaction,
                        &finished.record,
                        finished.status,
                        &finished.result,
                        outcome,
                        finished.elapsed,
                    )?;
                    events.push(event);
                }
                Ok::<_, StoreError>(((), events))
            })
            .await
            .map(|_| ())
    }

    /// Plans, decides, waits, runs. Returns the final status and result.
    async fn drive(
        &self,
        record: &mut Record,
        cancel: &CancellationToken,
        state: &watch::Sender<CallState>,
    ) -> (ToolCallStatus, ToolResult) {
        let Some(tool) = self.inner.catalog.get(&record.request.tool).cloned() else {
            return failure(format!(
                "There is no tool named `{}` in Souz.",
                record.request.tool
            ));
        };
        let spec = tool.spec().clone();
        record.risk = Some(spec.risk);
        let ctx = match self
            .context(&record.request.requester, spec.risk, cancel)
            .await
        {
            Ok(ctx) => ctx,
            Err(message) => return failure(message),
        };

        // Plan (validates, resolves paths, computes diffs) before anyone is asked.
        let arguments = record.request.arguments.clone();
        let planned: PlannedCall = match guarded(tool.plan(arguments, &ctx), cancel).await {
            Ok(planned) => planned,
            Err(ToolError::Cancelled) => return cancelled("The call was cancelled."),
            Err(error) => return failure(error.to_string()),
        };
        record.summary = Some(planned.plan.summary.clone());

        let facts = CallFacts {
            tool: spec.name,
            known: true,
            risk: spec.risk,
            requester: &record.request.requester,
            targets: &planned.plan.targets,
        };
        let decision = self.inner.approvals.decide_call(&facts);
        // `None` while a large call waits holding only its fingerprint (see `held`).
        let mut planned = Some(planned);
        let mut fingerprint = None;
        match decision {
            Decision::Allow(source) => {
                record.decision = Some(Action::Allow);
                record.decided_by = source;
                record.side_effects = spec.risk != Risk::ReadOnly;
            }
            Decision::Deny { reason, source } => {
                record.decision = Some(Action::Deny);
                record.decided_by = source;
                return denial(format!(
                    "Souz's policy refused this call ({reason}). Do not retry it; tell the person \
                     what you wanted to do instead."
                ));
            }
            Decision::Ask { .. } if self.inner.approvals.pause().is_paused() => {
                record.decision = Some(Action::Deny);
                record.decided_by = DecisionSource::Paused;
                return denial(
                    "Souz is paused, so calls that need the person's approval are denied without \
                     asking. Do not retry it until they resume Souz."
                        .into(),
                );
            }
            Decision::Ask { reason } => {
                let sandbox = Arc::clone(&ctx.sandbox);
                let display = move |path: &std::path::Path| sandbox.display(path);
                let targets = planned
                    .as_ref()
                    .map(|planned| planned.plan.targets.as_slice())
                    .unwrap_or_default();
                let suggested = suggest(&record.request.requester, spec.name, targets, &display);
                record.side_effects = true;
                // A large call waits holding only a preview: its arguments and diff go to the
                // database, and it is planned again from there once approved.
                let (arguments, diff) = held::hold(
                    &mut record.request.arguments,
                    &mut planned,
                    &mut fingerprint,
                );
                let pending = self
                    .inner
                    .approvals
                    .request_with(
                        NewApproval {
                            call_id: record.call_id.clone(),
                            requester: record.request.requester.clone(),
                            tool: spec.name.to_owned(),
                            risk: spec.risk,
                            arguments,
                            summary: record.summary.clone().unwrap_or_default(),
                            diff,
                            reason,
                            suggested,
                        },
                        record.store_as(ToolCallStatus::WaitingApproval),
                    )
                    .await;
                let mut pending = match pending {
                    Ok(pending) => pending,
                    Err(RequestError::TooMany(cap)) => {
                        record.decision = Some(Action::Deny);
                        return denial(format!(
                            "Souz did not ask the person about this call: {cap}. Nothing ran."
                        ));
                    }
                    Err(RequestError::Store(error)) => {
                        tracing::error!(%error, "could not store a pending approval; denying");
                        record.decision = Some(Action::Deny);
                        return denial(
                            "Souz could not record the approval request, so the call was denied."
                                .into(),
                        );
                    }
                };
                let approval_id = pending.approval.id.clone();
                record.approval_id = Some(approval_id.clone());
                // Paused between the check above and the store: the pause sweep may have missed
                // this approval, so end it here.
                if self.inner.approvals.pause().is_paused()
                    && let Err(error) = self
                        .inner
                        .approvals
                        .expire(&approval_id, ExpiryReason::Paused)
                        .await
                {
                    tracing::warn!(%error, "could not expire an approval asked while pausing");
                }
                self.advance(record, ToolCallStatus::WaitingApproval, state);
                let deadline = tokio::time::Instant::now()
                    + (pending.approval.expires_at - now())
                        .to_std()
                        .unwrap_or_default();
                let resolution = tokio::select! {
                    resolution = pending.resolved() => resolution,
                    () = tokio::time::sleep_until(deadline) => {
                        self.expire_or_read(&approval_id, ExpiryReason::Timeout, &mut pending).await
                    }
                    () = cancel.cancelled() => {
                        let reason = if self.inner.shutdown.is_cancelled() {
                            ExpiryReason::Shutdown
                        } else {
                            ExpiryReason::Withdrawn
                        };
                        self.expire_or_read(&approval_id, reason, &mut pending).await
                    }
                };
                match resolution {
                    Resolution::Approved(decision) => {
                        record.decision = Some(Action::Allow);
                        record.decided_by = DecisionSource::Person {
                            approval_id,
                            via: decision.via,
                        };
                    }
                    Resolution::Denied(decision) => {
                        record.decision = Some(Action::Deny);
                        record.decided_by = DecisionSource::Person {
                            approval_id,
                            via: decision.via,
                        };
                        return denial("The person denied this call in Souz. Do not retry it; ask them what they would like instead.".into());
                    }
                    Resolution::Expired(reason) => {
                        record.decision = Some(Action::Deny);
                        record.decided_by = DecisionSource::Expiry {
                            approval_id,
                            reason,
                        };
                        let timeout = self.inner.approvals.timeout().as_secs();
                        return match reason {
                            ExpiryReason::Timeout => denial(format!(
                                "Nobody approved this call within {timeout} s, so Souz denied it."
                            )),
                            ExpiryReason::Withdrawn => {
                                cancelled("The call was cancelled before it was approved.")
                            }
                            ExpiryReason::Paused => denial(
                                "Souz was paused before this call was approved, so it was denied. \
                                 Do not retry it until the person resumes Souz."
                                    .into(),
                            ),
                            ExpiryReason::Restart | ExpiryReason::Shutdown => denial(
                                "Souz stopped before this call was approved, so it was denied."
                                    .into(),
                            ),
                        };
                    }
                }
            }
        }

        if cancel.is_cancelled() {
            return cancelled("The call was cancelled.");
        }
        let planned = match (planned, fingerprint) {
            (Some(planned), _) => planned,
            (None, fingerprint) => {
                let approval_id = record.approval_id.clone().unwrap_or_default();
                let replanned = held::replan(
                    &self.inner.approvals,
                    &tool,
                    &approval_id,
                    fingerprint.as_ref(),
                    &ctx,
                );
                match guarded(replanned, cancel).await {
                    Ok(planned) => planned,
                    Err(ToolError::Cancelled) => return cancelled("The call was cancelled."),
                    Err(error) => return failure(error.to_string()),
                }
            }
        };
        if record.side_effects {
            self.start_running(record, state).await;
        } else {
            self.advance(record, ToolCallStatus::Running, state);
        }
        match guarded(planned.run(ctx), cancel).await {
            Ok(output) => (
                ToolCallStatus::Succeeded,
                ToolResult {
                    text: output.text,
                    structured: output.structured,
                    is_error: false,
                },
            ),
            Err(ToolError::Cancelled) => cancelled("The call was cancelled while it ran."),
            Err(error) => failure(error.to_string()),
        }
    }

    async fn expire_or_read(
        &self,
        approval_id: &str,
        reason: ExpiryReason,
        pending: &mut crate::approvals::PendingApproval,
    ) -> Resolution {
        match self.inner.approvals.expire(approval_id, reason).await {
            Ok(Some(_)) => Resolution::Expired(reason),
            // Decided a moment before: that decision stands.
            Ok(None) => pending.resolved().await,
            Err(error) => {
                tracing::error!(%error, "could not record an approval expiry; denying");
                Resolution::Expired(reason)
            }
        }
    }

    fn advance(&self, record: &Record, status: ToolCallStatus, state: &watch::Sender<CallState>) {
        let _ = state.send(CallState {
            status,
            summary: record.summary.clone(),
            approval_id: record.approval_id.clone(),
            result: None,
        });
    }

    async fn start_running(&self, record: &Record, state: &watch::Sender<CallState>) {
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

    async fn finish(
        &self,
        record: &Record,
        status: ToolCallStatus,
        result: &ToolResult,
        elapsed: Duration,
    ) -> Result<(), StoreError> {
        let (outcome, event) = end_event(record, status, result, elapsed);
        let record = record.clone();
        let result = result.clone();
        self.inner
            .events
            .publish_with(move |transaction| {
                store_end(transaction, &record, status, &result, outcome, elapsed)?;
                Ok::<_, StoreError>(((), vec![event]))
            })
            .await
            .map(|_| ())
    }
}

/// The `tool.call.started` event of a call.
fn started_event(record: &Record) -> RuntimeEvent {
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
fn end_event(
    record: &Record,
    status: ToolCallStatus,
    result: &ToolResult,
    elapsed: Duration,
) -> (Outcome, RuntimeEvent) {
    let outcome = match status {
        ToolCallStatus::Succeeded => Outcome::Succeeded,
        ToolCallStatus::Denied => Outcome::Denied,
        ToolCallStatus::Cancelled => Outcome::Cancelled,
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
fn store_end(
    transaction: &rusqlite::Transaction<'_>,
    record: &Record,
    status: ToolCallStatus,
    result: &ToolResult,
    outcome: Outcome,
    elapsed: Duration,
) -> Result<(), StoreError> {
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

fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// What the gate remembers about a call while it runs.
#[derive(Debug, Clone)]
struct Record {
    call_id: String,
    created_at: chrono::DateTime<chrono::Utc>,
    request: CallRequest,
    risk: Option<Risk>,
    decision: Option<Action>,
    decided_by: DecisionSource,
    summary: Option<String>,
    approval_id: Option<String>,
    /// Whether the call may have changed something (it ran a non-read-only tool or a person
    /// was asked): then its start and end are stored before they are answered.
    side_effects: bool,
}

/// A call that ended, waiting for the batch recorder.
struct Finished {
    record: Record,
    status: ToolCallStatus,
    result: ToolResult,
    elapsed: Duration,
}

/// What the batch recorder receives.
enum Recording {
    /// An ended call to store.
    Call(Box<Finished>),
    /// Answer once everything before it is stored.
    Flush(oneshot::Sender<()>),
}

/// Most calls stored in one transaction.
const MAX_BATCH: usize = 256;

impl Record {
    /// Stores the call (if not stored yet) and moves it to `status`, in the caller's
    /// transaction; the approval id is taken when non-empty.
    fn store_as(
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
            calls::ensure(transaction, &id, &tool, &requester, &arguments, created_at)?;
            let approval_id = Some(approval_id).filter(|id| !id.is_empty());
            calls::advance(transaction, &id, status, summary.as_deref(), approval_id)
        }
    }
}

/// Drives a tool future, turning panics into errors and honouring cancellation (with a grace
/// period for the tool to stop on its own). Runs in the call's own task: no extra spawn.
async fn guarded<T>(
    task: impl std::future::Future<Output = Result<T, ToolError>>,
    cancel: &CancellationToken,
) -> Result<T, ToolError> {
    let mut task = std::pin::pin!(std::panic::AssertUnwindSafe(task).catch_unwind());
    let joined = tokio::select! {
        joined = &mut task => joined,
        () = cancel.cancelled() => {
            match tokio::time::timeout(CANCEL_GRACE, &mut task).await {
                Ok(joined) => joined,
                Err(_) => return Err(ToolError::Cancelled),
            }
        }
    };
    joined.unwrap_or_else(|_| {
        tracing::error!("a tool panicked");
        Err(ToolError::Internal(
            "the tool crashed; this is a bug in Souz".into(),
        ))
    })
}

fn failure(text: String) -> (ToolCallStatus, ToolResult) {
    (
        ToolCallStatus::Failed,
        ToolResult {
            text,
            structured: None,
            is_error: true,
        },
    )
}

fn denial(text: String) -> (ToolCallStatus, ToolResult) {
    (
        ToolCallStatus::Denied,
        ToolResult {
            text,
            structured: None,
            is_error: true,
        },
    )
}

fn cancelled(text: &str) -> (ToolCallStatus, ToolResult) {
    (
        ToolCallStatus::Cancelled,
        ToolResult {
            text: text.to_owned(),
            structured: None,
            is_error: true,
        },
    )
}

mod held;
#[cfg(test)]
mod tests;
mod workspace;
