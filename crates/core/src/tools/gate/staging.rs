//! The gate's part in review mode (see [`crate::history::review`]): a file write of a chat or
//! client in review mode is staged instead of run, and a staged call the person applies is let
//! run only as it was staged.
//!
//! Invariants:
//! - Staged: calls of catalog tools whose plan writes or removes paths, that are not commands
//!   (`Exec`), not read-only and not tools that always ask; made `Attended` (not an unattended
//!   run's) and not refused by the policy. Nothing runs; no approval is asked (applying is the
//!   approval). Any other call goes through the gate as usual.
//! - A call that may be staged holds the history's staging lock from before its plan to its
//!   staging, and is planned against the staged state of the review it joins
//!   ([`StagedFiles`]): each path that earlier undecided changes of that review write takes
//!   the state they leave it in as its base. A tool that does not plan against that state
//!   (any but the four file tools) is not staged on such a path, nor is any write to a path
//!   whose staged state is unknown: the call fails, saying why.
//! - A staged call that cannot be recorded does not run either: it fails, saying why.
//! - Applied ([`CallMode::Reviewed`]): the change must be the one being applied, for the same
//!   tool, requester and arguments; planned again now it must show the summary and diff staged
//!   (unless forced); a deny rule still refuses it.

use std::sync::Arc;

use serde_json::json;
use souz_protocol::review::ChangeDecision;
use souz_protocol::{Action, DecisionSource, Risk, ToolCallStatus, ToolResult};
use tokio::sync::OwnedMutexGuard;

use super::drive::{Ended, failure, guarded};
use super::parking::CallMode;
use super::record::Record;
use super::{CallRequest, Gate};
use crate::approvals::{CallFacts, Decision};
use crate::history::checkpoint::{blocking, changed_paths};
use crate::history::review::Staging;
use crate::tools::builtin::files::staged::{self, StagedFiles, Unknown};
use crate::tools::{Plan, ToolContext, ToolSpec, localized};

/// A call that may be staged: its requester is in review mode. Holds the staging lock until
/// dropped.
pub(super) struct Reviewing {
    _staging: OwnedMutexGuard<()>,
    /// The staged state of the review the call would join, when it has undecided changes.
    pub files: Option<Arc<StagedFiles>>,
}

impl Gate {
    /// Whether the call may be staged (its requester is in review mode and its tool writes
    /// files): then the staging lock, and the staged state to plan it against. `Err` says why
    /// the call must not run.
    pub(super) async fn reviewing(
        &self,
        record: &Record,
        spec: &ToolSpec,
        ctx: &ToolContext,
    ) -> Result<Option<Reviewing>, Ended> {
        let Some(history) = self.history() else {
            return Ok(None);
        };
        if !matches!(record.mode, CallMode::Attended)
            || matches!(spec.risk, Risk::Exec | Risk::ReadOnly)
            || spec.always_asks
            || self.inner.catalog.get(spec.name).is_none()
        {
            return Ok(None);
        }
        let unreadable = |error: crate::history::HistoryError| {
            tracing::error!(%error, "could not read whether a requester is in review mode");
            failure(
                "Souz could not read whether this chat or client is in review mode, so the write \
                 did not run."
                    .into(),
            )
        };
        let requester = &record.request.requester;
        if !history
            .in_review_mode(requester)
            .await
            .map_err(unreadable)?
        {
            return Ok(None);
        }
        let lock = history.staging_lock().await;
        // Read again under the lock: what was staged before this call, by whoever.
        let Some(changes) = history.staged_before(requester).await.map_err(unreadable)? else {
            return Ok(None);
        };
        let files = if changes.is_empty() {
            None
        } else {
            let sandbox = Arc::clone(&ctx.sandbox);
            let limit = history.limits().max_file_bytes;
            let replayed =
                blocking(move || Ok(StagedFiles::replay(&sandbox, &changes, limit))).await;
            match replayed {
                Ok(files) => (!files.is_empty()).then(|| Arc::new(files)),
                Err(error) => {
                    tracing::error!(%error, "could not replay the staged changes of a review");
                    return Err(failure(format!(
                        "Souz could not read the changes staged for review ({error}), so this \
                         write was not staged."
                    )));
                }
            }
        };
        Ok(Some(Reviewing {
            _staging: lock,
            files,
        }))
    }

    /// Plans `request` against the disk as it is now, as applying it would (nothing runs):
    /// its summary and diff, or why it cannot be planned.
    pub(crate) async fn plan_now(
        &self,
        request: &CallRequest,
    ) -> Result<(String, Option<String>), String> {
        let tool = self
            .tool(&request.tool, &request.requester)
            .ok_or_else(|| format!("There is no tool named `{}` in Souz.", request.tool))?;
        let cancel = self.inner.shutdown.child_token();
        let ctx = self
            .context(&request.requester, tool.spec().risk, &cancel)
            .await?;
        let mut planned = guarded(tool.plan(request.arguments.clone(), &ctx), &cancel)
            .await
            .map_err(|error| error.to_string())?;
        let summary = self.noted_summary(&mut planned.plan, &ctx.sandbox);
        Ok((summary, planned.plan.diff))
    }

    /// Stages the call (`reviewing`: its requester is in review mode) when it is a file write;
    /// `None` when the call goes on as usual.
    pub(super) async fn stage_if_reviewed(
        &self,
        record: &mut Record,
        plan: &Plan,
        ctx: &ToolContext,
        reviewing: Reviewing,
    ) -> Option<Ended> {
        let history = self.history()?;
        let paths = changed_paths(&plan.targets);
        if paths.is_empty() {
            return None;
        }
        let staged_bases = match staged_bases(&record.request.tool, &paths, &reviewing, ctx) {
            Ok(bases) => bases,
            Err(refusal) => return Some(failure(refusal)),
        };
        let staging = Staging {
            call_id: record.call_id.clone(),
            tool: record.request.tool.clone(),
            requester: record.request.requester.clone(),
            arguments: record.request.arguments.clone(),
            summary: plan.summary.clone(),
            diff: plan.diff.clone(),
            paths,
            staged_bases,
        };
        let staged = match history.stage(Arc::clone(&ctx.sandbox), staging).await {
            Ok(staged) => staged,
            Err(error) => {
                tracing::error!(%error, call_id = %record.call_id, "could not stage a write");
                return Some(failure(format!(
                    "Souz could not stage this write for review ({error}), so nothing was \
                     written."
                )));
            }
        };
        drop(reviewing);
        record.side_effects = true;
        let summary = &plan.summary;
        let language = self.language();
        let text = localized!(
            language,
            "Staged for review, not written: {summary}. The person reviews the staged changes \
             and applies or discards each one; until then the file on disk is unchanged, and \
             reading it shows it as it is now. Do not retry this write.",
            "Изменение отложено на проверку и ещё не записано: {summary}. Человек просмотрит \
             отложенные изменения и применит или отклонит каждое; до тех пор файл на диске не \
             изменён, и чтение покажет его как есть. Не повторяйте эту запись."
        );
        Some((
            ToolCallStatus::Succeeded,
            ToolResult {
                text,
                structured: Some(json!({
                    "staged": {"reviewId": staged.review_id, "changeId": staged.change_id}
                })),
                is_error: false,
            },
        ))
    }

    /// Lets the applied staged change (`review_id`, `change_id`, `force`) run, or says why it
    /// may not (nothing ran).
    pub(super) async fn admit_reviewed(
        &self,
        record: &mut Record,
        (review_id, change_id, force): (i64, i64, bool),
        spec: &ToolSpec,
        plan: &Plan,
    ) -> Result<(), String> {
        let history = self
            .history()
            .ok_or_else(|| "Souz keeps no history, so no review can be applied.".to_owned())?;
        let staged = history
            .staged(review_id, change_id)
            .await
            .map_err(|error| format!("The staged change is unreadable: {error}"))?;
        if staged.decision != Some(ChangeDecision::Applying) {
            return Err(format!(
                "Change {change_id} of review {review_id} is not being applied; nothing ran."
            ));
        }
        if staged.tool != record.request.tool
            || staged.requester != record.request.requester
            || staged.arguments != record.request.arguments
        {
            return Err(format!(
                "This call is not the one staged as change {change_id}; nothing ran."
            ));
        }
        if !force && (staged.summary != plan.summary || staged.diff != plan.diff) {
            return Err(
                "What this change would do now differs from what was staged (a file changed \
                 meanwhile); nothing ran. Apply it with force to write it against the file as \
                 it is now."
                    .to_owned(),
            );
        }
        let facts = CallFacts {
            tool: spec.name,
            known: true,
            risk: spec.risk,
            requester: &record.request.requester,
            targets: &plan.targets,
        };
        if let Decision::Deny { reason, source } = self.inner.approvals.decide_call(&facts) {
            record.decision = Some(Action::Deny);
            record.decided_by = source;
            return Err(format!(
                "Souz's policy refuses this change now ({reason}); nothing ran."
            ));
        }
        record.decision = Some(Action::Allow);
        record.decided_by = DecisionSource::Person {
            approval_id: format!("review:{review_id}"),
            via: "review".to_owned(),
        };
        record.side_effects = true;
        Ok(())
    }
}

/// The bases `paths` take from the staged state of the review a call of `tool` joins (see the
/// module header), or why the call may not be staged.
fn staged_bases(
    tool: &str,
    paths: &[std::path::PathBuf],
    reviewing: &Reviewing,
    ctx: &ToolContext,
) -> Result<Vec<crate::history::review::Base>, String> {
    let Some(files) = &reviewing.files else {
        return Ok(Vec::new());
    };
    let mut bases = Vec::new();
    for path in paths {
        let Some(base) = files.base(path) else {
            continue;
        };
        let shown = ctx.sandbox.display(path);
        let base = match base {
            Ok(base) if staged::plans_on_staged(tool) => Ok(base),
            Ok(_) => Err(Unknown::Opaque),
            Err(unknown) => Err(unknown),
        }
        .map_err(|unknown| format!("{}; nothing was written.", unknown.refusal(&shown)))?;
        bases.push(base);
    }
    Ok(bases)
}
