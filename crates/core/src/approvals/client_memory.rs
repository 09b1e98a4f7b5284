//! Which MCP clients may read the operator's memory: a choice per client, never silent.
//!
//! An MCP client's `search_memory` (and the memory resources, which follow its policy) asks
//! where read-only tools are allowed by default, so each client token is asked once (the
//! operator token, which reads `/v1/memory` anyway, is not); the approval
//! offers "always allow this client", a grant. The Connect page shows and sets the choice per
//! client ([`Approvals::set_client_grant`]): allow or deny as a grant for that client's token,
//! or no grant (ask). Rules in `config.toml` still come first (deny beats ask beats allow).
//!
//! Invariant: a client's choice is at most one active, argument-free, unending grant of the
//! tool for that client's token; setting it revokes the previous one in the same transaction.

use souz_protocol::{ArgumentMatch, Effect, Grant, OPERATOR_IDENTITY, Requester};

use super::policy::{CallFacts, same_requester};
use super::{Approvals, grants};
use crate::store::StoreError;
use crate::store::codec::now;

/// The MCP tool that reads the operator's memory.
pub(crate) const CLIENT_MEMORY_READ_TOOL: &str = "search_memory";

/// Why such a read asks.
pub(crate) const ASK_REASON: &str =
    "an MCP client reading your memory is asked about once per client";

/// Whether the call is an MCP client reading the operator's memory with a client token (the
/// operator token reads all memory on `/v1/memory` anyway: asking it would protect nothing).
pub(crate) fn reads_memory(facts: &CallFacts<'_>) -> bool {
    facts.tool == CLIENT_MEMORY_READ_TOOL
        && matches!(facts.requester, Requester::Mcp { token_id, .. } if token_id != OPERATOR_IDENTITY)
}

impl Approvals {
    /// Sets what `requester` may do with `tool` without asking: `Some(effect)` stores an
    /// unending grant for it alone, `None` leaves it to the policy; the grants for that tool
    /// and requester set before (argument-free, unending ones) are revoked in the same
    /// transaction.
    pub(crate) async fn set_client_grant(
        &self,
        tool: &str,
        requester: Requester,
        effect: Option<Effect>,
    ) -> Result<Option<Grant>, StoreError> {
        let language = self.language();
        let grant = effect.map(|effect| {
            let mut grant = Grant {
                id: uuid::Uuid::now_v7().to_string(),
                label: String::new(),
                effect,
                tool: tool.to_owned(),
                requester: Some(requester.clone()),
                argument_match: ArgumentMatch::default(),
                created_at: now(),
                expires_at: None,
                approval_id: None,
            };
            grant.label = grants::label(&grant, language);
            grant
        });
        let (stored, tool) = (grant.clone(), tool.to_owned());
        self.inner
            .store
            .write(move |transaction| {
                for previous in grants::active(transaction, now(), language)? {
                    if is_choice(&previous, &tool, &requester) {
                        grants::revoke(transaction, &previous.id, now())?;
                    }
                }
                if let Some(grant) = &stored {
                    grants::insert(transaction, grant)?;
                }
                Ok::<_, StoreError>(())
            })
            .await?;
        self.reload_grants().await?;
        Ok(grant)
    }
}

/// Whether `grant` is a client's choice about `tool`: argument-free, unending, for `requester`.
pub(crate) fn is_choice(grant: &Grant, tool: &str, requester: &Requester) -> bool {
    grant.tool == tool
        && grant.argument_match.is_empty()
        && grant.expires_at.is_none()
        && grant
            .requester
            .as_ref()
            .is_some_and(|them| same_requester(them, requester))
}
