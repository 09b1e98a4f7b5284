//! Signing in to a provider's account (Codex through ChatGPT) for the adapters: start a
//! device-code sign-in, see where it stands, sign out.
//!
//! Invariants: the waiting runs as a runtime task (a client that goes away does not stop it;
//! the daemon stopping, a new start or a sign-out does); the state answered is the stored
//! session first (signed in), else the attempt's (pending, expired, failed), else signed out.

use souz_protocol::{ErrorCode, ProviderId, ProviderLogin, ProviderLoginState};
use tokio_util::sync::CancellationToken;

use super::ServiceError;
use crate::chat::ChatUser;
use crate::llm::codex::login::{Attempt, Pacing};
use crate::llm::service::LlmServiceError;
use crate::runtime::RuntimeHandle;

impl RuntimeHandle {
    /// Starts signing `user` in to `provider`: asks for a device code and waits in the
    /// background for the person to enter it. Answers the code and where to enter it.
    pub async fn start_provider_login(
        &self,
        user: &ChatUser,
        provider: &str,
    ) -> Result<ProviderLogin, ServiceError> {
        let llm = self.llm().for_user(&user.0);
        let code = llm
            .start_sign_in(provider, &CancellationToken::new())
            .await
            .map_err(|error| match error {
                // The sign-in service refused or could not be reached: say so, it is no
                // internal fault.
                LlmServiceError::Llm(failure) => ServiceError::conflict(
                    ErrorCode::Conflict,
                    format!("the sign-in service gave no code: {failure}"),
                ),
                other => other.into(),
            })?;
        let provider = provider_id(provider);
        let ticket = llm
            .sign_in_attempts()
            .begin(&user.0, &code, &self.shutdown_signal());
        let login = pending(
            provider,
            &code.verification_url,
            &code.user_code,
            code.expires_at,
        );
        let logins = llm.sign_in_attempts().clone();
        self.spawn(async move {
            let outcome = llm
                .finish_sign_in(&code, Pacing::default(), &ticket.cancel)
                .await;
            if let Err(error) = &outcome {
                tracing::info!(%provider, %error, "the sign-in ended without signing in");
            }
            logins.finish(&ticket, &outcome.map(|_| ()));
        });
        Ok(login)
    }

    /// Where `user`'s sign-in to `provider` stands.
    pub async fn provider_login(
        &self,
        user: &ChatUser,
        provider: &str,
    ) -> Result<ProviderLogin, ServiceError> {
        let llm = self.llm().for_user(&user.0);
        let signed_in = llm.signed_in(provider).await?;
        let provider = provider_id(provider);
        let mut login = ProviderLogin {
            provider,
            state: ProviderLoginState::SignedOut,
            verification_url: None,
            user_code: None,
            expires_at: None,
            account: None,
            error: None,
        };
        // A pending attempt (signing in again) is shown over an older session.
        match (self.llm().sign_in_attempts().attempt(&user.0), signed_in) {
            (
                Some(Attempt::Pending {
                    verification_url,
                    user_code,
                    expires_at,
                }),
                _,
            ) => return Ok(pending(provider, &verification_url, &user_code, expires_at)),
            (_, Some(account)) => {
                login.state = ProviderLoginState::SignedIn;
                login.account = account;
            }
            (Some(Attempt::Expired), None) => login.state = ProviderLoginState::Expired,
            (Some(Attempt::Failed(error)), None) => {
                login.state = ProviderLoginState::Failed;
                login.error = Some(error);
            }
            (None, None) => {}
        }
        Ok(login)
    }

    /// Signs `user` out of `provider`: stops a waiting sign-in and forgets the tokens.
    pub async fn sign_out_provider(
        &self,
        user: &ChatUser,
        provider: &str,
    ) -> Result<(), ServiceError> {
        let llm = self.llm().for_user(&user.0);
        llm.sign_out(provider).await?;
        self.llm().sign_in_attempts().cancel(&user.0);
        Ok(())
    }
}

/// The provider `name` names (already checked by the service).
fn provider_id(name: &str) -> ProviderId {
    ProviderId::parse(name).unwrap_or(ProviderId::Codex)
}

fn pending(
    provider: ProviderId,
    verification_url: &str,
    user_code: &str,
    expires_at: chrono::DateTime<chrono::Utc>,
) -> ProviderLogin {
    ProviderLogin {
        provider,
        state: ProviderLoginState::Pending,
        verification_url: Some(verification_url.to_owned()),
        user_code: Some(user_code.to_owned()),
        expires_at: Some(expires_at),
        account: None,
        error: None,
    }
}
