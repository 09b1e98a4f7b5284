//! Tools on the wire: risk classes, categories, annotations, the catalog listing and results.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How dangerous a tool is; the approval policy has a default per class.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only; changes nothing.
    ReadOnly,
    /// Creates or modifies files or data.
    Write,
    /// Removes files or data.
    Delete,
    /// Talks to other machines.
    Network,
    /// Runs programs.
    Exec,
}

impl Risk {
    /// Every class, from least to most dangerous.
    pub const ALL: [Risk; 5] = [
        Risk::ReadOnly,
        Risk::Write,
        Risk::Delete,
        Risk::Network,
        Risk::Exec,
    ];

    /// The class as written in config and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Write => "write",
            Self::Delete => "delete",
            Self::Network => "network",
            Self::Exec => "exec",
        }
    }
}

/// Groups of tools, as the original catalog names them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ToolCategory {
    /// Files and folders.
    Files,
    /// Web pages and search.
    WebSearch,
    /// Spreadsheets, CSV and charts.
    DataAnalytics,
    /// Arithmetic.
    Calculator,
    /// Running programs.
    Commands,
    /// Tools that Souz itself provides to manage the conversation (approvals, knowledge).
    Souz,
}

impl ToolCategory {
    /// The category as written on the wire (`FILES`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Files => "FILES",
            Self::WebSearch => "WEB_SEARCH",
            Self::DataAnalytics => "DATA_ANALYTICS",
            Self::Calculator => "CALCULATOR",
            Self::Commands => "COMMANDS",
            Self::Souz => "SOUZ",
        }
    }
}

/// MCP tool annotations (hints for clients; never trusted for policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool does not modify its environment.
    pub read_only_hint: bool,
    /// The tool may perform destructive updates.
    pub destructive_hint: bool,
    /// Calling it twice with the same arguments has no additional effect.
    pub idempotent_hint: bool,
    /// The tool interacts with an open world of external entities.
    pub open_world_hint: bool,
}

impl ToolAnnotations {
    /// Conservative defaults for a risk class.
    pub fn for_risk(risk: Risk) -> Self {
        Self {
            read_only_hint: risk == Risk::ReadOnly,
            destructive_hint: matches!(risk, Risk::Write | Risk::Delete | Risk::Exec),
            idempotent_hint: risk == Risk::ReadOnly,
            open_world_hint: matches!(risk, Risk::Network | Risk::Exec),
        }
    }
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResult {
    /// Text for the model or the person.
    pub text: String,
    /// The same result as JSON, when the tool produces structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
    /// The tool ran and failed, or the call was refused; `text` says why.
    pub is_error: bool,
}
