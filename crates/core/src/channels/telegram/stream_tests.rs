//! Streamed answers against the fake Bot API: a long answer streamed in many deltas ends as
//! its exact split, with throttled edits; a 429 storm loses and doubles nothing; thrown-away
//! text is deleted and a shorter final answer leaves no message behind.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use souz_testkit::telegram::FakeTelegram;
use souz_testkit::{FakeServer, Reply, openai};
use tokio::sync::watch;

use super::Channel;
use super::api::BotApi;
use super::replies;
use super::stream::{self, Draft, Ending};
use super::tests::{ME, TOKEN, link, runtime_with, wait_for_shown};
use super::text::{MAX_MESSAGE_UNITS, split_message};
use crate::testing::{TestHome, TestRuntime};

/// A 10,000-character answer of paragraphs of uneven length, with every `MarkdownV2` special
/// character and text outside the BMP.
fn long_answer() -> String {
    let mut paragraphs = Vec::new();
    let mut length = 0;
    for index in 0.. {
        let words = 40 + (index * 37) % 120;
        let paragraph = (0..words)
            .map(|word| match word % 7 {
                0 => "_*[x](y)~`>#+-=|{}.!\\",
                1 => "привет",
                2 => "😀ok",
                _ => "word",
            })
            .collect::<Vec<_>>()
            .join(" ");
        length += paragraph.chars().count() + 2;
        paragraphs.push(paragraph);
        if length >= 10_000 {
            break;
        }
    }
    paragraphs.join("\n\n")
}

/// `text` streamed in pieces of `size` characters, one every `every`.
fn paced(text: &str, size: usize, every: Duration) -> (Reply, usize) {
    let characters: Vec<char> = text.chars().collect();
    let pieces: Vec<String> = characters
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect();
    let mut sse = Reply::sse()
        .data(openai::chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        ))
        .delay(every);
    for piece in &pieces {
        sse = sse.data(openai::chunk(json!({"content": piece}), None));
    }
    let reply = sse
        .delay(Duration::ZERO)
        .data(openai::chunk(json!({}), Some("stop")))
        .data(openai::usage_chunk(10, pieces.len() as u64, 0))
        .data("[DONE]")
        .end();
    (reply, pieces.len())
}

async fn started(telegram: &FakeTelegram, llm: &FakeServer, interval_ms: u64) -> TestRuntime {
    let runtime = runtime_with(telegram, llm, TestHome::new(), move |config| {
        config.channels.telegram.edit_interval_ms = interval_ms;
    })
    .await;
    link(&runtime, telegram).await;
    runtime
}

/// What the linked chat should show after the link: the link reply, then `answer` split.
fn expected(answer: &str) -> Vec<String> {
    let mut expected = vec![replies::LINKED.en.to_owned()];
    expected.extend(split_message(answer, MAX_MESSAGE_UNITS));
    expected
}

#[tokio::test]
async fn a_long_answer_streams_into_throttled_edits_and_ends_as_its_exact_split() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let answer = long_answer();
    assert!(answer.chars().count() >= 10_000);
    let (reply, deltas) = paced(&answer, 40, Duration::from_millis(8));
    assert!(deltas >= 250, "{deltas} deltas");
    llm.push(openai::CHAT_PATH, reply);
    let interval = Duration::from_millis(250);
    let runtime = started(&telegram, &llm, 250).await;
    let before = telegram.writes().len();

    telegram.push_text(ME, "tell me everything");
    let expected = expected(&answer);
    assert_eq!(expected.len(), 4, "three messages of answer");
    let wanted: Vec<&str> = expected.iter().map(String::as_str).collect();
    let shown = wait_for_shown(&telegram, ME, &wanted).await;
    let texts: Vec<&str> = shown[1..].iter().map(|sent| sent.text.as_str()).collect();
    assert_eq!(texts.join("\n\n"), answer, "the split, nothing lost");
    // Give a late or doubled request the time to show up.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        telegram.messages(ME),
        shown,
        "nothing changed after the end"
    );

    let writes = telegram.writes().split_off(before);
    let sends = writes.iter().filter(|w| w.method == "sendMessage").count();
    let edits = writes
        .iter()
        .filter(|w| w.method == "editMessageText")
        .count();
    assert_eq!(sends, 3, "one message per part: {writes:?}");
    assert!(edits >= 1, "the answer was edited as it grew: {writes:?}");
    assert!(
        sends + edits < deltas / 5,
        "{sends} sends and {edits} edits for {deltas} deltas"
    );
    let mut last: HashMap<i64, tokio::time::Instant> = HashMap::new();
    for write in &writes {
        if let Some(previous) = last.insert(write.message_id, write.at) {
            let gap = write.at - previous;
            assert!(
                gap >= interval,
                "message {} written again after {gap:?}",
                write.message_id
            );
        }
    }
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_429_storm_while_streaming_loses_nothing_and_doubles_nothing() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let answer = long_answer();
    let (reply, _) = paced(&answer, 40, Duration::from_millis(10));
    llm.push(openai::CHAT_PATH, reply);
    let runtime = started(&telegram, &llm, 100).await;
    let before = telegram.sent().len();

    telegram.push_text(ME, "tell me everything");
    // The storm breaks once the answer's first message is out, while it streams.
    telegram
        .wait_until("the answer's first message", |telegram| {
            (telegram.messages(ME).len() >= 2).then_some(())
        })
        .await;
    telegram.fail_with_429("editMessageText", 3, 1);
    telegram.fail_with_429("sendMessage", 2, 1);
    let storm = std::time::Instant::now();
    let expected = expected(&answer);
    let wanted: Vec<&str> = expected.iter().map(String::as_str).collect();
    wait_for_shown(&telegram, ME, &wanted).await;
    assert!(
        storm.elapsed() >= Duration::from_secs(5),
        "each retry_after was waited, one after the other"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sent = telegram.sent().split_off(before);
    assert_eq!(sent.len(), 3, "each part sent once: {sent:?}");
    assert_eq!(telegram.messages(ME).len(), 4, "no message doubled");
    assert_eq!(telegram.calls("deleteMessage"), 0);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn thrown_away_text_is_deleted_and_a_shorter_final_answer_leaves_nothing_behind() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let runtime = TestRuntime::builder().start().await;
    let handle = runtime.handle();
    let channel = Arc::new(Channel {
        handle: handle.clone(),
        api: BotApi::new(telegram.url(), TOKEN, 1).unwrap(),
        poll_seconds: 1,
        edit_interval: Duration::from_millis(50),
        downloads: Arc::new(tokio::sync::Semaphore::new(1)),
        shutdown: handle.shutdown_signal(),
    });
    let (draft, receiver) = watch::channel(Draft::default());
    handle.spawn(stream::run(channel, ME, receiver));

    draft.send_modify(|draft| draft.push(1, "Let me look."));
    wait_for_shown(&telegram, ME, &["Let me look."]).await;
    draft.send_modify(|draft| draft.push(2, "A thought thrown away."));
    wait_for_shown(&telegram, ME, &["Let me look.", "A thought thrown away."]).await;
    draft.send_modify(|draft| draft.discard(2));
    wait_for_shown(&telegram, ME, &["Let me look."]).await;

    let long = format!("{}\n\n{}", "a".repeat(3000), "b".repeat(3000));
    draft.send_modify(|draft| draft.push(3, &long));
    let a = "a".repeat(3000);
    let b = "b".repeat(3000);
    wait_for_shown(&telegram, ME, &["Let me look.", &a, &b]).await;
    draft.send_modify(|draft| draft.end(Ending::answered("In short: done.".into(), "Done.")));
    drop(draft);
    wait_for_shown(&telegram, ME, &["Let me look.", "In short: done."]).await;
    assert_eq!(telegram.calls("deleteMessage"), 2);

    // Telegram's "message is not modified" is a success.
    let api = BotApi::new(telegram.url(), TOKEN, 1).unwrap();
    let shown = telegram.messages(ME);
    let id = i32::try_from(shown[1].message_id).unwrap();
    api.edit(ME, id, "In short: done\\.").await.unwrap();
    runtime.shutdown("test").await.unwrap();
}
