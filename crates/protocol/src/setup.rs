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

/// `POST /v1/setup/local-servers/probe` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProbeLocalServer {
    /// The model server's address as the person typed it: on this computer
    /// (`http://127.0.0.1:1234/v1`) or the local network (`http://192.168.1.20:11434`).
    pub base_url: String,
}

/// Why a probed address offers no model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeProblem {
    /// Not an `http://` or `https://` address with a host (and no user, query or fragment).
    InvalidUrl,
    /// Neither on this computer nor on a local network: a public address, or a name that
    /// resolves to one (or does not resolve). Nothing was sent there.
    NotLocal,
    /// Nothing answered there in time.
    Unreachable,
    /// Something answered, but not with an OpenAI-compatible model list (`GET <base>/models`).
    NotModelServer,
    /// A model server that serves no model yet.
    NoModels,
}

/// `POST /v1/setup/local-servers/probe` answer: what answers at the address typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalServerProbe {
    /// The address to save: the one that answered (`/v1` added to an address typed without a
    /// path when the list was there), else the one typed, trimmed.
    pub base_url: String,
    /// The kind of server it looks like, which is also where its address is saved
    /// (`[llm] <provider>_base_url`): `ollama`, `lm_studio`, or `llama_cpp` for llama.cpp and
    /// any other OpenAI-compatible server.
    pub provider: String,
    /// The models it serves, as it names them (empty with a problem).
    pub models: Vec<String>,
    /// Why it offers no model; absent when it does.
    pub problem: Option<ProbeProblem>,
}

/// `POST /v1/restart` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Restarting {
    /// Always `true`: the daemon stops this runtime (running turns end as interrupted) and
    /// starts a new one on the same address with `config.toml` read again.
    pub restarting: bool,
}
