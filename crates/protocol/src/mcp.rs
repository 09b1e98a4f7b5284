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
