//! Who a request acts for, after the bearer token was checked.
//!
//! Without trusted-proxy mode (`[server] trusted_proxy_token` empty, the default) there is one
//! person: the local user, who is also the daemon's operator, and every route serves them.
//!
//! In trusted-proxy mode (for server deployments) a reverse proxy authenticates people itself
//! and forwards their requests with the bearer token, `X-Souz-Proxy-Auth: <secret>` (compared
//! in constant time) and `X-User-Id: <user>` (original §1.2, with its error codes). Then:
//! - A request that carries either header is a proxied user's, and must prove it: a wrong or
//!   missing secret is 401 `untrusted_proxy`, a missing or unusable user id 401
//!   `missing_user_identity` / `invalid_user_identity`. `local` is reserved for the local user
//!   (the owner of what was stored before the mode was switched on) and cannot be named.
//! - A request with neither header is the operator's (the bearer token alone).
//!
//! Routes say whom they serve through their extractors:
//! - [`ChatUser`]: per-user routes (chats, settings, provider keys, ...). The operator has no
//!   chats of their own in proxy mode: 401 `untrusted_proxy`.
//! - [`Operator`]: daemon-wide routes (config, pause, grants, tools, runtime events). A proxied
//!   user gets 403 `forbidden`.
//! - [`Audience`]: approvals and the audit log, where each side sees its own records.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::AppState;
use super::error::ApiError;
use super::perimeter::Authenticated;
use crate::runtime::facade::{Audience, ChatUser};

pub(crate) use crate::LOCAL_USER;

/// Longest accepted user id.
const MAX_USER_ID: usize = 256;
/// The header carrying the trusted proxy's secret.
pub(crate) const PROXY_AUTH_HEADER: &str = "x-souz-proxy-auth";
/// The header naming the proxied user.
pub(crate) const USER_ID_HEADER: &str = "x-user-id";

/// Who sent an authenticated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Caller {
    /// The person at this machine, without trusted-proxy mode: user and operator at once.
    Local,
    /// The daemon's operator in trusted-proxy mode (the bearer token, no proxy headers).
    Operator,
    /// A user the trusted proxy authenticated and named.
    Proxied(String),
}

/// Why a request may not act as it asks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// Proxy headers without the right secret.
    #[error("The request did not come from the trusted proxy.")]
    UntrustedProxy,
    /// A per-user route called without a proxied user in trusted-proxy mode.
    #[error(
        "Souz runs behind a trusted proxy: this route acts for a user, named by the trusted \
         proxy with X-Souz-Proxy-Auth and X-User-Id."
    )]
    UserRequired,
    /// The secret without `X-User-Id`.
    #[error("X-User-Id is required.")]
    MissingUserIdentity,
    /// An unusable `X-User-Id`.
    #[error("X-User-Id is not a valid user id.")]
    InvalidUserIdentity,
    /// `X-User-Id` names the local user.
    #[error("X-User-Id `local` is reserved for the local user.")]
    ReservedUserIdentity,
    /// A proxied user on an operator route.
    #[error(
        "This route belongs to the daemon's operator; users behind the trusted proxy cannot use it."
    )]
    OperatorOnly,
}

impl Caller {
    /// Identifies the caller of an authenticated request.
    pub(crate) fn identify(parts: &Parts, proxy_secret: &str) -> Result<Self, IdentityError> {
        let secret = proxy_secret.trim();
        if secret.is_empty() {
            return Ok(Self::Local);
        }
        let header = |name: &str| parts.headers.get(name);
        let (proxy_auth, user) = (header(PROXY_AUTH_HEADER), header(USER_ID_HEADER));
        if proxy_auth.is_none() && user.is_none() {
            return Ok(Self::Operator);
        }
        let presented = proxy_auth
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
            .unwrap_or_default();
        let expected: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        let given: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        if presented.is_empty() || !bool::from(expected.ct_eq(&given)) {
            return Err(IdentityError::UntrustedProxy);
        }
        let user = user.ok_or(IdentityError::MissingUserIdentity)?;
        let user = user.to_str().map(str::trim).unwrap_or_default();
        if user.is_empty()
            || user.chars().count() > MAX_USER_ID
            || user.chars().any(char::is_control)
        {
            return Err(IdentityError::InvalidUserIdentity);
        }
        if user == LOCAL_USER {
            return Err(IdentityError::ReservedUserIdentity);
        }
        Ok(Self::Proxied(user.to_owned()))
    }

    /// The user a per-user route acts for.
    pub(crate) fn user(self) -> Result<ChatUser, IdentityError> {
        match self {
            Self::Local => Ok(ChatUser(LOCAL_USER.to_owned())),
            Self::Proxied(user) => Ok(ChatUser(user)),
            Self::Operator => Err(IdentityError::UserRequired),
        }
    }

    /// Whose approvals and audit rows the caller sees.
    pub(crate) fn audience(self) -> Audience {
        match self {
            Self::Local => Audience::Everyone,
            Self::Operator => Audience::Operator,
            Self::Proxied(user) => Audience::User(user),
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Authenticated::from_request_parts(parts, state).await?;
        Ok(Self::identify(
            parts,
            &state.handle.config().server.trusted_proxy_token,
        )?)
    }
}

impl FromRequestParts<AppState> for ChatUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Caller::from_request_parts(parts, state).await?.user()?)
    }
}

impl FromRequestParts<AppState> for Audience {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Caller::from_request_parts(parts, state).await?.audience())
    }
}

/// Proof that the request is the operator's (or the local user's): daemon-wide routes take it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Operator;

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        match Caller::from_request_parts(parts, state).await? {
            Caller::Local | Caller::Operator => Ok(Self),
            Caller::Proxied(_) => Err(IdentityError::OperatorOnly.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Request;

    use super::*;

    const SECRET: &str = "proxy-secret-0123456789";

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::get("/v1/approvals");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn without_proxy_mode_everyone_is_the_local_user() {
        let proxied = parts(&[(PROXY_AUTH_HEADER, SECRET), (USER_ID_HEADER, "alice")]);
        assert_eq!(Caller::identify(&proxied, ""), Ok(Caller::Local));
        assert_eq!(Caller::identify(&parts(&[]), "  "), Ok(Caller::Local));
    }

    #[test]
    fn proxy_mode_tells_the_operator_from_proxied_users() {
        let identify = |headers: &[(&str, &str)]| Caller::identify(&parts(headers), SECRET);
        assert_eq!(identify(&[]), Ok(Caller::Operator));
        assert_eq!(
            identify(&[(PROXY_AUTH_HEADER, SECRET), (USER_ID_HEADER, " alice ")]),
            Ok(Caller::Proxied("alice".into()))
        );
        // Either header makes it a proxied request, which must then prove itself.
        assert_eq!(
            identify(&[(USER_ID_HEADER, "alice")]),
            Err(IdentityError::UntrustedProxy)
        );
        assert_eq!(
            identify(&[(PROXY_AUTH_HEADER, "wrong"), (USER_ID_HEADER, "alice")]),
            Err(IdentityError::UntrustedProxy)
        );
        assert_eq!(
            identify(&[(PROXY_AUTH_HEADER, "")]),
            Err(IdentityError::UntrustedProxy)
        );
        assert_eq!(
            identify(&[(PROXY_AUTH_HEADER, SECRET)]),
            Err(IdentityError::MissingUserIdentity)
        );
        assert_eq!(
            identify(&[(PROXY_AUTH_HEADER, SECRET), (USER_ID_HEADER, " ")]),
            Err(IdentityError::InvalidUserIdentity)
        );
        assert_eq!(
            identify(&[(PROXY_AUTH_HEADER, SECRET), (USER_ID_HEADER, "local")]),
            Err(IdentityError::ReservedUserIdentity)
        );
    }

    #[test]
    fn callers_map_to_users_and_audiences() {
        assert_eq!(Caller::Local.user(), Ok(ChatUser(LOCAL_USER.into())));
        assert_eq!(Caller::Operator.user(), Err(IdentityError::UserRequired));
        assert_eq!(Caller::Local.audience(), Audience::Everyone);
        assert_eq!(Caller::Operator.audience(), Audience::Operator);
        assert_eq!(
            Caller::Proxied("bob".into()).audience(),
            Audience::User("bob".into())
        );
    }
}
