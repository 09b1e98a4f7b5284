//! Credentials on the wire: client tokens (`/v1/clients`), the daemon's proof of identity
//! (`GET /v1/identity`) and the web UI's one-time sign-in codes (`/v1/ui-codes`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The name of the identity of the operator token when it is used on `/mcp`.
pub const OPERATOR_IDENTITY: &str = "operator";

/// What a client token reaches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClientScope {
    /// `/mcp` only: an MCP client (Claude Code, Claude Desktop, the stdio bridge).
    #[default]
    Mcp,
    /// The chats it made and their approvals, nothing else: an editor speaking ACP through
    /// `souz acp`. It creates chats, posts to them, follows their events, cancels their turns
    /// and answers their approvals; every other chat is "not found" to it.
    Chats,
}

impl ClientScope {
    /// The name stored and shown (`mcp`, `chats`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::Chats => "chats",
        }
    }

    /// The scope named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "mcp" => Some(Self::Mcp),
            "chats" => Some(Self::Chats),
            _ => None,
        }
    }
}

/// A client's token, as listed (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToken {
    /// Client id: what grants and audit rows name.
    pub id: String,
    /// Its name (`claude-code`, `claude-desktop`, ...): unique among active tokens.
    pub name: String,
    /// What it reaches.
    #[serde(default)]
    pub scope: ClientScope,
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
    /// What the token reaches (default `mcp`: `/mcp` only).
    #[serde(default, skip_serializing_if = "is_mcp")]
    pub scope: ClientScope,
}

fn is_mcp(scope: &ClientScope) -> bool {
    *scope == ClientScope::Mcp
}

/// `POST /v1/clients` response: the only time the token is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreatedClient {
    /// Client id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it reaches.
    #[serde(default)]
    pub scope: ClientScope,
    /// The bearer token. Shown once; Souz keeps only its SHA-256.
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
