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

pub(crate) mod audience;
pub(crate) mod audit;
pub(crate) mod call_target;
pub(crate) mod client_memory;
pub(crate) mod command_pattern;
pub(crate) mod grants;
pub(crate) mod limits;
pub(crate) mod policy;
pub(crate) mod preview;
pub(crate) mod queue;
pub(crate) mod suggest;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use souz_protocol::language::Language;
use souz_protocol::{
    Approval, ApprovalStatus, EffectivePolicy, ExpiryReason, Grant, ParkedRun, RecordedDecision,
    Requester, Risk, RuntimeEvent, SuggestedScope,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use audience::Audience;
pub use call_target::CallTarget;
pub use limits::{PendingCap, PendingLimits};
pub use policy::{CallFacts, Decision, GrantRule, ListedTool, Policy};

use crate::bus::{EventBus, PauseSwitch};
use crate::config::Config;
use crate::store::codec::now;
use crate::store::{Store, StoreError};

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
    /// The external MCP server the tool belongs to (`None` for Souz's own).
    pub server: Option<String>,
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
    /// The unattended run that parks on it instead of waiting (`None`: a call waits in
    /// process, for [`Approvals::timeout`]). A parked approval waits `parked_hours`, survives a
    /// restart and expires on its own ([`Approvals::expire_parked`]).
    pub parked: Option<ParkedRun>,
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
    /// Standing consents asked and not yet settled ([`standing`]), by tool name.
    standing: Mutex<HashMap<String, standing::Asked>>,
    /// The local person's interface language, which grants are labelled and (through the
    /// gate) plans are summarized in: Russian when set, else English.
    russian: std::sync::atomic::AtomicBool,
    /// Wakes [`Approvals::expire_parked`] when an approval is parked.
    parked: tokio::sync::Notify,
    /// Where standing asks wait for their answer: the runtime's tasks (set once, see
    /// [`Approvals::run_tasks_on`]), else a set of its own.
    tasks: std::sync::OnceLock<crate::tasks::Tasks>,
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
            .read(|connection| grants::active(connection, now(), Language::En))
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
                standing: Mutex::new(HashMap::new()),
                russian: std::sync::atomic::AtomicBool::new(false),
                parked: tokio::sync::Notify::new(),
                tasks: std::sync::OnceLock::new(),
            }),
        };
        // Parked approvals outlive the process: their runs resume when they are decided.
        let leftovers = approvals.inner.store.read(queue::waited_ids).await?;
        for id in leftovers {
            approvals.expire(&id, ExpiryReason::Restart).await?;
        }
        Ok(approvals)
    }

    /// Runs its background waits on `tasks` (the runtime's, so shutdown stops and awaits them;
    /// once, at assembly: later calls change nothing).
    pub(crate) fn run_tasks_on(&self, tasks: crate::tasks::Tasks) {
        let _ = self.inner.tasks.set(tasks);
    }

    /// Where its background waits run.
    fn tasks(&self) -> &crate::tasks::Tasks {
        self.inner.tasks.get_or_init(crate::tasks::Tasks::detached)
    }

    /// The policy's decision about a call, with the grants active now.
    pub fn decide_call(&self, facts: &CallFacts<'_>) -> Decision {
        let (policy, grants) = self.snapshot();
        policy.decide(facts, &grants, now())
    }

    /// [`Approvals::decide_call`] with `extra` grants besides the active ones (an unattended
    /// run's envelope).
    pub(crate) fn decide_call_with(&self, facts: &CallFacts<'_>, extra: &[GrantRule]) -> Decision {
        let (policy, grants) = self.snapshot();
        let all: Vec<GrantRule> = grants.iter().chain(extra).cloned().collect();
        policy.decide(facts, &all, now())
    }

    /// How a tool is treated before its arguments are known.
    pub fn effective(&self, tool: &str, risk: Risk, known: bool) -> EffectivePolicy {
        let (policy, grants) = self.snapshot();
        let tool = ListedTool {
            name: tool,
            risk,
            known,
        };
        policy.effective(tool, &grants, now())
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
        let tool = ListedTool {
            name: tool,
            risk,
            known,
        };
        policy.effective_for(tool, requester, &grants, now())
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

    /// How long a parked approval waits (`parked_hours`).
    pub fn parked_lifetime(&self) -> Duration {
        let state = self
            .inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        Duration::from_secs(state.config.approvals.parked_hours.saturating_mul(3600))
    }

    /// Ends parked approvals nobody decided in time (a denial, `timeout`): sleeps until the
    /// first one runs out, or until a new one is parked, never polling. Runs until `stop`.
    pub async fn expire_parked(self, stop: CancellationToken) {
        loop {
            let next = match self.inner.store.read(queue::next_parked_expiry).await {
                Ok(next) => next,
                Err(error) => {
                    tracing::warn!(%error, "could not read when a parked approval expires");
                    None
                }
            };
            let wait = next
                .as_ref()
                .map(|(_, at)| (*at - now()).to_std().unwrap_or_default());
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.inner.parked.notified() => {}
                () = sleep_for(wait) => {
                    if let Some((id, _)) = next
                        && let Err(error) = self.expire(&id, ExpiryReason::Timeout).await
                    {
                        tracing::warn!(%error, "could not expire a parked approval");
                        // Not in a tight loop on a failing store.
                        tokio::time::sleep(Duration::from_secs(5)).await;
                    }
                }
            }
        }
    }

    /// Marks the approved parked approval `id` used by `call_id`; false when it is not an
    /// approved parked approval, or its call ran already.
    pub(crate) async fn use_parked(&self, id: &str, call_id: &str) -> Result<bool, StoreError> {
        let (id, call_id) = (id.to_owned(), call_id.to_owned());
        self.inner
            .store
            .write(move |tx| queue::use_parked(tx, &id, &call_id))
            .await
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

    /// The set of tools changed (an external MCP server's list): whatever follows
    /// [`Approvals::changes`] to keep a tool listing current looks again.
    pub(crate) fn tools_changed(&self) {
        self.inner.changes.send_modify(|version| *version += 1);
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
        let lifetime = match &new.parked {
            Some(_) => self.parked_lifetime(),
            None => self.timeout(),
        };
        let approval = Approval {
            id: uuid::Uuid::now_v7().to_string(),
            call_id: new.call_id,
            status: ApprovalStatus::Pending,
            requester_label: new
                .parked
                .as_ref()
                .map_or_else(|| new.requester.label(), ParkedRun::label),
            parked: new.parked,
            requester: new.requester,
            tool: new.tool,
            server: new.server,
            risk: new.risk,
            arguments: new.arguments,
            summary: new.summary,
            diff: new.diff,
            reason: new.reason,
            suggested: new.suggested,
            created_at,
            expires_at: queue::expiry(created_at, lifetime),
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
        let parks = approval.parked.is_some();
        let announced = shown.clone();
        let result = self
            .inner
            .events
            .publish_with(move |transaction| {
                prelude(transaction, &approval.id)?;
                queue::insert(transaction, &approval)?;
                // A chat that asked is named by its title, as every later read names it.
                let title = queue::chat_title(transaction, &approval.requester)?;
                let mut announced = announced;
                announced.requester_label = queue::requester_label(
                    &approval.requester,
                    approval.parked.as_ref(),
                    title.as_deref(),
                );
                let label = announced.requester_label.clone();
                let event = RuntimeEvent::ApprovalRequested {
                    approval: Box::new(announced),
                };
                Ok::<_, StoreError>((label, vec![event]))
            })
            .await;
        let label = match result {
            Ok((label, _)) => label,
            Err(error) => {
                self.waiters().remove(&id);
                return Err(error.into());
            }
        };
        let mut shown = shown;
        shown.requester_label = label;
        if parks {
            self.inner.parked.notify_one();
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

    /// Active grants, newest first, labelled in the person's language ([`Self::set_language`]).
    pub async fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        let language = self.language();
        self.inner
            .store
            .read(move |connection| grants::active(connection, now(), language))
            .await
    }

    /// Sets the language grants are labelled in (the gate's: the local person's).
    pub fn set_language(&self, language: Language) {
        self.inner.russian.store(
            language == Language::Ru,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The language grants are labelled in.
    pub fn language(&self) -> Language {
        if self
            .inner
            .russian
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            Language::Ru
        } else {
            Language::En
        }
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

    /// Whether a standing consent covers every call of `tool`: an active allow grant for
    /// anyone, with no argument match and no end (as [`Approvals::grant_standing`] writes).
    pub(crate) fn has_standing_allow(&self, tool: &str) -> bool {
        let (_, grants) = self.snapshot();
        grants.iter().any(|grant| {
            grant.effect == souz_protocol::Effect::Allow
                && grant.tool == tool
                && grant.requester.is_none()
                && grant.argument_match.is_empty()
                && grant.expires_at.is_none()
        })
    }

    /// Records a standing consent to every call of `tool`, by anyone, until revoked (an allow
    /// grant listed and revocable like the others), given by the approval `approval_id` if
    /// known. Used where approving one call consents to a whole thing (a skill bundle).
    pub(crate) async fn grant_standing(
        &self,
        tool: &str,
        approval_id: Option<String>,
    ) -> Result<souz_protocol::Grant, StoreError> {
        let argument_match = souz_protocol::ArgumentMatch::default();
        let effect = souz_protocol::Effect::Allow;
        let mut grant = souz_protocol::Grant {
            id: uuid::Uuid::now_v7().to_string(),
            label: String::new(),
            effect,
            tool: tool.to_owned(),
            requester: None,
            argument_match,
            created_at: now(),
            expires_at: None,
            approval_id,
        };
        grant.label = grants::label(&grant, self.language());
        let stored = grant.clone();
        self.inner
            .store
            .write(move |transaction| grants::insert(transaction, &stored))
            .await?;
        self.reload_grants().await?;
        Ok(grant)
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

mod decisions;
pub(crate) use decisions::expire_in;
mod standing;
#[cfg(test)]
mod tests;
