//! What a call keeps in memory while it waits for a person.
//!
//! A small call keeps its plan (arguments, prepared state, diff) until it is decided. A large
//! one ([`preview::is_large`]) would hold its arguments several times over (request, plan,
//! diff) for as long as it waits, for every waiting call: it keeps only a preview of its
//! arguments and a fingerprint of its plan instead. The whole arguments and diff are in the
//! approval's row; once approved, the call is planned again from that row and runs only if the
//! new plan has the same fingerprint (the same summary, targets and diff the person saw);
//! otherwise it fails with a conflict and nothing runs.

use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::approvals::{Approvals, preview};
use crate::tools::{DynTool, Plan, PlannedCall, ToolContext, ToolError};

/// A plan's fingerprint: what the person was shown, hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fingerprint([u8; 32]);

impl Fingerprint {
    fn of(plan: &Plan) -> Self {
        let mut hasher = Sha256::new();
        for part in [
            plan.summary.as_str(),
            &format!("{:?}", plan.targets),
            plan.diff.as_deref().unwrap_or("\u{0}no diff"),
        ] {
            hasher.update(part.len().to_le_bytes());
            hasher.update(part.as_bytes());
        }
        Self(hasher.finalize().into())
    }
}

/// Takes what the approval stores (the arguments and the diff) out of a call about to wait.
/// A large call leaves a preview in `arguments`, drops its plan and keeps its `fingerprint`;
/// a small one keeps everything (the approval gets copies).
pub(super) fn hold(
    arguments: &mut Value,
    planned: &mut Option<PlannedCall>,
    fingerprint: &mut Option<Fingerprint>,
) -> (Value, Option<String>) {
    if !preview::is_large(arguments) {
        let diff = planned
            .as_ref()
            .and_then(|planned| planned.plan.diff.clone());
        return (arguments.clone(), diff);
    }
    let shown = preview::arguments(arguments);
    let whole = std::mem::replace(arguments, shown);
    let diff = planned.take().and_then(|planned| {
        *fingerprint = Some(Fingerprint::of(&planned.plan));
        planned.plan.diff
    });
    (whole, diff)
}

/// What the gate adds to a plan after planning (the history's warning), applied to a plan made
/// again so it compares equal.
pub(super) type Annotate<'a> = &'a (dyn Fn(&mut crate::tools::Plan) + Sync);

/// Plans an approved large call again from its stored arguments; fails with a conflict if the
/// plan is not the one the person approved (or nothing was kept to compare it with).
pub(super) async fn replan(
    approvals: &Approvals,
    (tool, annotate): (&Arc<dyn DynTool>, Annotate<'_>),
    approval_id: &str,
    fingerprint: Option<&Fingerprint>,
    ctx: &ToolContext,
) -> Result<PlannedCall, ToolError> {
    let Some(fingerprint) = fingerprint else {
        return Err(ToolError::Internal("the call lost its plan".into()));
    };
    let approval = approvals.get(approval_id).await.map_err(|error| {
        tracing::error!(%error, "could not read an approved call's arguments back");
        ToolError::Internal("could not read the approved call back".into())
    })?;
    let mut planned = tool.plan(approval.arguments, ctx).await?;
    annotate(&mut planned.plan);
    if Fingerprint::of(&planned.plan) != *fingerprint {
        return Err(ToolError::Conflict(
            "What this call would do changed while it waited for approval (a file it touches \
             changed), so it did not run. Plan it again and ask again."
                .into(),
        ));
    }
    Ok(planned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_small_call_keeps_its_arguments_and_a_large_one_a_preview() {
        let mut small = json!({"path": "~/a", "text": "short"});
        let (mut planned, mut fingerprint) = (None, None);
        let (stored, diff) = hold(&mut small, &mut planned, &mut fingerprint);
        assert_eq!(stored, small);
        assert_eq!((diff, fingerprint.clone()), (None, None));

        let text = "x".repeat(200_000);
        let mut large = json!({"path": "~/a", "text": text});
        let (stored, _) = hold(&mut large, &mut planned, &mut fingerprint);
        assert_eq!(stored["text"].as_str().map(str::len), Some(200_000));
        let kept = large["text"].as_str().map(str::len).unwrap_or_default();
        assert!(kept < 3_000, "{kept}");
    }

    #[test]
    fn the_fingerprint_covers_summary_targets_and_diff() {
        let plan = Plan {
            diff: Some("+a".into()),
            ..Plan::new("write ~/a")
        };
        let same = plan.clone();
        let other_diff = Plan {
            diff: Some("+b".into()),
            ..plan.clone()
        };
        let other_summary = Plan {
            summary: "write ~/b".into(),
            ..plan.clone()
        };
        assert_eq!(Fingerprint::of(&plan), Fingerprint::of(&same));
        assert_ne!(Fingerprint::of(&plan), Fingerprint::of(&other_diff));
        assert_ne!(Fingerprint::of(&plan), Fingerprint::of(&other_summary));
    }
}
