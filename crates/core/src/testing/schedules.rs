//! [`ScheduleBench`]: many schedules in a real database and a real engine on a manual clock
//! whose sleeps are counted, for the schedule benchmarks (`benches/schedules.rs`): the cost of
//! computing every next fire, the engine's wake-ups while idle, and its memory.
//!
//! Invariant: nothing here fires anything: the schedules' next fires are hours after the
//! clock's start ([`ScheduleBench::START`]), and a fire would only be recorded as failed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, TimeZone, Utc};
use souz_protocol::schedules::{Schedule, ScheduleAction};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::schedules::clock::{Clock, ManualClock, Sleep};
use crate::schedules::engine::{Engine, EngineParts};
use crate::schedules::firing::{Firing, FiringRun, RunEnd, RunFuture};
use crate::schedules::spec::Spec;
use crate::schedules::store::{self as rows, StoredSchedule};
use crate::store::{Store, StoreError};
use crate::tasks::Tasks;

/// The zones the schedules are spread over.
const ZONES: [&str; 5] = [
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "Europe/Moscow",
    "UTC",
];

/// A manual clock that counts the sleeps asked of it: the engine's loop asks one per wake-up.
struct CountingClock {
    clock: ManualClock,
    sleeps: Arc<AtomicUsize>,
}

impl Clock for CountingClock {
    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Sleep {
        self.sleeps.fetch_add(1, Ordering::SeqCst);
        self.clock.sleep_until(at)
    }
}

/// Fires nothing (no fire is due in a benchmark); one that came would be recorded as failed.
struct NoFiring;

impl Firing for NoFiring {
    fn fire(&self, _run: FiringRun) -> RunFuture {
        Box::pin(async { RunEnd::failed("benchmarks fire nothing") })
    }
}

/// A schedule as the engine reads it: its spec, zone, and where deciding got to.
#[derive(Debug, Clone)]
pub struct LoadedSchedule {
    spec: String,
    zone: String,
    handled_until: DateTime<Utc>,
}

/// A database of schedules and an engine over it on a counting manual clock.
pub struct ScheduleBench {
    store: Store,
    clock: ManualClock,
    sleeps: Arc<AtomicUsize>,
    stop: CancellationToken,
    tracker: TaskTracker,
}

impl ScheduleBench {
    /// Where the clock starts: Sunday 7 June 2026, 00:00 UTC (every schedule's next fire is a
    /// Monday or later, at least ten hours away in every zone used).
    pub fn start() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 7, 0, 0, 0)
            .single()
            .unwrap_or_default()
    }

    /// The spec of the `index`th schedule: weekly, weekday and monthly jobs at spread times.
    fn spec(index: usize) -> String {
        let (minute, hour) = (index % 60, 6 + index % 12);
        match index % 3 {
            0 => format!("{minute} {hour} * * 1"),
            1 => format!("{minute} {hour} * * 1-5"),
            _ => format!("{minute} {hour} 1 * *"),
        }
    }

    /// Stores `count` enabled schedules in the database at `path` (created).
    pub async fn fill(path: &Path, count: usize) -> Result<(), StoreError> {
        let store = Store::open(path).await?;
        let now = Self::start();
        let rows: Vec<StoredSchedule> = (0..count)
            .map(|index| {
                let (spec, zone) = (Self::spec(index), ZONES[index % ZONES.len()]);
                let next_fire = Spec::parse(&spec, zone, now)
                    .ok()
                    .and_then(|parsed| parsed.next_fire(now));
                StoredSchedule {
                    owner: crate::LOCAL_USER.to_owned(),
                    handled_until: now,
                    schedule: Schedule {
                        id: uuid::Uuid::now_v7().to_string(),
                        name: format!("Schedule {index}"),
                        spec,
                        zone: zone.to_owned(),
                        action: ScheduleAction::Prompt {
                            prompt: format!("Summarise folder {index}"),
                            settings: Default::default(),
                        },
                        missed: Default::default(),
                        overlap: Default::default(),
                        envelope: Default::default(),
                        enabled: true,
                        chat_id: None,
                        next_fire,
                        created_at: now,
                        updated_at: now,
                    },
                }
            })
            .collect();
        store
            .write(move |tx| {
                for row in &rows {
                    rows::insert_schedule(tx, row)?;
                }
                // As a daemon that created them leaves them: the cache's rules recorded.
                crate::schedules::next_fires::load(tx, &crate::schedules::next_fires::rules())?;
                Ok::<_, StoreError>(())
            })
            .await?;
        store.close().await
    }

    /// The database at `path` (filled before), with nothing loaded yet.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        Ok(Self {
            store: Store::open(path).await?,
            clock: ManualClock::new(Self::start()),
            sleeps: Arc::new(AtomicUsize::new(0)),
            stop: CancellationToken::new(),
            tracker: TaskTracker::new(),
        })
    }

    /// Every schedule as the engine reads it from the database.
    pub async fn load(&self) -> Result<Vec<LoadedSchedule>, StoreError> {
        let all = self
            .store
            .read(|connection| rows::list_schedules(connection, None))
            .await?;
        Ok(all
            .into_iter()
            .map(|stored| LoadedSchedule {
                spec: stored.schedule.spec,
                zone: stored.schedule.zone,
                handled_until: stored.handled_until,
            })
            .collect())
    }

    /// Computes the next fire of every schedule, as the engine does for each schedule it
    /// (re)loads: parse the spec in its zone, find the first fire after `handled_until`. The
    /// number of schedules that have one.
    pub fn next_fires(schedules: &[LoadedSchedule]) -> usize {
        schedules
            .iter()
            .filter_map(|loaded| {
                Spec::parse(&loaded.spec, &loaded.zone, loaded.handled_until)
                    .ok()?
                    .next_fire(loaded.handled_until)
            })
            .count()
    }

    /// The earliest next fire of `schedules`.
    pub fn earliest_fire(schedules: &[LoadedSchedule]) -> Option<DateTime<Utc>> {
        schedules
            .iter()
            .filter_map(|loaded| {
                Spec::parse(&loaded.spec, &loaded.zone, loaded.handled_until)
                    .ok()?
                    .next_fire(loaded.handled_until)
            })
            .min()
    }

    /// What the clock reads.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Starts an engine over the database (it loads every schedule into its index and spawns
    /// its loop); stopped with [`ScheduleBench::stop`].
    pub async fn start_engine(&self) -> Result<(), StoreError> {
        let engine = Engine::new(EngineParts {
            events: crate::bus::EventBus::new(self.store.clone(), 64),
            store: self.store.clone(),
            clock: Arc::new(CountingClock {
                clock: self.clock.clone(),
                sleeps: Arc::clone(&self.sleeps),
            }),
            firing: Arc::new(NoFiring),
            tasks: Tasks::new(self.tracker.clone(), self.stop.clone()),
            language: crate::schedules::reasons::english(),
        });
        engine.start().await
    }

    /// Forgets under which rules the cached next fires were computed, so that the next engine
    /// start computes all of them again, as the first start after an upgrade does.
    pub async fn forget_rules(&self) -> Result<(), StoreError> {
        self.store
            .write(|tx| crate::schedules::next_fires::forget_rules(tx))
            .await
    }

    /// How many times the engines' loops went to sleep so far (one per wake-up, and one when
    /// each started).
    pub fn sleeps(&self) -> usize {
        self.sleeps.load(Ordering::SeqCst)
    }

    /// Moves the clock forward by `by`, waking the sleeps whose instant came.
    pub fn advance(&self, by: chrono::Duration) {
        self.clock.advance(by);
    }

    /// Stops the engines and waits for their loops.
    pub async fn stop(self) -> Result<(), StoreError> {
        self.stop.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        self.store.close().await
    }
}
