//! Approvals for the adapters: the queue as an [`Audience`] sees it, decisions, the operator's
//! grants, the audit log, and what the MCP server follows (the policy as a client sees it, and
//! when rules or grants change).

use souz_protocol::{
    Approval, ApprovalStatus, AuditEntry, DecisionRequest, DecisionResponse, EffectivePolicy,
    Grant, Requester, Risk,
};
use tokio::sync::watch;

use super::ServiceError;
use crate::approvals::Audience;
use crate::approvals::audit::AuditQuery;
use crate::runtime::RuntimeHandle;

impl RuntimeHandle {
    /// The approvals `audience` owns, newest first.
    pub async fn list_approvals(
        &self,
        audience: &Audience,
        status: Option<ApprovalStatus>,
        limit: usize,
    ) -> Result<Vec<Approval>, ServiceError> {
        Ok(self.approvals().list_for(audience, status, limit).await?)
    }

    /// One approval `audience` owns (a foreign one is not found, like a missing one).
    pub async fn approval_for(
        &self,
        id: &str,
        audience: &Audience,
    ) -> Result<Approval, ServiceError> {
        Ok(self.approvals().get_for(id, audience).await?)
    }

    /// One approval, whoever asked for it.
    pub async fn approval(&self, id: &str) -> Result<Approval, ServiceError> {
        Ok(self.approvals().get(id).await?)
    }

    /// Decides a pending approval; the first decision wins.
    pub async fn decide_approval(
        &self,
        id: &str,
        request: DecisionRequest,
        audience: &Audience,
    ) -> Result<DecisionResponse, ServiceError> {
        Ok(self.approvals().decide_for(id, request, audience).await?)
    }

    /// Active grants, newest first.
    pub async fn grants(&self) -> Result<Vec<Grant>, ServiceError> {
        Ok(self.approvals().grants().await?)
    }

    /// Revokes a grant.
    pub async fn revoke_grant(&self, id: &str) -> Result<(), ServiceError> {
        Ok(self.approvals().revoke(id).await?)
    }

    /// A page of the audit log, newest first, including calls that just ended (calls that
    /// changed nothing are recorded in batches).
    pub async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>, ServiceError> {
        self.gate().flushed().await;
        Ok(self.approvals().audit(query).await?)
    }

    /// How a tool is treated for `requester` before its arguments are known.
    pub fn tool_policy_for(
        &self,
        tool: &str,
        risk: Risk,
        requester: &Requester,
    ) -> EffectivePolicy {
        self.approvals().effective_for(tool, risk, true, requester)
    }

    /// Moves when rules or grants change (a time-limited grant ending included).
    pub fn policy_changes(&self) -> watch::Receiver<u64> {
        self.approvals().changes()
    }
}
