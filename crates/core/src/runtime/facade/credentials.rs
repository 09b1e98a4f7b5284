//! Credentials for the adapters: MCP client tokens (the operator's), the daemon's proof of
//! identity, and the web UI's one-time sign-in codes. Tokens are shown once, at creation; a
//! sign-in code works once.

use std::time::Instant;

use souz_protocol::{ClientScope, ClientToken, CreatedClient, IdentityProof, UiCode};

use super::ServiceError;
use crate::runtime::RuntimeHandle;
use crate::token::{proof, ui_codes};

impl RuntimeHandle {
    /// The active MCP client tokens (names and ids, never the tokens).
    pub async fn list_clients(&self) -> Result<Vec<ClientToken>, ServiceError> {
        Ok(self.clients().list().await?)
    }

    /// Makes a token for an MCP client; the answer holds it, once.
    pub async fn create_client(
        &self,
        name: &str,
        scope: ClientScope,
    ) -> Result<CreatedClient, ServiceError> {
        Ok(self.clients().create(name, scope).await?)
    }

    /// Revokes a client token; from then on it is refused.
    pub async fn revoke_client(&self, id: &str) -> Result<(), ServiceError> {
        if self.clients().revoke(id).await? {
            Ok(())
        } else {
            Err(ServiceError::not_found(
                souz_protocol::ErrorCode::NotFound,
                format!("No active client {id}."),
            ))
        }
    }

    /// The proof that this daemon knows the credential named `key`, for `nonce` and `host`.
    pub fn prove_identity(
        &self,
        key: &str,
        nonce: &str,
        host: &str,
    ) -> Result<IdentityProof, ServiceError> {
        if !proof::valid_nonce(nonce) {
            return Err(ServiceError::Invalid(
                "nonce must be 32 to 128 hex characters.".to_owned(),
            ));
        }
        self.identity_proof(key.trim(), nonce, host)
            .map(|proof| IdentityProof { proof })
            .ok_or_else(|| {
                ServiceError::not_found(
                    souz_protocol::ErrorCode::NotFound,
                    "No active credential has this key; was its token revoked?",
                )
            })
    }

    /// A one-time code that signs the web UI in.
    pub fn issue_ui_code(&self) -> Result<UiCode, ServiceError> {
        let code = self
            .ui_codes()
            .issue(Instant::now())
            .map_err(|error| ServiceError::internal(&error))?;
        let lifetime = chrono::Duration::from_std(ui_codes::CODE_LIFETIME).unwrap_or_default();
        Ok(UiCode {
            code,
            expires_at: chrono::Utc::now() + lifetime,
        })
    }

    /// The operator token for a one-time code that is outstanding and unexpired, which is
    /// used up either way; `None` for an unknown, used or expired code.
    pub fn redeem_ui_code(&self, code: &str) -> Option<String> {
        self.ui_codes()
            .redeem(code, Instant::now())
            .then(|| self.operator_token().to_owned())
    }
}
