//! Approvals as inline buttons: approve runs the call, deny does not; a replayed press, a
//! press from another account, a forged handle and a press after the approval was decided
//! elsewhere change nothing, and every press is answered.

use serde_json::json;
use souz_protocol::approvals::{ApprovalStatus, DecisionRequest, ScopeKind, Verdict};
use souz_testkit::telegram::FakeTelegram;
use souz_testkit::{FakeServer, Reply, openai};

use super::tests::{ME, STRANGER, TOKEN, link, runtime};
use crate::channels::store::press_count;
use crate::runtime::facade::Audience;
use crate::testing::{TestHome, TestRuntime};

/// The ids of the pending approvals.
pub(super) async fn pending(runtime: &TestRuntime) -> Vec<String> {
    let handle = runtime.handle();
    let pending = Some(ApprovalStatus::Pending);
    let list = handle
        .list_approvals(&Audience::Everyone, pending, 10)
        .await;
    list.unwrap()
        .into_iter()
        .map(|approval| approval.id)
        .collect()
}

/// A model reply that writes `path` through `RunSkillCommand` (a write: it asks).
pub(super) fn writes(path: &str) -> Reply {
    let arguments = json!({"skillId": "NewFile", "arguments": {"path": path, "text": "milk\n"}});
    openai::tool_calls(&[("w1", "RunSkillCommand", &arguments.to_string())], 2)
}

/// Links, asks for a write, and returns the runtime with the buttons' `(approve, deny)`.
pub(super) async fn asked(
    telegram: &FakeTelegram,
    llm: &FakeServer,
) -> (TestRuntime, String, String) {
    llm.push(openai::CHAT_PATH, writes("telegram.txt"));
    llm.push(openai::CHAT_PATH, openai::text(&["Done with the file."]));
    let runtime = runtime(telegram, llm, TestHome::new()).await;
    link(&runtime, telegram).await;
    telegram.push_text(ME, "write telegram.txt");
    let sent = telegram.wait_for_sent(2).await;
    assert!(
        sent[1].text.starts_with("Souz asks to run"),
        "{:?}",
        sent[1]
    );
    let buttons = sent[1].buttons.clone();
    assert_eq!(
        buttons.len(),
        3,
        "approve, deny, the suggested scope: {:?}",
        sent[1]
    );
    let pending = pending(&runtime).await;
    assert_eq!(pending.len(), 1);
    for handle in &buttons {
        assert!(handle.len() <= 64 && !handle.contains(&pending[0]));
    }
    (runtime, buttons[0].clone(), buttons[1].clone())
}

#[tokio::test]
async fn approve_runs_the_call_and_replays_strangers_and_forgeries_change_nothing() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, approve, deny) = asked(&telegram, &llm).await;
    let file = runtime.home().path().join("telegram.txt");

    telegram.push_press(STRANGER, &approve);
    assert_eq!(
        telegram.wait_for_answered(1).await[0].1,
        "This button is not yours."
    );
    telegram.push_press(ME, "forged-handle-AAAAAAAAAAAAAA");
    assert_eq!(
        telegram.wait_for_answered(2).await[1].1,
        "This button is no longer valid."
    );
    assert!(!file.exists(), "nothing ran yet");
    assert_eq!(pending(&runtime).await.len(), 1);

    telegram.push_press(ME, &approve);
    assert_eq!(telegram.wait_for_answered(3).await[2].1, "Approved.");
    assert_eq!(
        telegram.wait_for_sent(3).await[2].text,
        "Done with the file."
    );
    assert!(file.exists(), "the approved call ran");

    telegram.push_press(ME, &approve);
    telegram.push_press(ME, &deny);
    let answered = telegram.wait_for_answered(5).await;
    assert_eq!(answered[3].1, "This button is no longer valid.", "a replay");
    assert_eq!(
        answered[4].1, "This button is no longer valid.",
        "the other button"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn deny_does_not_run_the_call() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, _, deny) = asked(&telegram, &llm).await;
    telegram.push_press(ME, &deny);
    assert_eq!(telegram.wait_for_answered(1).await[0].1, "Denied.");
    telegram.wait_for_sent(3).await;
    assert!(!runtime.home().path().join("telegram.txt").exists());
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_press_after_a_decision_elsewhere_changes_nothing() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, approve, _) = asked(&telegram, &llm).await;
    let handle = runtime.handle();
    let id = pending(&runtime).await.remove(0);
    let deny = DecisionRequest {
        decision: Verdict::Deny,
        scope: Default::default(),
        minutes: None,
        argument_match: None,
        tool_group: None,
        via: Some("test".into()),
    };
    handle
        .decide_approval(&id, deny, &Audience::Everyone)
        .await
        .unwrap();
    telegram.push_press(ME, &approve);
    assert_eq!(
        telegram.wait_for_answered(1).await[0].1,
        "Already decided in Souz; nothing changed."
    );
    telegram.wait_for_sent(3).await;
    assert!(
        !runtime.home().path().join("telegram.txt").exists(),
        "still denied"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn the_suggested_scope_button_grants_what_the_api_would() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, _, _) = asked(&telegram, &llm).await;
    let prompt = telegram.sent()[1].clone();
    let handle = runtime.handle();
    let id = pending(&runtime).await.remove(0);
    let approval = handle.approval(&id).await.unwrap();
    let suggested = approval.suggested.clone();
    assert_ne!(suggested.scope, ScopeKind::Once, "{suggested:?}");
    assert_eq!(prompt.labels[2], "Allow as suggested");
    assert!(
        prompt
            .text
            .ends_with(&format!("“Allow as suggested”: {}", suggested.label)),
        "the prompt says what the button allows: {}",
        prompt.text
    );

    telegram.push_press(ME, &prompt.buttons[2]);
    assert_eq!(telegram.wait_for_answered(1).await[0].1, "Approved.");
    telegram.wait_for_sent(3).await;
    assert!(runtime.home().path().join("telegram.txt").exists());
    let decided = handle.approval(&id).await.unwrap().decision.unwrap();
    // What the web UI sends to accept the offer (`POST /v1/approvals/{id}/decision`).
    let api = DecisionRequest {
        decision: Verdict::Approve,
        scope: suggested.scope,
        minutes: suggested.minutes,
        argument_match: Some(suggested.argument_match.clone()),
        tool_group: suggested.tool_group,
        via: Some("telegram".into()),
    };
    assert_eq!(
        (
            decided.decision,
            decided.scope,
            decided.minutes,
            decided.argument_match.clone(),
            decided.tool_group,
            decided.via.as_str()
        ),
        (
            api.decision,
            api.scope,
            api.minutes,
            api.argument_match,
            api.tool_group,
            "telegram"
        )
    );
    let grant_id = decided.grant_id.expect("a scoped approval makes a grant");
    let grants = handle.grants().await.unwrap();
    let grant = grants.iter().find(|grant| grant.id == grant_id).unwrap();
    assert_eq!(grant.approval_id.as_deref(), Some(id.as_str()));
    assert_eq!(grant.argument_match, suggested.argument_match);

    // The grant works: the next write in the same folder runs without asking.
    llm.push(openai::CHAT_PATH, writes("telegram-2.txt"));
    llm.push(openai::CHAT_PATH, openai::text(&["Second file done."]));
    telegram.push_text(ME, "write another");
    telegram
        .wait_until("the second answer", |telegram| {
            telegram
                .messages(ME)
                .iter()
                .any(|sent| sent.text == "Second file done.")
                .then_some(())
        })
        .await;
    assert!(runtime.home().path().join("telegram-2.txt").exists());
    assert!(pending(&runtime).await.is_empty(), "nothing asked");
    let kept = handle.store().read(press_count).await.unwrap();
    assert_eq!(kept, 0, "the decided prompt's handles are gone");
    runtime.shutdown("test").await.unwrap();
}
