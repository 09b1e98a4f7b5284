//! Review mode on the wire: the setting (per chat, per MCP client), reviews of staged file
//! changes (a chat turn's, or an MCP client's), and the person's decisions on them.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approvals::Requester;

/// Who is in review mode: `GET /v1/review-mode`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewModes {
    /// Chats whose agents' file writes are staged for review.
    pub chats: Vec<String>,
    /// Clients (an MCP client's token name, `mcp:<name>` without one) whose file writes are
    /// staged for review.
    pub clients: Vec<String>,
}

/// `PUT /v1/review-mode`: review mode on or off for one chat or one client (exactly one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewModeUpdate {
    /// The chat.
    #[serde(default)]
    pub chat_id: Option<String>,
    /// The client (`claude-code`, a token's name).
    #[serde(default)]
    pub client: Option<String>,
    /// On or off.
    pub on: bool,
}

/// Where a review stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// A chat turn is still staging into it; it opens when the turn ends.
    Collecting,
    /// Waiting for the person's decisions.
    Open,
    /// Every change is decided.
    Closed,
}

/// What became of one staged change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeDecision {
    /// Being applied now.
    Applying,
    /// Applied (recorded in the history, so it can be undone).
    Applied,
    /// Discarded: nothing was written.
    Discarded,
    /// Applying it failed (the tool's error says why); nothing was written.
    Failed,
}

/// A review in a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewSummary {
    /// Its id.
    pub id: i64,
    /// The client whose writes it holds (`souz` for a chat's agent).
    pub client: String,
    /// The chat, for a chat turn's review.
    pub chat_id: Option<String>,
    /// The chat turn (execution), for a chat turn's review.
    pub execution_id: Option<String>,
    /// Where it stands.
    pub status: ReviewStatus,
    /// How many staged changes it holds.
    pub changes: usize,
    /// How many of them wait for a decision.
    pub undecided: usize,
    /// When its first change was staged.
    pub created_at: DateTime<Utc>,
}

/// `GET /v1/reviews`: the open reviews, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewList {
    /// The reviews.
    pub items: Vec<ReviewSummary>,
}

/// Why a staged change cannot be applied as it was staged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConflictReason {
    /// The file changed outside Souz (or became unreadable) since the change was staged.
    External,
    /// An earlier staged change to the same file in this review was discarded, failed or is
    /// not applied yet, and this change, staged on top of it, does not apply to the file as it
    /// is without it.
    EarlierChange,
}

/// One path a staged change writes, with what it held when the change was staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StagedPath {
    /// The absolute path.
    pub path: String,
    /// What it held when the change was staged: the disk then, or, when earlier changes of
    /// the review write it too, what it holds once they are applied in order.
    pub base: crate::history::PathSnapshot,
    /// Whether it is a conflict now (applying refuses unless forced): the file changed
    /// outside since, or an earlier staged change to it was discarded or failed.
    pub changed: bool,
    /// Why it is a conflict, when it is one.
    pub conflict: Option<ConflictReason>,
}

/// One staged change: a file tool's call, not run yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StagedChange {
    /// Its id.
    pub id: i64,
    /// The gate's id of the call that was staged.
    pub call_id: String,
    /// The tool (`NewFile`, `EditFile`, `MoveFile`, `DeleteFile`, ...).
    pub tool: String,
    /// Who asked.
    pub requester: Requester,
    /// What it does, in one line.
    pub summary: String,
    /// The unified diff of what it changes (as planned when staged).
    pub diff: Option<String>,
    /// The paths it writes.
    pub paths: Vec<StagedPath>,
    /// Whether any path is a conflict (see [`StagedPath::changed`]).
    pub conflict: bool,
    /// Why, when it is one (`external` when any path changed outside).
    pub conflict_reason: Option<ConflictReason>,
    /// The decision, once made.
    pub decision: Option<ChangeDecision>,
    /// For an applied or failed change: the tool's answer.
    pub result: Option<String>,
    /// For an applied change: the id of the call that applied it (its history change).
    pub applied_call_id: Option<String>,
}

/// `GET /v1/reviews/{id}`: a review with its combined diff, change by change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// The review.
    #[serde(flatten)]
    pub summary: ReviewSummary,
    /// Its staged changes, in the order they were made.
    pub items: Vec<StagedChange>,
}

/// What to do with a staged change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewAction {
    /// Write it.
    Apply,
    /// Drop it: nothing is written.
    Discard,
}

/// One decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewDecision {
    /// The staged change.
    pub change_id: i64,
    /// Apply or discard.
    pub action: ReviewAction,
}

/// `POST /v1/reviews/{id}/decisions`: decisions on some changes, or `all` on every undecided
/// one. Changes are applied in the order they were staged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewDecisions {
    /// Decisions, change by change.
    #[serde(default)]
    pub decisions: Vec<ReviewDecision>,
    /// One action for every undecided change (after `decisions`).
    #[serde(default)]
    pub all: Option<ReviewAction>,
    /// Apply changes that conflict — their paths changed outside since they were staged, or an
    /// earlier staged change to the same file was discarded — anyway: each is planned again
    /// against the disk as it is now (and fails, saying why, when it no longer fits).
    #[serde(default)]
    pub force: bool,
}

/// A change asked to be applied that was left undecided, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeConflict {
    /// The staged change.
    pub change_id: i64,
    /// Why it was not applied.
    pub reason: ConflictReason,
}

/// The answer to decisions: the review as it is now, and the changes left undecided because
/// they conflict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewOutcome {
    /// The review after the decisions.
    pub review: Review,
    /// Changes asked to be applied that were not, because they conflict (`force` applies
    /// them anyway), in the order they were staged.
    pub conflicts: Vec<i64>,
    /// The same changes, each with why.
    pub conflict_reasons: Vec<ChangeConflict>,
}

/// When a review was opened or is held: the wire summary of staging, for events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewedChange {
    /// The staged change.
    pub change_id: i64,
    /// Its decision.
    pub decision: ChangeDecision,
}
