//! A person's decision on a pending approval (first decision wins, with its grant and
//! `approval.decided` event in one transaction; `always` writes a rule to `config.toml`), and an
//! approval's expiry, which is a denial.

use std::sync::PoisonError;

use souz_protocol::{
    Action, Approval, ApprovalStatus, ArgumentMatch, DecisionRequest, DecisionResponse, Effect,
    ExpiryReason, Grant, RecordedDecision, RuntimeEvent, ScopeKind, Verdict,
};

use super::{ApprovalError, Approvals, Audience, Resolution, grants, preview, queue};
use crate::config::RuleConfig;
use crate::config::edit::append_rule;
use crate::store::StoreError;
use crate::store::codec::now;

/// Longest `minutes` scope: one week.
pub(super) const MAX_SCOPE_MINUTES: u32 = 7 * 24 * 60;

impl Approvals {
    /// A person's decision. The first one wins; a later one is `AlreadyDecided`.
    pub async fn decide(
        &self,
        id: &str,
        request: DecisionRequest,
    ) -> Result<DecisionResponse, ApprovalError> {
        self.decide_for(id, request, &Audience::Everyone).await
    }

    /// A decision by `audience`, which must own the approval (else `NotFound`). Only the
    /// operator (or the local user) may choose `always`: the rule it writes applies to everyone.
    pub async fn decide_for(
        &self,
        id: &str,
        request: DecisionRequest,
        audience: &Audience,
    ) -> Result<DecisionResponse, ApprovalError> {
        let refusal = audience
            .decision_refusal(self.users_decide())
            .map(ApprovalError::Forbidden);
        let audience = &self.seen_by(audience);
        let minutes = scope_minutes(&request)?;
        let argument_match = match request.scope {
            ScopeKind::Once => None,
            _ => request.argument_match.filter(|m| !m.is_empty()),
        };
        let via = clean_via(request.via.as_deref().unwrap_or("api"));
        let decided_at = now();
        let id = id.to_owned();
        let verdict = request.decision;
        let scope = request.scope;
        let stored_match = argument_match.clone();
        let audience = audience.clone();
        let ((approval, grant), _) = self
            .inner
            .events
            .publish_with(move |transaction| {
                let approval = queue::load_for(transaction, &id, &audience)?
                    .ok_or_else(|| ApprovalError::NotFound(id.clone()))?;
                // After the lookup: a foreign or missing id stays "not found".
                if let Some(refusal) = refusal {
                    return Err(refusal);
                }
                if scope == ScopeKind::Always && audience.owner().is_some() {
                    return Err(ApprovalError::Forbidden(
                        "scope `always` adds a rule to config.toml for everyone; only the \
                         daemon's operator can choose it (choose `once`, `requester` or \
                         `minutes`)"
                            .to_owned(),
                    ));
                }
                if approval.status != ApprovalStatus::Pending {
                    return Err(ApprovalError::AlreadyDecided {
                        id: id.clone(),
                        status: approval.status.as_str(),
                    });
                }
                let grant = matches!(scope, ScopeKind::Requester | ScopeKind::Minutes).then(|| {
                    let argument_match = stored_match.clone().unwrap_or_default();
                    let expires_at = minutes
                        .map(|minutes| decided_at + chrono::Duration::minutes(i64::from(minutes)));
                    new_grant(&approval, verdict, argument_match, decided_at, expires_at)
                });
                if let Some(grant) = &grant {
                    grants::insert(transaction, grant)?;
                }
                let decision = RecordedDecision {
                    decision: verdict,
                    scope,
                    minutes,
                    argument_match: stored_match,
                    via,
                    decided_at,
                    grant_id: grant.as_ref().map(|grant| grant.id.clone()),
                };
                let status = match verdict {
                    Verdict::Approve => ApprovalStatus::Approved,
                    Verdict::Deny => ApprovalStatus::Denied,
                };
                if !queue::decide(transaction, &id, status, &decision, None)? {
                    return Err(ApprovalError::AlreadyDecided {
                        id: id.clone(),
                        status: "decided",
                    });
                }
                let event = RuntimeEvent::ApprovalDecided {
                    approval_id: id.clone(),
                    call_id: approval.call_id.clone(),
                    tool: approval.tool.clone(),
                    decision: decision.clone(),
                };
                let decided = Approval {
                    status,
                    decision: Some(decision),
                    ..approval
                };
                Ok(((decided, grant), vec![event]))
            })
            .await?;

        self.wake_waiter(&approval, verdict);
        if grant.is_some() {
            self.reload_grants().await?;
        }
        let (rule, warning) = if scope == ScopeKind::Always {
            self.always_rule(&approval, verdict, argument_match.as_ref())
        } else {
            (None, None)
        };
        Ok(DecisionResponse {
            approval: preview::approval(approval),
            grant,
            rule,
            warning,
        })
    }

    /// Ends a pending approval without a decision (a denial). Returns the approval if it was
    /// still pending; `None` if it had already been decided.
    pub async fn expire(
        &self,
        id: &str,
        reason: ExpiryReason,
    ) -> Result<Option<Approval>, StoreError> {
        let id_owned = id.to_owned();
        let decided_at = now();
        let (expired, _) = self
            .inner
            .events
            .publish_with(move |transaction| {
                let Some(approval) = queue::load(transaction, &id_owned)? else {
                    return Ok((None, Vec::new()));
                };
                let decision = RecordedDecision {
                    decision: Verdict::Deny,
                    scope: ScopeKind::Once,
                    minutes: None,
                    argument_match: None,
                    via: expiry_name(reason).to_owned(),
                    decided_at,
                    grant_id: None,
                };
                if !queue::decide(
                    transaction,
                    &id_owned,
                    ApprovalStatus::Expired,
                    &decision,
                    Some(reason),
                )? {
                    return Ok((None, Vec::new()));
                }
                let event = RuntimeEvent::ApprovalExpired {
                    approval_id: id_owned.clone(),
                    call_id: approval.call_id.clone(),
                    tool: approval.tool.clone(),
                    reason,
                };
                let expired = Approval {
                    status: ApprovalStatus::Expired,
                    decision: Some(decision),
                    expiry_reason: Some(reason),
                    ..approval
                };
                Ok::<_, StoreError>((Some(expired), vec![event]))
            })
            .await?;
        if expired.is_some() {
            self.resolve(id, Resolution::Expired(reason));
        }
        Ok(expired)
    }

    /// Hands a decided approval's decision to the call waiting for it.
    fn wake_waiter(&self, approval: &Approval, verdict: Verdict) {
        if let Some(decision) = approval.decision.clone() {
            self.resolve(
                &approval.id,
                match verdict {
                    Verdict::Approve => Resolution::Approved(decision),
                    Verdict::Deny => Resolution::Denied(decision),
                },
            );
        }
    }

    /// Writes the rule an `always` decision asks for: the rule, or a warning that it could not.
    fn always_rule(
        &self,
        approval: &Approval,
        verdict: Verdict,
        argument_match: Option<&ArgumentMatch>,
    ) -> (Option<String>, Option<String>) {
        match self.write_rule(approval, verdict, argument_match) {
            Ok(rule) => (Some(rule), None),
            Err(message) => (None, Some(message)),
        }
    }

    pub(super) fn write_rule(
        &self,
        approval: &Approval,
        verdict: Verdict,
        argument_match: Option<&ArgumentMatch>,
    ) -> Result<String, String> {
        let argument_match = argument_match.cloned().unwrap_or_default();
        let rule = RuleConfig {
            action: match verdict {
                Verdict::Approve => Action::Allow,
                Verdict::Deny => Action::Deny,
            },
            tool: Some(approval.tool.clone()),
            path: argument_match.path_prefix,
            command: argument_match.command_prefix,
            domain: argument_match.domain,
            risk: None,
            requester: None,
            note: Some(format!("from approval {}", approval.id)),
        };
        let current = {
            let state = self
                .inner
                .state
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            state.config.clone()
        };
        let comment = format!(
            "Added by Souz on {} when you chose \"always\" for {} ({}).",
            now().format("%Y-%m-%d %H:%M UTC"),
            approval.tool,
            approval.summary.replace('\n', " "),
        );
        match append_rule(&current, &rule, &comment) {
            Ok((next, rendered)) => {
                self.apply_config(next);
                Ok(rendered)
            }
            Err(error) => {
                tracing::warn!(%error, "could not write an `always` rule");
                Err(format!(
                    "the decision applies to this call, but the rule could not be saved: {error}"
                ))
            }
        }
    }
}

/// The `minutes` a decision's scope lasts: required (and bounded) for scope `minutes`,
/// refused for every other scope.
fn scope_minutes(request: &DecisionRequest) -> Result<Option<u32>, ApprovalError> {
    Ok(match request.scope {
        ScopeKind::Minutes => match request.minutes {
            Some(minutes) if (1..=MAX_SCOPE_MINUTES).contains(&minutes) => Some(minutes),
            _ => {
                return Err(ApprovalError::Invalid(format!(
                    "scope `minutes` needs `minutes` between 1 and {MAX_SCOPE_MINUTES}"
                )));
            }
        },
        _ if request.minutes.is_some() => {
            return Err(ApprovalError::Invalid(
                "`minutes` is only valid with scope `minutes`".to_owned(),
            ));
        }
        _ => None,
    })
}

/// The grant a decision with scope `requester` or `minutes` leaves.
fn new_grant(
    approval: &Approval,
    verdict: Verdict,
    argument_match: ArgumentMatch,
    decided_at: chrono::DateTime<chrono::Utc>,
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
) -> Grant {
    let effect = match verdict {
        Verdict::Approve => Effect::Allow,
        Verdict::Deny => Effect::Deny,
    };
    Grant {
        id: uuid::Uuid::now_v7().to_string(),
        label: grants::label(
            effect,
            &approval.tool,
            Some(&approval.requester),
            &argument_match,
            expires_at,
        ),
        effect,
        tool: approval.tool.clone(),
        requester: Some(approval.requester.clone()),
        argument_match,
        created_at: decided_at,
        expires_at,
        approval_id: Some(approval.id.clone()),
    }
}

fn expiry_name(reason: ExpiryReason) -> &'static str {
    match reason {
        ExpiryReason::Timeout => "timeout",
        ExpiryReason::Restart => "restart",
        ExpiryReason::Withdrawn => "withdrawn",
        ExpiryReason::Shutdown => "shutdown",
        ExpiryReason::Paused => "paused",
    }
}

/// Keeps `via` to a short lower-case label.
pub(super) fn clean_via(via: &str) -> String {
    let cleaned: String = via
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(32)
        .flat_map(char::to_lowercase)
        .collect();
    if cleaned.is_empty() {
        "api".to_owned()
    } else {
        cleaned
    }
}
