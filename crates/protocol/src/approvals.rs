//! Who asks for a tool call, and (filled in by the approval gate) what the person decides.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::language::Language;

/// Who asked for a tool call. Shown to the person deciding ("Claude Code wants to edit …").
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Requester {
    /// One of Souz's own agents, working in a chat.
    Chat {
        /// The chat id.
        chat_id: String,
    },
    /// An MCP client (Claude Code, Claude Desktop, ...). Who it is comes from the token it
    /// presented (`token_id`, `token_name`); `clientInfo` is only what it calls itself.
    Mcp {
        /// `clientInfo.name` from the MCP handshake: self-declared, shown as a detail only.
        client_name: String,
        /// `clientInfo.version`: self-declared.
        client_version: String,
        /// The MCP session id.
        session_id: String,
        /// The id of the client token the request carried (`operator` for the operator
        /// token). Grants and rules bind to it. Empty on records made before client tokens.
        #[serde(default)]
        token_id: String,
        /// That token's name (`operator` for the operator token).
        #[serde(default)]
        token_name: String,
    },
    /// The `souz` command line.
    Cli,
    /// A script or app calling `POST /v1/tool-calls`.
    Api,
    /// A skill bundle.
    Skill {
        /// The skill id.
        skill_id: String,
    },
}

impl Requester {
    /// A short name for people: "Claude Code", "chat 1f2e…", "the CLI".
    pub fn label(&self) -> String {
        match self {
            Self::Chat { chat_id } => format!("Souz chat {}", short(chat_id)),
            Self::Mcp {
                client_name,
                client_version,
                token_name,
                ..
            } => {
                let declared = if client_version.is_empty() {
                    client_name.clone()
                } else {
                    format!("{client_name} {client_version}")
                };
                // The token's name first: what a client calls itself is only a detail.
                if token_name.is_empty() {
                    format!("unidentified MCP client \"{declared}\"")
                } else {
                    format!("{token_name} (MCP client \"{declared}\")")
                }
            }
            Self::Cli => "the souz CLI".to_owned(),
            Self::Api => "an API client".to_owned(),
            Self::Skill { skill_id } => format!("skill {skill_id}"),
        }
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// What a person (or a rule) decided about a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Let it run.
    Approve,
    /// Refuse it. The default: anything unclear is a denial.
    #[default]
    Deny,
}

/// How far a decision reaches beyond the call it was made for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    /// This call only.
    #[default]
    Once,
    /// Calls of this tool by this requester (this chat, this MCP client), until revoked.
    Requester,
    /// Calls of this tool by this requester for `minutes` minutes.
    Minutes,
    /// Calls of this tool by anyone, from now on: written as a rule in `config.toml`.
    Always,
}

/// Narrows a grant or rule to calls whose targets fall under it. All given fields must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct ArgumentMatch {
    /// Every path the call touches is this folder or inside it (`~` allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// Every command the call runs starts with these words (e.g. `git status`), seen through
    /// `sudo`, `env`, `sh -c` and the like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_prefix: Option<String>,
    /// Every URL the call fetches is on this domain or a subdomain of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

impl ArgumentMatch {
    /// Whether no field is set (the match covers every call of the tool).
    pub fn is_empty(&self) -> bool {
        self.path_prefix.is_none() && self.command_prefix.is_none() && self.domain.is_none()
    }
}

/// Tools a scoped grant may cover together, so a session of related calls asks once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolGroup {
    /// Creating and editing files (`NewFile`, `EditFile`) inside one folder: not deleting,
    /// moving, commands or the network; protected paths still ask.
    FileWrites,
}

impl ToolGroup {
    /// How a grant for the group names it in its `tool` field.
    pub fn marker(self) -> &'static str {
        match self {
            Self::FileWrites => "@file_writes",
        }
    }

    /// The group a grant's `tool` field names, if it names one.
    pub fn from_marker(tool: &str) -> Option<Self> {
        (tool == Self::FileWrites.marker()).then_some(Self::FileWrites)
    }

    /// The tools in the group.
    pub fn members(self) -> &'static [&'static str] {
        match self {
            Self::FileWrites => &["NewFile", "EditFile"],
        }
    }

    /// Whether `tool` is one of the group's tools.
    pub fn contains(self, tool: &str) -> bool {
        self.members().contains(&tool)
    }

    /// What a grant for the group lets a requester do, in words ("create and edit files").
    pub fn action(self, language: Language) -> &'static str {
        match (self, language) {
            (Self::FileWrites, Language::En) => "create and edit files",
            (Self::FileWrites, Language::Ru) => "создавать и изменять файлы",
        }
    }

    /// Exactly what the group covers and what it does not, in words.
    pub fn covers(self, language: Language) -> &'static str {
        match (self, language) {
            (Self::FileWrites, Language::En) => {
                "NewFile and EditFile only: not delete, move, commands or the network; \
                 protected paths still ask"
            }
            (Self::FileWrites, Language::Ru) => {
                "только NewFile и EditFile: не удаление, не перемещение, не команды и не сеть; \
                 защищённые пути по-прежнему спрашивают"
            }
        }
    }
}

/// A scope a person can pick with one click, offered with every pending approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SuggestedScope {
    /// The scope.
    pub scope: ScopeKind,
    /// Minutes, when `scope` is `minutes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minutes: Option<u32>,
    /// The narrowing match (the folder, the command prefix, the domain).
    #[serde(
        rename = "match",
        default,
        skip_serializing_if = "ArgumentMatch::is_empty"
    )]
    pub argument_match: ArgumentMatch,
    /// The tools the scope covers together (absent: only the asking tool); pass it back in
    /// the decision to accept the offer as made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_group: Option<ToolGroup>,
    /// The offer in words: "Allow Claude Code to edit files in ~/project for this session".
    pub label: String,
}

/// `POST /v1/approvals/{id}/decision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// `approve` or `deny`.
    pub decision: Verdict,
    /// How far the decision reaches (default `once`).
    #[serde(default)]
    pub scope: ScopeKind,
    /// Minutes, required when `scope` is `minutes` (1..=10080).
    #[serde(default)]
    pub minutes: Option<u32>,
    /// Narrows a scoped decision; without it a scoped decision covers every call of the tool.
    #[serde(rename = "match", default)]
    pub argument_match: Option<ArgumentMatch>,
    /// Widens a scoped approval from the asking tool to a group of tools (the group must hold
    /// the tool, the scope must be `requester` or `minutes` and the match must name a folder).
    #[serde(default)]
    pub tool_group: Option<ToolGroup>,
    /// Where the person decided (`api`, `cli`, `tray`, `notification`, `ui`); for the audit.
    #[serde(default)]
    pub via: Option<String>,
}

impl DecisionRequest {
    /// A decision for this call only, made `via` a surface (`api`, `tray`, `notification`…).
    pub fn once(decision: Verdict, via: &str) -> Self {
        Self {
            decision,
            scope: ScopeKind::Once,
            minutes: None,
            argument_match: None,
            tool_group: None,
            via: Some(via.to_owned()),
        }
    }
}

/// Where a pending approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// A person approved it.
    Approved,
    /// A person denied it.
    Denied,
    /// Nobody answered in time, the daemon restarted, or the requester gave up: denied.
    Expired,
}

impl ApprovalStatus {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
        }
    }
}

/// Why a pending approval expired (which always means: denied).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExpiryReason {
    /// No decision within the approval timeout.
    Timeout,
    /// The daemon restarted while it was pending.
    Restart,
    /// The requester cancelled the call or went away.
    Withdrawn,
    /// The daemon is shutting down.
    Shutdown,
    /// The person paused Souz.
    Paused,
}

/// The decision recorded on an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RecordedDecision {
    /// Approve or deny (expiry is a denial).
    pub decision: Verdict,
    /// The scope chosen.
    pub scope: ScopeKind,
    /// Minutes, for `minutes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minutes: Option<u32>,
    /// The narrowing match chosen.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub argument_match: Option<ArgumentMatch>,
    /// The tool group a scoped approval was widened to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_group: Option<ToolGroup>,
    /// Where it was decided (`api`, `cli`, `tray`, `notification`, `ui`), or `timeout`,
    /// `restart`, `withdrawn`, `shutdown` for expiries.
    pub via: String,
    /// When.
    pub decided_at: chrono::DateTime<chrono::Utc>,
    /// The grant created by a scoped approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<String>,
}

/// A run nobody is watching (a schedule's occurrence) that waits for a person's decision on one
/// of its calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ParkedRun {
    /// The schedule.
    pub schedule_id: String,
    /// Its name, as the person gave it.
    pub schedule_name: String,
    /// The run (`/v1/schedules/{id}/runs`).
    pub run_id: i64,
}

impl ParkedRun {
    /// Who waits, in words: "scheduled run 'Inbox summary'".
    pub fn label(&self) -> String {
        format!("scheduled run '{}'", self.schedule_name)
    }
}

/// A request for a person's decision about one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    /// Approval id.
    pub id: String,
    /// The tool call it is about.
    pub call_id: String,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// Who asks.
    pub requester: Requester,
    /// Who asks, in words ("Claude Code 1.2").
    pub requester_label: String,
    /// The tool.
    pub tool: String,
    /// The external MCP server (`[mcp.servers.<name>]`) the tool belongs to; absent for
    /// Souz's own tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Its risk class.
    pub risk: crate::Risk,
    /// The full arguments.
    pub arguments: serde_json::Value,
    /// One line: what will happen.
    pub summary: String,
    /// For file changes: the unified diff of what will change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Why the policy asks.
    pub reason: String,
    /// One-click scope that stops a storm of similar prompts.
    pub suggested: SuggestedScope,
    /// When it was asked.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it expires as denied if nobody answers.
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// The decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<RecordedDecision>,
    /// Why it expired, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_reason: Option<ExpiryReason>,
    /// The unattended run parked on this approval (a schedule's run): it goes on when the
    /// approval is given, hours or restarts later, and ends `blocked` when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<ParkedRun>,
}

/// `GET /v1/approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalList {
    /// Newest first.
    pub items: Vec<Approval>,
}

/// Allow or deny, for grants and rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Matching calls run without asking.
    Allow,
    /// Matching calls are refused without asking.
    Deny,
}

/// A standing decision created by a scoped approval; revocable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Grant {
    /// Grant id.
    pub id: String,
    /// Allow or deny.
    pub effect: Effect,
    /// The tool it covers, or the marker of the tool group it covers ([`ToolGroup::marker`]:
    /// `@file_writes`).
    pub tool: String,
    /// Only calls from this requester (absent: anyone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<Requester>,
    /// Only calls whose targets match.
    #[serde(
        rename = "match",
        default,
        skip_serializing_if = "ArgumentMatch::is_empty"
    )]
    pub argument_match: ArgumentMatch,
    /// When it was made.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it stops matching (absent: until revoked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The approval it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// In words.
    pub label: String,
}

/// `GET /v1/grants`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GrantList {
    /// Active grants, newest first.
    pub items: Vec<Grant>,
}

/// `POST /v1/approvals/{id}/decision` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionResponse {
    /// The approval after the decision.
    pub approval: Approval,
    /// The grant a scoped approval created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<Grant>,
    /// The rule an `always` decision added to `config.toml`, as TOML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Something that did not work out but did not undo the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_label_names_the_token_before_what_the_client_calls_itself() {
        let spoof = Requester::Mcp {
            client_name: "the souz CLI".into(),
            client_version: String::new(),
            session_id: "s".into(),
            token_id: "c1".into(),
            token_name: "claude-code".into(),
        };
        assert_eq!(spoof.label(), "claude-code (MCP client \"the souz CLI\")");
        assert_ne!(spoof.label(), Requester::Cli.label());
    }

    #[test]
    fn mcp_requesters_stored_before_client_tokens_still_decode() {
        let old =
            r#"{"kind":"mcp","client_name":"claude-code","client_version":"2.1","session_id":"s"}"#;
        let requester: Requester = serde_json::from_str(old).unwrap();
        let Requester::Mcp {
            token_id,
            token_name,
            ..
        } = &requester
        else {
            panic!("{requester:?}")
        };
        assert!(token_id.is_empty() && token_name.is_empty());
        assert!(requester.label().starts_with("unidentified MCP client"));
    }
}
