//! The Telegram channel end to end: the real runtime (fake OpenAI provider, real chats and
//! agents) and the real transport against the fake Bot API of `souz_testkit::telegram`.

use souz_testkit::telegram::{FakeTelegram, Sent};
use souz_testkit::{FakeServer, openai};

use super::replies;
use super::text::{MAX_MESSAGE_UNITS, split_message};
use crate::channels::store::audit_rows;
use crate::runtime::facade::{ChatUser, MessagePage};
use crate::testing::{TestHome, TestRuntime};

pub(super) const TOKEN: &str = "4242:fake-bot-token-for-tests";
pub(super) const ME: i64 = 7;
pub(super) const STRANGER: i64 = 8;

pub(super) async fn runtime(
    telegram: &FakeTelegram,
    llm: &FakeServer,
    home: TestHome,
) -> TestRuntime {
    runtime_with(telegram, llm, home, |_| {}).await
}

/// [`runtime`] with `configure` applied to its configuration too.
pub(super) async fn runtime_with(
    telegram: &FakeTelegram,
    llm: &FakeServer,
    home: TestHome,
    configure: impl FnOnce(&mut crate::config::Config) + Send + 'static,
) -> TestRuntime {
    let url = telegram.url().to_owned();
    let runtime = TestRuntime::builder()
        .with_llm(llm)
        .with_env("TELEGRAM_BOT_TOKEN", TOKEN)
        .with_config(move |config| {
            config.channels.telegram.enabled = true;
            config.channels.telegram.api_url = url;
            config.channels.telegram.poll_seconds = 1;
            config.channels.telegram.edit_interval_ms = 100;
            // One scripted answer per turn: no memory capture, no routing request.
            config.agent.default_agent = "skills".into();
            config.memory.capture = false;
            configure(config);
        })
        .start_in(home)
        .await;
    assert!(super::start(&runtime.handle()).await.unwrap());
    runtime
}

pub(super) async fn link(runtime: &TestRuntime, telegram: &FakeTelegram) {
    let code = runtime.handle().create_telegram_link_code().await.unwrap();
    let before = telegram.sent().len();
    telegram.push_text(ME, &code.command);
    let sent = telegram.wait_for_sent(before + 1).await;
    assert_eq!(sent[before].text, replies::LINKED.en);
}

#[tokio::test]
async fn a_code_links_one_account_strangers_are_refused_once_and_unlink_forgets() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    let handle = runtime.handle();
    let code = handle.create_telegram_link_code().await.unwrap();
    assert_eq!(code.command, format!("/start {}", code.code));

    telegram.push_text(ME, "/start WRONGCODE1");
    assert_eq!(
        telegram.wait_for_sent(1).await[0].text,
        replies::BAD_CODE.en
    );
    telegram.push_text(ME, "WRONGCODE2");
    assert_eq!(
        telegram.wait_for_sent(2).await[1].text,
        replies::BAD_CODE.en
    );
    telegram.push_text(ME, &code.code.to_lowercase());
    assert_eq!(telegram.wait_for_sent(3).await[2].text, replies::LINKED.en);
    let status = handle.telegram_status().await.unwrap();
    assert_eq!(status.linked.map(|account| account.user_id), Some(ME));
    assert!(
        handle.create_telegram_link_code().await.is_err(),
        "one account at a time"
    );

    telegram.push_text(STRANGER, &code.command);
    let refused = telegram.wait_for_sent(4).await;
    assert_eq!(
        (refused[3].chat_id, refused[3].text.as_str()),
        (STRANGER, replies::REFUSED.en)
    );
    let again = telegram.push_text(STRANGER, "please?");
    telegram.wait_for_confirmed(again).await;
    assert_eq!(telegram.sent().len(), 4, "a stranger is refused once");
    let rows = handle.store().read(audit_rows).await.unwrap();
    let my_rows: Vec<&str> = rows
        .iter()
        .filter(|(_, user)| *user == ME)
        .map(|(kind, _)| kind.as_str())
        .collect();
    assert_eq!(my_rows, ["code_rejected", "linked"], "one row per kind");
    let stranger_rows: Vec<&str> = rows
        .iter()
        .filter(|(_, user)| *user == STRANGER)
        .map(|(kind, _)| kind.as_str())
        .collect();
    assert_eq!(stranger_rows, ["refused"]);
    assert_eq!(
        llm.requests().len(),
        0,
        "linking and refusing start no turn"
    );

    let status = handle.unlink_telegram().await.unwrap();
    assert!(status.linked.is_none());
    telegram.push_text(ME, &code.command);
    assert_eq!(
        telegram.wait_for_sent(5).await[4].text,
        replies::BAD_CODE.en,
        "a code works once"
    );
    runtime.shutdown("test").await.unwrap();
}

/// Waits until the messages of `chat` show `expected` (texts, oldest first), and returns them.
pub(super) async fn wait_for_shown(
    telegram: &FakeTelegram,
    chat: i64,
    expected: &[&str],
) -> Vec<Sent> {
    telegram
        .wait_until(&format!("{chat} to show {expected:?}"), |telegram| {
            let shown = telegram.messages(chat);
            let texts: Vec<&str> = shown.iter().map(|sent| sent.text.as_str()).collect();
            (texts == expected).then(|| shown.clone())
        })
        .await
}

#[tokio::test]
async fn a_message_starts_a_turn_and_a_long_answer_comes_back_split_and_escaped() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let paragraph = |letter: &str| format!("{}_*[x](y)!.", letter.repeat(1990));
    let long = ["a", "b", "c", "d", "e"].map(paragraph).join("\n\n");
    assert!(long.chars().count() >= 10_000);
    llm.push(openai::CHAT_PATH, openai::text(&["Hello ", "from Souz."]));
    llm.push(openai::CHAT_PATH, openai::text(&[long.as_str()]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;

    telegram.push_text(ME, "hi");
    let shown = wait_for_shown(&telegram, ME, &[replies::LINKED.en, "Hello from Souz."]).await;
    assert_eq!(shown[1].parse_mode.as_deref(), Some("MarkdownV2"));

    telegram.push_text(ME, "and a long one");
    let chunks = split_message(&long, MAX_MESSAGE_UNITS);
    assert_eq!(chunks.len(), 3);
    let mut expected = vec![replies::LINKED.en, "Hello from Souz."];
    expected.extend(chunks.iter().map(String::as_str));
    let shown = wait_for_shown(&telegram, ME, &expected).await;
    let answer: Vec<&str> = shown[2..].iter().map(|sent| sent.text.as_str()).collect();
    assert_eq!(
        answer.join("\n\n"),
        long,
        "split on paragraphs, nothing lost"
    );
    assert!(
        answer
            .iter()
            .all(|chunk| chunk.encode_utf16().count() <= 4096)
    );
    assert_eq!(llm.requests_to(openai::CHAT_PATH).len(), 2);
    let first = llm.requests_to(openai::CHAT_PATH)[0].text();
    assert!(
        first.contains("hi"),
        "the turn got the Telegram message: {first}"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn updates_waiting_over_a_restart_are_each_handled_once() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    for answer in ["one", "two", "three"] {
        llm.push(openai::CHAT_PATH, openai::text(&[answer]));
    }
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;
    telegram.push_text(ME, "first");
    assert_eq!(telegram.wait_for_sent(2).await[1].text, "one");
    let home = runtime.shutdown_keeping_home("restart").await.unwrap();

    telegram.push_text(ME, "second");
    let third = telegram.push_text(ME, "third");
    let runtime = self::runtime(&telegram, &llm, home).await;
    telegram.wait_for_confirmed(third).await;
    // "third" steers the turn of "second" or waits for it, by timing: either way each answer
    // the model gave shows once, the last one last.
    telegram
        .wait_until("the second turn's answer", |telegram| {
            let shown = telegram.messages(ME);
            let last = shown
                .last()
                .map(|sent| sent.text.clone())
                .unwrap_or_default();
            (last == "two" || last == "three").then_some(())
        })
        .await;
    // Give a wrongly re-read update the time to show up.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(telegram.unconfirmed(), 0);
    let answers = ["one", "two", "three"];
    let requested = llm.requests_to(openai::CHAT_PATH).len();
    let shown: Vec<String> = telegram
        .messages(ME)
        .into_iter()
        .map(|sent| sent.text)
        .filter(|text| answers.contains(&text.as_str()))
        .collect();
    let mut unique = shown.clone();
    unique.dedup();
    assert_eq!(unique, shown, "no answer shown twice");
    assert_eq!(
        shown.last().map(String::as_str),
        Some(answers[requested - 1]),
        "{shown:?}"
    );
    let handle = runtime.handle();
    let chat = handle.telegram_state().await.unwrap().souz_chat.unwrap();
    let page = MessagePage {
        before: None,
        after: None,
        limit: 50,
    };
    let user = ChatUser(crate::LOCAL_USER.to_owned());
    let said: Vec<String> = handle
        .messages(&user, &chat, page)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|message| message.role == "user")
        .map(|message| message.content)
        .collect();
    // "third" came while the turn of "second" ran: it steered that turn (the skills agent).
    assert_eq!(
        said,
        ["first", "second", "third"],
        "each update handled once"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn rate_limits_are_waited_out_and_nothing_is_lost_or_doubled() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["after the storm"]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;

    telegram.fail_with_429("getUpdates", 1, 1);
    telegram.fail_with_429("sendMessage", 2, 1);
    let started = std::time::Instant::now();
    telegram.push_text(ME, "hello");
    let sent = telegram.wait_for_sent(2).await;
    assert_eq!(sent[1].text, "after the storm");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "each retry_after was waited"
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(telegram.sent().len(), 2, "sent once");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn idle_it_holds_one_long_poll_and_presses_are_answered_at_once() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let polls = telegram.calls("getUpdates");
    assert!(
        (1..=4).contains(&polls),
        "{polls} polls in 2.5 s of 1 s long polls"
    );

    let press = telegram.push_press(ME, "forged-handle");
    telegram.wait_for_confirmed(press).await;
    let answered = telegram.answered();
    assert_eq!(answered.len(), 1);
    assert!(telegram.sent().is_empty(), "a press changes nothing");
    assert_eq!(llm.requests().len(), 0);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_disabled_channel_or_one_without_a_token_does_not_start() {
    let runtime = TestRuntime::builder().start().await;
    assert!(!super::start(&runtime.handle()).await.unwrap());
    runtime.shutdown("test").await.unwrap();
    let runtime = TestRuntime::builder()
        .with_config(|config| config.channels.telegram.enabled = true)
        .start()
        .await;
    assert!(!super::start(&runtime.handle()).await.unwrap());
    let status = runtime.handle().telegram_status().await.unwrap();
    assert!(status.enabled && !status.token_configured);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn enabling_the_channel_and_setting_its_token_apply_without_a_restart() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["Live now."]));
    let section = |enabled: bool| {
        format!(
            "[llm]\nopenai_base_url = \"{}/v1\"\n\n[agent]\ndefault_agent = \"skills\"\n\n\
             [memory]\ncapture = false\n\n[channels.telegram]\nenabled = {enabled}\n\
             api_url = \"{}\"\npoll_seconds = 1\nedit_interval_ms = 100\n",
            llm.url(),
            telegram.url()
        )
    };
    let url = telegram.url().to_owned();
    let runtime = TestRuntime::builder()
        .with_llm(&llm)
        .with_config(move |config| {
            config.channels.telegram.api_url = url;
            config.channels.telegram.poll_seconds = 1;
            config.channels.telegram.edit_interval_ms = 100;
            config.agent.default_agent = "skills".into();
            config.memory.capture = false;
        })
        .start()
        .await;
    let handle = runtime.handle();
    // The file says what the runtime runs with, the channel off.
    handle.replace_config(section(false), None).await.unwrap();
    assert!(!super::start(&handle).await.unwrap());

    let saved = handle.replace_config(section(true), None).await.unwrap();
    assert!(
        saved.applied.contains(&"channels.telegram".to_owned()),
        "{saved:?}"
    );
    assert!(handle.telegram_status().await.unwrap().enabled);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(telegram.calls("getUpdates"), 0, "no token yet: no polling");

    handle.set_service_key("telegram", TOKEN).await.unwrap();
    link(&runtime, &telegram).await;
    telegram.push_text(ME, "hi");
    wait_for_shown(&telegram, ME, &[replies::LINKED.en, "Live now."]).await;

    handle.delete_service_key("telegram").await.unwrap();
    // The poll stops: give a running long poll its second to end, then nothing more.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let polls = telegram.calls("getUpdates");
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_eq!(
        telegram.calls("getUpdates"),
        polls,
        "the channel stopped polling"
    );
    let stray = telegram.push_text(ME, "anyone?");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(telegram.unconfirmed(), 1, "update {stray} was not taken");
    runtime.shutdown("test").await.unwrap();
}
