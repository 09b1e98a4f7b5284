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

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use souz_protocol::language::Language;
use souz_protocol::{
    DecisionSource, Outcome, Requester, RuntimeEvent, ToolCall, ToolCallStatus, ToolInfo,
    ToolResult,
};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::external::{ExternalTool, ExternalTools};
use super::{Catalog, DynTool, ToolProgress, calls};
use crate::approvals::Approvals;
use crate::approvals::audit::{self, NewAuditEntry};
use crate::bus::EventBus;
use crate::sandbox::Sandbox;
use crate::store::codec::now;
use crate::store::{Store, StoreError};
use record::Finished;
use record::Record;
use recorder::Recording;

#[cfg(test)]
pub(crate) use drive::CANCEL_GRACE;
pub use parking::{CallMode, Unattended};
pub(crate) use workspace::WorkspaceError;

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
    /// The latest progress the running tool reported.
    pub progress: Option<ToolProgress>,
}

impl CallState {
    fn planning() -> Self {
        Self {
            status: ToolCallStatus::Planning,
            summary: None,
            approval_id: None,
            result: None,
            progress: None,
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

    /// Where the call stands, as it changes (its final state stays readable once it is over).
    pub fn watch(&self) -> watch::Receiver<CallState> {
        self.state.clone()
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

    /// Waits until the call is over, waits for an approval, or reports progress other than
    /// `seen`; returns the state then.
    pub async fn progressed(&mut self, seen: Option<&ToolProgress>) -> CallState {
        let result = self
            .state
            .wait_for(|state| {
                state.status.is_final()
                    || state.status == ToolCallStatus::WaitingApproval
                    || state.progress.as_ref() != seen
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
    external: ExternalTools,
    /// The daemon's sandbox; replaced whole when `[sandbox]` changes (calls under way keep the
    /// one they started with).
    sandbox: RwLock<Arc<Sandbox>>,
    approvals: Approvals,
    events: EventBus,
    store: Store,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    live: Mutex<LiveCalls>,
    recorder: mpsc::UnboundedSender<Recording>,
    workspaces: workspace::Workspaces,
    /// The history of file changes, once the runtime set it (calls then record their file
    /// changes around their run; see `history`).
    history: std::sync::OnceLock<crate::history::History>,
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

/// What a gate is made of: its catalog and sandbox, the approvals it asks, where it announces
/// and stores calls, and the runtime's task tracker and shutdown signal.
pub struct GateParts {
    pub catalog: Catalog,
    pub sandbox: Arc<Sandbox>,
    pub approvals: Approvals,
    pub events: EventBus,
    pub store: Store,
    pub tasks: TaskTracker,
    pub shutdown: CancellationToken,
}

/// The gate. Cheap to clone.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

impl Gate {
    /// A gate over `parts.catalog`. Calls run as tasks on `parts.tasks` and stop when
    /// `parts.shutdown` fires.
    pub fn new(parts: GateParts) -> Self {
        let GateParts {
            catalog,
            sandbox,
            approvals,
            events,
            store,
            tasks,
            shutdown,
        } = parts;
        let (recorder, recordings) = mpsc::unbounded_channel();
        let gate = Self {
            inner: Arc::new(Inner {
                catalog,
                external: ExternalTools::default(),
                sandbox: RwLock::new(sandbox),
                approvals,
                events,
                store,
                tasks,
                shutdown,
                live: Mutex::new(HashMap::new()),
                recorder,
                workspaces: workspace::Workspaces::default(),
                history: std::sync::OnceLock::new(),
            }),
        };
        let recording = gate.clone();
        gate.inner
            .tasks
            .spawn(async move { recording.record_in_batches(recordings).await });
        gate
    }

    /// Trusted-proxy mode: `Some` folder template (`[server] proxy_user_roots`) of the sandbox
    /// that calls in proxied users' chats run in (empty: such calls get no folder); `None`
    /// without the mode, when every call runs in the daemon's sandbox without a look-up.
    pub fn set_proxy_user_roots(&self, template: Option<&str>) {
        self.inner.workspaces.set_template(template);
    }

    /// Sets the language of the plans' summaries (what approvals, notifications and the
    /// call list show) and of the grants' labels: the local person's interface language. Calls
    /// planned before keep theirs. The approvals hold it.
    pub fn set_language(&self, language: Language) {
        self.inner.approvals.set_language(language);
    }

    /// The language of the plans' summaries.
    pub fn language(&self) -> Language {
        self.inner.approvals.language()
    }

    /// Records the file changes of the calls that start from now on in `history` (set once;
    /// a second history is ignored).
    pub fn set_history(&self, history: crate::history::History) {
        let _ = self.inner.history.set(history);
    }

    /// The history of file changes, when one is kept.
    pub fn history(&self) -> Option<&crate::history::History> {
        self.inner.history.get()
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// A tool by name for `requester`: the catalog's, or an external MCP server's (for an MCP
    /// client only one of a server with `expose_to_mcp_clients`).
    pub(crate) fn tool(&self, name: &str, requester: &Requester) -> Option<Arc<dyn DynTool>> {
        if let Some(tool) = self.inner.catalog.get(name) {
            return Some(Arc::clone(tool));
        }
        let entry = self.inner.external.get(name)?;
        let hidden = match requester {
            Requester::Mcp { .. } => !entry.exposed,
            Requester::Chat { .. } | Requester::Skill { .. } => !entry.agents,
            Requester::Cli | Requester::Api => false,
        };
        (!hidden).then_some(entry.tool)
    }

    /// The tools of external MCP servers registered now, by name.
    pub(crate) fn external_tools(&self) -> Arc<BTreeMap<String, ExternalTool>> {
        self.inner.external.snapshot()
    }

    /// Replaces the tools of the external server `server`; tool listings (agents, `/mcp`)
    /// follow, and MCP clients are told when their list changed.
    pub(crate) fn set_external_tools(&self, server: &str, tools: Vec<ExternalTool>) {
        if self.inner.external.replace_server(server, tools) {
            self.inner.approvals.tools_changed();
        }
    }

    /// The approval service.
    pub fn approvals(&self) -> &Approvals {
        &self.inner.approvals
    }

    /// The sandbox tools run in now.
    pub fn sandbox(&self) -> Arc<Sandbox> {
        Arc::clone(
            &self
                .inner
                .sandbox
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Runs the calls that start from now on in `sandbox` (a changed `[sandbox]`, applied
    /// without a restart); proxied users' sandboxes are made again from it.
    pub fn replace_sandbox(&self, sandbox: Arc<Sandbox>) {
        *self
            .inner
            .sandbox
            .write()
            .unwrap_or_else(PoisonError::into_inner) = sandbox;
        self.inner.workspaces.forget_users();
    }

    /// The catalog with each tool's effective policy.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let external = self.inner.external.snapshot();
        let mut tools: Vec<ToolInfo> = self
            .inner
            .catalog
            .iter()
            .chain(external.values().map(|entry| &entry.tool))
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
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
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
        self.start_call(request, None, CallMode::Attended).await
    }

    /// Starts a call in `mode` (an unattended run's, or one a person approved while it was
    /// parked). With `supplied`, a tool made for this call rather than found by name (a skill
    /// bundle's command: its spec names the skill and bundle), planned, decided, asked, run
    /// and recorded like any other call under `request.tool`, which must be its spec's name.
    pub(crate) async fn start_as(
        &self,
        request: CallRequest,
        supplied: Option<Arc<dyn DynTool>>,
        mode: CallMode,
    ) -> Result<CallHandle, StoreError> {
        self.start_call(request, supplied, mode).await
    }

    async fn start_call(
        &self,
        request: CallRequest,
        supplied: Option<Arc<dyn DynTool>>,
        mode: CallMode,
    ) -> Result<CallHandle, StoreError> {
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
            let record = Record {
                call_id: task_id.clone(),
                created_at,
                request,
                risk: None,
                decision: None,
                decided_by: DecisionSource::NotReached,
                summary: None,
                approval_id: None,
                side_effects: false,
                mode,
            };
            let recorded = gate.run(record, supplied, task_cancel, sender).await;
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

    /// Stores a call that still runs here and has no row yet (planning, or a read-only call
    /// whose record waits for its end), so that an answer naming it (`202 Accepted`) survives a
    /// crash: after a restart [`Gate::recover`] fails it like any call a dead process left
    /// unfinished. A no-op once the call has a row (or has ended and been stored); its later
    /// states and its end are stored over this row as usual.
    pub async fn keep(&self, call_id: &str, arguments: Value) -> Result<(), StoreError> {
        let Some((tool, requester, created_at)) = self
            .live()
            .get(call_id)
            .map(|call| (call.tool.clone(), call.requester.clone(), call.created_at))
        else {
            return Ok(());
        };
        let id = call_id.to_owned();
        self.inner
            .store
            .write(move |transaction| {
                calls::ensure(
                    transaction,
                    &calls::NewCall {
                        id: &id,
                        tool: &tool,
                        requester: &requester,
                        arguments: &arguments,
                        created_at,
                    },
                )
            })
            .await
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

    /// Keeps in `call_ids` the calls still running in this process (one look at the live
    /// table for all of them; no watcher is made).
    pub fn retain_running(&self, call_ids: &mut Vec<String>) {
        let live = self.live();
        call_ids.retain(|id| live.contains_key(id));
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
        mut record: Record,
        supplied: Option<Arc<dyn DynTool>>,
        cancel: CancellationToken,
        state: watch::Sender<CallState>,
    ) -> bool {
        let started = Instant::now();
        let call_id = record.call_id.clone();
        let (status, result) = self.drive(&mut record, supplied, &cancel, &state).await;
        let final_state = CallState {
            status,
            summary: record.summary.clone(),
            approval_id: record.approval_id.clone(),
            result: Some(result.clone()),
            progress: None,
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
                if let Err(error) = Box::pin(self.persist(vec![*finished])).await {
                    tracing::error!(%error, call_id = %call_id, "could not record the end of a tool call");
                }
                return true;
            }
            return false;
        }
        let finished = Finished {
            record,
            status,
            result,
            elapsed: started.elapsed(),
        };
        if let Err(error) = Box::pin(self.finish(finished)).await {
            tracing::error!(%error, call_id = %call_id, "could not record the end of a tool call");
        }
        let _ = state.send(final_state);
        true
    }
}

mod drive;
mod held;
mod history;
mod parking;
mod record;
mod recorder;
mod staging;
#[cfg(test)]
mod tests;
mod workspace;
