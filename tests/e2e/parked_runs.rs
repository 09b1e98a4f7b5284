//! Scheduled runs that park, end to end (issue 40): a schedule created through the API fires
//! on the daemon's own clock, its run parks on the write it needs approved, survives `kill -9`
//! still parked, and writes the file only once the person approves after the restart.

use serde_json::{Value, json};
use souz_e2e::Daemon;
use souz_testkit::openai;

use crate::chats::{COMPLETIONS, daemon, provider};

/// The schedule's runs, newest first.
fn runs(daemon: &Daemon, schedule: &str) -> Vec<Value> {
    let response = daemon.get(&format!("/v1/schedules/{schedule}/runs"));
    assert_eq!(response.status, 200, "{}", response.body);
    response.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until the schedule's newest run is in `state`.
fn run_in(daemon: &Daemon, schedule: &str, state: &str) -> Value {
    daemon.wait_until(&format!("/v1/schedules/{schedule}/runs"), |body| {
        body["items"][0]["state"] == state
    })["items"][0]
        .clone()
}

#[test]
fn a_fired_schedule_parks_survives_kill_9_and_writes_only_after_approval() {
    let setup = provider();
    let arguments = json!({
        "skillId": "NewFile",
        "arguments": {"path": "~/inbox-summary.txt", "text": "3 new letters"}
    })
    .to_string();
    setup.provider.push(
        COMPLETIONS,
        openai::tool_calls(&[("call_1", "RunSkillCommand", arguments.as_str())], 2),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Summary written."]));
    let daemon = daemon(&setup);

    // Due in two seconds, on the daemon's clock.
    let created = daemon.post(
        "/v1/schedules",
        &json!({
            "name": "Inbox summary",
            "spec": "in 2 seconds",
            "zone": "Europe/Berlin",
            "action": {"type": "prompt", "prompt": "Summarize my inbox."}
        }),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let schedule = created.json()["id"].as_str().unwrap().to_owned();

    let parked = run_in(&daemon, &schedule, "parked");
    let approval_id = parked["approvalId"].as_str().unwrap().to_owned();
    let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
    assert_eq!(approval["status"], "pending");
    assert_eq!(approval["requester_label"], "scheduled run 'Inbox summary'");
    assert_eq!(approval["parked"]["schedule_id"], schedule.as_str());
    let file = daemon.user.path().join("inbox-summary.txt");
    assert!(!file.exists(), "nothing is written before the approval");

    let stopped = daemon.stop("KILL");
    let daemon = Daemon::restart_with(stopped, |command| {
        command.env("OPENAI_API_KEY", "sk-test-e2e-key");
    });
    // Still parked after kill -9: the approval still waits, the run was not failed.
    let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
    assert_eq!(approval["status"], "pending", "{approval}");
    assert_eq!(runs(&daemon, &schedule)[0]["state"], "parked");
    assert!(!file.exists());

    let decided = daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve"}),
    );
    assert_eq!(decided.status, 200, "{}", decided.body);
    let ended = run_in(&daemon, &schedule, "ok");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "3 new letters");
    let chat = ended["chatId"].as_str().unwrap();
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert!(
        messages["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|message| message["content"] == "Summary written."),
        "{messages}"
    );
}
