//! File-backed skills on the wire: `/v1/skills` (list, show, install, validate, enable,
//! disable, remove).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a skill comes from; earlier sources shadow later ones with the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkillSource {
    /// Installed into the Souz home (`SOUZ_HOME/skills/<id>/<hash>/`).
    Installed,
    /// A workspace root's `.agents/skills` (read-only).
    Project,
    /// `~/.agents/skills` (read-only).
    UserAgents,
    /// `~/.claude/skills` (read-only).
    UserClaude,
}

/// A skill as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillSummary {
    /// Its id: the `name` of its `SKILL.md`.
    pub id: String,
    /// Where it comes from.
    pub source: SkillSource,
    /// Its folder.
    pub path: String,
    /// What it does (empty when it cannot be read).
    pub description: String,
    /// The canonical SHA-256 of its current bundle (empty when it cannot be read).
    pub hash: String,
    /// Whether the agents may use it.
    pub enabled: bool,
    /// Why it cannot be loaded, if it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `GET /v1/skills`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillList {
    /// Every skill by precedence, sorted by id.
    pub items: Vec<SkillSummary>,
}

/// How serious a validation finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingSeverity {
    /// For information.
    Info,
    /// Worth a look.
    Warning,
    /// Rejects the skill.
    Error,
}

/// One thing validation found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillFinding {
    /// Stable code: `struct.*` (loader limits), `spec.*` (the Agent Skills specification),
    /// `static.*` (the static rules).
    pub code: String,
    /// For people.
    pub message: String,
    /// How serious.
    pub severity: FindingSeverity,
    /// The file it is about, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A validation's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillValidation {
    /// No error finding.
    pub approved: bool,
    /// Its id, when `SKILL.md` could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The bundle's canonical hash, when it could be loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Everything found.
    pub findings: Vec<SkillFinding>,
}

/// `GET /v1/skills/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillDetail {
    /// As listed.
    pub summary: SkillSummary,
    /// Its license, if stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Environment requirements, if stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    /// Tools it expects to be allowed.
    pub allowed_tools: Vec<String>,
    /// Its metadata (the original's `author`, `version`, `oauth*` fields included).
    pub metadata: BTreeMap<String, String>,
    /// The Markdown body of `SKILL.md`.
    pub body: String,
    /// Its files other than `SKILL.md`.
    pub files: Vec<String>,
    /// Its permissions manifest (`agents/souz.toml`), when it has a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<SkillPermissions>,
    /// Its validation.
    pub validation: SkillValidation,
}

/// `POST /v1/skills` and `POST /v1/skills/validate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillPath {
    /// An absolute path on the daemon's machine: a skill folder, or a `.zip` holding one.
    pub path: String,
}

/// `POST /v1/skills/git`: a skill in a git repository reached over HTTP(S).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillGitSource {
    /// The repository's `http(s)` URL, or a GitHub, GitLab or Gitea page of the skill's folder
    /// (`https://github.com/owner/repo/tree/main/skills/pdf`), which also gives the ref and
    /// the folder.
    pub url: String,
    /// A branch, tag or commit (default: the repository's default branch).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The skill's folder in the repository (default: the top, or the only folder with a
    /// `SKILL.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

/// `POST /v1/skills` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InstalledSkill {
    /// Its id.
    pub id: String,
    /// The canonical hash of the installed bundle.
    pub hash: String,
    /// Its validation (approved: rejected skills are not installed).
    pub validation: SkillValidation,
    /// Consent to run its commands: `granted` when this bundle was approved before, else
    /// `pending` (one approval showing the manifest, hash and findings is waiting).
    #[serde(default)]
    pub consent: SkillConsent,
    /// The pending consent approval's id (`consent` is `pending`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_approval_id: Option<String>,
}

/// Whether an installed bundle's commands may run without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkillConsent {
    /// Approved (a standing grant for this bundle exists).
    Granted,
    /// Asked, not yet decided: the first command waits for that approval.
    #[default]
    Pending,
}

/// A skill's permissions manifest (`agents/souz.toml`, `[permissions]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillPermissions {
    /// Folders it may read.
    pub read: Vec<String>,
    /// Folders it may write.
    pub write: Vec<String>,
    /// Hosts it may reach.
    pub hosts: Vec<String>,
    /// Programs it runs.
    pub programs: Vec<String>,
    /// Environment variables passed through to it.
    pub env: Vec<String>,
    /// Souz tools it may call.
    pub tools: Vec<String>,
    /// Per-command time limit, in seconds.
    pub time_limit_seconds: u64,
}
