//! `/v1/models/local`: the in-process local models (provider `local`): the profiles this
//! daemon knows, whether each one's file is there, loaded or being fetched.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::LocalModelState;

/// One local model profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalModelInfo {
    /// The profile, used as `local/<name>`.
    pub name: String,
    /// `chat` or `embedding`.
    pub kind: String,
    /// The GGUF file expected in `<home>/models/<name>/`.
    pub file: String,
    /// Where that file is (or belongs).
    pub path: String,
    /// Its size in bytes (approximate for unpinned files).
    pub bytes: u64,
    /// The context window used, in tokens.
    pub context_tokens: u32,
    /// RAM the machine needs, in GB.
    pub min_ram_gb: u64,
    /// Whether `souz models pull` can fetch it (a pinned commit on the model hub, or a pinned
    /// checksum and a mirror).
    pub pullable: bool,
    /// Where a pull fetches it from, when it can: the file's page on the model hub at the
    /// pinned commit, or its URL on the mirror.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A small model for tests.
    pub test_model: bool,
    /// On disk, loaded, being fetched, or missing.
    #[serde(flatten)]
    pub state: LocalModelState,
}

/// `GET /v1/models/local`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalModelList {
    /// The engine this build runs (`llama.cpp`); `None`: built without local models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Every profile.
    pub items: Vec<LocalModelInfo>,
    /// The daemon's resident memory now, in bytes, where the system says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
}
