use chrono::{TimeZone, Utc};
use souz_protocol::schedules::{NewSchedule, ScheduleAction};

use super::*;
use crate::schedules::clock::ManualClock;
use crate::schedules::engine::EngineParts;
use crate::schedules::firing::{Firing, FiringRun, RunEnd, RunFuture};

struct NeverFires;

impl Firing for NeverFires {
    fn fire(&self, _run: FiringRun) -> RunFuture {
        Box::pin(async { RunEnd::failed("not in this test") })
    }
}

pub(super) async fn service(dir: &tempfile::TempDir) -> Schedules {
    let store = Store::open(dir.path().join("souz.db")).await.unwrap();
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap());
    let engine = Engine::new(EngineParts {
        events: crate::bus::EventBus::new(store.clone(), 64),
        store: store.clone(),
        clock: std::sync::Arc::new(clock),
        firing: std::sync::Arc::new(NeverFires),
        tasks: crate::tasks::Tasks::detached(),
        language: crate::schedules::reasons::english(),
    });
    Schedules::new(store, engine)
}

pub(super) fn new(spec: &str, zone: Option<&str>) -> NewSchedule {
    NewSchedule {
        name: "Inbox summary".to_owned(),
        spec: spec.to_owned(),
        zone: zone.map(str::to_owned),
        action: ScheduleAction::Prompt {
            prompt: "Summarise".to_owned(),
            settings: Default::default(),
        },
        missed: None,
        overlap: None,
        envelope: None,
        enabled: None,
    }
}

#[tokio::test]
async fn invalid_specs_zones_and_fields_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = service(&dir).await;
    let owner = crate::LOCAL_USER;
    let cases = [
        (new("61 * * * *", None), "invalid cron expression"),
        (new("0 9 * * *", Some("Mars/Olympus")), "unknown time zone"),
        (new("at 2020-01-01 09:00", None), "never fires"),
        (
            NewSchedule {
                name: " ".to_owned(),
                ..new("0 9 * * *", None)
            },
            "name",
        ),
        (
            NewSchedule {
                missed: Some(souz_protocol::schedules::MissedPolicy::CatchUp { limit: 0 }),
                ..new("0 9 * * *", None)
            },
            "catch_up",
        ),
    ];
    for (request, message) in cases {
        let error = schedules.create(owner, request, "UTC").await.unwrap_err();
        assert!(error.to_string().contains(message), "{error}");
    }
    assert!(schedules.list(owner).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_schedule_round_trips_and_belongs_to_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = service(&dir).await;
    let created = schedules
        .create("alice", new("in 2 hours", None), "Europe/Berlin")
        .await
        .unwrap();
    assert_eq!(created.zone, "Europe/Berlin");
    assert_eq!(created.spec, "at 2026-06-01T14:00:00+00:00");
    assert_eq!(schedules.get("alice", &created.id).await.unwrap(), created);
    assert!(matches!(
        schedules.get("bob", &created.id).await,
        Err(ScheduleError::NotFound)
    ));
    assert!(schedules.list("bob").await.unwrap().is_empty());
    let patched = schedules
        .patch(
            "alice",
            &created.id,
            SchedulePatch {
                spec: Some("30 8 * * 1-5".to_owned()),
                ..SchedulePatch::default()
            },
        )
        .await
        .unwrap();
    // Tuesday 2 June 08:30 in Berlin (CEST).
    assert_eq!(
        patched.next_fire,
        Some(Utc.with_ymd_and_hms(2026, 6, 2, 6, 30, 0).unwrap())
    );
    let preview = schedules.preview("30 8 * * 1-5", "Europe/Berlin").unwrap();
    assert_eq!(preview.fires.len(), PREVIEW_COUNT);
    assert_eq!(
        preview.fires[0],
        Utc.with_ymd_and_hms(2026, 6, 2, 6, 30, 0).unwrap()
    );
    schedules.delete("alice", &created.id).await.unwrap();
    assert!(matches!(
        schedules.delete("alice", &created.id).await,
        Err(ScheduleError::NotFound)
    ));
}
