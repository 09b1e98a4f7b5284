//! The gate's part in review mode (see [`crate::history::review`]): a file write of a chat or
//! client in review mode is staged instead of run, and a staged call the person applies is let
//! run only as it was staged.
//!
//! Invariants:
//! - Staged: calls of catalog tools whose plan writes or removes paths, that are not commands
//!   (`Exec`), not read-only and not tools that always ask; made `Attended` (not an unattended
//!   run's) and not refused by the policy. Nothing runs; no approval is asked (applying is the
//!   approval). Any other call goes through the gate as usual.
//! - A staged call that cannot be recorded does not run either: it fails, saying why.
//! - Applied ([`CallMode::Reviewed`]): the change must be the one being applied, for the same
//!   tool, requester and arguments; planned again now it must show the summary and diff staged
//!   (unless forced); a deny rule still refuses it.

use std::sync::Arc;

use serde_json::json;
use souz_protocol::review::ChangeDecision;
use souz_protocol::{Action, DecisionSource, Risk, ToolCallStatus, ToolResult};

use super::Gate;
use super::drive::Ended;
use super::record::Record;
use crate::approvals::{CallFacts, Decision};
use crate::history::checkpoint::changed_paths;
use crate::history::review::Staging;
use crate::tools::{Plan, ToolContext, ToolSpec, localized};

impl Gate {
    /// Stages the call when its requester is in review mode and it is a file write; `None`
    /// when the call goes on as usual.
    pub(super) async fn stage_if_reviewed(
        &self,
        record: &mut Record,
        spec: &ToolSpec,
        plan: &Plan,
        ctx: &ToolContext,
    ) -> Option<Ended> {
        let history = self.history()?;
        let paths = changed_paths(&plan.targets);
        if paths.is_empty()
            || matches!(spec.risk, Risk::Exec | Risk::ReadOnly)
            || spec.always_asks
            || self.inner.catalog.get(spec.name).is_none()
        {
            return None;
        }
        match history.in_review_mode(&record.request.requester).await {
            Ok(true) => {}
            Ok(false) => return None,
            Err(error) => {
                tracing::error!(%error, "could not read whether a requester is in review mode");
                return Some(super::drive::failure(
                    "Souz could not read whether this chat or client is in review mode, so the \
                     write did not run."
                        .into(),
                ));
            }
        }
        let staging = Staging {
            call_id: record.call_id.clone(),
            tool: record.request.tool.clone(),
            requester: record.request.requester.clone(),
            arguments: record.request.arguments.clone(),
            summary: plan.summary.clone(),
            diff: plan.diff.clone(),
            paths,
        };
        let staged = match history.stage(Arc::clone(&ctx.sandbox), staging).await {
            Ok(staged) => staged,
            Err(error) => {
                tracing::error!(%error, call_id = %record.call_id, "could not stage a write");
                return Some(super::drive::failure(format!(
                    "Souz could not stage this write for review ({error}), so nothing was \
                     written."
                )));
            }
        };
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
