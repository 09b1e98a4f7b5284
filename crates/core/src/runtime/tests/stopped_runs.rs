//! Scheduled runs whose turn Souz ended (issue 49): a model that repeats a failing call is
//! stopped by the turn's limits, and the run reads `failed`, with the explanation the person
//! was given and the end reason, never `ok` — both when the engine watches the run end and
//! when a starting engine ends the runs a dead process left going. The whole runtime: the
//! fake OpenAI server, the real chat engine, agents, gate and scheduler.

use std::time::Duration;

use souz_protocol::schedules::{RunState, ScheduleRun};
use souz_testkit::{FakeServer, openai};

use crate::chat::ChatUser;
use crate::runtime::RuntimeHandle;
use crate::testing::{TestHome, TestRuntime, run_prompt_now};

fn local() -> ChatUser {
    ChatUser(crate::LOCAL_USER.to_owned())
}

/// The model lists a folder that is not there, again and again (more answers than the repeat
/// limit lets the turn ask for).
fn script_repeats(server: &FakeServer) {
    let arguments = serde_json::json!({
        "skillId": "ListFiles",
        "arguments": {"path": "~/no-such-folder"}
    })
    .to_string();
    for index in 0..4 {
        let id = format!("call_{index}");
        server.push(
            openai::CHAT_PATH,
            openai::tool_calls(&[(id.as_str(), "RunSkillCommand", arguments.as_str())], 2),
        );
    }
}

async fn runtime(server: &FakeServer, home: TestHome) -> TestRuntime {
    TestRuntime::builder()
        .with_llm(server)
        .with_config(|config| {
            config.agent.default_agent = "skills".into();
            config.memory.capture = false;
        })
        .start_in(home)
        .await
}

/// Creates a schedule (far in the future) and runs it now.
async fn schedule_and_run(handle: &RuntimeHandle) -> (String, ScheduleRun) {
    run_prompt_now(handle, "Folder check", "What is in no-such-folder?", None).await
}

/// Waits until run `run_id` of `schedule_id` has ended.
async fn ended(handle: &RuntimeHandle, schedule_id: &str, run_id: i64) -> ScheduleRun {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let runs = handle
            .schedule_runs(&local(), schedule_id, 10)
            .await
            .unwrap();
        let run = runs.items.into_iter().find(|run| run.id == run_id).unwrap();
        if !matches!(
            run.state,
            RunState::Claimed | RunState::Running | RunState::Parked
        ) {
            return run;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "run {run_id} stayed {:?}",
            run.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The reason a run stopped by the repeat limit gives.
fn assert_stopped_by_repeats(run: &ScheduleRun) {
    assert_eq!(run.state, RunState::Failed, "{run:?}");
    let reason = run.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("I called RunSkillCommand 3 times"),
        "the explanation the person was given: {run:?}"
    );
    assert!(
        reason.ends_with("(repeated_tool_call)"),
        "and the end reason: {run:?}"
    );
}

#[tokio::test]
async fn a_run_stopped_by_the_repeat_limit_fails_with_its_end_reason() {
    let server = FakeServer::start().await;
    script_repeats(&server);
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let (schedule_id, run) = schedule_and_run(&handle).await;
    let run = ended(&handle, &schedule_id, run.id).await;
    assert_stopped_by_repeats(&run);
    // The turn was stopped, not the model starved: three answers were asked for.
    assert_eq!(server.requests_to(openai::CHAT_PATH).len(), 3);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_run_whose_process_died_after_a_stopped_turn_fails_at_the_next_start() {
    let server = FakeServer::start().await;
    script_repeats(&server);
    let runtime = runtime(&server, TestHome::new()).await;
    let handle = runtime.handle();
    let (schedule_id, run) = schedule_and_run(&handle).await;
    ended(&handle, &schedule_id, run.id).await;
    let home = runtime.shutdown_keeping_home("restart").await.unwrap();
    // As a kill after the execution ended but before the run did leaves it: still going.
    let store = crate::store::Store::open(&home.path().join(".souz/souz.db"))
        .await
        .unwrap();
    let run_id = run.id;
    store
        .write(move |tx| {
            tx.execute(
                "UPDATE schedule_runs SET state = 'running', reason = NULL, ended_at = NULL \
                 WHERE id = ?1",
                [run_id],
            )
            .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    drop(store);
    let runtime = self::runtime(&server, home).await;
    let handle = runtime.handle();
    let run = ended(&handle, &schedule_id, run.id).await;
    assert_stopped_by_repeats(&run);
    runtime.shutdown("test").await.unwrap();
}
