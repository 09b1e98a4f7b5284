//! The approval gate's decisions: the pure [`policy`], durable pending approvals and the
//! first-decision-wins protocol ([`queue`]), [`grants`], the [`audit`] log and its
//! [`redact`]ion, and the one-click scope [`suggest`]ed with every prompt.
//!
//! Invariants (fail closed): nothing runs without an explicit yes or a rule or grant that says
//! yes. No answer in time, a restart, a dropped waiter, a malformed decision: deny. The first
//! decision wins atomically (a conditional update under the single writer connection); a later
//! one gets a conflict. A pending approval and its `approval.requested` event are stored in one
//! transaction, and so are a decision, its grant and its `approval.decided` event.
//!
//! Approvals and audit rows belong to their requester's owner ([`Audience`]): a chat's to the
//! chat's user, every other requester's to the operator. A reader lists, reads and decides only
//! its own; a foreign id is "not found", exactly like a missing one. Writing an `always` rule
//! changes `config.toml` for everyone, so a user (as opposed to the operator) cannot.
//!
//! [`Approvals::changes`] moves whenever the rules or the active grants change, a time-limited
//! grant reaching its end included: [`Approvals::expire_grants`] (a task the runtime runs) sleeps
//! until the next grant expiry, never polling, and drops the grant then.

pub mod audience;
pub mod audit;
pub mod call_target;
pub mod command_pattern;
pub mod grants;
pub mod limits;
pub mod policy;
pub mod preview;
pub mod queue;
pub mod suggest;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use souz_protocol::{
    Action, Approval, ApprovalStatus, ArgumentMatch, DecisionRequest, DecisionResponse, Effect,
    EffectivePolicy, ExpiryReason, Grant, RecordedDecision, Requester, Risk, RuntimeEvent,
    ScopeKind, SuggestedScope, Verdict,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use audience::Audience;
pub use call_target::CallTarget;
pub use limits::{PendingCap, PendingLimits};
pub use policy::{CallFacts, Decision, GrantRule, Policy};

use crate::bus::{EventBus, PauseSwitch};
use crate::config::edit::append_rule;
use crate::config::{Config, RuleConfig};
use crate::store::codec::now;
use crate::store::{Store, StoreError};

/// Longest `minutes` scope: one week.
const MAX_SCOPE_MINUTES: u32 = 7 * 24 * 60;

/// Why an approval operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// No such approval.
    #[error("no approval with id `{0}`")]
    NotFound(String),
    /// Someone decided first (or it expired).
    #[error("approval `{id}` is already {status}")]
    AlreadyDecided {
        /// Approval id.
        id: String,
        /// Its status now.
        status: &'static str,
    },
    /// The decision request is malformed; nothing was decided.
    #[error("{0}")]
    Invalid(String),
    /// No such active grant.
    #[error("no active grant with id `{0}`")]
    GrantNotFound(String),
    /// The decision is the operator's to make; nothing was decided.
    #[error("{0}")]
    Forbidden(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a call could not be put before a person.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Too many calls are waiting already; nothing was stored.
    #[error(transparent)]
    TooMany(#[from] PendingCap),
    /// The database failed; nothing was stored.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How a pending approval ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// A person approved.
    Approved(RecordedDecision),
    /// A person denied.
    Denied(RecordedDecision),
    /// Nobody decided: a denial.
    Expired(ExpiryReason),
}

/// What the gate knows when it asks.
#[derive(Debug, Clone)]
pub struct NewApproval {
    /// The call it is about.
    pub call_id: String,
    /// Who asks.
    pub requester: Requester,
    /// Tool name.
    pub tool: String,
    /// Risk class.
    pub risk: Risk,
    /// Full arguments.
    pub arguments: serde_json::Value,
    /// One line: what will happen.
    pub summary: String,
    /// Unified diff for file changes.
    pub diff: Option<String>,
    /// Why the policy asks.
    pub reason: String,
    /// The one-click scope.
    pub suggested: SuggestedScope,
}

/// A stored pending approval and the means to learn how it ends.
#[derive(Debug)]
pub struct PendingApproval {
    /// The approval as stored.
    pub approval: Approval,
    receiver: watch::Receiver<Option<Resolution>>,
}

impl PendingApproval {
    /// Waits until the approval is decided or expired. If the service goes away first, that
    /// counts as a withdrawal (a denial).
    pub async fn resolved(&mut self) -> Resolution {
        match self.receiver.wait_for(Option::is_some).await {
            Ok(resolution) => resolution
                .clone()
                .unwrap_or(Resolution::Expired(ExpiryReason::Withdrawn)),
            Err(_) => Resolution::Expired(ExpiryReason::Withdrawn),
        }
    }
}

struct PolicyState {
    config: Config,
    policy: Arc<Policy>,
    grants: Arc<Vec<GrantRule>>,
}

/// A pending approval's waiting call: how to tell it the outcome, and whose it is (for the
/// [`limits`]).
struct Waiter {
    sender: watch::Sender<Option<Resolution>>,
    requester: String,
}

struct Inner {
    store: Store,
    events: EventBus,
    state: RwLock<PolicyState>,
    waiters: Mutex<HashMap<String, Waiter>>,
    /// `[server] proxy_users_decide` as the daemon started (a `[server]` key: it changes on
    /// restart, like the rest of the section).
    users_decide: bool,
    changes: watch::Sender<u64>,
    pause: PauseSwitch,
}

/// The approval service. Cheap to clone.
#[derive(Clone)]
pub struct Approvals {
    inner: Arc<Inner>,
}

impl Approvals {
    /// Loads active grants and expires approvals left pending by a previous run (they are
    /// denied: nobody is waiting for them any more).
    pub async fn open(store: Store, events: EventBus, config: Config) -> Result<Self, StoreError> {
        let grants = store
            .read(|connection| grants::active(connection, now()))
            .await?;
        let policy = Arc::new(Policy::new(&config.approvals, config.paths.user_home()));
        let users_decide = config.server.proxy_users_decide;
        let (changes, _) = watch::channel(0);
        let approvals = Self {
            inner: Arc::new(Inner {
                store,
                events,
                state: RwLock::new(PolicyState {
                    config,
                    policy,
                    grants: Arc::new(grants.iter().map(grants::as_rule).collect()),
                }),
                waiters: Mutex::new(HashMap::new()),
                users_decide,
                changes,
                pause: PauseSwitch::new(None),
            }),
        };
        let leftovers = approvals.inner.store.read(queue::pending_ids).await?;
        for id in leftovers {
            approvals.expire(&id, ExpiryReason::Restart).await?;
        }
        Ok(approvals)
    }

    /// The policy's decision about a call, with the grants active now.
    pub fn decide_call(&self, facts: &CallFacts<'_>) -> Decision {
        let (policy, grants) = self.snapshot();
        policy.decide(facts, &grants, now())
    }

    /// How a tool is treated before its arguments are known.
    pub fn effective(&self, tool: &str, risk: Risk, known: bool) -> EffectivePolicy {
        let (policy, grants) = self.snapshot();
        policy.effective(tool, risk, known, &grants, now())
    }

    /// How a tool is treated for `requester` before its arguments are known (see
    /// [`Policy::effective_for`]).
    pub fn effective_for(
        &self,
        tool: &str,
        risk: Risk,
        known: bool,
        requester: &Requester,
    ) -> EffectivePolicy {
        let (policy, grants) = self.snapshot();
        policy.effective_for(tool, risk, known, requester, &grants, now())
    }

    /// The pause switch: while it is on, calls that would ask are denied without asking.
    pub fn pause(&self) -> &PauseSwitch {
        &self.inner.pause
    }

    /// Ends every pending approval without a decision (a denial); returns how many.
    pub async fn expire_pending(&self, reason: ExpiryReason) -> Result<usize, StoreError> {
        let pending = self.inner.store.read(queue::pending_ids).await?;
        let mut expired = 0;
        for id in pending {
            if self.expire(&id, reason).await?.is_some() {
                expired += 1;
            }
        }
        Ok(expired)
    }

    /// How long a pending approval waits.
    pub fn timeout(&self) -> Duration {
        let state = self
            .inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        Duration::from_secs(state.config.approvals.timeout_seconds)
    }

    /// Changes whenever rules or grants change, including when a time-limited grant ends (for
    /// MCP `tools/list_changed`).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Ends time-limited grants when their time is up: sleeps until the next grant expiry (or
    /// a change of grants, which may bring an earlier one), then drops the expired grants and
    /// announces the change. Runs until `stop` is cancelled; idle when no grant expires.
    pub async fn expire_grants(self, stop: CancellationToken) {
        let mut changes = self.changes();
        loop {
            changes.mark_unchanged();
            let next = self.next_grant_expiry();
            let wait = next.map(|at| (at - now()).to_std().unwrap_or_default());
            tokio::select! {
                () = stop.cancelled() => return,
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = sleep_for(wait) => self.drop_expired_grants(),
            }
        }
    }

    /// When the first active time-limited grant ends.
    pub(crate) fn next_grant_expiry(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        let (_, grants) = self.snapshot();
        grants.iter().filter_map(|grant| grant.expires_at).min()
    }

    /// Drops the grants whose time is up; announces a change if there were any.
    fn drop_expired_grants(&self) {
        let at = now();
        let dropped = {
            let mut state = self
                .inner
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let active: Vec<GrantRule> = state
                .grants
                .iter()
                .filter(|grant| grant.expires_at.is_none_or(|expires| expires > at))
                .cloned()
                .collect();
            let dropped = active.len() != state.grants.len();
            if dropped {
                state.grants = Arc::new(active);
            }
            dropped
        };
        if dropped {
            self.inner.changes.send_modify(|version| *version += 1);
        }
    }

    /// Applies a new configuration's rules (after the settings editor or an `always` rule).
    pub fn apply_config(&self, config: Config) {
        let policy = Arc::new(Policy::new(&config.approvals, config.paths.user_home()));
        {
            let mut state = self
                .inner
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            state.policy = policy;
            state.config = config;
        }
        self.inner.changes.send_modify(|version| *version += 1);
    }

    fn snapshot(&self) -> (Arc<Policy>, Arc<Vec<GrantRule>>) {
        let state = self
            .inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        (Arc::clone(&state.policy), Arc::clone(&state.grants))
    }

    /// Stores a pending approval, announces it, and returns the means to wait for it.
    pub async fn request(&self, new: NewApproval) -> Result<PendingApproval, RequestError> {
        self.request_with(new, |_, _| Ok(())).await
    }

    /// Like [`Approvals::request`], running `prelude` (given the new approval's id) first in the
    /// same transaction, so the caller's own record and the approval become durable together.
    ///
    /// Over a [`limits`] cap nothing is stored and `prelude` does not run. The whole approval
    /// is stored; the one announced and returned is its [`preview`].
    pub async fn request_with<F>(
        &self,
        new: NewApproval,
        prelude: F,
    ) -> Result<PendingApproval, RequestError>
    where
        F: FnOnce(&rusqlite::Transaction<'_>, &str) -> Result<(), StoreError> + Send + 'static,
    {
        let created_at = now();
        let approval = Approval {
            id: uuid::Uuid::now_v7().to_string(),
            call_id: new.call_id,
            status: ApprovalStatus::Pending,
            requester_label: new.requester.label(),
            requester: new.requester,
            tool: new.tool,
            risk: new.risk,
            arguments: new.arguments,
            summary: new.summary,
            diff: new.diff,
            reason: new.reason,
            suggested: new.suggested,
            created_at,
            expires_at: queue::expiry(created_at, self.timeout()),
            decision: None,
            expiry_reason: None,
        };
        let shown = preview::of(&approval);
        let (sender, receiver) = watch::channel(None);
        {
            let limits = self.pending_limits();
            let mut waiters = self.waiters();
            limits.admit(
                &approval.requester,
                waiters.values().map(|waiter| waiter.requester.as_str()),
            )?;
            waiters.insert(
                approval.id.clone(),
                Waiter {
                    sender,
                    requester: limits::requester_key(&approval.requester),
                },
            );
        }
        let id = approval.id.clone();
        let announced = shown.clone();
        let result = self
            .inner
            .events
            .publish_with(move |transaction| {
                prelude(transaction, &approval.id)?;
                queue::insert(transaction, &approval)?;
                let event = RuntimeEvent::ApprovalRequested {
                    approval: Box::new(announced),
                };
                Ok::<_, StoreError>(((), vec![event]))
            })
            .await;
        if let Err(error) = result {
            self.waiters().remove(&id);
            return Err(error.into());
        }
        Ok(PendingApproval {
            approval: shown,
            receiver,
        })
    }

    fn pending_limits(&self) -> PendingLimits {
        let state = self
            .inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        PendingLimits {
            total: state.config.approvals.max_pending,
            per_requester: state.config.approvals.max_pending_per_requester,
        }
    }

    /// Whether users behind the trusted proxy decide their own chats' approvals.
    fn users_decide(&self) -> bool {
        self.inner.users_decide
    }

    fn seen_by(&self, audience: &Audience) -> Audience {
        audience.seeing(self.users_decide())
    }

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
        let minutes = match request.scope {
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
        };
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
                    let effect = match verdict {
                        Verdict::Approve => Effect::Allow,
                        Verdict::Deny => Effect::Deny,
                    };
                    let argument_match = stored_match.clone().unwrap_or_default();
                    let expires_at = minutes
                        .map(|minutes| decided_at + chrono::Duration::minutes(i64::from(minutes)));
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
                        approval_id: Some(id.clone()),
                    }
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

        let decision = approval.decision.clone();
        if let Some(decision) = decision {
            self.resolve(
                &approval.id,
                match verdict {
                    Verdict::Approve => Resolution::Approved(decision),
                    Verdict::Deny => Resolution::Denied(decision),
                },
            );
        }
        if grant.is_some() {
            self.reload_grants().await?;
        }
        let (rule, warning) = if scope == ScopeKind::Always {
            match self.write_rule(&approval, verdict, argument_match.as_ref()) {
                Ok(rule) => (Some(rule), None),
                Err(message) => (None, Some(message)),
            }
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

    /// One approval.
    pub async fn get(&self, id: &str) -> Result<Approval, ApprovalError> {
        self.get_for(id, &Audience::Everyone).await
    }

    /// One approval `audience` owns (a foreign one is `NotFound`, like a missing one).
    pub async fn get_for(&self, id: &str, audience: &Audience) -> Result<Approval, ApprovalError> {
        let (id, audience) = (id.to_owned(), self.seen_by(audience));
        self.inner
            .store
            .read(move |connection| {
                queue::load_for(connection, &id, &audience)?.ok_or(ApprovalError::NotFound(id))
            })
            .await
    }

    /// Approvals, newest first.
    pub async fn list(
        &self,
        status: Option<ApprovalStatus>,
        limit: usize,
    ) -> Result<Vec<Approval>, StoreError> {
        self.list_for(&Audience::Everyone, status, limit).await
    }

    /// The approvals `audience` owns, newest first.
    pub async fn list_for(
        &self,
        audience: &Audience,
        status: Option<ApprovalStatus>,
        limit: usize,
    ) -> Result<Vec<Approval>, StoreError> {
        let audience = self.seen_by(audience);
        self.inner
            .store
            .read(move |connection| queue::list(connection, &audience, status, limit))
            .await
    }

    /// Active grants, newest first.
    pub async fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        self.inner
            .store
            .read(|connection| grants::active(connection, now()))
            .await
    }

    /// A page of the audit log, newest first (the rows `query.audience` owns).
    pub async fn audit(
        &self,
        query: audit::AuditQuery,
    ) -> Result<Vec<souz_protocol::AuditEntry>, StoreError> {
        self.inner
            .store
            .read(move |connection| audit::page(connection, &query))
            .await
    }

    /// Revokes a grant.
    pub async fn revoke(&self, id: &str) -> Result<(), ApprovalError> {
        let id = id.to_owned();
        self.inner
            .store
            .write(move |transaction| {
                if grants::revoke(transaction, &id, now())? {
                    Ok(())
                } else {
                    Err(ApprovalError::GrantNotFound(id))
                }
            })
            .await?;
        self.reload_grants().await?;
        Ok(())
    }

    pub(crate) async fn reload_grants(&self) -> Result<(), StoreError> {
        let active = self.grants().await?;
        {
            let mut state = self
                .inner
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            state.grants = Arc::new(active.iter().map(grants::as_rule).collect());
        }
        self.inner.changes.send_modify(|version| *version += 1);
        Ok(())
    }

    fn write_rule(
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

    fn waiters(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiter>> {
        self.inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn resolve(&self, id: &str, resolution: Resolution) {
        if let Some(waiter) = self.waiters().remove(id) {
            let _ = waiter.sender.send(Some(resolution));
        }
    }
}

/// Sleeps for `wait`, or forever when there is nothing to wait for.
async fn sleep_for(wait: Option<Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => std::future::pending().await,
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
fn clean_via(via: &str) -> String {
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

#[cfg(test)]
mod tests;
