//! The Telegram channel end to end: the real runtime (fake OpenAI provider, real chats and
//! agents) and the real transport against the fake Bot API of `souz_testkit::telegram`.

use souz_testkit::telegram::FakeTelegram;
use souz_testkit::{FakeServer, openai};

use super::inbound::replies;
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
    let url = telegram.url().to_owned();
    let runtime = TestRuntime::builder()
        .with_llm(llm)
        .with_env("TELEGRAM_BOT_TOKEN", TOKEN)
        .with_config(move |config| {
            config.channels.telegram.enabled = true;
            config.channels.telegram.api_url = url;
            config.channels.telegram.poll_seconds = 1;
            // One scripted answer per turn: no memory capture, no routing request.
            config.agent.default_agent = "skills".into();
            config.memory.capture = false;
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
    assert_eq!(sent[before].text, replies::LINKED);
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
    assert_eq!(telegram.wait_for_sent(1).await[0].text, replies::BAD_CODE);
    telegram.push_text(ME, "WRONGCODE2");
    assert_eq!(telegram.wait_for_sent(2).await[1].text, replies::BAD_CODE);
    telegram.push_text(ME, &code.code.to_lowercase());
    assert_eq!(telegram.wait_for_sent(3).await[2].text, replies::LINKED);
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
        (STRANGER, replies::REFUSED)
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
        replies::BAD_CODE,
        "a code works once"
    );
    runtime.shutdown("test").await.unwrap();
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
    let sent = telegram.wait_for_sent(2).await;
    assert_eq!(sent[1].text, "Hello from Souz.");
    assert_eq!(sent[1].parse_mode.as_deref(), Some("MarkdownV2"));

    telegram.push_text(ME, "and a long one");
    let sent = telegram.wait_for_sent(5).await;
    let chunks: Vec<&str> = sent[2..].iter().map(|sent| sent.text.as_str()).collect();
    assert_eq!(
        chunks.len(),
        3,
        "{:?}",
        chunks.iter().map(|c| c.len()).collect::<Vec<_>>()
    );
    assert_eq!(
        chunks.join("\n\n"),
        long,
        "split on paragraphs, nothing lost"
    );
    assert!(
        chunks
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
    let sent = telegram.wait_for_sent(3).await;
    assert_eq!(sent[2].text, "two");
    // Give a wrongly re-read update the time to show up.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(telegram.unconfirmed(), 0);
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
