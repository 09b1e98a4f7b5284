//! Driving one call: plan, decide by policy, ask a person if the policy says so, run. Every
//! path ends in a status and a result; nothing runs unless allowed or approved, and a tool that
//! panics or overstays its cancellation becomes an error result.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use souz_protocol::{Action, DecisionSource, ExpiryReason, Risk, ToolCallStatus, ToolResult};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::parking::CallMode;
use super::record::Record;
use super::{CallState, Gate, held};
use crate::approvals::{
    CallFacts, Decision, NewApproval, PendingApproval, RequestError, Resolution, suggest::suggest,
};
use crate::store::codec::now;
use crate::tools::{DynTool, PlannedCall, ProgressSink, ToolContext, ToolError, ToolSpec};

/// How long a cancelled tool gets to stop on its own before it is dropped.
pub(crate) const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// How a call ended: its final status and result.
pub(super) type Ended = (ToolCallStatus, ToolResult);

/// What a call carries while a person is asked about it.
struct Asking<'a> {
    spec: &'a ToolSpec,
    ctx: &'a ToolContext,
    cancel: &'a CancellationToken,
    state: &'a watch::Sender<CallState>,
}

/// A call's plan while it waits: `planned` is `None` while a large call waits holding only its
/// fingerprint (see `held`).
struct Held {
    planned: Option<PlannedCall>,
    fingerprint: Option<held::Fingerprint>,
}

impl Gate {
    /// Plans, decides, waits, runs. Returns the final status and result.
    pub(super) async fn drive(
        &self,
        record: &mut Record,
        supplied: Option<Arc<dyn DynTool>>,
        cancel: &CancellationToken,
        state: &watch::Sender<CallState>,
    ) -> Ended {
        // A supplied tool is used only under its own name, never swapped for a catalog tool.
        let found = match supplied {
            Some(tool) => (tool.spec().name == record.request.tool).then_some(tool),
            None => self.tool(&record.request.tool, &record.request.requester),
        };
        let Some(tool) = found else {
            return failure(format!(
                "There is no tool named `{}` in Souz.",
                record.request.tool
            ));
        };
        let spec = tool.spec();
        record.risk = Some(spec.risk);
        let mut ctx = match self
            .context(&record.request.requester, spec.risk, cancel)
            .await
        {
            Ok(ctx) => ctx,
            Err(message) => return failure(message),
        };
        // Review mode: a write that may be staged is planned on the review's staged changes.
        let reviewing = match self.reviewing(record, spec, &ctx).await {
            Ok(reviewing) => reviewing,
            Err(ended) => return ended,
        };
        ctx.staged = reviewing
            .as_ref()
            .and_then(|reviewing| reviewing.files.clone());

        // Plan (validates, resolves paths, computes diffs) before anyone is asked.
        let arguments = record.request.arguments.clone();
        let mut planned: PlannedCall = match guarded(tool.plan(arguments, &ctx), cancel).await {
            Ok(planned) => planned,
            Err(ToolError::Cancelled) => return cancelled("The call was cancelled."),
            Err(error) => return failure(error.to_string()),
        };
        record.summary = Some(self.noted_summary(&mut planned.plan, &ctx.sandbox));

        if let Some(admitted) = self.admit_again(record, spec, &planned.plan).await {
            if let Err(message) = admitted {
                return failure(message);
            }
            return self
                .run_planned(record, (planned, ctx), cancel, state)
                .await;
        }
        let decision = self.policy_decision(record, spec, &planned.plan);
        // Review mode: a write that the policy does not refuse is staged, not asked about (the
        // staging lock goes with `reviewing`, whatever happens to the call).
        let reviewing = reviewing.filter(|_| !matches!(decision, Decision::Deny { .. }));
        if let Some(reviewing) = reviewing
            && let Some(ended) = self
                .stage_if_reviewed(record, &planned.plan, &ctx, reviewing)
                .await
        {
            return ended;
        }
        let mut held = Held {
            planned: Some(planned),
            fingerprint: None,
        };
        let asking = Asking {
            spec,
            ctx: &ctx,
            cancel,
            state,
        };
        if let Err(ended) = self.decide(record, decision, &asking, &mut held).await {
            return ended;
        }

        if cancel.is_cancelled() {
            return cancelled("The call was cancelled.");
        }
        let planned = match held {
            Held {
                planned: Some(planned),
                ..
            } => planned,
            Held {
                planned: None,
                fingerprint,
            } => {
                let approval_id = record.approval_id.clone().unwrap_or_default();
                let annotate = |plan: &mut crate::tools::Plan| {
                    self.note_unrestorable(plan, &ctx.sandbox);
                };
                let replanned = held::replan(
                    &self.inner.approvals,
                    (&tool, &annotate),
                    &approval_id,
                    fingerprint.as_ref(),
                    &ctx,
                );
                match Box::pin(guarded(replanned, cancel)).await {
                    Ok(planned) => planned,
                    Err(ToolError::Cancelled) => return cancelled("The call was cancelled."),
                    Err(error) => return failure(error.to_string()),
                }
            }
        };
        self.run_planned(record, (planned, ctx), cancel, state)
            .await
    }

    /// A call made again under a person's decision — a parked call they approved, a staged
    /// call they applied from its review — runs under that decision or not at all: `Some`
    /// says which. `None` for any other call.
    async fn admit_again(
        &self,
        record: &mut Record,
        spec: &ToolSpec,
        plan: &crate::tools::Plan,
    ) -> Option<Result<(), String>> {
        Some(match record.mode.clone() {
            CallMode::Approved { approval_id } => {
                self.admit_approved(record, &approval_id, plan).await
            }
            CallMode::Reviewed {
                review_id,
                change_id,
                force,
            } => {
                self.admit_reviewed(record, (review_id, change_id, force), spec, plan)
                    .await
            }
            CallMode::Attended | CallMode::Unattended(_) => return None,
        })
    }

    /// The policy's decision on a planned call (an unattended run's envelope counts as grants).
    fn policy_decision(
        &self,
        record: &Record,
        spec: &ToolSpec,
        plan: &crate::tools::Plan,
    ) -> Decision {
        let facts = CallFacts {
            tool: spec.name,
            known: true,
            risk: spec.risk,
            requester: &record.request.requester,
            targets: &plan.targets,
        };
        match &record.mode {
            CallMode::Unattended(unattended) => {
                let envelope = unattended.grants(&record.request.requester);
                self.inner.approvals.decide_call_with(&facts, &envelope)
            }
            CallMode::Attended | CallMode::Approved { .. } | CallMode::Reviewed { .. } => {
                self.inner.approvals.decide_call(&facts)
            }
        }
    }

    /// Runs an allowed (or approved) call, planned, in its context.
    async fn run_planned(
        &self,
        record: &mut Record,
        ready: (PlannedCall, ToolContext),
        cancel: &CancellationToken,
        state: &watch::Sender<CallState>,
    ) -> Ended {
        let (planned, ctx) = ready;
        if cancel.is_cancelled() {
            return cancelled("The call was cancelled.");
        }
        if record.side_effects {
            Box::pin(self.start_running(record, state)).await;
        } else {
            self.advance(record, ToolCallStatus::Running, state);
        }
        let sandbox = Arc::clone(&ctx.sandbox);
        let checkpointed = match self
            .checkpoint(record, record.risk, &planned.plan, &sandbox)
            .await
        {
            Ok(checkpointed) => checkpointed,
            Err(message) => return failure(message),
        };
        let mut ctx = ctx;
        ctx.progress = progress_reports(state);
        let outcome = match checkpointed {
            Some(checkpointed) => {
                self.run_recorded(planned.run(ctx), checkpointed, sandbox, cancel)
                    .await
            }
            None => guarded(planned.run(ctx), cancel).await,
        };
        match outcome {
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

    /// Applies the policy's decision: allowed calls go on, denied ones end, and for the rest a
    /// person is asked (unless Souz is paused).
    async fn decide(
        &self,
        record: &mut Record,
        decision: Decision,
        asking: &Asking<'_>,
        held: &mut Held,
    ) -> Result<(), Ended> {
        match decision {
            Decision::Allow(source) => {
                record.decision = Some(Action::Allow);
                record.decided_by = source;
                record.side_effects = asking.spec.risk != Risk::ReadOnly;
                Ok(())
            }
            Decision::Deny { reason, source } => {
                record.decision = Some(Action::Deny);
                record.decided_by = source;
                Err(denial(format!(
                    "Souz's policy refused this call ({reason}). Do not retry it; tell the person \
                     what you wanted to do instead."
                )))
            }
            Decision::Ask { .. } if self.inner.approvals.pause().is_paused() => {
                record.decision = Some(Action::Deny);
                record.decided_by = DecisionSource::Paused;
                Err(denial(
                    "Souz is paused, so calls that need the person's approval are denied without \
                     asking. Do not retry it until they resume Souz."
                        .into(),
                ))
            }
            Decision::Ask { reason } => Box::pin(self.ask(record, reason, asking, held)).await,
        }
    }

    /// Asks a person about the call and waits for their decision (or its expiry).
    async fn ask(
        &self,
        record: &mut Record,
        reason: String,
        asking: &Asking<'_>,
        held: &mut Held,
    ) -> Result<(), Ended> {
        let spec = asking.spec;
        let sandbox = Arc::clone(&asking.ctx.sandbox);
        let display = move |path: &std::path::Path| sandbox.display(path);
        let targets = held
            .planned
            .as_ref()
            .map(|planned| planned.plan.targets.as_slice())
            .unwrap_or_default();
        let suggested = suggest(
            &record.request.requester,
            spec.name,
            targets,
            &display,
            self.language(),
        );
        record.side_effects = true;
        // A large call waits holding only a preview: its arguments and diff go to the
        // database, and it is planned again from there once approved.
        let (arguments, diff) = held::hold(
            &mut record.request.arguments,
            &mut held.planned,
            &mut held.fingerprint,
        );
        let pending = self
            .inner
            .approvals
            .request_with(
                NewApproval {
                    call_id: record.call_id.clone(),
                    requester: record.request.requester.clone(),
                    tool: spec.name.to_owned(),
                    server: self
                        .inner
                        .external
                        .get(spec.name)
                        .map(|external| external.server),
                    risk: spec.risk,
                    arguments,
                    summary: record.summary.clone().unwrap_or_default(),
                    diff,
                    reason,
                    suggested,
                    parked: match &record.mode {
                        CallMode::Unattended(unattended) => Some(unattended.run.clone()),
                        CallMode::Attended
                        | CallMode::Approved { .. }
                        | CallMode::Reviewed { .. } => None,
                    },
                },
                record.store_as(ToolCallStatus::WaitingApproval),
            )
            .await;
        let mut pending = match pending {
            Ok(pending) => pending,
            Err(RequestError::TooMany(cap)) => {
                record.decision = Some(Action::Deny);
                return Err(denial(format!(
                    "Souz did not ask the person about this call: {cap}. Nothing ran."
                )));
            }
            Err(RequestError::Store(error)) => {
                tracing::error!(%error, "could not store a pending approval; denying");
                record.decision = Some(Action::Deny);
                return Err(denial(
                    "Souz could not record the approval request, so the call was denied.".into(),
                ));
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
        self.advance(record, ToolCallStatus::WaitingApproval, asking.state);
        if matches!(record.mode, CallMode::Unattended(_)) {
            // Nobody waits here: the approval outlives this call, and the run resumes from it.
            return Err((
                ToolCallStatus::Parked,
                ToolResult {
                    text: super::parking::parked_text(&approval_id),
                    structured: Some(serde_json::json!({ "parkedApproval": approval_id })),
                    is_error: false,
                },
            ));
        }
        let resolution = self.await_person(&mut pending, asking.cancel).await;
        self.settle(record, approval_id, resolution)
    }

    /// Waits for the person's decision on a pending approval; expiry, withdrawal and shutdown
    /// end it.
    async fn await_person(
        &self,
        pending: &mut PendingApproval,
        cancel: &CancellationToken,
    ) -> Resolution {
        let approval_id = pending.approval.id.clone();
        let deadline = tokio::time::Instant::now()
            + (pending.approval.expires_at - now())
                .to_std()
                .unwrap_or_default();
        tokio::select! {
            resolution = pending.resolved() => resolution,
            () = tokio::time::sleep_until(deadline) => {
                self.expire_or_read(&approval_id, ExpiryReason::Timeout, pending).await
            }
            () = cancel.cancelled() => {
                let reason = if self.inner.shutdown.is_cancelled() {
                    ExpiryReason::Shutdown
                } else {
                    ExpiryReason::Withdrawn
                };
                self.expire_or_read(&approval_id, reason, pending).await
            }
        }
    }

    /// Records how the person's approval ended; only an approval lets the call go on.
    fn settle(
        &self,
        record: &mut Record,
        approval_id: String,
        resolution: Resolution,
    ) -> Result<(), Ended> {
        match resolution {
            Resolution::Approved(decision) => {
                record.decision = Some(Action::Allow);
                record.decided_by = DecisionSource::Person {
                    approval_id,
                    via: decision.via,
                };
                Ok(())
            }
            Resolution::Denied(decision) => {
                record.decision = Some(Action::Deny);
                record.decided_by = DecisionSource::Person {
                    approval_id,
                    via: decision.via,
                };
                Err(denial("The person denied this call in Souz. Do not retry it; ask them what they would like instead.".into()))
            }
            Resolution::Expired(reason) => {
                record.decision = Some(Action::Deny);
                record.decided_by = DecisionSource::Expiry {
                    approval_id,
                    reason,
                };
                let timeout = self.inner.approvals.timeout().as_secs();
                Err(match reason {
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
                        "Souz stopped before this call was approved, so it was denied.".into(),
                    ),
                })
            }
        }
    }

    pub(super) async fn expire_or_read(
        &self,
        approval_id: &str,
        reason: ExpiryReason,
        pending: &mut PendingApproval,
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
}

/// Drives a tool future, turning panics into errors and honouring cancellation (with a grace
/// period for the tool to stop on its own). Runs in the call's own task: no extra spawn.
pub(super) async fn guarded<T>(
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
    unwound(joined)
}

/// A tool's result, with a panic turned into an error.
pub(super) fn unwound<T>(
    joined: Result<Result<T, ToolError>, Box<dyn std::any::Any + Send>>,
) -> Result<T, ToolError> {
    joined.unwrap_or_else(|_| {
        tracing::error!("a tool panicked");
        Err(ToolError::Internal(
            "the tool crashed; this is a bug in Souz".into(),
        ))
    })
}

pub(super) fn failure(text: String) -> (ToolCallStatus, ToolResult) {
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

/// Where a running call's progress goes: its state, while it runs (the latest report wins).
fn progress_reports(state: &watch::Sender<CallState>) -> ProgressSink {
    let reports = state.clone();
    ProgressSink::new(move |progress| {
        reports.send_if_modified(|state| {
            let running = state.status == ToolCallStatus::Running;
            if running {
                state.progress = Some(progress);
            }
            running
        });
    })
}
