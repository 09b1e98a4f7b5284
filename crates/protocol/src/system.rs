//! Bodies of the daemon's system routes: `/`, `/health`, `/v1/bootstrap`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /`: what this server is and which routes it has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RouteIndex {
    /// Always `souz`.
    pub service: String,
    /// Daemon version.
    pub version: String,
    /// Every route as `METHOD /path`, sorted.
    pub endpoints: Vec<String>,
}

/// `GET /health`: liveness and the state of the daemon's parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// `ok` when every part works, else `degraded`.
    pub status: String,
    /// Daemon version.
    pub version: String,
    /// Seconds since the daemon started.
    pub uptime_s: u64,
    /// Whether the SQLite database answers.
    pub database: ComponentStatus,
    /// How commands run by tools are confined on this machine.
    pub sandbox: SandboxStatus,
    /// The daemon's resident memory now, in bytes, where the system says (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// The in-process local models loaded now (their weights count in `rss_bytes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_models_loaded: Vec<String>,
    /// The resident memory measured just before a local model was last loaded with none
    /// loaded: the daemon without local models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_without_local_models_bytes: Option<u64>,
}

/// How the operating system confines commands run by tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfinementKind {
    /// Linux Landlock: commands may write only inside the workspace roots and temporary folders.
    Landlock,
    /// macOS Seatbelt (`sandbox-exec`): commands may write only inside the workspace roots and
    /// temporary folders.
    Seatbelt,
    /// No OS confinement: commands can do whatever your account can (the approval gate still
    /// asks before any command runs).
    None,
}

/// The sandbox part of `GET /health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxStatus {
    /// Which confinement is active.
    pub confinement: ConfinementKind,
    /// What it allows, or why there is none.
    pub detail: String,
}

/// The state of one part of the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComponentStatus {
    /// Whether it works.
    pub ok: bool,
    /// Short explanation when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `GET /v1/bootstrap`: what a client needs before its first real call (the original API's
/// shape, with the daemon's version and surfaces added).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// Daemon version.
    pub version: String,
    /// The person this daemon serves.
    pub user: LocalUser,
    /// Which product surfaces this daemon has switched on.
    pub features: Features,
    /// Models that can be used now and the tools agents have.
    pub capabilities: Capabilities,
    /// The user's effective settings.
    pub settings: crate::chat::Settings,
}

/// What can be used now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// Chat models whose provider has a key or a local server.
    pub models: Vec<ModelCapability>,
    /// Tools agents may use, sorted by name.
    pub tools: Vec<ToolCapability>,
}

/// One usable model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelCapability {
    /// Provider (lower case).
    pub provider: String,
    /// Model name (use `provider/model` to name it unambiguously).
    pub model: String,
    /// Whether the key comes from the daemon's environment.
    pub server_managed_key: bool,
    /// Whether the key was stored by the user.
    pub user_managed_key: bool,
}

/// One tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCapability {
    /// Tool name.
    pub name: String,
    /// Whether the user's settings enable it.
    pub enabled: bool,
}

/// The local user the bearer token stands for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LocalUser {
    /// Stable id of the local user (`local`).
    pub id: String,
    /// Login name of the account the daemon runs as.
    pub name: String,
}

/// Surfaces a client can rely on being present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    /// `GET /v1/chats/{id}/events` and `WS /v1/chats/{id}/ws`.
    pub ws_events: bool,
    /// `message.delta` events.
    pub streaming_messages: bool,
    /// `tool.call.*` events in chats.
    pub tool_events: bool,
    /// Questions the agent asks (`option.requested`, `POST /v1/options/{id}/answer`).
    pub options: bool,
    /// Telegram bot bindings (not in this daemon).
    pub telegram_bot: bool,
    /// `WS /v1/events`: durable runtime events with replay.
    pub runtime_events: bool,
    /// The approval gate and its `/v1/approvals` routes.
    pub approvals: bool,
    /// The MCP server at `/mcp`.
    pub mcp: bool,
    /// Chats and agent turns under `/v1/chats`.
    pub chats: bool,
}

/// `<SOUZ_HOME>/daemon.json`: written by a running daemon so local clients (the CLI, the MCP
/// bridge, the menu-bar app) can find it. Removed on a clean stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonInfo {
    /// Process id of the daemon.
    pub pid: u32,
    /// Base URL of the gateway, e.g. `http://127.0.0.1:8383`.
    pub url: String,
    /// Daemon version.
    pub version: String,
}
