//! Scheduled runs (issue 40): schedules stored in SQLite that fire a prompt or a skill on a
//! cron expression or at one instant, in an IANA time zone, exactly once per occurrence even
//! with two daemons on one home.
//!
//! - [`spec`]: what a schedule fires on, with its DST rules.
//! - [`clock`]: the injectable clock the engine reads and sleeps on.
//! - [`store`]: the `schedules` and `schedule_runs` rows; claiming is an insert.
//! - [`occurrences`]: which occurrences are due after a gap, under the missed policy.
//! - [`next_fires`]: the cached next fire of every schedule, and when it is trusted.
//! - [`engine`]: the one-timer loop that claims and fires, and keeps runs from overlapping.
//! - [`firing`]: a fire as a chat execution in the schedule's own chat, and the seam where
//!   durable parking of approvals goes.
//! - [`tools`]: `CreateSchedule`, `ListSchedules` and `DeleteSchedule`, catalog tools for the
//!   agents and MCP clients, behind the gate.
//!
//! This module's [`Schedules`] is the service the runtime facade calls: it validates and
//! stores, and tells the engine about every change. Invariant: nothing is stored from a spec
//! or zone that does not parse, or a spec that never fires.

pub(crate) mod clock;
pub(crate) mod engine;
pub(crate) mod firing;
pub(crate) mod next_fires;
pub(crate) mod occurrences;
pub(crate) mod reasons;
pub(crate) mod spec;
pub(crate) mod store;
pub(crate) mod tools;

use chrono::{DateTime, SubsecRound, Utc};
use souz_protocol::schedules::{
    MissedPolicy, NewSchedule, Schedule, ScheduleAction, SchedulePatch, SchedulePreview,
    ScheduleRun, ScheduleRunList,
};

use self::engine::Engine;
use self::spec::{Spec, SpecError};
use self::store::{self as rows, StoredSchedule};
use crate::store::{Store, StoreError};

/// How many fire times a preview lists.
pub(crate) const PREVIEW_COUNT: usize = 5;
/// The most runs a history lists.
pub(crate) const MAX_LISTED_RUNS: usize = 500;
/// The longest schedule name, in characters.
const MAX_NAME: usize = 200;

/// Why a schedule operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// The spec or zone does not parse, or never fires.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// Another field is invalid.
    #[error("{0}")]
    Invalid(String),
    /// No such schedule for this person.
    #[error("Schedule not found.")]
    NotFound,
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A new schedule that passed [`Schedules::check_new`]: the request to store (spec and zone
/// resolved), its parsed spec, and its first fire.
#[derive(Debug, Clone)]
pub(crate) struct CheckedSchedule {
    /// What to pass to [`Schedules::create`].
    pub request: NewSchedule,
    /// Its spec, parsed in its zone.
    pub spec: Spec,
    /// When it fires first.
    pub next_fire: DateTime<Utc>,
}

/// The schedule service. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Schedules {
    store: Store,
    engine: Engine,
}

impl Schedules {
    /// The service over `store`, telling `engine` about changes.
    pub(crate) fn new(store: Store, engine: Engine) -> Self {
        Self { store, engine }
    }

    /// The engine.
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    fn now(&self) -> DateTime<Utc> {
        self.engine.clock().now().trunc_subsecs(3)
    }

    /// The next fires of `spec` read in `zone`.
    pub(crate) fn preview(&self, spec: &str, zone: &str) -> Result<SchedulePreview, ScheduleError> {
        let now = self.now();
        let parsed = Spec::parse_new(spec, zone, now)?;
        Ok(SchedulePreview {
            spec: parsed.text().to_owned(),
            zone: parsed.zone_name().to_owned(),
            fires: parsed.preview(now, PREVIEW_COUNT),
        })
    }

    /// Checks `request` as [`Schedules::create`] would (`default_zone` when it names none) and
    /// resolves it: a relative time becomes its instant, the zone is named. Stores nothing, so
    /// a tool can show what it will create before anyone approves it.
    pub(crate) fn check_new(
        &self,
        request: NewSchedule,
        default_zone: &str,
    ) -> Result<CheckedSchedule, ScheduleError> {
        check_new_at(request, default_zone, self.now())
    }

    /// Creates a schedule for `owner`; `default_zone` when the request names none.
    pub(crate) async fn create(
        &self,
        owner: &str,
        request: NewSchedule,
        default_zone: &str,
    ) -> Result<Schedule, ScheduleError> {
        let now = self.now();
        let CheckedSchedule {
            request,
            spec,
            next_fire,
        } = check_new_at(request, default_zone, now)?;
        let enabled = request.enabled.unwrap_or(true);
        let stored = StoredSchedule {
            owner: owner.to_owned(),
            handled_until: now,
            schedule: Schedule {
                id: uuid::Uuid::now_v7().to_string(),
                name: request.name.trim().to_owned(),
                spec: spec.text().to_owned(),
                zone: spec.zone_name().to_owned(),
                action: request.action,
                missed: request.missed.unwrap_or_default(),
                overlap: request.overlap.unwrap_or_default(),
                envelope: request.envelope.unwrap_or_default(),
                enabled,
                chat_id: None,
                next_fire: enabled.then_some(next_fire),
                created_at: now,
                updated_at: now,
            },
        };
        let row = stored.clone();
        self.store
            .write(move |tx| rows::insert_schedule(tx, &row))
            .await?;
        self.engine.reload(&stored.schedule.id).await?;
        Ok(stored.schedule)
    }

    /// The owner's schedules.
    pub(crate) async fn list(&self, owner: &str) -> Result<Vec<Schedule>, ScheduleError> {
        let owner = owner.to_owned();
        let all = self
            .store
            .read(move |c| rows::list_schedules(c, Some(&owner)))
            .await?;
        Ok(all.into_iter().map(|stored| stored.schedule).collect())
    }

    async fn load(&self, owner: &str, id: &str) -> Result<StoredSchedule, ScheduleError> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.store
            .read(move |c| rows::load_schedule(c, Some(&owner), &id))
            .await?
            .ok_or(ScheduleError::NotFound)
    }

    /// One schedule.
    pub(crate) async fn get(&self, owner: &str, id: &str) -> Result<Schedule, ScheduleError> {
        Ok(self.load(owner, id).await?.schedule)
    }

    /// Changes a schedule; a new spec or zone applies to occurrences after now.
    pub(crate) async fn patch(
        &self,
        owner: &str,
        id: &str,
        patch: SchedulePatch,
    ) -> Result<Schedule, ScheduleError> {
        let mut stored = self.load(owner, id).await?;
        let now = self.now();
        let schedule = &mut stored.schedule;
        if patch.spec.is_some() || patch.zone.is_some() {
            let text = patch.spec.as_deref().unwrap_or(&schedule.spec);
            let zone = patch.zone.as_deref().unwrap_or(&schedule.zone);
            let spec = Spec::parse_new(text, zone, now)?;
            schedule.spec = spec.text().to_owned();
            schedule.zone = spec.zone_name().to_owned();
            // Occurrences of the old spec not decided yet are not owed under the new one.
            stored.handled_until = stored.handled_until.max(now);
        }
        if let Some(name) = patch.name {
            schedule.name = name.trim().to_owned();
        }
        if let Some(action) = patch.action {
            schedule.action = action;
        }
        if let Some(missed) = patch.missed {
            schedule.missed = missed;
        }
        if let Some(overlap) = patch.overlap {
            schedule.overlap = overlap;
        }
        if let Some(envelope) = patch.envelope {
            schedule.envelope = envelope;
        }
        check(&schedule.name, &schedule.action, schedule.missed)?;
        self.save(stored, now).await
    }

    /// Pauses (`false`) or resumes (`true`) a schedule. Resuming does not owe the occurrences
    /// of the pause: they are not missed, they were not wanted.
    pub(crate) async fn set_enabled(
        &self,
        owner: &str,
        id: &str,
        enabled: bool,
    ) -> Result<Schedule, ScheduleError> {
        let mut stored = self.load(owner, id).await?;
        let now = self.now();
        if enabled && !stored.schedule.enabled {
            stored.handled_until = stored.handled_until.max(now);
        }
        stored.schedule.enabled = enabled;
        self.save(stored, now).await
    }

    async fn save(
        &self,
        mut stored: StoredSchedule,
        now: DateTime<Utc>,
    ) -> Result<Schedule, ScheduleError> {
        let schedule = &mut stored.schedule;
        schedule.updated_at = now;
        schedule.next_fire = if schedule.enabled {
            // The first fire not decided yet (the engine's next): the cache's invariant.
            Spec::parse(&schedule.spec, &schedule.zone, now)?.next_fire(stored.handled_until)
        } else {
            None
        };
        let row = stored.clone();
        let found = self
            .store
            .write(move |tx| rows::update_schedule(tx, &row))
            .await?;
        if !found {
            return Err(ScheduleError::NotFound);
        }
        self.engine.reload(&stored.schedule.id).await?;
        Ok(stored.schedule)
    }

    /// Deletes a schedule and its run history (its chat stays).
    pub(crate) async fn delete(&self, owner: &str, id: &str) -> Result<(), ScheduleError> {
        let (key_owner, key) = (owner.to_owned(), id.to_owned());
        let deleted = self
            .store
            .write(move |tx| rows::delete_schedule(tx, &key_owner, &key))
            .await?;
        if !deleted {
            return Err(ScheduleError::NotFound);
        }
        self.engine.reload(id).await?;
        Ok(())
    }

    /// Runs a schedule now, as a fire at the current time with its policies.
    pub(crate) async fn run_now(
        &self,
        owner: &str,
        id: &str,
    ) -> Result<ScheduleRun, ScheduleError> {
        let stored = self.load(owner, id).await?;
        Ok(self.engine.run_now(&stored).await?)
    }

    /// A schedule's runs, newest first.
    pub(crate) async fn runs(
        &self,
        owner: &str,
        id: &str,
        limit: usize,
    ) -> Result<ScheduleRunList, ScheduleError> {
        self.load(owner, id).await?;
        let (key, limit) = (id.to_owned(), limit.clamp(1, MAX_LISTED_RUNS));
        let items = self
            .store
            .read(move |c| rows::list_runs(c, &key, limit))
            .await?;
        Ok(ScheduleRunList { items })
    }
}

/// [`Schedules::check_new`] at `now`.
fn check_new_at(
    mut request: NewSchedule,
    default_zone: &str,
    now: DateTime<Utc>,
) -> Result<CheckedSchedule, ScheduleError> {
    let zone = request.zone.as_deref().unwrap_or(default_zone);
    let spec = Spec::parse_new(&request.spec, zone, now)?;
    check(
        &request.name,
        &request.action,
        request.missed.unwrap_or_default(),
    )?;
    let next_fire = spec
        .next_fire(now)
        .ok_or_else(|| SpecError::NeverFires(request.spec.trim().to_owned()))?;
    request.spec = spec.text().to_owned();
    request.zone = Some(spec.zone_name().to_owned());
    Ok(CheckedSchedule {
        request,
        spec,
        next_fire,
    })
}

/// Checks what a spec does not: the name, the action, the missed policy.
fn check(name: &str, action: &ScheduleAction, missed: MissedPolicy) -> Result<(), ScheduleError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(ScheduleError::Invalid(format!(
            "name must be 1 to {MAX_NAME} characters."
        )));
    }
    match action {
        ScheduleAction::Prompt { prompt, .. } if prompt.trim().is_empty() => {
            return Err(ScheduleError::Invalid("prompt must not be blank.".into()));
        }
        ScheduleAction::Skill { skill, .. } if skill.trim().is_empty() => {
            return Err(ScheduleError::Invalid("skill must not be blank.".into()));
        }
        _ => {}
    }
    if let MissedPolicy::CatchUp { limit } = missed
        && !(1..=occurrences::CATCH_UP_LIMIT).contains(&limit)
    {
        return Err(ScheduleError::Invalid(format!(
            "catch_up limit must be 1 to {}.",
            occurrences::CATCH_UP_LIMIT
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
