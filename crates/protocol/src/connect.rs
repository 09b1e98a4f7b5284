//! Connecting Claude on the wire (`/v1/connect`): the change Souz would make to Claude Code's
//! `~/.claude.json` or to `claude_desktop_config.json` (shown before it is made), the Claude Code
//! command as a fallback, and which MCP clients used Souz recently and what they may do.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Action;

/// `GET /v1/connect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectStatus {
    /// Where Claude Desktop keeps its configuration on this machine.
    pub desktop_config_path: String,
    /// Whether that file already has a `souz` server.
    pub desktop_configured: bool,
    /// Where Claude Code keeps its user configuration (`~/.claude.json`).
    pub code_config_path: String,
    /// Whether that file already has a `souz` server.
    pub code_configured: bool,
    /// Active client tokens with their recent calls (last 30 days) and grants.
    pub clients: Vec<ConnectedClient>,
}

/// One MCP client token and what it did and may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectedClient {
    /// Client id (what grants and audit rows name).
    pub id: String,
    /// Its name (`claude-code`, `claude-desktop`, ...).
    pub name: String,
    /// When its token was made.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Its latest tool call in the last 30 days.
    pub last_call_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Its tool calls in the last 30 days.
    pub calls: u64,
    /// What it may do without asking beyond the rules: its active grants, in words.
    pub grants: Vec<String>,
    /// Whether it may search and read your memory: `allow`, `ask` (the default: asked once,
    /// "always for this client" settles it) or `deny`. Set with
    /// `PUT /v1/connect/clients/{id}/memory`.
    pub memory: Action,
}

/// `PUT /v1/connect/clients/{id}/memory` body and answer: whether that client may search and
/// read your memory. The answer is what applies now (a rule in `config.toml` comes first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientMemoryAccess {
    /// `allow`, `ask` or `deny`.
    pub access: Action,
}

/// `POST /v1/connect/claude-code`: the commands, with a fresh token of its own (the previous
/// `claude-code` token is revoked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeCodeCommand {
    /// `claude mcp add-json --scope user souz '{"type":"http","url":…,"headersHelper":…}'`: no
    /// token in it; Claude Code runs `souz mcp-headers`, which reads the token from the Souz home.
    pub command: String,
    /// `claude mcp add --transport http souz <url>/mcp --header "Authorization: Bearer …"`, for a
    /// Claude Code without `headersHelper`: the token lands in the shell's history and, while
    /// it runs, in the process list.
    pub header_command: String,
}

/// `GET /v1/connect/claude-desktop` and `GET /v1/connect/claude-code/config`: the change adding
/// Souz would make (nothing is written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DesktopConfigChange {
    /// The file.
    pub path: String,
    /// Whether it exists now.
    pub exists: bool,
    /// SHA-256 of its text now (send it back to apply exactly this change).
    pub revision: String,
    /// The change as a unified diff (empty: nothing to change). Only the lines around Souz's
    /// entry, with secrets in them masked: the rest of the file is never sent.
    pub diff: String,
}

/// `POST /v1/connect/claude-desktop` and `POST /v1/connect/claude-code/config` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyDesktopConfig {
    /// The `revision` of the change shown; a file changed since is not touched (409).
    pub revision: String,
}

/// `POST /v1/connect/claude-desktop` and `POST /v1/connect/claude-code/config` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DesktopConfigApplied {
    /// The file written.
    pub path: String,
    /// The copy of the previous file (absent when there was none).
    pub backup: Option<String>,
}
