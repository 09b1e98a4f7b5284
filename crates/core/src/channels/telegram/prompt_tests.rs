//! Approval prompts end to end against the fake Bot API: a decision made in Souz, a press in
//! Telegram and an expiry each edit the prompt to say so and remove its buttons (a later press
//! on an old handle changes nothing); a scheduled run that parks asks the linked account, and a
//! press there lets it go on; the bot speaks the interface language.

use std::time::Duration;

use souz_protocol::chat::SettingsPatch;
use souz_protocol::schedules::RunState;
use souz_protocol::{ApprovalStatus, DecisionRequest, ScopeKind, Verdict};
use souz_testkit::telegram::{FakeTelegram, Sent};
use souz_testkit::{FakeServer, openai};

use super::approval_tests::{asked, pending, writes};
use super::replies::{self, outcome, press};
use super::tests::{ME, TOKEN, link, runtime, runtime_with};
use crate::chat::ChatUser;
use crate::runtime::facade::Audience;
use crate::testing::{TestHome, run_prompt_now};

fn local() -> ChatUser {
    ChatUser(crate::LOCAL_USER.to_owned())
}

/// Waits until message `message_id` of the linked chat reads `text` with no buttons left.
async fn wait_closed(telegram: &FakeTelegram, message_id: i64, text: &str) -> Sent {
    telegram
        .wait_until(
            &format!("message {message_id} to read {text:?}"),
            |telegram| {
                telegram
                    .messages(ME)
                    .into_iter()
                    .find(|sent| sent.message_id == message_id)
                    .filter(|sent| sent.text == text && sent.buttons.is_empty())
            },
        )
        .await
}

#[tokio::test]
async fn a_decision_in_souz_closes_the_prompt_and_an_old_press_changes_nothing() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, approve, _) = asked(&telegram, &llm).await;
    let prompt = telegram.sent()[1].clone();
    assert_eq!(prompt.labels, ["Approve", "Deny", "Allow as suggested"]);
    let id = pending(&runtime).await.remove(0);
    let request = DecisionRequest {
        decision: Verdict::Approve,
        scope: ScopeKind::Once,
        minutes: None,
        argument_match: None,
        tool_group: None,
        via: Some("ui".into()),
    };
    let handle = runtime.handle();
    handle
        .decide_approval(&id, request, &Audience::Everyone)
        .await
        .unwrap();

    let closed = format!("{}\n\n{}", prompt.text, outcome::APPROVED.en);
    wait_closed(&telegram, prompt.message_id, &closed).await;
    let edit = telegram.edits().last().cloned().unwrap();
    assert_eq!(
        (edit.message_id, edit.text.as_str()),
        (prompt.message_id, closed.as_str())
    );
    assert!(edit.buttons.is_empty(), "the keyboard is gone");
    let file = runtime.home().path().join("telegram.txt");
    telegram
        .wait_until("the answer after the call", |telegram| {
            telegram
                .messages(ME)
                .iter()
                .any(|sent| sent.text == "Done with the file.")
                .then_some(())
        })
        .await;
    assert!(file.exists(), "approved in Souz: the call ran");

    let edits = telegram.edits().len();
    telegram.push_press(ME, &approve);
    assert_eq!(
        telegram.wait_for_answered(1).await[0].1,
        press::ALREADY_DECIDED.en
    );
    let approval = handle.approval(&id).await.unwrap();
    assert_eq!(approval.status, ApprovalStatus::Approved);
    assert_eq!(
        approval.decision.map(|decision| decision.via),
        Some("ui".into())
    );
    assert_eq!(telegram.edits().len(), edits, "the press changed nothing");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_press_in_telegram_closes_the_prompt_with_what_it_did() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, _, deny) = asked(&telegram, &llm).await;
    let prompt = telegram.sent()[1].clone();
    telegram.push_press(ME, &deny);
    assert_eq!(telegram.wait_for_answered(1).await[0].1, press::DENIED.en);
    let closed = format!("{}\n\n{}", prompt.text, outcome::DENIED_HERE.en);
    wait_closed(&telegram, prompt.message_id, &closed).await;
    assert!(!runtime.home().path().join("telegram.txt").exists());
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn an_expired_approval_closes_its_prompt() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, writes("late.txt"));
    llm.push(openai::CHAT_PATH, openai::text(&["Not written."]));
    let runtime = runtime_with(&telegram, &llm, TestHome::new(), |config| {
        config.approvals.timeout_seconds = 5;
    })
    .await;
    link(&runtime, &telegram).await;
    telegram.push_text(ME, "write late.txt");
    let sent = telegram.wait_for_sent(2).await;
    let prompt = sent[1].clone();
    assert_eq!(prompt.buttons.len(), 3);
    let closed = format!("{}\n\n{}", prompt.text, outcome::EXPIRED.en);
    wait_closed(&telegram, prompt.message_id, &closed).await;
    telegram.push_press(ME, &prompt.buttons[0]);
    assert_eq!(telegram.wait_for_answered(1).await[0].1, press::EXPIRED.en);
    assert!(!runtime.home().path().join("late.txt").exists());
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_parked_scheduled_run_asks_in_telegram_and_goes_on_when_approved_there() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, writes("report.txt"));
    llm.push(openai::CHAT_PATH, openai::text(&["Report written."]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;
    let handle = runtime.handle();
    let (schedule_id, run) =
        run_prompt_now(&handle, "Morning report", "Write the morning report.", None).await;

    let sent = telegram.wait_for_sent(2).await;
    let prompt = sent[1].clone();
    assert!(
        prompt
            .text
            .starts_with("The scheduled run 'Morning report' waits for you. Souz asks to run"),
        "{prompt:?}"
    );
    assert_eq!(prompt.labels, ["Approve", "Deny", "Allow as suggested"]);
    let waiting = pending(&runtime).await;
    assert_eq!(waiting.len(), 1);
    let approval = handle.approval(&waiting[0]).await.unwrap();
    assert_eq!(
        approval.parked.map(|parked| parked.run_id),
        Some(run.id),
        "the run is parked on the approval the prompt is about"
    );
    assert!(!runtime.home().path().join("report.txt").exists());

    telegram.push_press(ME, &prompt.buttons[0]);
    assert_eq!(telegram.wait_for_answered(1).await[0].1, press::APPROVED.en);
    let closed = format!("{}\n\n{}", prompt.text, outcome::APPROVED_HERE.en);
    wait_closed(&telegram, prompt.message_id, &closed).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let runs = handle
            .schedule_runs(&local(), &schedule_id, 10)
            .await
            .unwrap();
        let state = runs
            .items
            .iter()
            .find(|item| item.id == run.id)
            .map(|item| item.state);
        if state == Some(RunState::Ok) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run stayed {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        runtime.home().path().join("report.txt").exists(),
        "approved from Telegram: the parked call ran"
    );
    assert!(
        telegram
            .sent()
            .iter()
            .all(|sent| sent.text != "Report written."),
        "the run's own chat is not the linked one: its answer stays in Souz"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn the_bot_speaks_the_interface_language() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, writes("ru.txt"));
    llm.push(openai::CHAT_PATH, openai::text(&["Готово с файлом."]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    let handle = runtime.handle();
    let patch = SettingsPatch {
        interface_language: Some("ru".into()),
        ..SettingsPatch::default()
    };
    handle.patch_settings(&local(), patch).await.unwrap();

    let code = handle.create_telegram_link_code().await.unwrap();
    telegram.push_text(ME, &code.command);
    assert_eq!(telegram.wait_for_sent(1).await[0].text, replies::LINKED.ru);
    telegram.push_text(ME, "запиши ru.txt");
    let prompt = telegram.wait_for_sent(2).await[1].clone();
    assert!(
        prompt.text.starts_with("Souz просит разрешения на"),
        "{prompt:?}"
    );
    assert_eq!(
        prompt.labels,
        ["Разрешить", "Запретить", "Разрешить, как предложено"]
    );
    assert!(
        prompt.text.contains("«Разрешить, как предложено»: "),
        "{prompt:?}"
    );
    telegram.push_press(ME, &prompt.buttons[0]);
    assert_eq!(telegram.wait_for_answered(1).await[0].1, press::APPROVED.ru);
    let closed = format!("{}\n\n{}", prompt.text, outcome::APPROVED_HERE.ru);
    wait_closed(&telegram, prompt.message_id, &closed).await;
    runtime.shutdown("test").await.unwrap();
}
