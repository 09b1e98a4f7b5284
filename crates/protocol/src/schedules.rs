//! Scheduled runs on the wire: a schedule (when it fires, in which time zone, what it runs,
//! what it may do unasked, what happens to missed and overlapping occurrences), its runs (one
//! per claimed occurrence), and the preview of the next fire times.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::chat::ChatSettings;

/// What a schedule runs when it fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScheduleAction {
    /// A prompt posted to the schedule's own chat, with the chat's settings (model, agent,
    /// enabled tools; `null` fields: the owner's).
    Prompt {
        /// The message the agent receives.
        prompt: String,
        /// The chat settings the run uses.
        #[serde(default)]
        settings: ChatSettings,
    },
    /// A skill, run by the skills agent in the schedule's own chat.
    Skill {
        /// The skill's id.
        skill: String,
        /// What the skill is asked to do (optional).
        #[serde(default)]
        prompt: Option<String>,
    },
}

/// What happens to occurrences missed while the machine slept or Souz was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum MissedPolicy {
    /// Missed occurrences are dropped.
    Skip,
    /// The latest missed occurrence runs once; the others are dropped.
    #[default]
    RunOnce,
    /// The latest `limit` missed occurrences run, oldest first; older ones are dropped.
    CatchUp {
        /// At most this many (1..=100).
        limit: u32,
    },
}

/// What happens when an occurrence is due while the previous run still goes. Runs of one
/// schedule never overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OverlapPolicy {
    /// The occurrence is recorded as skipped.
    #[default]
    Skip,
    /// One occurrence waits and starts when the running one ends; further ones are skipped.
    QueueOne,
}

/// What a schedule's runs may do without asking. Empty lists (the default): read-only tools
/// only; anything else asks the person as a chat turn does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleEnvelope {
    /// Tools allowed unasked (catalog names).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Folders the tools may write in unasked.
    #[serde(default)]
    pub folders: Vec<String>,
    /// Hosts the tools may reach unasked.
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// A schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    /// Schedule id.
    pub id: String,
    /// Its name (the title of its chat).
    pub name: String,
    /// When it fires: a cron expression (5 fields, or 6 with seconds first), or a one-shot
    /// `at <RFC 3339 time>` (a relative `in 2 hours` was resolved when it was created).
    pub spec: String,
    /// The IANA time zone the expression is read in (`Europe/Berlin`).
    pub zone: String,
    /// What it runs.
    pub action: ScheduleAction,
    /// What happens to missed occurrences.
    pub missed: MissedPolicy,
    /// What happens to an occurrence due while a run still goes.
    pub overlap: OverlapPolicy,
    /// What its runs may do unasked.
    pub envelope: ScheduleEnvelope,
    /// Whether it fires (`false`: paused).
    pub enabled: bool,
    /// Its chat, once it ran.
    pub chat_id: Option<String>,
    /// When it fires next (`null`: paused, or a one-shot that fired).
    pub next_fire: Option<DateTime<Utc>>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last changed.
    pub updated_at: DateTime<Utc>,
}

/// `GET /v1/schedules` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleList {
    /// The caller's schedules, by name.
    pub items: Vec<Schedule>,
}

/// `POST /v1/schedules` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewSchedule {
    /// Its name (non-empty).
    pub name: String,
    /// A cron expression (`30 8 * * 1-5`, `0 */15 * * * *` with seconds), `at 2026-12-24 09:00`
    /// (in `zone`), `at <RFC 3339 time>`, or `in 2 hours` / `in 30 minutes`.
    pub spec: String,
    /// IANA time zone; absent: the daemon's.
    #[serde(default)]
    pub zone: Option<String>,
    /// What it runs.
    pub action: ScheduleAction,
    /// Missed occurrences; absent: `run_once`.
    #[serde(default)]
    pub missed: Option<MissedPolicy>,
    /// Overlapping occurrences; absent: `skip`.
    #[serde(default)]
    pub overlap: Option<OverlapPolicy>,
    /// What its runs may do unasked; absent: read-only.
    #[serde(default)]
    pub envelope: Option<ScheduleEnvelope>,
    /// Whether it starts enabled (default `true`).
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `PATCH /v1/schedules/{id}` request: absent fields keep their value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulePatch {
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
    /// New spec (read in the new or the current zone).
    #[serde(default)]
    pub spec: Option<String>,
    /// New time zone.
    #[serde(default)]
    pub zone: Option<String>,
    /// New action.
    #[serde(default)]
    pub action: Option<ScheduleAction>,
    /// New missed policy.
    #[serde(default)]
    pub missed: Option<MissedPolicy>,
    /// New overlap policy.
    #[serde(default)]
    pub overlap: Option<OverlapPolicy>,
    /// New envelope.
    #[serde(default)]
    pub envelope: Option<ScheduleEnvelope>,
}

/// Where a run of a schedule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Claimed by a daemon, not started yet (queued behind a running one).
    Claimed,
    /// Running.
    Running,
    /// Waiting for an approval.
    Parked,
    /// Finished.
    Ok,
    /// Ended because an approval was denied or expired.
    Blocked,
    /// Failed; `reason` says why.
    Failed,
    /// Not run (the previous run still went, or it was missed); `reason` says why.
    Skipped,
}

impl RunState {
    /// Its name on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claimed => "claimed",
            Self::Running => "running",
            Self::Parked => "parked",
            Self::Ok => "ok",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Claimed,
            Self::Running,
            Self::Parked,
            Self::Ok,
            Self::Blocked,
            Self::Failed,
            Self::Skipped,
        ]
        .into_iter()
        .find(|state| state.as_str() == name)
    }

    /// Whether the run has ended.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Self::Ok | Self::Blocked | Self::Failed | Self::Skipped
        )
    }
}

/// One occurrence of a schedule, claimed by one daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRun {
    /// Run id.
    pub id: i64,
    /// The schedule.
    pub schedule_id: String,
    /// The occurrence (for "run now": when it was asked).
    pub fire_at: DateTime<Utc>,
    /// Where it is.
    pub state: RunState,
    /// When it started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Its chat.
    pub chat_id: Option<String>,
    /// Its execution in that chat.
    pub execution_id: Option<String>,
    /// Why it failed, was blocked or skipped.
    pub reason: Option<String>,
    /// The approval it waits (`parked`) or waited on last.
    #[serde(default)]
    pub approval_id: Option<String>,
}

/// `GET /v1/schedules/{id}/runs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRunList {
    /// The runs, newest first.
    pub items: Vec<ScheduleRun>,
}

/// `GET /v1/schedules/preview` query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulePreviewQuery {
    /// The spec, as in [`NewSchedule::spec`].
    pub spec: String,
    /// IANA time zone; absent: the daemon's.
    #[serde(default)]
    pub zone: Option<String>,
}

/// `GET /v1/schedules/preview` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulePreview {
    /// The spec as it would be stored (relative times resolved).
    pub spec: String,
    /// The zone it is read in.
    pub zone: String,
    /// The next fire times (at most 5).
    pub fires: Vec<DateTime<Utc>>,
}
