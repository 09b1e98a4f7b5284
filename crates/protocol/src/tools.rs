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

/// Allow, ask or deny: what the policy does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run without asking.
    Allow,
    /// Ask a person first.
    Ask,
    /// Refuse.
    Deny,
}

/// How the policy treats a tool before looking at a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EffectivePolicy {
    /// What happens to a call that no argument-specific rule or grant matches.
    pub action: Action,
    /// Why, in words.
    pub reason: String,
    /// Number of rules and grants that may change the outcome depending on arguments.
    pub conditional: usize,
}

/// A tool in the catalog, as `GET /v1/tools` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolInfo {
    /// Unique name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Category.
    pub category: ToolCategory,
    /// Risk class.
    pub risk: Risk,
    /// MCP annotations.
    pub annotations: ToolAnnotations,
    /// JSON schema of the arguments.
    pub input_schema: serde_json::Value,
    /// JSON schema of structured output, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// What the policy does with it.
    pub policy: EffectivePolicy,
}

/// `GET /v1/tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolList {
    /// Sorted by name.
    pub items: Vec<ToolInfo>,
}

/// `POST /v1/tool-calls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRequest {
    /// Tool name.
    pub tool: String,
    /// Arguments (an object).
    #[serde(default)]
    pub arguments: serde_json::Value,
    /// How long to wait for the result before answering 202 (default 30000, at most 600000).
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Being validated and checked against the policy.
    Planning,
    /// Waiting for a person's decision.
    WaitingApproval,
    /// Running.
    Running,
    /// Finished with a result.
    Succeeded,
    /// Ran (or could not start) and failed; the result says why.
    Failed,
    /// Refused by a rule, a grant, a person or an expiry.
    Denied,
    /// The requester cancelled it.
    Cancelled,
    /// An unattended run's call that waits for a person: the approval is stored and outlives
    /// the call (and the process); once approved, the run executes it as a new call.
    Parked,
}

impl ToolCallStatus {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Planning => "planning",
            Self::WaitingApproval => "waiting_approval",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Denied => "denied",
            Self::Cancelled => "cancelled",
            Self::Parked => "parked",
        }
    }

    /// Whether the call is over.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Planning | Self::WaitingApproval | Self::Running)
    }
}

/// A tool call and, once it is over, its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub tool: String,
    /// Who asked.
    pub requester: crate::Requester,
    /// Where it stands.
    pub status: ToolCallStatus,
    /// What it does, once planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The approval it waits for or waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The result, once over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolResult>,
    /// When it was asked for.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// What made the decision about a call, for the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DecisionSource {
    /// A rule in `[approvals]` (1-based position and its text).
    Rule {
        /// Position among the rules, from 1.
        index: usize,
        /// The rule, in words.
        rule: String,
    },
    /// A grant made by an earlier scoped approval.
    Grant {
        /// Grant id.
        grant_id: String,
    },
    /// The default for the tool's risk class.
    Default {
        /// The risk class.
        risk: Risk,
    },
    /// A person, through an approval.
    Person {
        /// Approval id.
        approval_id: String,
        /// Where they decided.
        via: String,
    },
    /// Nobody decided in time (or the daemon restarted, or the requester gave up).
    Expiry {
        /// Approval id.
        approval_id: String,
        /// Why.
        reason: crate::approvals::ExpiryReason,
    },
    /// No decision was needed: the call was invalid (unknown tool, bad arguments, refused path).
    NotReached,
    /// Souz was paused, so a call that needed a person's approval was denied without asking.
    Paused,
}

/// How a call ended, for the audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran and succeeded.
    Succeeded,
    /// Ran and failed, or could not be planned.
    Failed,
    /// Refused.
    Denied,
    /// Cancelled by the requester.
    Cancelled,
    /// Parked: an unattended run's call waits for a person; nothing ran (yet).
    Parked,
}

impl Outcome {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Denied => "denied",
            Self::Cancelled => "cancelled",
            Self::Parked => "parked",
        }
    }
}

/// One row of the audit log. Arguments and results are redacted, truncated previews.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEntry {
    /// Row id (increasing).
    pub id: i64,
    /// When the call ended.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Call id.
    pub call_id: String,
    /// Who asked.
    pub requester: crate::Requester,
    /// Tool name.
    pub tool: String,
    /// Risk class, when the tool is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// Redacted, truncated arguments.
    pub arguments: serde_json::Value,
    /// Redacted, truncated result or error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// Allow or deny (absent when no decision was reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Action>,
    /// What made the decision.
    pub decided_by: DecisionSource,
    /// How it ended.
    pub outcome: Outcome,
    /// Milliseconds from request to end.
    pub duration_ms: u64,
}

/// `GET /v1/audit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditPage {
    /// Newest first.
    pub items: Vec<AuditEntry>,
    /// Pass as `before` to get the next (older) page; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before: Option<i64>,
}
