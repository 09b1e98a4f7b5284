//! Scheduled runs that park (issue 40): a run whose call needs the person waits for them —
//! across a restart — instead of failing, and goes on exactly from the call once approved; a
//! denial or an expiry ends it `blocked`, with nothing written. The whole runtime: the fake
//! OpenAI server, the real chat engine, agents, gate, approvals and scheduler.

use std::time::Duration;

use souz_protocol::schedules::{RunState, ScheduleEnvelope, ScheduleRun};
use souz_protocol::{
    Approval, ApprovalStatus, DecisionRequest, ExpiryReason, RuntimeEvent, ScopeKind, Verdict,
};
use souz_testkit::{FakeServer, openai};

use crate::chat::ChatUser;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::Audience;
use crate::testing::{TestHome, TestRuntime, run_prompt_now};

fn local() -> ChatUser {
    ChatUser(crate::LOCAL_USER.to_owned())
}

/// The model writes `report.txt` through `NewFile` (a write: the policy asks).
fn script_write(server: &FakeServer) {
    script_write_to(server, "~/report.txt");
}

fn script_write_to(server: &FakeServer, path: &str) {
    let arguments = serde_json::json!({
        "skillId": "NewFile",
        "arguments": {"path": path, "text": "the morning report"}
    })
    .to_string();
    server.push(
        openai::CHAT_PATH,
        openai::tool_calls(&[("call_1", "RunSkillCommand", arguments.as_str())], 2),
    );
}

async fn runtime(server: &FakeServer, home: TestHome) -> TestRuntime {
    TestRuntime::builder()
        .with_llm(server)
        .with_config(|config| config.agent.default_agent = "skills".into())
        .start_in(home)
        .await
}

/// Creates the schedule (far in the future: the test fires it with "run now") and runs it.
async fn schedule_and_run(handle: &RuntimeHandle) -> (String, ScheduleRun) {
    schedule_and_run_within(handle, None).await
}

async fn schedule_and_run_within(
    handle: &RuntimeHandle,
    envelope: Option<ScheduleEnvelope>,
) -> (String, ScheduleRun) {
    run_prompt_now(
        handle,
        "Morning report",
        "Write the morning report.",
        envelope,
    )
    .await
}

/// Waits until run `run_id` of `schedule_id` is in `state`.
async fn run_in(
    handle: &RuntimeHandle,
    schedule_id: &str,
    run_id: i64,
    state: RunState,
) -> ScheduleRun {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let runs = handle
            .schedule_runs(&local(), schedule_id, 10)
            .await
            .unwrap();
        let run = runs.items.into_iter().find(|run| run.id == run_id).unwrap();
        if run.state == state {
            return run;
        }
        if tokio::time::Instant::now() >= deadline {
            let all = handle
                .list_approvals(&Audience::Everyone, None, 10)
                .await
                .unwrap_or_default();
            eprintln!("approvals: {all:#?}");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "run {run_id} stayed {:?} ({:?}), expected {state:?}",
            run.state,
            run.reason
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn pending(handle: &RuntimeHandle) -> Vec<Approval> {
    handle
        .list_approvals(&Audience::Everyone, Some(ApprovalStatus::Pending), 10)
        .await
        .unwrap()
}

async fn decide(handle: &RuntimeHandle, approval_id: &str, decision: Verdict) {
    let request = DecisionRequest {
        decision,
        scope: ScopeKind::Once,
        minutes: None,
        argument_match: None,
        tool_group: None,
        via: Some("ui".into()),
    };
    handle
        .decide_approval(approval_id, request, &Audience::Everyone)
        .await
        .unwrap();
}

/// Parks the run and checks what the person and the database see while it waits.
async fn parked(handle: &RuntimeHandle, home: &std::path::Path) -> (String, ScheduleRun, Approval) {
    let (schedule_id, run) = schedule_and_run(handle).await;
    let parked = run_in(handle, &schedule_id, run.id, RunState::Parked).await;
    let waiting = pending(handle).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let approval = waiting.into_iter().next().unwrap();
    assert_eq!(parked.approval_id.as_deref(), Some(approval.id.as_str()));
    assert_eq!(approval.tool, "NewFile");
    assert_eq!(approval.requester_label, "scheduled run 'Morning report'");
    let by = approval.parked.clone().unwrap();
    assert_eq!(
        (by.schedule_id.as_str(), by.run_id),
        (schedule_id.as_str(), run.id)
    );
    assert!(
        approval.expires_at - approval.created_at >= chrono::Duration::hours(24),
        "a parked approval waits parked_hours, not the attended timeout"
    );
    assert!(!home.join("report.txt").exists(), "nothing ran yet");
    (schedule_id, parked, approval)
}

#[tokio::test]
async fn a_parked_run_goes_on_from_the_call_once_approved() {
    let server = FakeServer::start().await;
    script_write(&server);
    server.push(openai::CHAT_PATH, openai::text(&["Report written."]));
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let home = runtime.home().path().to_owned();
    let (schedule_id, run, approval) = parked(&handle, &home).await;
    // Parked, not waiting in process: the model was asked once and nothing else happens.
    assert_eq!(server.requests_to(openai::CHAT_PATH).len(), 1);

    decide(&handle, &approval.id, Verdict::Approve).await;
    let ended = run_in(&handle, &schedule_id, run.id, RunState::Ok).await;
    assert_eq!(ended.reason, None);
    assert_eq!(
        std::fs::read_to_string(home.join("report.txt")).unwrap(),
        "the morning report"
    );
    let requests = server.requests_to(openai::CHAT_PATH);
    assert_eq!(
        requests.len(),
        2,
        "one more request, from the call's result"
    );
    let resumed = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(
        resumed.contains("approved the call to `NewFile`"),
        "the turn goes on from the approved call's result: {resumed}"
    );
    assert!(
        resumed.contains("as the person gave it: Write the morning report."),
        "and is reminded of the task: {resumed}"
    );
    // The approval ran its call once: the same approval cannot run it again.
    let again = handle
        .approvals()
        .use_parked(&approval.id, "another-call")
        .await
        .unwrap();
    assert!(!again);
    let messages = handle
        .messages(
            &local(),
            ended.chat_id.as_deref().unwrap(),
            crate::chat::MessagePage {
                before: None,
                after: None,
                limit: 50,
            },
        )
        .await
        .unwrap();
    assert!(
        messages
            .items
            .iter()
            .any(|message| message.content == "Report written."),
        "the answer is in the run's chat"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn denying_a_parked_call_ends_the_run_blocked_with_nothing_written() {
    let server = FakeServer::start().await;
    script_write(&server);
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let home = runtime.home().path().to_owned();
    let (schedule_id, run, approval) = parked(&handle, &home).await;

    decide(&handle, &approval.id, Verdict::Deny).await;
    let ended = run_in(&handle, &schedule_id, run.id, RunState::Blocked).await;
    let reason = ended.reason.unwrap_or_default();
    assert!(reason.contains("you denied `NewFile`"), "{reason}");
    assert!(!home.join("report.txt").exists());
    assert_eq!(
        server.requests_to(openai::CHAT_PATH).len(),
        1,
        "the turn did not go on"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn cancelling_a_parked_run_withdraws_its_approval() {
    let server = FakeServer::start().await;
    script_write(&server);
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let home = runtime.home().path().to_owned();
    let (schedule_id, run, approval) = parked(&handle, &home).await;
    let mut events = handle.events().subscribe();

    handle
        .cancel_execution(
            &local(),
            run.chat_id.as_deref().unwrap(),
            run.execution_id.as_deref().unwrap(),
        )
        .await
        .unwrap();
    let ended = run_in(&handle, &schedule_id, run.id, RunState::Failed).await;
    assert!(ended.reason.is_some(), "{ended:?}");
    // Nobody is asked any more about a call whose run is gone, on any surface.
    assert!(pending(&handle).await.is_empty());
    let withdrawn = handle.approval(&approval.id).await.unwrap();
    assert_eq!(withdrawn.status, ApprovalStatus::Expired);
    assert_eq!(withdrawn.expiry_reason, Some(ExpiryReason::Withdrawn));
    // Announced: the approval withdrawn (every surface drops it), and the run's end naming
    // the chat it ran in (where its notice leads).
    let (mut withdrawn_as, mut ended_in) = (None, None);
    tokio::time::timeout(Duration::from_secs(10), async {
        while withdrawn_as.is_none() || ended_in.is_none() {
            let Ok(envelope) = events.recv().await else {
                continue;
            };
            match &envelope.event {
                RuntimeEvent::ApprovalExpired {
                    approval_id,
                    reason,
                    ..
                } if *approval_id == approval.id => withdrawn_as = Some(*reason),
                RuntimeEvent::ScheduleRunEnded {
                    run_id, chat_id, ..
                } if *run_id == run.id => ended_in = Some(chat_id.clone()),
                _ => {}
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(withdrawn_as, Some(ExpiryReason::Withdrawn));
    assert_eq!(ended_in, Some(run.chat_id.clone()));
    // Deciding it now changes nothing: the run stays ended and nothing is written.
    let request = DecisionRequest {
        decision: Verdict::Approve,
        scope: ScopeKind::Once,
        minutes: None,
        argument_match: None,
        tool_group: None,
        via: Some("ui".into()),
    };
    assert!(
        handle
            .decide_approval(&approval.id, request, &Audience::Everyone)
            .await
            .is_err()
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!home.join("report.txt").exists());
    assert_eq!(server.requests_to(openai::CHAT_PATH).len(), 1);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_parked_run_outlives_a_restart_and_goes_on_when_approved_after_it() {
    let server = FakeServer::start().await;
    script_write(&server);
    server.push(openai::CHAT_PATH, openai::text(&["Report written."]));
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let home_path = runtime.home().path().to_owned();
    let (schedule_id, run, approval) = parked(&handle, &home_path).await;

    let home = runtime.shutdown_keeping_home("restart").await.unwrap();
    let runtime = self::runtime(&server, home).await;
    let handle = runtime.handle();
    // Still parked: the approval was not expired by the restart, the run not failed.
    let still = pending(&handle).await;
    assert_eq!(still.len(), 1, "{still:?}");
    assert_eq!(still[0].id, approval.id);
    run_in(&handle, &schedule_id, run.id, RunState::Parked).await;

    decide(&handle, &approval.id, Verdict::Approve).await;
    run_in(&handle, &schedule_id, run.id, RunState::Ok).await;
    assert_eq!(
        std::fs::read_to_string(home_path.join("report.txt")).unwrap(),
        "the morning report"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_parked_approval_that_runs_out_ends_the_run_blocked() {
    let server = FakeServer::start().await;
    script_write(&server);
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let home_path = runtime.home().path().to_owned();
    let (schedule_id, run, approval) = parked(&handle, &home_path).await;

    // Its time runs out while Souz is stopped: the next start expires it.
    let home = runtime.shutdown_keeping_home("restart").await.unwrap();
    let store = crate::store::Store::open(&home.path().join(".souz/souz.db"))
        .await
        .unwrap();
    let id = approval.id.clone();
    store
        .write(move |tx| {
            tx.execute(
                "UPDATE approvals SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = ?1",
                [&id],
            )
            .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    drop(store);
    let runtime = self::runtime(&server, home).await;
    let handle = runtime.handle();
    let ended = run_in(&handle, &schedule_id, run.id, RunState::Blocked).await;
    assert!(
        ended.reason.unwrap_or_default().contains("in time"),
        "the reason says nobody approved in time"
    );
    let expired = handle.approval(&approval.id).await.unwrap();
    assert_eq!(expired.status, ApprovalStatus::Expired);
    assert!(!home_path.join("report.txt").exists());
    runtime.shutdown("test").await.unwrap();
}

/// Inside its envelope a run goes on unasked; the same call outside it parks.
#[tokio::test]
async fn inside_its_envelope_a_run_writes_unasked_and_outside_it_parks() {
    let server = FakeServer::start().await;
    script_write_to(&server, "~/reports/today.txt");
    server.push(openai::CHAT_PATH, openai::text(&["Written."]));
    let home = TestHome::new();
    std::fs::create_dir_all(home.path().join("reports")).unwrap();
    let runtime = runtime(&server, home).await;
    let handle = runtime.handle();
    let home = runtime.home().path().to_owned();
    let envelope = ScheduleEnvelope {
        tools: vec!["NewFile".into()],
        folders: vec!["~/reports".into()],
        hosts: Vec::new(),
    };
    let (schedule_id, run) = schedule_and_run_within(&handle, Some(envelope.clone())).await;
    run_in(&handle, &schedule_id, run.id, RunState::Ok).await;
    assert_eq!(
        std::fs::read_to_string(home.join("reports/today.txt")).unwrap(),
        "the morning report"
    );
    let audit = handle.approvals().list(None, 10).await.unwrap();
    assert!(audit.is_empty(), "nobody was asked: {audit:?}");

    // The same tool outside the folder is not in the envelope: it parks.
    script_write_to(&server, "~/elsewhere.txt");
    let (schedule_id, run) = schedule_and_run_within(&handle, Some(envelope)).await;
    run_in(&handle, &schedule_id, run.id, RunState::Parked).await;
    assert!(!home.join("elsewhere.txt").exists());
    runtime.shutdown("test").await.unwrap();
}

/// Killed after the call parked but before the execution recorded that it waits: at the next
/// start the execution is adopted as parked on that approval instead of failing, and goes on
/// when it is approved.
#[tokio::test]
async fn an_execution_killed_between_parking_and_waiting_is_adopted_at_start() {
    let server = FakeServer::start().await;
    script_write(&server);
    server.push(openai::CHAT_PATH, openai::text(&["Report written."]));
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let home_path = runtime.home().path().to_owned();
    let (schedule_id, run, approval) = parked(&handle, &home_path).await;
    let home = runtime.shutdown_keeping_home("restart").await.unwrap();
    // As a kill in the window leaves it: still running, owned by a process that is gone.
    let store = crate::store::Store::open(&home.path().join(".souz/souz.db"))
        .await
        .unwrap();
    store
        .write(|tx| {
            tx.execute(
                "UPDATE executions SET status = 'running', finished_at = NULL, owner = 'gone', \
                 parked_approval = NULL, parked_call = NULL WHERE status = 'waiting_approval'",
                [],
            )
            .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    drop(store);
    let runtime = self::runtime(&server, home).await;
    let handle = runtime.handle();
    run_in(&handle, &schedule_id, run.id, RunState::Parked).await;
    decide(&handle, &approval.id, Verdict::Approve).await;
    run_in(&handle, &schedule_id, run.id, RunState::Ok).await;
    assert_eq!(
        std::fs::read_to_string(home_path.join("report.txt")).unwrap(),
        "the morning report"
    );
    runtime.shutdown("test").await.unwrap();
}
