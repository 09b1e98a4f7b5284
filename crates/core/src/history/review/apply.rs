//! The person's decisions on a review: discard drops a staged change; apply makes its call
//! again through the gate in [`CallMode::Reviewed`] (planned again, checkpointed in the
//! history, so it can be undone), in the order the changes were staged.
//!
//! Invariants:
//! - Each change to apply is looked at again just before (an earlier change of the review may
//!   have just written its paths) and, unless forced, left undecided as a conflict when it
//!   does not stand clear ([`super::standing`]): `external` when its file changed outside;
//!   `earlier_change` when an earlier staged change to its file was discarded, failed or is not
//!   applied — unless it still plans against the disk to the summary and diff staged, and then
//!   it is applied.
//! - Forced, a conflict is planned again against the disk as it is and runs (or fails, saying
//!   why, when its plan no longer fits).

use std::collections::BTreeMap;

use souz_protocol::ToolCallStatus;
use souz_protocol::review::{
    ChangeConflict, ChangeDecision, ConflictReason, ReviewAction, ReviewDecisions, ReviewOutcome,
};

use super::Standing;
use crate::history::{History, HistoryError};
use crate::tools::gate::{CallMode, CallRequest, Gate};

/// Applies `request`'s decisions to review `review_id`.
pub async fn decide(
    history: &History,
    gate: &Gate,
    review_id: i64,
    request: ReviewDecisions,
) -> Result<ReviewOutcome, HistoryError> {
    let sandbox = gate.sandbox();
    let review = history.review(review_id, sandbox.clone()).await?;
    if review.summary.status != souz_protocol::review::ReviewStatus::Open {
        return Err(HistoryError::Invalid(format!(
            "review {review_id} is not open"
        )));
    }
    let mut wanted: BTreeMap<i64, ReviewAction> = BTreeMap::new();
    for decision in &request.decisions {
        let Some(change) = review.items.iter().find(|c| c.id == decision.change_id) else {
            return Err(HistoryError::NotFound(format!(
                "no change {} in review {review_id}",
                decision.change_id
            )));
        };
        if change.decision.is_some() {
            return Err(HistoryError::Invalid(format!(
                "change {} is decided already",
                change.id
            )));
        }
        wanted.insert(decision.change_id, decision.action);
    }
    if let Some(all) = request.all {
        for change in review.items.iter().filter(|c| c.decision.is_none()) {
            wanted.entry(change.id).or_insert(all);
        }
    }
    let mut conflicts = Vec::new();
    for change in &review.items {
        let Some(action) = wanted.get(&change.id) else {
            continue;
        };
        match action {
            ReviewAction::Discard => {
                history
                    .decide_change(
                        review_id,
                        change.id,
                        (ChangeDecision::Discarded, None, None),
                    )
                    .await?;
            }
            ReviewAction::Apply => {
                if let Some(reason) =
                    apply(history, gate, (review_id, change.id), request.force).await?
                {
                    conflicts.push(ChangeConflict {
                        change_id: change.id,
                        reason,
                    });
                }
            }
        }
    }
    Ok(ReviewOutcome {
        review: history.review(review_id, sandbox).await?,
        conflicts: conflicts
            .iter()
            .map(|conflict| conflict.change_id)
            .collect(),
        conflict_reasons: conflicts,
    })
}

/// Applies change `change_id` of review `review_id` (through the gate), unless it conflicts
/// and is not forced: then it is left undecided, and the answer says why.
async fn apply(
    history: &History,
    gate: &Gate,
    (review_id, change_id): (i64, i64),
    force: bool,
) -> Result<Option<ConflictReason>, HistoryError> {
    let staged = history.staged(review_id, change_id).await?;
    let call = CallRequest {
        tool: staged.tool.clone(),
        arguments: staged.arguments.clone(),
        requester: staged.requester.clone(),
    };
    if !force {
        let standing = history
            .standing(gate.sandbox(), review_id, change_id)
            .await?;
        let reason = match standing {
            Standing::Clear => None,
            Standing::External => Some(ConflictReason::External),
            // Without the earlier change it may still fit the file as it is.
            Standing::Waiting | Standing::Earlier => {
                let fits = gate
                    .plan_now(&call)
                    .await
                    .is_ok_and(|(summary, diff)| summary == staged.summary && diff == staged.diff);
                (!fits).then_some(ConflictReason::EarlierChange)
            }
        };
        if reason.is_some() {
            return Ok(reason);
        }
    }
    if !history.claim(review_id, change_id).await? {
        return Ok(None);
    }
    let mode = CallMode::Reviewed {
        review_id,
        change_id,
        force,
    };
    let outcome = match gate.start_as(call, None, mode).await {
        Ok(mut handle) => {
            let call_id = handle.call_id.clone();
            let state = handle.finished().await;
            let text = state.result.map(|result| result.text);
            let decision = if state.status == ToolCallStatus::Succeeded {
                ChangeDecision::Applied
            } else {
                ChangeDecision::Failed
            };
            (decision, text, Some(call_id))
        }
        Err(error) => (
            ChangeDecision::Failed,
            Some(format!("Souz could not start the call: {error}")),
            None,
        ),
    };
    history.decide_change(review_id, change_id, outcome).await?;
    Ok(None)
}
