//! Codex through a ChatGPT account: a provider without an API key. The person signs in with a
//! device code ([`auth`], [`login`]), Souz keeps the account's tokens encrypted in its own key
//! store and refreshes them ([`session`]), and chat turns go to the Responses API of the
//! ChatGPT backend ([`responses`], [`client`]).
//!
//! The wire formats, learnt from OpenAI's own Codex CLI, and the fields relied on:
//! - Device code: `POST {auth}/api/accounts/deviceauth/usercode` with JSON `{client_id}` answers
//!   `{device_auth_id, user_code (or usercode), interval}` (`interval` in seconds, sent as a
//!   string or a number); the person enters the code at `{auth}/codex/device`. Polling
//!   `POST {auth}/api/accounts/deviceauth/token` with JSON `{device_auth_id, user_code}` answers
//!   403 or 404 while the person has not finished (or an RFC 8628 `error`:
//!   `authorization_pending`, `slow_down`, `expired_token`, `access_denied`), then 200 with
//!   `{authorization_code, code_verifier}` (and `code_challenge`, unused). Codes last 15
//!   minutes.
//! - Exchange: `POST {auth}/oauth/token`, form `grant_type=authorization_code`, `code`,
//!   `redirect_uri={auth}/deviceauth/callback`, `client_id`, `code_verifier`; answers
//!   `{id_token, access_token, refresh_token}` (`expires_in` when present).
//! - Refresh: `POST {auth}/oauth/token`, JSON `{client_id, grant_type: "refresh_token",
//!   refresh_token}`; answers any of `{id_token, access_token, refresh_token}` (a new refresh
//!   token replaces the old one: it rotates). A refusal is 401, or an error code
//!   (`error` as a string or `error.code`, or `code`) of `refresh_token_expired`,
//!   `refresh_token_reused`, `refresh_token_invalidated` or `invalid_grant`: the session is over.
//! - Tokens are JWTs; only their payload is read (not verified: they come from the server we
//!   asked over TLS): `exp` (seconds) of the access token, `email`, and the account id at
//!   `https://api.openai.com/auth`.`chatgpt_account_id` (or a top-level `chatgpt_account_id`).
//! - Responses: `POST {base}/responses` (base `https://chatgpt.com/backend-api/codex`) with
//!   `Authorization: Bearer`, `chatgpt-account-id`, `originator`, `OpenAI-Beta:
//!   responses=experimental`, `session_id`, `Accept: text/event-stream`; the SSE events read are
//!   listed in [`responses`].
//!
//! Invariants:
//! - The tokens live only in Souz's encrypted key store, as the `codex` row of the user who
//!   signed in. Souz never reads or writes another program's credential file
//!   (`~/.codex/auth.json`): two programs refreshing one rotating refresh token sign each other
//!   out.
//! - Refreshes are serialized per process and written with a compare-and-swap: a refresh that
//!   lost a race takes the session the winner stored instead of overwriting it, and a refusal
//!   of a refresh token that was already replaced does not end the newer session.
//! - A refused refresh removes the session and surfaces [`super::LlmError::SignInRequired`];
//!   a 401 from the Responses API gets one refresh and one retry, then the same error.

pub(crate) mod auth;
pub(crate) mod client;
pub(crate) mod login;
pub(crate) mod responses;
pub(crate) mod session;

use super::ProviderId;

/// The provider.
pub(crate) const PROVIDER: ProviderId = ProviderId::Codex;
/// The public OAuth client id of the Codex CLI (device codes are issued to it).
pub(crate) const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The `originator` the ChatGPT backend expects from Codex-class clients.
pub(crate) const ORIGINATOR: &str = "codex_cli_rs";

/// Names each token of a stored session (a JSON object of strings) to the redactor; anything
/// else is left alone.
pub(crate) fn register_session_tokens(value: &str) {
    if !value.trim_start().starts_with('{') {
        return;
    }
    if let Ok(session) = serde_json::from_str::<session::Session>(value) {
        session.register_for_redaction();
    }
}

#[cfg(test)]
mod tests;
