//! Credentials on the wire: MCP client tokens (`/v1/clients`), the daemon's proof of identity
//! (`GET /v1/identity`) and the web UI's one-time sign-in codes (`/v1/ui-codes`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The name of the identity of the operator token when it is used on `/mcp`.
pub const OPERATOR_IDENTITY: &str = "operator";

/// An MCP client's token, as listed (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToken {
    /// Client id: what grants and audit rows name.
    pub id: String,
    /// Its name (`claude-code`, `claude-desktop`, ...): unique among active tokens.
    pub name: String,
    /// When it was made.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// `GET /v1/clients`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientList {
    /// Active client tokens, oldest first.
    pub items: Vec<ClientToken>,
}

/// `POST /v1/clients`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewClient {
    /// A name for the client: 1 to 64 characters of letters, digits, `-`, `_` and `.`.
    pub name: String,
}

/// `POST /v1/clients` response: the only time the token is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreatedClient {
    /// Client id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The bearer token for `/mcp`. Shown once; Souz keeps only its SHA-256.
    pub token: String,
    /// When it was made.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// Query of `GET /v1/identity`: a challenge for the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityQuery {
    /// 32 to 128 hex characters of fresh randomness chosen by the client.
    pub nonce: String,
    /// Which credential the proof is keyed with: the first 32 hex characters of
    /// SHA-256(SHA-256(token)) (reveals nothing about the token).
    pub key: String,
}

/// `GET /v1/identity`: proof that the listener holds the credential named by `key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdentityProof {
    /// Hex HMAC-SHA256, keyed with SHA-256(token), of `souz-identity-v1`, the nonce and the
    /// `Host` the request was sent to, separated by newlines.
    pub proof: String,
}

/// `POST /v1/ui-codes` response: a one-time code for signing the web UI in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UiCode {
    /// The code: open `/app/#code=<code>`.
    pub code: String,
    /// When it stops working (about a minute after it was made).
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// `POST /v1/ui-codes/exchange`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UiCodeExchange {
    /// The one-time code from the address.
    pub code: String,
}

/// `POST /v1/ui-codes/exchange` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UiSession {
    /// The operator token, for the page to keep.
    pub token: String,
}
