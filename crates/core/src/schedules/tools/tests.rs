//! The schedule tools: the approval's summary, planning that refuses an invalid spec before
//! anyone is asked, and `CreateSchedule` through the real gate (asks even where writes are
//! allowed; stores only after approval, under the requester's owner; nothing after a denial).

use std::time::Duration;

use chrono::{TimeZone, Utc};
use souz_protocol::schedules::{ScheduleAction, ScheduleEnvelope};
use souz_protocol::{Action, DecisionRequest, Requester, ToolCallStatus, Verdict};

use super::*;
use crate::approvals::Audience;
use crate::schedules::clock::ManualClock;
use crate::schedules::engine::{Engine, EngineParts};
use crate::schedules::firing::{Firing, FiringRun, RunEnd, RunFuture};
use crate::testing::TestRuntime;
use crate::tools::gate::{CallHandle, CallRequest, CallState};

struct NeverFires;

impl Firing for NeverFires {
    fn fire(&self, _run: FiringRun) -> RunFuture {
        Box::pin(async { RunEnd::failed("not in this test") })
    }
}

/// The service at Sunday 6 December 2026, 12:00 UTC.
async fn service(dir: &tempfile::TempDir) -> Schedules {
    let store = Store::open(dir.path().join("souz.db")).await.unwrap();
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 12, 6, 12, 0, 0).unwrap());
    let engine = Engine::new(EngineParts {
        events: crate::bus::EventBus::new(store.clone(), 64),
        store: store.clone(),
        clock: Arc::new(clock),
        firing: Arc::new(NeverFires),
        tasks: crate::tasks::Tasks::detached(),
        language: crate::schedules::reasons::english(),
    });
    Schedules::new(store, engine)
}

fn weekly(spec: &str, zone: Option<&str>) -> NewSchedule {
    NewSchedule {
        name: "Weekly report".to_owned(),
        spec: spec.to_owned(),
        zone: zone.map(str::to_owned),
        action: ScheduleAction::Prompt {
            prompt: "Summarise   the week's notes".to_owned(),
            settings: Default::default(),
        },
        missed: None,
        overlap: None,
        envelope: None,
        enabled: None,
    }
}

#[tokio::test]
async fn the_summary_says_what_when_and_the_envelope_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = service(&dir).await;
    let checked = schedules
        .check_new(weekly("0 9 * * 1", Some("Europe/Berlin")), "UTC")
        .unwrap();
    assert_eq!(
        checked.next_fire,
        Utc.with_ymd_and_hms(2026, 12, 7, 8, 0, 0).unwrap()
    );
    assert_eq!(
        create_summary(&checked, Language::En),
        "Create schedule 'Weekly report' (prompt \"Summarise the week's notes\"): at 09:00, \
         on Monday Europe/Berlin (next: Mon 7 Dec 09:00); may without asking: read-only tools"
    );
    let russian = create_summary(&checked, Language::Ru);
    assert!(russian.contains("«0 9 * * 1» Europe/Berlin"), "{russian}");
    assert!(russian.contains("07.12.2026 09:00"), "{russian}");
    assert!(!russian.contains('\n'));

    // A relative one-shot is resolved when planned: what is approved is the instant stored.
    let mut once = weekly("in 2 hours", None);
    once.envelope = Some(ScheduleEnvelope {
        tools: vec!["NewFile".to_owned()],
        folders: vec!["~/reports".to_owned()],
        hosts: Vec::new(),
    });
    let checked = schedules.check_new(once, "America/New_York").unwrap();
    assert_eq!(checked.request.spec, "at 2026-12-06T14:00:00+00:00");
    assert_eq!(checked.request.zone.as_deref(), Some("America/New_York"));
    assert_eq!(
        create_summary(&checked, Language::En),
        "Create schedule 'Weekly report' (prompt \"Summarise the week's notes\"): once, \
         Sun 6 Dec 09:00 America/New_York; may without asking: read-only tools; tools NewFile; \
         folders ~/reports"
    );
    assert!(schedules.list(crate::LOCAL_USER).await.unwrap().is_empty());
}

#[tokio::test]
async fn checking_refuses_what_creating_would_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = service(&dir).await;
    for (request, message) in [
        (weekly("61 * * * *", None), "invalid cron expression"),
        (
            weekly("0 9 * * *", Some("Mars/Olympus")),
            "unknown time zone",
        ),
        (weekly("at 2020-01-01 09:00", None), "never fires"),
    ] {
        let error = schedules.check_new(request, "UTC").unwrap_err();
        assert!(error.to_string().contains(message), "{error}");
    }
    assert!(schedules.list(crate::LOCAL_USER).await.unwrap().is_empty());
}

fn create_arguments(spec: &str) -> serde_json::Value {
    serde_json::json!({
        "name": "Weekly report",
        "spec": spec,
        "zone": "Europe/Berlin",
        "prompt": "Summarise the week's notes",
    })
}

async fn start(runtime: &TestRuntime, requester: Requester, spec: &str) -> CallHandle {
    runtime
        .handle()
        .start_call(CallRequest {
            tool: "CreateSchedule".to_owned(),
            arguments: create_arguments(spec),
            requester,
        })
        .await
        .unwrap()
}

/// Waits for the call to ask, then decides `verdict`; the call's end.
async fn decide(runtime: &TestRuntime, call: &mut CallHandle, verdict: Verdict) -> CallState {
    let handle = runtime.handle();
    let mut approval = None;
    for _ in 0..400 {
        approval = call.state().approval_id;
        if approval.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let approval = approval.expect("CreateSchedule never asked");
    let pending = handle.approval(&approval).await.unwrap();
    assert!(
        pending
            .summary
            .starts_with("Create schedule 'Weekly report'"),
        "{}",
        pending.summary
    );
    assert!(pending.summary.contains("Europe/Berlin (next: "));
    handle
        .decide_approval(
            &approval,
            DecisionRequest::once(verdict, "test"),
            &Audience::Everyone,
        )
        .await
        .unwrap();
    call.wait_for(Duration::from_secs(30)).await
}

async fn stored(runtime: &TestRuntime, owner: &str) -> Vec<souz_protocol::schedules::Schedule> {
    runtime
        .handle()
        .list_schedules(&ChatUser(owner.to_owned()))
        .await
        .unwrap()
        .items
}

#[tokio::test]
async fn create_schedule_asks_even_where_writes_are_allowed_and_stores_only_when_approved() {
    let runtime = TestRuntime::builder()
        .flat_home()
        .with_config(|config| config.approvals.write = Action::Allow)
        .start()
        .await;
    let handle = runtime.handle();

    let mut invalid = start(&runtime, Requester::Cli, "61 * * * *").await;
    let state = invalid.wait_for(Duration::from_secs(30)).await;
    assert_eq!(state.status, ToolCallStatus::Failed, "{state:?}");
    assert!(state.approval_id.is_none(), "an invalid spec asks nobody");
    let said = state.result.unwrap().text;
    assert!(said.contains("invalid cron expression"), "{said}");

    let mut denied = start(&runtime, Requester::Cli, "0 9 * * 1").await;
    let state = decide(&runtime, &mut denied, Verdict::Deny).await;
    assert_eq!(state.status, ToolCallStatus::Denied, "{state:?}");
    assert!(stored(&runtime, crate::LOCAL_USER).await.is_empty());

    let mut approved = start(&runtime, Requester::Cli, "0 9 * * 1").await;
    let state = decide(&runtime, &mut approved, Verdict::Approve).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    let schedules = stored(&runtime, crate::LOCAL_USER).await;
    assert_eq!(schedules.len(), 1);
    assert_eq!(schedules[0].name, "Weekly report");
    assert_eq!(schedules[0].zone, "Europe/Berlin");
    assert_eq!(schedules[0].envelope, ScheduleEnvelope::default());

    // Listing is read-only (no question); deleting asks and names the schedule.
    let mut list = handle
        .start_call(CallRequest {
            tool: "ListSchedules".to_owned(),
            arguments: serde_json::json!({}),
            requester: Requester::Cli,
        })
        .await
        .unwrap();
    let state = list.wait_for(Duration::from_secs(30)).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    assert!(state.approval_id.is_none());
    assert!(state.result.unwrap().text.contains(&schedules[0].id));
    let mut delete = handle
        .start_call(CallRequest {
            tool: "DeleteSchedule".to_owned(),
            arguments: serde_json::json!({ "id": schedules[0].id }),
            requester: Requester::Cli,
        })
        .await
        .unwrap();
    let approval = loop {
        if let Some(approval) = delete.state().approval_id {
            break approval;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let pending = handle.approval(&approval).await.unwrap();
    assert!(
        pending
            .summary
            .starts_with("Delete schedule 'Weekly report'")
    );
    handle
        .decide_approval(
            &approval,
            DecisionRequest::once(Verdict::Approve, "test"),
            &Audience::Everyone,
        )
        .await
        .unwrap();
    let state = delete.wait_for(Duration::from_secs(30)).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    assert!(stored(&runtime, crate::LOCAL_USER).await.is_empty());
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_chats_schedule_belongs_to_the_chats_user() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let alice = ChatUser("alice".to_owned());
    let (created, _) = handle
        .create_chat(
            &alice,
            souz_protocol::chat::CreateChat {
                request_id: None,
                title: Some("Planning".to_owned()),
                user_id: None,
                client_type: None,
            },
        )
        .await
        .unwrap();
    let requester = Requester::Chat {
        chat_id: created.chat.id.clone(),
    };
    let mut call = start(&runtime, requester, "0 9 * * 1").await;
    let state = decide(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    assert_eq!(stored(&runtime, "alice").await.len(), 1);
    assert!(stored(&runtime, crate::LOCAL_USER).await.is_empty());
    runtime.shutdown("test").await.unwrap();
}
