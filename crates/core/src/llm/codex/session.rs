//! The signed-in session: the account's tokens as stored in the user's key store (one sealed
//! JSON row, provider `codex`), read for each call, refreshed before they expire and after a
//! 401, and removed when the sign-in service refuses the refresh token.
//!
//! Invariants: see [`super`] (refreshes serialized and compare-and-swapped; a refusal of an
//! already replaced refresh token never ends the newer session). A session's `Debug` shows no
//! token; every token read or stored is named to the redactor.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::PROVIDER;
use super::auth::{AuthService, RefreshFailure, TokenAnswer};
use crate::llm::LlmError;
use crate::llm::keys::{ApiKey, KeyStore, KeyStoreError};

/// An access token this close to its expiry is refreshed before use.
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(120);

/// The stored tokens and what was read from them.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Session {
    pub access_token: String,
    pub refresh_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    /// The ChatGPT account id (`chatgpt-account-id` header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The account's e-mail address, for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// When the access token expires (seconds since the epoch), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("account_id", &self.account_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session `answer` gives, keeping from `previous` what a refresh does not repeat.
    pub(crate) fn from_answer(answer: TokenAnswer, previous: Option<&Session>) -> Option<Self> {
        let access_token = answer
            .access_token
            .or_else(|| previous.map(|session| session.access_token.clone()))?;
        let refresh_token = answer
            .refresh_token
            .or_else(|| previous.map(|session| session.refresh_token.clone()))?;
        let id_token = answer
            .id_token
            .or_else(|| previous.and_then(|session| session.id_token.clone()));
        let id_claims = id_token.as_deref().and_then(claims);
        let access_claims = claims(&access_token);
        let account_id = [id_claims.as_ref(), access_claims.as_ref()]
            .into_iter()
            .flatten()
            .find_map(account_id)
            .or_else(|| previous.and_then(|session| session.account_id.clone()));
        let email = [id_claims.as_ref(), access_claims.as_ref()]
            .into_iter()
            .flatten()
            .find_map(email)
            .or_else(|| previous.and_then(|session| session.email.clone()));
        let now = chrono::Utc::now().timestamp();
        let expires_at = access_claims
            .as_ref()
            .and_then(|claims| claims.get("exp"))
            .and_then(Value::as_i64)
            .or_else(|| {
                answer
                    .expires_in
                    .map(|seconds| now.saturating_add(i64::try_from(seconds).unwrap_or(i64::MAX)))
            });
        Some(Self {
            access_token,
            refresh_token,
            id_token,
            account_id,
            email,
            expires_at,
        })
    }

    /// Whether the access token expires within [`REFRESH_MARGIN`] (unknown expiry: no).
    pub(crate) fn needs_refresh(&self) -> bool {
        let margin = i64::try_from(REFRESH_MARGIN.as_secs()).unwrap_or(0);
        self.expires_at
            .is_some_and(|at| at <= chrono::Utc::now().timestamp() + margin)
    }

    /// The hint listed for the stored row: the account, never a token.
    pub(crate) fn hint(&self) -> String {
        self.email
            .clone()
            .unwrap_or_else(|| "ChatGPT account".to_owned())
    }

    /// Names every token to the redactor.
    pub(crate) fn register_for_redaction(&self) {
        crate::redact::register_secret(&self.access_token);
        crate::redact::register_secret(&self.refresh_token);
        if let Some(id_token) = &self.id_token {
            crate::redact::register_secret(id_token);
        }
    }

    fn sealed(&self) -> Result<ApiKey, LlmError> {
        serde_json::to_string(self)
            .map(ApiKey::new)
            .map_err(|error| LlmError::InvalidRequest {
                provider: PROVIDER,
                message: format!("the session cannot be written: {error}"),
            })
    }
}

/// A JWT's payload, unverified.
fn claims(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice::<Value>(&bytes)
        .ok()
        .filter(Value::is_object)
}

fn account_id(claims: &Value) -> Option<String> {
    claims
        .pointer("/https:~1~1api.openai.com~1auth/chatgpt_account_id")
        .or_else(|| claims.get("chatgpt_account_id"))
        .and_then(Value::as_str)
        .filter(|id| !id.trim().is_empty())
        .map(str::to_owned)
}

fn email(claims: &Value) -> Option<String> {
    claims
        .get("email")
        .or_else(|| claims.pointer("/https:~1~1api.openai.com~1profile/email"))
        .and_then(Value::as_str)
        .filter(|email| !email.trim().is_empty())
        .map(str::to_owned)
}

/// Reads, refreshes and writes sessions. One per process (the LLM service's).
#[derive(Debug)]
pub(crate) struct Sessions {
    auth: AuthService,
    /// Held while a refresh runs, so one refresh token is never sent twice by this process.
    refreshing: tokio::sync::Mutex<()>,
}

impl Sessions {
    /// Sessions refreshed through `auth`.
    pub(crate) fn new(auth: AuthService) -> Self {
        Self {
            auth,
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// The sign-in service.
    pub(crate) fn auth(&self) -> &AuthService {
        &self.auth
    }

    /// The stored session of `keys`' user, if signed in.
    pub(crate) async fn stored(&self, keys: &KeyStore) -> Result<Option<Session>, LlmError> {
        Ok(self.load(keys).await?.map(|(session, _)| session))
    }

    /// The stored session and the stored text it was read from (what a compare-and-swap
    /// compares).
    async fn load(&self, keys: &KeyStore) -> Result<Option<(Session, ApiKey)>, LlmError> {
        let Some(sealed) = keys.get(PROVIDER).await.map_err(key_error)? else {
            return Ok(None);
        };
        let session: Session =
            serde_json::from_str(sealed.expose()).map_err(|error| LlmError::Malformed {
                provider: PROVIDER,
                detail: format!("the stored session is unreadable ({error}); sign in again"),
            })?;
        session.register_for_redaction();
        Ok(Some((session, sealed)))
    }

    /// Stores the session a sign-in gave (replacing any earlier one).
    pub(crate) async fn store(&self, keys: &KeyStore, session: &Session) -> Result<(), LlmError> {
        session.register_for_redaction();
        keys.put_session(PROVIDER, &session.sealed()?, &session.hint())
            .await
            .map_err(key_error)?;
        Ok(())
    }

    /// Removes the session (signs out). Returns whether there was one.
    pub(crate) async fn remove(&self, keys: &KeyStore) -> Result<bool, LlmError> {
        keys.delete(PROVIDER).await.map_err(key_error)
    }

    /// A session to call with: the stored one, refreshed first when it is about to expire.
    pub(crate) async fn current(
        &self,
        keys: &KeyStore,
        cancel: &CancellationToken,
    ) -> Result<Session, LlmError> {
        let session = self
            .stored(keys)
            .await?
            .ok_or(LlmError::SignInRequired { provider: PROVIDER })?;
        if session.needs_refresh() {
            return self.refresh(keys, &session, cancel).await;
        }
        Ok(session)
    }

    /// A fresh session in place of `stale` (whose access token expired or was refused). When
    /// another refresh already replaced `stale`, its result is returned without a new one.
    pub(crate) async fn refresh(
        &self,
        keys: &KeyStore,
        stale: &Session,
        cancel: &CancellationToken,
    ) -> Result<Session, LlmError> {
        let _refreshing = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            guard = self.refreshing.lock() => guard,
        };
        let (current, current_text) = self
            .load(keys)
            .await?
            .ok_or(LlmError::SignInRequired { provider: PROVIDER })?;
        if current.access_token != stale.access_token && !current.needs_refresh() {
            // Refreshed (or signed in again) while we waited.
            return Ok(current);
        }
        match self.auth.refresh(&current.refresh_token, cancel).await {
            Ok(answer) => {
                let next = Session::from_answer(answer, Some(&current)).ok_or_else(|| {
                    LlmError::Malformed {
                        provider: PROVIDER,
                        detail: "the refresh answer holds no tokens".to_owned(),
                    }
                })?;
                next.register_for_redaction();
                let written = keys
                    .replace_session(PROVIDER, &current_text, &next.sealed()?, &next.hint())
                    .await
                    .map_err(key_error)?;
                if written {
                    tracing::info!(provider = %PROVIDER, user = keys.user(), "refreshed the account session");
                    return Ok(next);
                }
                // Another process replaced the session meanwhile: its tokens are the live ones.
                self.stored(keys)
                    .await?
                    .ok_or(LlmError::SignInRequired { provider: PROVIDER })
            }
            Err(RefreshFailure::Refused(reason)) => {
                // A refresh token already replaced by another refresh is refused as reused:
                // the newer session stays.
                if let Some(newer) = self.stored(keys).await?
                    && newer.refresh_token != current.refresh_token
                {
                    return Ok(newer);
                }
                keys.remove_session_if(PROVIDER, &current_text)
                    .await
                    .map_err(key_error)?;
                tracing::warn!(provider = %PROVIDER, user = keys.user(), %reason, "the sign-in service refused the refresh token; signed out");
                Err(LlmError::SignInRequired { provider: PROVIDER })
            }
            Err(RefreshFailure::Failed(error)) => Err(error),
        }
    }
}

fn key_error(error: KeyStoreError) -> LlmError {
    LlmError::Provider {
        provider: PROVIDER,
        kind: Some("key_store".to_owned()),
        message: error.to_string(),
    }
}
