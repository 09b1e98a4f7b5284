//! OAuth for streamable HTTP MCP servers, with rmcp's client auth (`AuthorizationManager`):
//! discovery (protected-resource, then authorization-server metadata), dynamic client
//! registration or a configured client id, PKCE, refresh, and step-up scopes.
//!
//! Invariants:
//! - Every OAuth request goes through the SSRF-safe transport client of the server (rmcp
//!   takes it whole with `with_client`; its redirect policy checks every hop against the
//!   network policy). A server with `allow_private_network` may reach its authorization
//!   server on the same host at any port (a local authorization server usually listens on
//!   another port than the MCP endpoint); nothing else private is opened.
//! - Tokens are kept only in the encrypted key store (`mcp-oauth:<server>`), never in
//!   `config.toml` or the logs (each loaded token is registered with the redactor).
//! - A browser flow is started only by the operator ([`Flows::start`]); its redirect comes
//!   back to the daemon's own `/v1/mcp/oauth/callback`, which completes it only if `state`
//!   names a flow this daemon started, not yet used (taken on first sight) and younger than
//!   [`FLOW_LIFETIME`].
//! - An expired access token is refreshed (rmcp does this before a request, and once more on
//!   a 401); only when refreshing is impossible or refused does the server need a new login.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials,
};
use zeroize::Zeroizing;

use crate::config::McpServerConfig;
use crate::llm::keys::{ApiKey, KeyStore};

/// How long a started login may wait for its redirect.
pub(crate) const FLOW_LIFETIME: Duration = Duration::from_secs(600);
/// The daemon's route the authorization server redirects the browser to.
pub(crate) const CALLBACK_PATH: &str = "/v1/mcp/oauth/callback";
/// The most logins waiting at once (older ones are dropped first).
const MAX_FLOWS: usize = 32;

/// The key-store name of a server's OAuth credentials.
pub(crate) fn credentials_secret(server: &str) -> String {
    format!("mcp-oauth:{server}")
}

/// rmcp's credential store over the encrypted key store: one secret per server, holding the
/// client id and the token response as JSON.
pub(crate) struct SealedCredentials {
    keys: KeyStore,
    name: String,
}

impl SealedCredentials {
    pub(crate) fn new(keys: KeyStore, server: &str) -> Self {
        Self {
            keys,
            name: credentials_secret(server),
        }
    }
}

fn store_error(error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

/// Tells the redactor about the tokens in stored credentials (JSON).
fn redact_tokens(json: &str) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else {
        return;
    };
    for field in ["access_token", "refresh_token"] {
        if let Some(token) = value
            .pointer(&format!("/token_response/{field}"))
            .and_then(serde_json::Value::as_str)
        {
            crate::redact::register_secret(token);
        }
    }
}

#[async_trait]
impl CredentialStore for SealedCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(secret) = self
            .keys
            .get_secret(&self.name)
            .await
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        redact_tokens(secret.expose());
        serde_json::from_str(secret.expose())
            .map(Some)
            .map_err(|error| store_error(format!("the stored OAuth credentials: {error}")))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let json = Zeroizing::new(serde_json::to_string(&credentials).map_err(store_error)?);
        redact_tokens(&json);
        self.keys
            .put_secret(&self.name, &ApiKey::new(json.as_str()))
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.keys
            .delete_secret(&self.name)
            .await
            .map(|_| ())
            .map_err(store_error)
    }
}

/// An authorization manager for `url` whose HTTP goes through `client` and whose tokens are
/// the server's sealed credentials.
pub(crate) async fn manager(
    url: &str,
    client: reqwest::Client,
    keys: &KeyStore,
    server: &str,
) -> Result<AuthorizationManager, AuthError> {
    let mut manager = AuthorizationManager::new(url).await?;
    manager.with_client(client)?;
    manager.set_credential_store(SealedCredentials::new(keys.clone(), server));
    Ok(manager)
}

/// Whether credentials (a token response) are stored for `server`.
pub(crate) async fn has_tokens(keys: &KeyStore, server: &str) -> Result<bool, String> {
    SealedCredentials::new(keys.clone(), server)
        .load()
        .await
        .map(|stored| stored.is_some_and(|stored| stored.token_response.is_some()))
        .map_err(|error| error.to_string())
}

/// What starting a login needs.
pub(crate) struct Login<'a> {
    pub server: &'a str,
    pub config: &'a McpServerConfig,
    /// The server's SSRF-safe client.
    pub client: reqwest::Client,
    pub keys: &'a KeyStore,
    /// The `WWW-Authenticate` challenge of the server's last 401/403 (scope hints, the
    /// protected-resource metadata URL), if any.
    pub challenge: Option<String>,
    /// Where the authorization server sends the browser back.
    pub redirect_uri: String,
    /// The secret of the configured client (`oauth_client_id`), if it has one.
    pub client_secret: Option<String>,
}

struct Pending {
    server: String,
    session: AuthorizationSession,
    started: Instant,
}

/// The logins started and not yet completed, by their `state`.
#[derive(Default)]
pub(crate) struct Flows {
    pending: Mutex<HashMap<String, Pending>>,
}

impl Flows {
    /// Discovers the server's authorization server, registers (or uses the configured
    /// client), and returns the authorization URL the person opens.
    pub(crate) async fn start(&self, login: Login<'_>) -> Result<String, String> {
        let url = login.config.url.trim();
        let describe = |error: AuthError| format!("OAuth with `{url}`: {error}");
        let mut manager = manager(url, login.client, login.keys, login.server)
            .await
            .map_err(describe)?;
        let resolution = manager
            .resolve_metadata_from_challenge(login.challenge.as_deref())
            .await
            .map_err(describe)?;
        manager.set_metadata(resolution.metadata);
        let mut request = AuthorizationRequest::new(login.redirect_uri).with_client_name("Souz");
        if let Some(challenge) = login.challenge.clone() {
            request = request.with_challenge(challenge);
        }
        // The configured scopes and the ones a step-up challenge asks for, together.
        let mut scopes = login.config.oauth_scopes.clone();
        for scope in login
            .challenge
            .as_deref()
            .map(challenged_scopes)
            .unwrap_or_default()
        {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        if !login.config.oauth_scopes.is_empty() {
            request = request.with_scopes(&scopes);
        }
        if !login.config.oauth_client_id.is_empty() {
            request = request.with_preregistered_client(login.config.oauth_client_id.clone());
            if let Some(secret) = login.client_secret {
                request = request.with_client_secret(secret);
            }
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, error)| describe(error))?;
        let authorization_url = session.get_authorization_url().to_owned();
        let state = reqwest::Url::parse(&authorization_url)
            .ok()
            .and_then(|parsed| {
                parsed
                    .query_pairs()
                    .find(|(name, _)| name == "state")
                    .map(|(_, value)| value.into_owned())
            })
            .ok_or_else(|| "the authorization URL has no `state`".to_owned())?;
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        pending.retain(|_, flow| now.duration_since(flow.started) < FLOW_LIFETIME);
        while pending.len() >= MAX_FLOWS {
            let oldest = pending
                .iter()
                .min_by_key(|(_, flow)| flow.started)
                .map(|(state, _)| state.clone());
            match oldest {
                Some(state) => pending.remove(&state),
                None => break,
            };
        }
        pending.insert(
            state,
            Pending {
                server: login.server.to_owned(),
                session,
                started: now,
            },
        );
        Ok(authorization_url)
    }

    /// Forgets the login `state` names.
    pub(crate) fn abandon(&self, state: &str) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(state);
    }

    /// Completes the login `state` names with `code` (taken once, whatever the outcome);
    /// the server's name.
    pub(crate) async fn complete(
        &self,
        state: &str,
        code: &str,
        issuer: Option<&str>,
    ) -> Result<String, CallbackError> {
        let flow = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(state)
            .ok_or(CallbackError::UnknownState)?;
        if flow.started.elapsed() >= FLOW_LIFETIME {
            return Err(CallbackError::UnknownState);
        }
        flow.session
            .handle_callback_with_issuer(code, state, issuer)
            .await
            .map_err(|error| CallbackError::Exchange {
                server: flow.server.clone(),
                message: error.to_string(),
            })?;
        Ok(flow.server)
    }
}

/// Why a redirect did not complete a login.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallbackError {
    /// No login this daemon started (or it was used, or it expired).
    #[error("this sign-in link is unknown, used or expired; start the login again")]
    UnknownState,
    /// The authorization server refused the code.
    #[error("the MCP server `{server}` did not accept the sign-in: {message}")]
    Exchange { server: String, message: String },
}

/// Whether a `WWW-Authenticate` challenge asks for a wider scope (step-up) rather than for
/// any token at all.
pub(crate) fn is_step_up(challenge: &str) -> bool {
    challenge.contains("insufficient_scope")
}

/// The `scope="…"` a challenge names, split.
fn challenged_scopes(challenge: &str) -> Vec<String> {
    let Some(start) = challenge.find("scope=\"") else {
        return Vec::new();
    };
    let rest = &challenge[start + "scope=\"".len()..];
    rest.split('"')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_challenge_names_its_scopes() {
        let challenge = "Bearer error=\"insufficient_scope\", scope=\"read write\", \
                         resource_metadata=\"https://x/.well-known/oauth-protected-resource\"";
        assert_eq!(super::challenged_scopes(challenge), ["read", "write"]);
        assert!(super::is_step_up(challenge));
        assert!(super::challenged_scopes("Bearer realm=\"x\"").is_empty());
        assert!(!super::is_step_up("Bearer realm=\"x\""));
    }
}
