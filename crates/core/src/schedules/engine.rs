//! The scheduler loop: one task that sleeps on the [`Clock`] until the earliest next fire of
//! all enabled schedules (or until a change or shutdown wakes it), decides what is due and
//! fires it.
//!
//! Invariants:
//! - One timer for any number of schedules: the next fires are kept in an ordered in-memory
//!   index ([`Index`]); a change to a schedule ([`Engine::reload`]) updates its entry and
//!   wakes the loop, which sleeps again until the new earliest fire.
//! - Deciding a schedule's due occurrences is one write transaction: it reads where deciding
//!   got to (`handled_until`), applies the missed policy ([`occurrences::due`]), claims every
//!   occurrence it keeps (the UNIQUE row makes a claim exactly-once across processes sharing
//!   the database), and moves `handled_until` to now. Two engines on one file fire each
//!   occurrence once.
//! - Runs of one schedule never overlap: an occurrence due while a run goes is claimed as
//!   `skipped` (overlap `skip`) or waits as `claimed` (overlap `queue_one`, at most one
//!   waiting); whoever ends a run starts the next waiting one. Missed occurrences a catch-up
//!   policy keeps always wait their turn.
//! - Runs are tasks of the runtime's `TaskTracker`, and the loop stops on the shutdown token.
//!
//! A run left going by a process that died is ended when an engine starts, from its chat
//! execution's outcome (the chat's recovery fails that execution first) — unless the execution
//! is parked on an approval (see [`super::firing`]): such a run outlives the restart, and the
//! engine follows it to its end.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, SubsecRound, Utc};
use souz_protocol::RuntimeEvent;
use souz_protocol::language::Language;
use souz_protocol::schedules::{OverlapPolicy, RunState, ScheduleRun};
use tokio::sync::{Notify, watch};

use super::clock::SharedClock;
use super::firing::{FiringRun, RunEnd, SharedFiring};
use super::next_fires;
use super::occurrences;
use super::reasons::{RunReason, SharedLanguage};
use super::spec::Spec;
use super::store::{self as rows, StoredSchedule};
use crate::bus::EventBus;
use crate::store::{Store, StoreError};
use crate::tasks::Tasks;

/// The next fire of every enabled schedule, ordered.
#[derive(Debug, Default)]
struct Index {
    by_time: BTreeSet<(DateTime<Utc>, String)>,
    of: HashMap<String, DateTime<Utc>>,
}

impl Index {
    fn set(&mut self, id: &str, next: Option<DateTime<Utc>>) {
        if let Some(previous) = self.of.remove(id) {
            self.by_time.remove(&(previous, id.to_owned()));
        }
        if let Some(next) = next {
            self.of.insert(id.to_owned(), next);
            self.by_time.insert((next, id.to_owned()));
        }
    }

    fn earliest(&self) -> Option<DateTime<Utc>> {
        self.by_time.first().map(|(at, _)| *at)
    }

    fn due(&self, now: DateTime<Utc>) -> Vec<String> {
        self.by_time
            .iter()
            .take_while(|(at, _)| *at <= now)
            .map(|(_, id)| id.clone())
            .collect()
    }
}

/// Where the engine got to, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// The clock time of the last wake-up whose due occurrences were all decided.
    pub decided_until: DateTime<Utc>,
    /// Runs this engine has going.
    pub running: usize,
}

/// What an engine is made of.
pub(crate) struct EngineParts {
    /// The database.
    pub store: Store,
    /// The clock it reads and sleeps on.
    pub clock: SharedClock,
    /// What fires an occurrence.
    pub firing: SharedFiring,
    /// The runtime's tasks (the loop and every run, which watch its stop themselves).
    pub tasks: Tasks,
    /// Where `schedules.changed` and `schedule.run.ended` go.
    pub events: EventBus,
    /// The language its own reasons are written in ([`reasons`]).
    pub language: SharedLanguage,
}

struct Inner {
    store: Store,
    clock: SharedClock,
    firing: SharedFiring,
    tasks: Tasks,
    events: EventBus,
    language: SharedLanguage,
    /// This engine's id in `schedule_runs.claimed_by`.
    owner: String,
    index: Mutex<Index>,
    changed: Notify,
    progress: watch::Sender<Progress>,
}

/// The scheduler. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// An engine; nothing runs until [`Engine::start`].
    pub(crate) fn new(parts: EngineParts) -> Self {
        let now = parts.clock.now();
        Self {
            inner: Arc::new(Inner {
                store: parts.store,
                firing: parts.firing,
                tasks: parts.tasks,
                events: parts.events,
                language: parts.language,
                owner: uuid::Uuid::new_v4().to_string(),
                index: Mutex::new(Index::default()),
                changed: Notify::new(),
                progress: watch::Sender::new(Progress {
                    decided_until: now - chrono::Duration::seconds(1),
                    running: 0,
                }),
                clock: parts.clock,
            }),
        }
    }

    /// The clock it runs on.
    pub(crate) fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Announces that schedules changed (their next fires among them).
    pub(crate) async fn announce_change(&self) {
        let published = self
            .inner
            .events
            .publish_with(|_| Ok::<_, StoreError>(((), vec![RuntimeEvent::SchedulesChanged {}])))
            .await;
        if let Err(error) = published {
            tracing::warn!(%error, "could not announce a change of schedules");
        }
    }

    /// Ends the runs a process that died left going ([`rows::end_orphaned_runs`]) and starts
    /// what waited behind them, loads every enabled schedule into the index and spawns the loop.
    pub(crate) async fn start(&self) -> Result<(), StoreError> {
        let (owner, now) = (self.inner.owner.clone(), self.inner.clock.now());
        let stopped = RunReason::Stopped.text((self.inner.language)());
        // Runs parked on an approval outlived the process that started them: follow them.
        // Read before the orphans are ended, so a parked run whose approval is decided in
        // between is followed (and ended from its execution) rather than missed by both.
        let parked = self.inner.store.read(rows::parked_runs).await?;
        let started = self
            .inner
            .store
            .write(move |tx| {
                let mut started = Vec::new();
                for schedule_id in rows::end_orphaned_runs(tx, now, stopped)? {
                    if let Some((run_id, fire_at)) =
                        rows::start_next(tx, &schedule_id, &owner, now)?
                    {
                        started.push((schedule_id, run_id, fire_at));
                    }
                }
                Ok::<_, StoreError>(started)
            })
            .await?;
        // Each schedule's next fire, from the cache when this build's rules computed it
        // ([`next_fires`]); only (id, fire) stays, never every schedule's whole row at once.
        let rules = next_fires::rules();
        let (pending, source) = self
            .inner
            .store
            .write(move |tx| next_fires::load(tx, &rules))
            .await?;
        if source == next_fires::Source::Recomputed && !pending.is_empty() {
            tracing::info!(
                schedules = pending.len(),
                "next fires recomputed under this build's cron and time-zone rules"
            );
        }
        {
            let mut index = self.lock_index();
            for (id, next) in pending {
                index.set(&id, Some(next));
            }
        }
        for (schedule_id, run_id, fire_at) in started {
            if let Some(stored) = self.load(&schedule_id).await? {
                self.launch(stored, run_id, fire_at);
            }
        }
        for row in parked {
            if let Some(stored) = self.load(&row.schedule_id).await? {
                let follow = (row.chat_id, row.execution_id);
                self.launch_from(stored, row.run_id, row.fire_at, Some(follow));
            }
        }
        self.inner.tasks.spawn_to_end(self.clone().run());
        Ok(())
    }

    /// The schedule `id`, as stored.
    async fn load(&self, id: &str) -> Result<Option<StoredSchedule>, StoreError> {
        let key = id.to_owned();
        self.inner
            .store
            .read(move |c| rows::load_schedule(c, None, &key))
            .await
    }

    /// Reads the schedule `id` again (after a change, or its deletion), wakes the loop and
    /// announces the change.
    pub(crate) async fn reload(&self, id: &str) -> Result<(), StoreError> {
        let key = id.to_owned();
        let stored = self
            .inner
            .store
            .read(move |c| rows::load_schedule(c, None, &key))
            .await?;
        // The row's cached next fire is current: every write of a schedule keeps it.
        let next = stored
            .filter(|stored| stored.schedule.enabled)
            .and_then(|stored| stored.schedule.next_fire);
        self.lock_index().set(id, next);
        self.inner.changed.notify_one();
        self.announce_change().await;
        Ok(())
    }

    /// Wakes the loop to look at the clock again (tests: after moving a manual clock by less
    /// than the next fire, which wakes nothing on its own).
    #[cfg(test)]
    pub(crate) fn wake(&self) {
        self.inner.changed.notify_one();
    }

    /// Follows where the engine got to.
    #[cfg(test)]
    pub(crate) fn progress(&self) -> watch::Receiver<Progress> {
        self.inner.progress.subscribe()
    }

    /// Claims the occurrence "now" of a schedule (a person's "run now") under its overlap
    /// policy, and starts it if nothing of it goes; the run as claimed.
    pub(crate) async fn run_now(&self, stored: &StoredSchedule) -> Result<ScheduleRun, StoreError> {
        let now = self.inner.clock.now().trunc_subsecs(3);
        let (id, overlap, owner) = (
            stored.schedule.id.clone(),
            stored.schedule.overlap,
            self.inner.owner.clone(),
        );
        let language = (self.inner.language)();
        let (run_id, started) = self
            .inner
            .store
            .write(move |tx| {
                let claim = rows::Claim {
                    schedule_id: &id,
                    fire_at: now,
                    by: &owner,
                    at: now,
                };
                let run_id = claim_on_time(tx, &claim, overlap, language)?;
                let started = rows::start_next(tx, &id, &owner, now)?;
                Ok::<_, StoreError>((run_id, started))
            })
            .await?;
        if let Some((started_id, fire_at)) = started {
            self.launch(stored.clone(), started_id, fire_at);
        }
        let run = match run_id {
            Some(run_id) => {
                self.inner
                    .store
                    .read(move |c| rows::load_run(c, run_id))
                    .await?
            }
            None => None,
        };
        run.ok_or_else(|| StoreError::Corrupt("the claimed run is missing".to_owned()))
    }

    fn lock_index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.inner
            .index
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    async fn run(self) {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let earliest = self.lock_index().earliest();
            let now = self.inner.clock.now();
            if earliest.is_none_or(|at| at > now) {
                self.inner
                    .progress
                    .send_modify(|progress| progress.decided_until = now);
                let sleep = match earliest {
                    Some(at) => self.inner.clock.sleep_until(at),
                    None => Box::pin(std::future::pending()),
                };
                tokio::select! {
                    () = self.inner.tasks.stopping().cancelled() => return,
                    () = changed => continue,
                    () = sleep => continue,
                }
            }
            let due = self.lock_index().due(now);
            for id in due {
                if self.inner.tasks.stopping().is_cancelled() {
                    return;
                }
                if let Err(error) = self.decide(&id, now).await {
                    tracing::warn!(%error, schedule = %id, "could not decide a schedule's occurrences");
                    // Not retried in a tight loop: it is looked at again after its next fire.
                    let mut index = self.lock_index();
                    if index.of.get(&id).is_some_and(|next| *next <= now) {
                        index.set(&id, None);
                    }
                }
            }
        }
    }

    /// Decides the due occurrences of schedule `id` at `now` in one transaction, then launches
    /// the run it started.
    async fn decide(&self, id: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        let (key, owner) = (id.to_owned(), self.inner.owner.clone());
        let language = (self.inner.language)();
        let decided = self
            .inner
            .store
            .write(move |tx| decide_in(tx, &key, &owner, now, language))
            .await?;
        let Some(Decided {
            stored,
            next,
            start,
        }) = decided
        else {
            self.lock_index().set(id, None);
            return Ok(());
        };
        self.lock_index().set(id, next);
        if let Some((run_id, fire_at)) = start {
            self.launch(stored, run_id, fire_at);
        }
        self.announce_change().await;
        Ok(())
    }

    /// Runs `run_id` to its end, then every run of the schedule that waited for it.
    fn launch(&self, stored: StoredSchedule, run_id: i64, fire_at: DateTime<Utc>) {
        self.launch_from(stored, run_id, fire_at, None);
    }

    /// [`Engine::launch`]; with `follow` (a chat and execution), the first run is one an earlier
    /// process started and parked, followed to its end instead of fired.
    fn launch_from(
        &self,
        stored: StoredSchedule,
        run_id: i64,
        fire_at: DateTime<Utc>,
        mut follow: Option<(String, String)>,
    ) {
        let this = self.clone();
        self.inner
            .progress
            .send_modify(|progress| progress.running += 1);
        self.inner.tasks.spawn_to_end(async move {
            let mut current = Some((run_id, fire_at));
            while let Some((run_id, fire_at)) = current.take() {
                let run = FiringRun {
                    schedule: stored.clone(),
                    run_id,
                    fire_at,
                };
                let going = match follow.take() {
                    Some((chat_id, execution_id)) => {
                        this.inner.firing.follow(run, chat_id, execution_id)
                    }
                    None => this.inner.firing.fire(run),
                };
                // Stopping: the run's end is not known here. The next start ends it from its
                // execution, or follows it on when it is parked on an approval.
                let end = tokio::select! {
                    end = going => end,
                    () = this.inner.tasks.stopping().cancelled() => break,
                };
                match this.finish(&stored, run_id, end).await {
                    Ok(next) => current = next,
                    Err(error) => {
                        tracing::warn!(%error, run = run_id, "could not end a scheduled run")
                    }
                }
            }
            this.inner
                .progress
                .send_modify(|progress| progress.running = progress.running.saturating_sub(1));
        });
    }

    /// Records the end of a run (and announces it, in the same transaction) and starts the
    /// next waiting one of the schedule, if any.
    async fn finish(
        &self,
        stored: &StoredSchedule,
        run_id: i64,
        end: RunEnd,
    ) -> Result<Option<(i64, DateTime<Utc>)>, StoreError> {
        let (id, name, owner, at) = (
            stored.schedule.id.clone(),
            stored.schedule.name.clone(),
            self.inner.owner.clone(),
            self.inner.clock.now(),
        );
        let (next, _) = self
            .inner
            .events
            .publish_with(move |tx| {
                let ended = rows::end_run(tx, run_id, end.state, end.reason.as_deref(), at)?;
                let event = ended.map(|chat_id| RuntimeEvent::ScheduleRunEnded {
                    schedule_id: id.clone(),
                    schedule_name: name,
                    run_id,
                    state: end.state,
                    reason: end.reason,
                    chat_id,
                });
                let next = rows::start_next(tx, &id, &owner, at)?;
                Ok::<_, StoreError>((next, event.into_iter().collect()))
            })
            .await?;
        Ok(next)
    }
}

/// What deciding a schedule's occurrences produced.
struct Decided {
    stored: StoredSchedule,
    next: Option<DateTime<Utc>>,
    start: Option<(i64, DateTime<Utc>)>,
}

fn decide_in(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    owner: &str,
    now: DateTime<Utc>,
    language: Language,
) -> Result<Option<Decided>, StoreError> {
    let Some(stored) = rows::load_schedule(tx, None, id)? else {
        return Ok(None);
    };
    if !stored.schedule.enabled {
        return Ok(None);
    }
    let schedule = &stored.schedule;
    let spec = Spec::parse(&schedule.spec, &schedule.zone, stored.handled_until)
        .map_err(|error| StoreError::Corrupt(format!("schedule {id}: {error}")))?;
    let due = occurrences::due(&spec, schedule.missed, stored.handled_until, now);
    let claim = |fire_at| rows::Claim {
        schedule_id: id,
        fire_at,
        by: owner,
        at: now,
    };
    for fire_at in &due.missed {
        rows::claim(tx, &claim(*fire_at), RunState::Claimed, None)?;
    }
    for fire_at in &due.on_time {
        claim_on_time(tx, &claim(*fire_at), schedule.overlap, language)?;
    }
    // `handled_until` never moves backwards (a clock stepped back decides nothing twice), and
    // the cached next fire follows it ([`next_fires`]).
    let until = stored.handled_until.max(now);
    let next = spec.next_fire(until);
    rows::set_handled(tx, id, until, next)?;
    let start = rows::start_next(tx, id, owner, now)?;
    Ok(Some(Decided {
        next,
        start,
        stored,
    }))
}

/// Claims an on-time occurrence under the overlap policy: waiting when nothing goes (or one may
/// queue), skipped otherwise. The run's id, or `None` when it was claimed already.
fn claim_on_time(
    tx: &rusqlite::Connection,
    claim: &rows::Claim<'_>,
    overlap: OverlapPolicy,
    language: Language,
) -> Result<Option<i64>, StoreError> {
    let (going, waiting) = rows::open_runs(tx, claim.schedule_id)?;
    let free = going == 0 && waiting == 0;
    let queue = overlap == OverlapPolicy::QueueOne && waiting == 0;
    if free || queue {
        rows::claim(tx, claim, RunState::Claimed, None)
    } else {
        rows::claim(
            tx,
            claim,
            RunState::Skipped,
            Some(RunReason::StillGoing.text(language)),
        )
    }
}

#[cfg(test)]
mod tests;
