//! A person's decision on a pending approval (first decision wins, with its grant and
//! `approval.decided` event in one transaction; `always` writes a rule to `config.toml`), and an
//! approval's expiry, which is a denial.

use std::sync::PoisonError;

use souz_protocol::{
    Action, Approval, ApprovalStatus, ArgumentMatch, DecisionRequest, DecisionResponse, Effect,
    ExpiryReason, Grant, RecordedDecision, RuntimeEvent, ScopeKind, ToolGroup, Verdict,
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
            _ => request.argument_match.clone().filter(|m| !m.is_empty()),
        };
        let tool_group = checked_group(&request, argument_match.as_ref())?;
        let via = clean_via(request.via.as_deref().unwrap_or("api"));
        let decided_at = now();
        let id = id.to_owned();
        let verdict = request.decision;
        let scope = request.scope;
        let stored_match = argument_match.clone();
        let audience = audience.clone();
        let language = self.language();
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
                decidable(&approval, scope, &audience)?;
                let grant = matches!(scope, ScopeKind::Requester | ScopeKind::Minutes)
                    .then(|| {
                        let expires_at = minutes.map(|minutes| {
                            decided_at + chrono::Duration::minutes(i64::from(minutes))
                        });
                        new_grant(
                            &approval,
                            verdict,
                            GrantTerms {
                                tool_group,
                                argument_match: stored_match.clone().unwrap_or_default(),
                                decided_at,
                                expires_at,
                                language,
                            },
                        )
                    })
                    .transpose()?;
                if let Some(grant) = &grant {
                    grants::insert(transaction, grant)?;
                }
                let decision = RecordedDecision {
                    decision: verdict,
                    scope,
                    minutes,
                    argument_match: stored_match,
                    tool_group,
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
                Ok::<_, StoreError>(
                    match expire_in(transaction, &id_owned, reason, decided_at)? {
                        Some((expired, event)) => (Some(expired), vec![event]),
                        None => (None, Vec::new()),
                    },
                )
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

/// The tool group a decision widens its grant to, checked: only an approval, only a standing
/// scope (`requester`, `minutes`; `always` writes a rule for one tool), only inside a folder.
fn checked_group(
    request: &DecisionRequest,
    argument_match: Option<&ArgumentMatch>,
) -> Result<Option<ToolGroup>, ApprovalError> {
    let Some(group) = request.tool_group else {
        return Ok(None);
    };
    let refuse = |why: &str| {
        Err(ApprovalError::Invalid(format!(
            "tool group `{}` {why}",
            group.marker()
        )))
    };
    if request.decision != Verdict::Approve {
        return refuse("widens approvals only");
    }
    if !matches!(request.scope, ScopeKind::Requester | ScopeKind::Minutes) {
        return refuse("needs scope `requester` or `minutes`");
    }
    if argument_match
        .and_then(|m| m.path_prefix.as_deref())
        .is_none()
    {
        return refuse("needs a folder (`match.path_prefix`)");
    }
    Ok(Some(group))
}

/// Whether `audience` may decide `approval` with `scope` now: only the operator chooses
/// `always`, and only a pending approval is decided.
fn decidable(
    approval: &Approval,
    scope: ScopeKind,
    audience: &Audience,
) -> Result<(), ApprovalError> {
    if scope == ScopeKind::Always && audience.owner().is_some() {
        return Err(ApprovalError::Forbidden(
            "scope `always` adds a rule to config.toml for everyone; only the daemon's \
             operator can choose it (choose `once`, `requester` or `minutes`)"
                .to_owned(),
        ));
    }
    if approval.status != ApprovalStatus::Pending {
        return Err(ApprovalError::AlreadyDecided {
            id: approval.id.clone(),
            status: approval.status.as_str(),
        });
    }
    Ok(())
}

/// What a scoped decision's grant covers and for how long.
struct GrantTerms {
    /// The tool group it widens to (else the asking tool alone).
    tool_group: Option<ToolGroup>,
    argument_match: ArgumentMatch,
    decided_at: chrono::DateTime<chrono::Utc>,
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The language of its label.
    language: souz_protocol::language::Language,
}

/// The grant a decision with scope `requester` or `minutes` leaves: for the asking tool, or
/// for the tool group the person chose, which must hold it.
fn new_grant(
    approval: &Approval,
    verdict: Verdict,
    terms: GrantTerms,
) -> Result<Grant, ApprovalError> {
    let tool = match terms.tool_group {
        Some(group) if !group.contains(&approval.tool) => {
            return Err(ApprovalError::Invalid(format!(
                "tool group `{}` does not hold {}",
                group.marker(),
                approval.tool
            )));
        }
        Some(group) => group.marker(),
        None => approval.tool.as_str(),
    };
    let effect = match verdict {
        Verdict::Approve => Effect::Allow,
        Verdict::Deny => Effect::Deny,
    };
    let mut grant = Grant {
        id: uuid::Uuid::now_v7().to_string(),
        label: String::new(),
        effect,
        tool: tool.to_owned(),
        requester: Some(approval.requester.clone()),
        argument_match: terms.argument_match,
        created_at: terms.decided_at,
        expires_at: terms.expires_at,
        approval_id: Some(approval.id.clone()),
    };
    grant.label = grants::label(&grant, terms.language);
    Ok(grant)
}

/// Ends the pending approval `id` without a decision (a denial) inside `transaction`: the
/// expired approval and its `approval.expired` event, or `None` when it was not pending. The
/// caller publishes the event; a call waiting in this process is woken by
/// [`Approvals::expire`] (a parked approval has none).
pub(crate) fn expire_in(
    transaction: &rusqlite::Connection,
    id: &str,
    reason: ExpiryReason,
    decided_at: chrono::DateTime<chrono::Utc>,
) -> Result<Option<(Approval, RuntimeEvent)>, StoreError> {
    let Some(approval) = queue::load(transaction, id)? else {
        return Ok(None);
    };
    let decision = RecordedDecision {
        decision: Verdict::Deny,
        scope: ScopeKind::Once,
        minutes: None,
        argument_match: None,
        tool_group: None,
        via: expiry_name(reason).to_owned(),
        decided_at,
        grant_id: None,
    };
    if !queue::decide(
        transaction,
        id,
        ApprovalStatus::Expired,
        &decision,
        Some(reason),
    )? {
        return Ok(None);
    }
    let event = RuntimeEvent::ApprovalExpired {
        approval_id: id.to_owned(),
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
    Ok(Some((expired, event)))
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
