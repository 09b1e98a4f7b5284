//! The channel tools over the running Telegram channel, through the real gate: the linked
//! account is listed; a send asks first, and only an approval sends it (through the fake Bot
//! API); without a linked account both tools answer a clear error; from the Telegram chat
//! itself, the Approve button sends it.

use std::time::Duration;

use serde_json::json;
use souz_protocol::approvals::{DecisionRequest, Verdict};
use souz_protocol::{Requester, ToolCallStatus};
use souz_testkit::telegram::FakeTelegram;
use souz_testkit::{FakeServer, openai};

use super::tests::{ME, TOKEN, link, runtime};
use crate::runtime::facade::Audience;
use crate::testing::{TestHome, TestRuntime};
use crate::tools::gate::{CallHandle, CallRequest, CallState};

const WAIT: Duration = Duration::from_secs(30);

async fn call(runtime: &TestRuntime, tool: &str, arguments: serde_json::Value) -> CallHandle {
    runtime
        .handle()
        .start_call(CallRequest {
            tool: tool.to_owned(),
            arguments,
            requester: Requester::Cli,
        })
        .await
        .unwrap()
}

fn send_arguments(channel_id: &str, text: &str) -> serde_json::Value {
    json!({"channelType": "telegram", "channelId": channel_id, "text": text})
}

fn decision(verdict: Verdict) -> DecisionRequest {
    DecisionRequest {
        decision: verdict,
        scope: Default::default(),
        minutes: None,
        argument_match: None,
        tool_group: None,
        via: Some("test".into()),
    }
}

/// Waits for the call to ask, checks it sent nothing yet, decides `verdict`; the call's end.
async fn decide(
    runtime: &TestRuntime,
    telegram: &FakeTelegram,
    mut call: CallHandle,
    verdict: Verdict,
) -> CallState {
    let asked = call.settled().await;
    assert_eq!(asked.status, ToolCallStatus::WaitingApproval, "{asked:?}");
    let summary = asked.summary.clone().unwrap_or_default();
    assert!(
        summary.starts_with("Send a message to Telegram @user7"),
        "{summary}"
    );
    let sent_before = telegram.sent().len();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(telegram.sent().len(), sent_before, "nothing sent before");
    let approval = asked.approval_id.unwrap();
    runtime
        .handle()
        .decide_approval(&approval, decision(verdict), &Audience::Everyone)
        .await
        .unwrap();
    call.wait_for(WAIT).await
}

#[tokio::test]
async fn the_linked_account_is_listed_and_a_send_goes_out_only_when_approved() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;

    let listed = call(&runtime, "ListActiveChannels", json!({}))
        .await
        .wait_for(WAIT)
        .await;
    assert_eq!(listed.status, ToolCallStatus::Succeeded, "{listed:?}");
    assert!(listed.approval_id.is_none(), "listing is read-only");
    let channels = listed.result.unwrap().structured.unwrap();
    assert_eq!(
        channels,
        json!({"channels": [{"channelType": "telegram", "channelId": ME.to_string(),
                             "label": "Telegram @user7"}]})
    );

    let sent = call(
        &runtime,
        "SendMessageToChannel",
        send_arguments(&ME.to_string(), "The build is green_*!"),
    )
    .await;
    let done = decide(&runtime, &telegram, sent, Verdict::Approve).await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    let received = telegram.wait_for_sent(2).await;
    assert_eq!(
        (received[1].chat_id, received[1].text.as_str()),
        (ME, "The build is green_*!")
    );

    let denied = call(
        &runtime,
        "SendMessageToChannel",
        send_arguments(&ME.to_string(), "never sent"),
    )
    .await;
    let done = decide(&runtime, &telegram, denied, Verdict::Deny).await;
    assert_eq!(done.status, ToolCallStatus::Denied, "{done:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(telegram.sent().len(), 2, "a denied send sends nothing");

    let elsewhere = call(
        &runtime,
        "SendMessageToChannel",
        send_arguments("12345", "to a chat that is not linked"),
    )
    .await
    .wait_for(WAIT)
    .await;
    assert_eq!(elsewhere.status, ToolCallStatus::Failed, "{elsewhere:?}");
    assert!(elsewhere.approval_id.is_none(), "refused before asking");
    assert!(
        elsewhere
            .result
            .unwrap()
            .text
            .contains("no active channel telegram/12345")
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn without_a_linked_account_both_tools_say_so_and_nothing_is_sent() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    for (tool, arguments) in [
        ("ListActiveChannels", json!({})),
        ("SendMessageToChannel", send_arguments("7", "hello")),
    ] {
        let state = call(&runtime, tool, arguments).await.wait_for(WAIT).await;
        assert_eq!(state.status, ToolCallStatus::Failed, "{tool}: {state:?}");
        assert!(state.approval_id.is_none(), "{tool} asked nobody");
        let text = state.result.unwrap().text;
        assert!(
            text.contains("No messaging channel is linked") && text.contains("telegram link"),
            "{tool}: {text}"
        );
    }
    assert!(telegram.sent().is_empty());
    runtime.shutdown("test").await.unwrap();

    // No channel running at all (Telegram not enabled): the same answer.
    let runtime = TestRuntime::builder().start().await;
    let state = call(&runtime, "ListActiveChannels", json!({}))
        .await
        .wait_for(WAIT)
        .await;
    assert_eq!(state.status, ToolCallStatus::Failed, "{state:?}");
    assert!(
        state
            .result
            .unwrap()
            .text
            .contains("No messaging channel is linked")
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn an_agent_in_the_telegram_chat_sends_once_its_approve_button_is_pressed() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let arguments = json!({
        "skillId": "SendMessageToChannel",
        "arguments": send_arguments(&ME.to_string(), "Reminder: water the plants"),
    });
    llm.push(
        openai::CHAT_PATH,
        openai::tool_calls(&[("s1", "RunSkillCommand", &arguments.to_string())], 2),
    );
    llm.push(openai::CHAT_PATH, openai::text(&["Sent."]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;
    telegram.push_text(ME, "remind me to water the plants");
    let sent = telegram.wait_for_sent(2).await;
    assert!(
        sent[1]
            .text
            .starts_with("Souz asks to run SendMessageToChannel"),
        "{:?}",
        sent[1]
    );
    let approve = sent[1].buttons[0].clone();
    telegram.push_press(ME, &approve);
    assert_eq!(telegram.wait_for_answered(1).await[0].1, "Approved.");
    let sent = telegram.wait_for_sent(4).await;
    assert_eq!(sent[2].text, "Reminder: water the plants");
    assert_eq!(sent[3].text, "Sent.");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_delivered_message_is_recorded_in_the_chat_the_account_talks_in() {
    use crate::runtime::facade::{ChatUser, MessagePage};
    use souz_protocol::chat::ChatEventBody;

    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["Hello from Souz."]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;
    telegram.push_text(ME, "hi");
    assert_eq!(telegram.wait_for_sent(2).await[1].text, "Hello from Souz.");
    let handle = runtime.handle();
    let chat = handle.telegram_state().await.unwrap().souz_chat.unwrap();
    let mut events = handle.subscribe_chat_events();

    let sent = call(
        &runtime,
        "SendMessageToChannel",
        send_arguments(&ME.to_string(), "The build is green."),
    )
    .await;
    let done = decide(&runtime, &telegram, sent, Verdict::Approve).await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert_eq!(
        telegram.wait_for_sent(3).await[2].text,
        "The build is green."
    );

    let user = ChatUser(crate::LOCAL_USER.to_owned());
    let page = MessagePage {
        before: None,
        after: None,
        limit: 50,
    };
    let messages = handle.messages(&user, &chat, page).await.unwrap().items;
    let last = messages.last().unwrap();
    assert_eq!(
        (last.role.as_str(), last.content.as_str()),
        ("assistant", "The build is green.")
    );
    assert_eq!(
        last.metadata.get("crossChannel").map(String::as_str),
        Some("true"),
        "{last:?}"
    );
    let created = tokio::time::timeout(WAIT, async {
        loop {
            let event = events.recv().await.unwrap();
            if let ChatEventBody::MessageCreated(created) = &event.body
                && created.content == "The build is green."
            {
                return event;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(created.chat_id, chat);
    assert!(created.execution_id.is_none(), "it belongs to no turn");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        telegram.sent().len(),
        3,
        "the recorded message is not sent again"
    );
    runtime.shutdown("test").await.unwrap();
}

/// How many times `text` is in the messages of the model request `request`.
/// Waits until no turn is running: the answer is sent before its turn has ended, and a
/// message arriving in between is queued for after it, not a turn of its own.
async fn turns_ended(runtime: &TestRuntime) {
    let user = crate::runtime::facade::ChatUser(crate::LOCAL_USER.to_owned());
    for _ in 0..400 {
        if runtime
            .handle()
            .active_turns(&user)
            .await
            .unwrap()
            .is_empty()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("a turn did not end");
}

fn times_in_request(request: &souz_testkit::CapturedRequest, text: &str) -> usize {
    request.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| {
            message["content"]
                .as_str()
                .is_some_and(|content| content.contains(text))
        })
        .count()
}

#[tokio::test]
async fn the_next_turn_in_that_chat_is_told_what_was_delivered_once() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["Hello from Souz."]));
    llm.push(
        openai::CHAT_PATH,
        openai::text(&["I told you the build is green."]),
    );
    llm.push(openai::CHAT_PATH, openai::text(&["Still green."]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;
    telegram.push_text(ME, "hi");
    assert_eq!(telegram.wait_for_sent(2).await[1].text, "Hello from Souz.");
    turns_ended(&runtime).await;

    // Sent from outside the Telegram chat's turns (the CLI here, another chat in life).
    let sent = call(
        &runtime,
        "SendMessageToChannel",
        send_arguments(&ME.to_string(), "The build is green."),
    )
    .await;
    let done = decide(&runtime, &telegram, sent, Verdict::Approve).await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    telegram.wait_for_sent(3).await;

    telegram.push_text(ME, "what did you send me?");
    assert_eq!(
        telegram.wait_for_sent(4).await[3].text,
        "I told you the build is green."
    );
    turns_ended(&runtime).await;
    telegram.push_text(ME, "and now?");
    assert_eq!(telegram.wait_for_sent(5).await[4].text, "Still green.");

    let requests = llm.requests_to(openai::CHAT_PATH);
    assert_eq!(requests.len(), 3, "one model request per turn");
    let note = "Delivered to the person through telegram";
    assert_eq!(times_in_request(&requests[0], "The build is green."), 0);
    assert_eq!(
        times_in_request(&requests[1], "The build is green."),
        1,
        "the turn after the delivery is told: {}",
        requests[1].text()
    );
    assert_eq!(times_in_request(&requests[1], note), 1);
    let messages = requests[1].json()["messages"].as_array().unwrap().clone();
    let told = messages
        .iter()
        .position(|message| {
            message["content"]
                .as_str()
                .is_some_and(|text| text.contains(note))
        })
        .unwrap();
    assert_eq!(messages[told]["role"], "assistant");
    assert!(
        messages[told + 1..].iter().any(|message| message["content"]
            .as_str()
            .is_some_and(|text| text.contains("what did you send me?"))),
        "told before the person's input: {messages:?}"
    );
    assert_eq!(
        times_in_request(&requests[2], note),
        1,
        "the conversation keeps it, once: {}",
        requests[2].text()
    );
    runtime.shutdown("test").await.unwrap();
}
