//! First-run setup on the wire (`/v1/setup`): whether the person finished (or skipped) it, and
//! the local model servers that answer on this machine.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/setup` and the answer of `PUT /v1/setup`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetupState {
    /// Whether the setup was finished or skipped (the window then opens on the queue).
    pub completed: bool,
    /// When it was finished or skipped.
    pub completed_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// `PUT /v1/setup` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSetupState {
    /// `true`: done (or skipped); `false`: show the setup again when the window opens.
    pub completed: bool,
}

/// One local OpenAI-compatible server that answered with its models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalServer {
    /// `ollama`, `lm_studio` or `llama_cpp`.
    pub provider: String,
    /// The endpoint probed (`[llm] <provider>_base_url`).
    pub base_url: String,
    /// The models it serves, as it names them (use `provider/model` in `[llm]`).
    pub models: Vec<String>,
}

/// `GET /v1/setup/local-servers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LocalServerList {
    /// The servers that answered with at least one model, in the order ollama, lm_studio,
    /// llama_cpp.
    pub items: Vec<LocalServer>,
}

/// `POST /v1/restart` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Restarting {
    /// Always `true`: the daemon stops this runtime (running turns end as interrupted) and
    /// starts a new one on the same address with `config.toml` read again.
    pub restarting: bool,
}
