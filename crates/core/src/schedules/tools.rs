//! Schedules as catalog tools: `CreateSchedule`, `ListSchedules` (read-only) and
//! `DeleteSchedule`, for Souz's own agents and, through the same catalog, MCP clients (Claude).
//! Every call passes the approval gate like any other tool.
//!
//! The catalog is built before the schedule service exists (the engine fires chat executions,
//! and chats come after the gate), so the tools reach the service through a [`ScheduleTools`]
//! slot the runtime fills once it started; a call before that fails with a message, never
//! panics.
//!
//! Invariants:
//! - A schedule belongs to the requester's owner, resolved as approvals resolve it
//!   (`approvals::audience`): a chat's stored user for a chat's call, the operator
//!   ([`crate::LOCAL_USER`]) for every other call. Listing and deleting see only that owner's.
//! - `CreateSchedule` always asks (its plan carries [`CallTarget::Untrusted`]: a schedule runs
//!   later without asking, so no rule, grant or risk default lets it through unseen; only a
//!   deny rule beats it). Its plan validates the spec, the zone and the fields: an invalid one
//!   is an error before anyone is asked, and nothing is stored. The summary says in one line
//!   what runs, when (with the next fire in the schedule's zone) and what it may do unasked.
//! - What is stored is what was approved: the plan resolves a relative time (`in 2 hours`) and
//!   the zone, and the run creates exactly that.
//! - `DeleteSchedule` asks by its risk (`delete`); its plan names the schedule it deletes.

use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::schedules::{
    MissedPolicy, NewSchedule, OverlapPolicy, Schedule, ScheduleAction, ScheduleEnvelope,
    ScheduleList,
};
use souz_protocol::{Requester, Risk, ToolCategory};

use super::{CheckedSchedule, ScheduleError, Schedules, spec};
use crate::approvals::CallTarget;
use crate::chat::{ChatUser, Chats};
use crate::store::Store;
use crate::tools::{
    DynTool, Language, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, erase, localized,
};

/// Why the person is always asked before a schedule is created (the approval's reason).
const ALWAYS_ASK: &str = "a schedule runs later without asking you, so creating one always asks";
/// The longest prompt shown in a summary, in characters.
const SHOWN_PROMPT: usize = 80;

/// What the schedule tools use, once the runtime started the service.
#[derive(Clone)]
pub(crate) struct ScheduleAccess {
    /// The schedule service.
    pub schedules: Schedules,
    /// The chats: their owners' settings give a schedule's default zone.
    pub chats: Chats,
    /// The database: a chat's owner is read from its `chats` row.
    pub store: Store,
}

/// The slot the schedule tools read the service from; cheap to clone (one slot shared).
#[derive(Clone, Default)]
pub(crate) struct ScheduleTools {
    access: Arc<OnceLock<ScheduleAccess>>,
}

impl ScheduleTools {
    /// The three tools over this slot, for the catalog.
    pub(crate) fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![
            erase(CreateSchedule(self.clone())),
            erase(ListSchedules(self.clone())),
            erase(DeleteSchedule(self.clone())),
        ]
    }

    /// Fills the slot (once; a second call changes nothing).
    pub(crate) fn bind(&self, access: ScheduleAccess) {
        if self.access.set(access).is_err() {
            tracing::warn!("the schedule tools were bound twice; the first binding stays");
        }
    }

    fn access(&self) -> Result<&ScheduleAccess, ToolError> {
        self.access
            .get()
            .ok_or_else(|| ToolError::Failed("Schedules are not available yet.".to_owned()))
    }
}

impl ScheduleAccess {
    /// Whose schedules a call from `requester` manages: the user of the chat it came from, or
    /// the operator.
    pub(crate) async fn owner(&self, requester: &Requester) -> Result<String, ToolError> {
        let Requester::Chat { chat_id } = requester else {
            return Ok(crate::LOCAL_USER.to_owned());
        };
        let user = self
            .store
            .chat_owner(chat_id)
            .await
            .map_err(|error| ToolError::Internal(error.to_string()))?;
        Ok(user.unwrap_or_else(|| crate::LOCAL_USER.to_owned()))
    }

    /// The zone of a schedule that names none: its owner's time zone setting.
    async fn default_zone(&self, owner: &str) -> Result<String, ToolError> {
        let settings = self
            .chats
            .settings(&ChatUser(owner.to_owned()))
            .await
            .map_err(|error| ToolError::Internal(error.to_string()))?;
        Ok(settings.time_zone)
    }
}

fn tool_error(error: ScheduleError) -> ToolError {
    match error {
        ScheduleError::Spec(error) => ToolError::InvalidArguments(error.to_string()),
        ScheduleError::Invalid(message) => ToolError::InvalidArguments(message),
        ScheduleError::NotFound => ToolError::Failed(error.to_string()),
        ScheduleError::Store(error) => ToolError::Internal(error.to_string()),
    }
}

/// Arguments of `CreateSchedule`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateArgs {
    /// Its name, shown in the schedule list and as its chat's title ("Weekly report").
    pub name: String,
    /// When it runs: a cron expression of 5 fields (`0 9 * * 1` is every Monday at 09:00) or 6
    /// with seconds first, `at 2026-12-24 09:00` (wall time in the zone), or `in 2 hours` /
    /// `in 30 minutes`.
    pub spec: String,
    /// IANA time zone the spec is read in (`Europe/Berlin`); absent: the person's time zone.
    #[serde(default)]
    pub zone: Option<String>,
    /// What the agent is asked each time it runs. Required unless `skill` is given; with a
    /// skill, what the skill is asked to do.
    #[serde(default)]
    pub prompt: Option<String>,
    /// A skill's id to run instead of a plain prompt.
    #[serde(default)]
    pub skill: Option<String>,
    /// Occurrences missed while the machine slept or Souz was stopped; absent: run the latest
    /// once.
    #[serde(default)]
    pub missed: Option<MissedPolicy>,
    /// An occurrence due while the previous run still goes; absent: skip it.
    #[serde(default)]
    pub overlap: Option<OverlapPolicy>,
    /// What its runs may do without asking (tools, folders, hosts); absent: read-only tools.
    /// Anything else waits for the person's approval when the run meets it.
    #[serde(default)]
    pub envelope: Option<ScheduleEnvelope>,
}

impl CreateArgs {
    /// The service's request for these arguments.
    fn request(&self) -> Result<NewSchedule, ToolError> {
        let prompt = self
            .prompt
            .as_deref()
            .map(str::trim)
            .filter(|prompt| !prompt.is_empty());
        let action = match (&self.skill, prompt) {
            (Some(skill), prompt) => ScheduleAction::Skill {
                skill: skill.trim().to_owned(),
                prompt: prompt.map(str::to_owned),
            },
            (None, Some(prompt)) => ScheduleAction::Prompt {
                prompt: prompt.to_owned(),
                settings: Default::default(),
            },
            (None, None) => {
                return Err(ToolError::InvalidArguments(
                    "give a prompt (what to ask the agent) or a skill".to_owned(),
                ));
            }
        };
        Ok(NewSchedule {
            name: self.name.clone(),
            spec: self.spec.clone(),
            zone: self.zone.clone(),
            action,
            missed: self.missed,
            overlap: self.overlap,
            envelope: self.envelope.clone(),
            enabled: None,
        })
    }
}

/// What `CreateSchedule`'s run creates, resolved when it was planned.
pub(crate) struct Approved {
    owner: String,
    request: NewSchedule,
}

struct CreateSchedule(ScheduleTools);

impl Tool for CreateSchedule {
    type Args = CreateArgs;
    type Prepared = Approved;

    fn name(&self) -> &'static str {
        "CreateSchedule"
    }

    fn description(&self) -> &'static str {
        "Create a scheduled run: a prompt (or a skill) that Souz runs on a cron schedule, once \
         at a time, or after a delay, in the person's time zone unless one is named. Runs may \
         use read-only tools unasked unless an envelope allows more; anything else waits for \
         the person's approval. The person approves the schedule first."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }

    fn risk(&self) -> Risk {
        Risk::Write
    }

    async fn plan(
        &self,
        args: &CreateArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<Approved>, ToolError> {
        let access = self.0.access()?;
        let request = args.request()?;
        let owner = access.owner(&ctx.requester).await?;
        let zone = match &request.zone {
            Some(zone) => zone.clone(),
            None => access.default_zone(&owner).await?,
        };
        let checked = access
            .schedules
            .check_new(request, &zone)
            .map_err(tool_error)?;
        let plan =
            Plan::new(create_summary(&checked, ctx.language)).target(CallTarget::Untrusted {
                reason: ALWAYS_ASK.to_owned(),
            });
        Ok(plan.with(Approved {
            owner,
            request: checked.request,
        }))
    }

    async fn run(
        &self,
        _: CreateArgs,
        approved: Approved,
        _: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let access = self.0.access()?;
        let zone = approved.request.zone.clone().unwrap_or_default();
        let schedule = access
            .schedules
            .create(&approved.owner, approved.request, &zone)
            .await
            .map_err(tool_error)?;
        Ok(ToolOutput::json(schedule))
    }
}

/// The approval's one line: what runs, when (the next fire in the schedule's zone), and what it
/// may do unasked.
pub(crate) fn create_summary(checked: &CheckedSchedule, language: Language) -> String {
    let request = &checked.request;
    let name = request.name.trim();
    let what = match &request.action {
        ScheduleAction::Prompt { prompt, .. } => localized!(
            language,
            "prompt \"{}\"",
            "запрос «{}»",
            crate::redact::one_line(prompt, SHOWN_PROMPT)
        ),
        ScheduleAction::Skill { skill, .. } => {
            localized!(language, "skill {}", "навык {}", skill)
        }
    };
    let zone = checked.spec.zone_name();
    let next = fire_time(checked.next_fire, &checked.spec, language);
    let when = match (checked.spec.describe(), language) {
        (Some(cron), Language::En) => format!("{cron} {zone} (next: {next})"),
        // croner describes in English only: Russian shows the expression itself.
        (Some(_), Language::Ru) => format!(
            "по расписанию «{}» {zone} (следующий: {next})",
            checked.spec.text()
        ),
        (None, Language::En) => format!("once, {next} {zone}"),
        (None, Language::Ru) => format!("один раз, {next} {zone}"),
    };
    localized!(
        language,
        "Create schedule '{name}' ({what}): {when}; may without asking: {}",
        "Создать расписание «{name}» ({what}): {when}; без вопросов можно: {}",
        envelope_words(request.envelope.as_ref(), language)
    )
}

/// A fire time read in the schedule's zone: "Mon 7 Dec 09:00" ("пн 07.12 09:00").
fn fire_time(fire: DateTime<Utc>, spec: &spec::Spec, language: Language) -> String {
    let local = match spec::parse_zone(spec.zone_name()) {
        Ok(zone) => fire.with_timezone(&zone).naive_local(),
        Err(_) => fire.naive_utc(),
    };
    match language {
        Language::En => local.format("%a %-d %b %H:%M").to_string(),
        Language::Ru => local.format("%d.%m.%Y %H:%M").to_string(),
    }
}

/// What an envelope lets runs do unasked, in words.
fn envelope_words(envelope: Option<&ScheduleEnvelope>, language: Language) -> String {
    let empty = ScheduleEnvelope::default();
    let envelope = envelope.unwrap_or(&empty);
    let mut parts = vec![localized!(
        language,
        "read-only tools",
        "инструменты только для чтения"
    )];
    let lists = [
        (
            &envelope.tools,
            localized!(language, "tools", "инструменты"),
        ),
        (&envelope.folders, localized!(language, "folders", "папки")),
        (&envelope.hosts, localized!(language, "hosts", "сайты")),
    ];
    for (items, label) in lists {
        if !items.is_empty() {
            parts.push(format!("{label} {}", items.join(", ")));
        }
    }
    parts.join("; ")
}

/// Arguments of `ListSchedules` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListArgs {}

struct ListSchedules(ScheduleTools);

impl Tool for ListSchedules {
    type Args = ListArgs;
    type Prepared = ();

    fn name(&self) -> &'static str {
        "ListSchedules"
    }

    fn description(&self) -> &'static str {
        "List the person's scheduled runs: id, name, when (cron or one-shot, time zone), what \
         runs, what runs may do unasked, whether paused, and the next fire time."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    async fn plan(&self, _: &ListArgs, ctx: &ToolContext) -> Result<Planned<()>, ToolError> {
        self.0.access()?;
        Ok(Plan::new(localized!(
            ctx.language,
            "List schedules",
            "Показать расписания"
        ))
        .ready())
    }

    async fn run(&self, _: ListArgs, (): (), ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let access = self.0.access()?;
        let owner = access.owner(&ctx.requester).await?;
        let items = access.schedules.list(&owner).await.map_err(tool_error)?;
        Ok(ToolOutput::json(ScheduleList { items }))
    }
}

/// Arguments of `DeleteSchedule`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteArgs {
    /// The schedule's id (from `ListSchedules`).
    pub id: String,
}

struct DeleteSchedule(ScheduleTools);

impl Tool for DeleteSchedule {
    type Args = DeleteArgs;
    type Prepared = String;

    fn name(&self) -> &'static str {
        "DeleteSchedule"
    }

    fn description(&self) -> &'static str {
        "Delete one of the person's scheduled runs by its id (from ListSchedules), with its run \
         history; its chat stays. The person approves it first."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }

    fn risk(&self) -> Risk {
        Risk::Delete
    }

    async fn plan(
        &self,
        args: &DeleteArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<String>, ToolError> {
        let access = self.0.access()?;
        let owner = access.owner(&ctx.requester).await?;
        let schedule: Schedule = access
            .schedules
            .get(&owner, args.id.trim())
            .await
            .map_err(tool_error)?;
        Ok(Plan::new(localized!(
            ctx.language,
            "Delete schedule '{}' ({}, {})",
            "Удалить расписание «{}» ({}, {})",
            schedule.name,
            schedule.spec,
            schedule.zone
        ))
        .with(owner))
    }

    async fn run(
        &self,
        args: DeleteArgs,
        owner: String,
        _: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let access = self.0.access()?;
        let id = args.id.trim();
        access
            .schedules
            .delete(&owner, id)
            .await
            .map_err(tool_error)?;
        Ok(ToolOutput::text(format!("Deleted schedule {id}.")))
    }
}

#[cfg(test)]
mod tests;
