//! External MCP servers (`[mcp.servers.<name>]`) as `GET /v1/mcp/servers` lists them and
//! `POST /v1/mcp/servers/{name}/test` checks one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One configured external MCP server and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerStatus {
    /// Its name in `config.toml` (its tools are `mcp__<name>__<tool>`).
    pub name: String,
    /// `stdio` (a program Souz runs) or `http` (streamable HTTP).
    pub transport: String,
    /// Whether Souz connects to it.
    pub enabled: bool,
    /// Whether a session is open now.
    pub connected: bool,
    /// How many of its tools are in use.
    pub tools: usize,
    /// The last failure to start or connect, if the server is not connected.
    pub error: Option<String>,
    /// Whether MCP clients at Souz's `/mcp` see its tools.
    pub expose_to_mcp_clients: bool,
    /// Its table in `config.toml` now (every key, defaults included), for editing.
    #[serde(default)]
    pub settings: serde_json::Value,
    /// Whether a saved change of its table is not applied yet (servers are started, stopped or
    /// replaced at once; this is true only while that happens).
    #[serde(default)]
    pub restart_required: bool,
    /// Whether the server asks for an OAuth login (or a wider scope) that refreshing could
    /// not give: `POST /v1/mcp/servers/{name}/login` starts one.
    #[serde(default)]
    pub needs_login: bool,
}

/// `GET /v1/mcp/servers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerList {
    /// Every configured server, by name.
    pub servers: Vec<McpServerStatus>,
}

/// `POST /v1/mcp/servers/{name}/test`: the server connected and listed its tools, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerTest {
    /// The server.
    pub name: String,
    /// Whether it started (or connected) and listed its tools.
    pub ok: bool,
    /// How many of its tools are in use.
    pub tools: usize,
    /// Why not, when it failed.
    pub error: Option<String>,
}

/// `PUT /v1/mcp/servers/{name}`: the whole `[mcp.servers.<name>]` table, written to
/// `config.toml` (validated like every config edit; a problem comes back with its line and
/// column and nothing is written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerPut {
    /// The table's keys as in `config.toml` (`command`, `args`, `env`, `url`, `enabled`, …);
    /// `null` values are left out.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// The config `revision` the edit started from; a mismatch is 409 and nothing is written.
    /// Its former name `baseRevision` is accepted until the next release.
    #[serde(default, alias = "baseRevision")]
    pub revision: Option<String>,
}

/// `PUT /v1/mcp/servers/{name}/enabled`: turn a configured server on or off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerEnabled {
    /// On or off.
    pub enabled: bool,
}

/// `POST /v1/mcp/servers/{name}/login`: the page the person opens to sign in; it sends the
/// browser back to the daemon's `/v1/mcp/oauth/callback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpLogin {
    /// The server.
    pub name: String,
    /// The authorization server's page (valid for a few minutes, once).
    pub authorization_url: String,
}

/// `PUT /v1/mcp/servers/{name}/token`: a bearer token kept in the encrypted key store under
/// the server's `bearer_token_key`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpToken {
    /// The token (never shown again).
    pub token: String,
}

impl std::fmt::Debug for McpToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpToken(..)")
    }
}

/// The query of `GET /v1/mcp/oauth/callback` (what the authorization server sends back).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct McpOAuthCallback {
    /// The authorization code.
    pub code: Option<String>,
    /// The flow it answers.
    pub state: Option<String>,
    /// The issuer (RFC 9207), when the authorization server sends it.
    pub iss: Option<String>,
    /// Why the authorization server refused.
    pub error: Option<String>,
    /// Its explanation.
    pub error_description: Option<String>,
}

impl std::fmt::Debug for McpOAuthCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuthCallback")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}
