use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, TimeZone, Utc};
use souz_protocol::chat::ChatSettings;
use souz_protocol::schedules::{
    MissedPolicy, NewSchedule, OverlapPolicy, RunState, ScheduleAction,
};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::*;
use crate::schedules::Schedules;
use crate::schedules::clock::{Clock, ManualClock};
use crate::schedules::firing::{Firing, RunFuture};

/// Counts fires per (schedule, occurrence); each run waits for a permit when `gate` is set.
#[derive(Default)]
struct CountingFiring {
    fired: Mutex<HashMap<(String, DateTime<Utc>), u32>>,
    gate: Option<Arc<Semaphore>>,
}

impl Firing for CountingFiring {
    fn fire(&self, run: FiringRun) -> RunFuture {
        *self
            .fired
            .lock()
            .unwrap()
            .entry((run.schedule_id().to_owned(), run.fire_at))
            .or_default() += 1;
        let gate = self.gate.clone();
        Box::pin(async move {
            if let Some(gate) = gate {
                gate.acquire().await.unwrap().forget();
            }
            RunEnd::ok()
        })
    }
}

struct Daemon {
    /// The person's language is Russian (else English).
    russian: Arc<AtomicBool>,
    schedules: Schedules,
    clock: ManualClock,
    firing: Arc<CountingFiring>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

fn start_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 8, 0, 0).unwrap()
}

async fn daemon(path: &std::path::Path, firing: CountingFiring) -> Daemon {
    let store = Store::open(path).await.unwrap();
    let clock = ManualClock::new(start_time());
    let firing = Arc::new(firing);
    let (tasks, shutdown) = (TaskTracker::new(), CancellationToken::new());
    let russian = Arc::new(AtomicBool::new(false));
    let speaks = russian.clone();
    let engine = Engine::new(EngineParts {
        events: crate::bus::EventBus::new(store.clone(), 64),
        store: store.clone(),
        clock: Arc::new(clock.clone()),
        firing: firing.clone(),
        tasks: crate::tasks::Tasks::new(tasks.clone(), shutdown.clone()),
        language: Arc::new(move || {
            if speaks.load(Ordering::Relaxed) {
                Language::Ru
            } else {
                Language::En
            }
        }),
    });
    Daemon {
        russian,
        schedules: Schedules::new(store, engine),
        clock,
        firing,
        tasks,
        shutdown,
    }
}

fn prompt_schedule(name: &str, spec: &str) -> NewSchedule {
    NewSchedule {
        name: name.to_owned(),
        spec: spec.to_owned(),
        zone: Some("UTC".to_owned()),
        action: ScheduleAction::Prompt {
            prompt: "Summarise my inbox folder.".to_owned(),
            settings: ChatSettings::default(),
        },
        missed: None,
        overlap: None,
        envelope: None,
        enabled: None,
    }
}

impl Daemon {
    /// Waits until the engine decided everything due at the clock's time and no run goes.
    async fn settle(&self) {
        let until = self.clock.now();
        self.schedules.engine().wake();
        let mut progress = self.schedules.engine().progress();
        tokio::time::timeout(
            StdDuration::from_secs(20),
            progress.wait_for(|p| p.decided_until >= until && p.running == 0),
        )
        .await
        .unwrap_or_else(|_| {
            let now = *self.schedules.engine().progress().borrow();
            panic!("the engine did not settle: {now:?} until {until}")
        })
        .unwrap();
    }

    /// Waits until the engine decided everything due at the clock's time.
    async fn decided(&self) {
        let until = self.clock.now();
        self.schedules.engine().wake();
        let mut progress = self.schedules.engine().progress();
        tokio::time::timeout(
            StdDuration::from_secs(20),
            progress.wait_for(|p| p.decided_until >= until),
        )
        .await
        .expect("the engine did not decide")
        .unwrap();
    }

    fn fires(&self) -> HashMap<(String, DateTime<Utc>), u32> {
        self.firing.fired.lock().unwrap().clone()
    }

    async fn runs(&self, id: &str) -> Vec<(DateTime<Utc>, RunState)> {
        let mut runs: Vec<_> = self
            .schedules
            .runs(crate::LOCAL_USER, id, 500)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|run| (run.fire_at, run.state))
            .collect();
        runs.reverse();
        runs
    }

    /// The reasons of a schedule's runs, oldest first.
    async fn reasons(&self, id: &str) -> Vec<Option<String>> {
        let mut reasons: Vec<_> = self
            .schedules
            .runs(crate::LOCAL_USER, id, 500)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|run| run.reason)
            .collect();
        reasons.reverse();
        reasons
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.tasks.close();
        tokio::time::timeout(StdDuration::from_secs(10), self.tasks.wait())
            .await
            .expect("the engine did not stop at shutdown");
    }
}

#[tokio::test]
async fn a_due_occurrence_fires_once_and_the_run_ends_ok() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(&dir.path().join("souz.db"), CountingFiring::default()).await;
    daemon.schedules.engine().start().await.unwrap();
    let created = daemon
        .schedules
        .create(
            crate::LOCAL_USER,
            prompt_schedule("Inbox", "*/5 * * * *"),
            "UTC",
        )
        .await
        .unwrap();
    assert_eq!(created.next_fire, Some(start_time() + Duration::minutes(5)));
    daemon.clock.advance(Duration::minutes(4));
    daemon.settle().await;
    assert!(daemon.fires().is_empty(), "nothing is due before 08:05");
    daemon.clock.advance(Duration::minutes(1));
    daemon.settle().await;
    let fire = start_time() + Duration::minutes(5);
    assert_eq!(
        daemon.fires(),
        HashMap::from([((created.id.clone(), fire), 1)])
    );
    assert_eq!(daemon.runs(&created.id).await, [(fire, RunState::Ok)]);
    let again = daemon
        .schedules
        .get(crate::LOCAL_USER, &created.id)
        .await
        .unwrap();
    assert_eq!(again.next_fire, Some(start_time() + Duration::minutes(10)));
    daemon.stop().await;
}

/// Two daemons on one database file, each with its own connection and clock, fire 10
/// per-second schedules for 100 seconds: 1,000 occurrences, each fired exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_on_one_database_fire_each_of_1000_occurrences_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    let first = daemon(&path, CountingFiring::default()).await;
    let second = daemon(&path, CountingFiring::default()).await;
    let mut ids = Vec::new();
    for index in 0..10 {
        let new = prompt_schedule(&format!("every second {index}"), "* * * * * *");
        ids.push(
            first
                .schedules
                .create(crate::LOCAL_USER, new, "UTC")
                .await
                .unwrap()
                .id,
        );
    }
    first.schedules.engine().start().await.unwrap();
    second.schedules.engine().start().await.unwrap();
    for _ in 0..100 {
        first.clock.advance(Duration::seconds(1));
        second.clock.advance(Duration::seconds(1));
        first.settle().await;
        second.settle().await;
    }
    let mut total: HashMap<(String, DateTime<Utc>), u32> = first.fires();
    for (occurrence, count) in second.fires() {
        *total.entry(occurrence).or_default() += count;
    }
    let duplicates = total.values().filter(|count| **count > 1).count();
    assert_eq!(duplicates, 0, "occurrences fired twice");
    assert_eq!(total.len(), 1_000);
    for id in &ids {
        let runs = first.runs(id).await;
        assert_eq!(runs.len(), 100);
        assert!(
            runs.iter().all(|(_, state)| *state == RunState::Ok),
            "{runs:?}"
        );
    }
    first.stop().await;
    second.stop().await;
}

/// The machine sleeps three days between two daily 09:00 fires; each policy decides what runs.
#[tokio::test]
async fn missed_policies_after_a_three_day_sleep() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(&dir.path().join("souz.db"), CountingFiring::default()).await;
    daemon.schedules.engine().start().await.unwrap();
    let mut ids = Vec::new();
    for (name, missed) in [
        ("skip", MissedPolicy::Skip),
        ("run once", MissedPolicy::RunOnce),
        ("catch up 2", MissedPolicy::CatchUp { limit: 2 }),
    ] {
        let mut new = prompt_schedule(name, "0 9 * * *");
        new.missed = Some(missed);
        new.overlap = Some(OverlapPolicy::Skip);
        ids.push(
            daemon
                .schedules
                .create(crate::LOCAL_USER, new, "UTC")
                .await
                .unwrap()
                .id,
        );
    }
    // Asleep from 08:00 on the 2nd to 10:00 on the 5th: 09:00 on the 2nd to the 5th missed.
    daemon
        .clock
        .set(Utc.with_ymd_and_hms(2026, 3, 5, 10, 0, 0).unwrap());
    daemon.settle().await;
    let day = |day| Utc.with_ymd_and_hms(2026, 3, day, 9, 0, 0).unwrap();
    assert_eq!(daemon.runs(&ids[0]).await, []);
    assert_eq!(daemon.runs(&ids[1]).await, [(day(5), RunState::Ok)]);
    assert_eq!(
        daemon.runs(&ids[2]).await,
        [(day(4), RunState::Ok), (day(5), RunState::Ok)]
    );
    // After the gap each runs on time again, once.
    daemon.clock.set(day(6) + Duration::seconds(1));
    daemon.settle().await;
    for id in &ids {
        assert_eq!(
            daemon.runs(id).await.last(),
            Some(&(day(6), RunState::Ok)),
            "{id}"
        );
    }
    assert_eq!(daemon.fires().values().sum::<u32>(), 6);
    daemon.stop().await;
}

/// A run still going when the next occurrence is due: `skip` records it skipped; `queue_one`
/// keeps one waiting (and skips the next), started when the running one ends. Never two runs.
#[tokio::test]
async fn overlapping_occurrences_are_skipped_or_queued_never_run_together() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Semaphore::new(0));
    let firing = CountingFiring {
        gate: Some(gate.clone()),
        ..CountingFiring::default()
    };
    let daemon = daemon(&dir.path().join("souz.db"), firing).await;
    daemon.schedules.engine().start().await.unwrap();
    let skip = daemon
        .schedules
        .create(
            crate::LOCAL_USER,
            prompt_schedule("skip", "* * * * *"),
            "UTC",
        )
        .await
        .unwrap()
        .id;
    let mut queued = prompt_schedule("queue", "* * * * *");
    queued.overlap = Some(OverlapPolicy::QueueOne);
    let queue = daemon
        .schedules
        .create(crate::LOCAL_USER, queued, "UTC")
        .await
        .unwrap()
        .id;
    let minute = |n| start_time() + Duration::minutes(n);
    for n in 0..3 {
        // The person switches to Russian before the third: its reason is in Russian.
        daemon.russian.store(n == 2, Ordering::Relaxed);
        daemon.clock.advance(Duration::minutes(1));
        daemon.decided().await;
    }
    assert_eq!(
        daemon.runs(&skip).await,
        [
            (minute(1), RunState::Running),
            (minute(2), RunState::Skipped),
            (minute(3), RunState::Skipped)
        ]
    );
    assert_eq!(
        daemon.runs(&queue).await,
        [
            (minute(1), RunState::Running),
            (minute(2), RunState::Claimed),
            (minute(3), RunState::Skipped)
        ]
    );
    assert_eq!(
        daemon.reasons(&skip).await,
        [
            None,
            Some("The previous run was still going.".to_owned()),
            Some("Предыдущий запуск ещё шёл.".to_owned())
        ]
    );
    assert_eq!(daemon.fires().len(), 2, "one run of each goes");
    // Each run ends when it gets a permit: the two first runs, then the queued one.
    gate.add_permits(3);
    daemon.settle().await;
    assert_eq!(daemon.runs(&queue).await[1], (minute(2), RunState::Ok));
    assert_eq!(daemon.fires().len(), 3);
    daemon.stop().await;
}

#[tokio::test]
async fn pausing_stops_fires_and_resuming_does_not_owe_the_paused_ones() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(&dir.path().join("souz.db"), CountingFiring::default()).await;
    daemon.schedules.engine().start().await.unwrap();
    let id = daemon
        .schedules
        .create(
            crate::LOCAL_USER,
            prompt_schedule("hourly", "0 * * * *"),
            "UTC",
        )
        .await
        .unwrap()
        .id;
    let paused = daemon
        .schedules
        .set_enabled(crate::LOCAL_USER, &id, false)
        .await
        .unwrap();
    assert_eq!(paused.next_fire, None);
    daemon.clock.advance(Duration::hours(3));
    daemon.settle().await;
    assert!(daemon.fires().is_empty());
    let resumed = daemon
        .schedules
        .set_enabled(crate::LOCAL_USER, &id, true)
        .await
        .unwrap();
    assert_eq!(resumed.next_fire, Some(start_time() + Duration::hours(4)));
    daemon.clock.advance(Duration::minutes(1));
    daemon.settle().await;
    assert!(daemon.fires().is_empty(), "the paused hours are not owed");
    daemon.clock.advance(Duration::hours(1));
    daemon.settle().await;
    assert_eq!(
        daemon.runs(&id).await,
        [(start_time() + Duration::hours(4), RunState::Ok)]
    );
    daemon.stop().await;
}

#[tokio::test]
async fn run_now_claims_the_current_time_as_an_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon(&dir.path().join("souz.db"), CountingFiring::default()).await;
    daemon.schedules.engine().start().await.unwrap();
    let id = daemon
        .schedules
        .create(
            crate::LOCAL_USER,
            prompt_schedule("daily", "0 9 * * *"),
            "UTC",
        )
        .await
        .unwrap()
        .id;
    let run = daemon
        .schedules
        .run_now(crate::LOCAL_USER, &id)
        .await
        .unwrap();
    assert_eq!(run.fire_at, start_time());
    daemon.settle().await;
    assert_eq!(daemon.runs(&id).await, [(start_time(), RunState::Ok)]);
    // Somebody else's schedule is not found.
    assert!(matches!(
        daemon.schedules.run_now("someone-else", &id).await,
        Err(crate::schedules::ScheduleError::NotFound)
    ));
    daemon.stop().await;
}

/// A daemon killed while a run went leaves the row `running`; the next daemon to start ends
/// it from its chat execution's outcome (failed by the chat's own recovery) and starts the
/// occurrence that waited behind it, so the schedule is not skipped for ever. A run whose
/// execution still goes (another live daemon's) is left alone.
#[tokio::test]
async fn a_run_a_dead_daemon_left_going_is_ended_from_its_execution_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    let gate = Arc::new(Semaphore::new(0));
    let killed = daemon(
        &path,
        CountingFiring {
            gate: Some(gate),
            ..CountingFiring::default()
        },
    )
    .await;
    killed.schedules.engine().start().await.unwrap();
    let mut queued = prompt_schedule("queued", "* * * * *");
    queued.overlap = Some(OverlapPolicy::QueueOne);
    let queued = killed
        .schedules
        .create(crate::LOCAL_USER, queued, "UTC")
        .await
        .unwrap()
        .id;
    let alive = killed
        .schedules
        .create(
            crate::LOCAL_USER,
            prompt_schedule("alive", "* * * * *"),
            "UTC",
        )
        .await
        .unwrap()
        .id;
    killed.clock.advance(Duration::minutes(1));
    killed.decided().await;
    killed.clock.advance(Duration::minutes(1));
    killed.decided().await;
    let (first, second) = (
        start_time() + Duration::minutes(1),
        start_time() + Duration::minutes(2),
    );
    assert_eq!(
        killed.runs(&queued).await,
        [(first, RunState::Running), (second, RunState::Claimed)]
    );
    // The runs' chat executions: the queued schedule's was failed by the chat's recovery, the
    // other schedule's still runs under a live daemon's lease.
    let store = Store::open(&path).await.unwrap();
    let (queued_id, alive_id) = (queued.clone(), alive.clone());
    store
        .write(move |tx| {
            tx.execute_batch(
                "INSERT OR IGNORE INTO users (id, created_at, last_seen_at) VALUES ('local', 'now', 'now');
                 INSERT INTO chats (id, user_id, created_at, updated_at)
                     VALUES ('c1', 'local', 'now', 'now'), ('c2', 'local', 'now', 'now');
                 INSERT INTO executions (id, chat_id, status, settings, error_message, created_at)
                     VALUES ('e1', 'c1', 'failed', '{}', 'The execution stopped because Souz restarted.', 'now'),
                            ('e2', 'c2', 'running', '{}', NULL, 'now');",
            )?;
            for (schedule, execution) in [(&queued_id, "e1"), (&alive_id, "e2")] {
                tx.execute(
                    "UPDATE schedule_runs SET execution_id = ?2
                      WHERE schedule_id = ?1 AND state = 'running'",
                    rusqlite::params![schedule, execution],
                )?;
            }
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    // Killed: its tasks are dropped with nothing recorded (no shutdown).
    drop(killed);

    let next = daemon(&path, CountingFiring::default()).await;
    next.clock.advance(Duration::minutes(2));
    next.schedules.engine().start().await.unwrap();
    next.decided().await;
    let runs = next
        .schedules
        .runs(crate::LOCAL_USER, &queued, 10)
        .await
        .unwrap()
        .items;
    let ended = runs.iter().find(|run| run.fire_at == first).unwrap();
    assert_eq!(ended.state, RunState::Failed);
    assert_eq!(
        ended.reason.as_deref(),
        Some("The execution stopped because Souz restarted.")
    );
    let waited = runs.iter().find(|run| run.fire_at == second).unwrap();
    assert!(
        matches!(waited.state, RunState::Running | RunState::Ok),
        "the occurrence that waited starts: {waited:?}"
    );
    assert!(next.fires().contains_key(&(queued.clone(), second)));
    let alive_runs = next.runs(&alive).await;
    assert_eq!(
        alive_runs.first(),
        Some(&(first, RunState::Running)),
        "{alive_runs:?}"
    );
}
