//! Who a chat request acts for. Normally the local user (the bearer token stands for them).
//! In trusted-proxy mode (`[server] trusted_proxy_token` set) a reverse proxy authenticates
//! people itself and names them: `X-Souz-Proxy-Auth` must carry the secret (compared in
//! constant time) and `X-User-Id` names the user (original §1.2, with its error codes).

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use souz_protocol::ErrorCode;
use subtle::ConstantTimeEq;

use super::AppState;
use super::error::ApiError;
use super::perimeter::Authenticated;
use crate::chat::ChatUser;

/// The id of the local user.
pub const LOCAL_USER: &str = "local";
/// Longest accepted user id.
const MAX_USER_ID: usize = 256;

impl FromRequestParts<AppState> for ChatUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Authenticated::from_request_parts(parts, state).await?;
        let secret = state.handle.config().server.trusted_proxy_token.trim();
        if secret.is_empty() {
            return Ok(ChatUser(LOCAL_USER.to_owned()));
        }
        let unauthorized =
            |code, message: &str| ApiError::new(StatusCode::UNAUTHORIZED, code, message);
        let presented = parts
            .headers
            .get("x-souz-proxy-auth")
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
            .unwrap_or_default();
        let expected: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        let given: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        if presented.is_empty() || !bool::from(expected.ct_eq(&given)) {
            return Err(unauthorized(
                ErrorCode::UntrustedProxy,
                "The request did not come from the trusted proxy.",
            ));
        }
        let Some(user) = parts.headers.get("x-user-id") else {
            return Err(unauthorized(
                ErrorCode::MissingUserIdentity,
                "X-User-Id is required.",
            ));
        };
        let user = user.to_str().map(str::trim).unwrap_or_default();
        if user.is_empty()
            || user.chars().count() > MAX_USER_ID
            || user.chars().any(char::is_control)
        {
            return Err(unauthorized(
                ErrorCode::InvalidUserIdentity,
                "X-User-Id is not a valid user id.",
            ));
        }
        Ok(ChatUser(user.to_owned()))
    }
}
