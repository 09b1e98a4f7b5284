//! Photos and documents from the linked account, against the fake Bot API's `getFile` and file
//! downloads: a photo with a caption starts a turn whose input carries it as an image; a file
//! announced over the cap is refused before any download; a file bigger than announced is cut
//! off at the cap and refused; kinds Souz does not take are refused. A refusal is a reply, and
//! nothing is stored.

use std::time::{Duration, Instant};

use base64::Engine;
use souz_protocol::chat::AttachmentKind;
use souz_testkit::telegram::FakeTelegram;
use souz_testkit::{FakeServer, openai};

use super::files::Refusal;
use super::tests::{ME, TOKEN, link, runtime_with};
use crate::config::ByteSize;
use crate::runtime::facade::{ChatUser, MessagePage};
use crate::testing::{TestHome, TestRuntime};

/// The upload limit of these tests (`[server] body_limit`).
const LIMIT: u64 = 64 * 1024;

async fn small_limit(telegram: &FakeTelegram, llm: &FakeServer) -> TestRuntime {
    let runtime = runtime_with(telegram, llm, TestHome::new(), |config| {
        config.server.body_limit = ByteSize(LIMIT);
    })
    .await;
    link(&runtime, telegram).await;
    runtime
}

/// Every file under the upload folder.
fn uploads(runtime: &TestRuntime) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![runtime.home().path().join("Documents/souz/attachments")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// The user messages of the linked account's chat.
async fn user_messages(runtime: &TestRuntime) -> Vec<souz_protocol::chat::Message> {
    let handle = runtime.handle();
    let Some(chat) = handle.telegram_state().await.unwrap().souz_chat else {
        return Vec::new();
    };
    let page = MessagePage {
        before: None,
        after: None,
        limit: 50,
    };
    let user = ChatUser(crate::LOCAL_USER.to_owned());
    handle
        .messages(&user, &chat, page)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|message| message.role == "user")
        .collect()
}

#[tokio::test]
async fn a_photo_with_a_caption_starts_a_turn_whose_input_carries_the_image() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["A red square."]));
    let runtime = small_limit(&telegram, &llm).await;
    let thumbnail = telegram.add_file(vec![1; 100], Some(100));
    let photo: Vec<u8> = (0..20_000).map(|i| (i % 251) as u8).collect();
    let large = telegram.add_file(photo.clone(), Some(photo.len() as u64));
    // Telegram's largest size over the cap is passed over for the largest within it.
    let too_large = telegram.add_file(vec![2; 100_000], Some(100_000));
    telegram.push_photo(ME, &[&thumbnail, &large, &too_large], Some("What is this?"));

    let sent = telegram.wait_for_sent(2).await;
    assert_eq!(sent[1].text, "A red square.");
    assert_eq!(telegram.downloads(), 1, "one size fetched");
    let request = llm.requests_to(openai::CHAT_PATH)[0].text();
    assert!(request.contains("What is this?"), "{request}");
    let encoded = base64::engine::general_purpose::STANDARD.encode(&photo);
    assert!(
        request.contains(&encoded),
        "the model got the photo as an image"
    );
    let messages = user_messages(&runtime).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].content, "What is this?");
    let attachment = &messages[0].attachments[0];
    assert_eq!(attachment.kind, AttachmentKind::Image);
    assert_eq!(attachment.size, photo.len() as u64);
    let stored = uploads(&runtime);
    assert_eq!(stored.len(), 1);
    assert_eq!(std::fs::read(&stored[0]).unwrap(), photo);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn files_over_the_cap_and_kinds_souz_does_not_take_are_refused_with_a_reply() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let runtime = small_limit(&telegram, &llm).await;
    let too_large = Refusal::TooLarge("64 KiB".to_owned()).to_string();

    let announced = telegram.add_file(vec![3; 100_000], Some(100_000));
    telegram.push_document(ME, &announced, "big.pdf", Some("read this"));
    assert_eq!(telegram.wait_for_sent(2).await[1].text, too_large);
    assert_eq!(telegram.downloads(), 0, "refused before any download");

    // The fake announces 1,000 bytes and sends 200,000: the download stops at the cap.
    let lying = telegram.add_file(vec![4; 200_000], Some(1_000));
    telegram.push_document(ME, &lying, "small.txt", None);
    assert_eq!(telegram.wait_for_sent(3).await[2].text, too_large);
    assert_eq!(telegram.downloads(), 1);

    telegram.push_private(
        ME,
        serde_json::json!({"voice": {"file_id": "v", "file_unique_id": "uv", "duration": 2}}),
    );
    assert_eq!(
        telegram.wait_for_sent(4).await[3].text,
        Refusal::Unsupported("a voice message").to_string()
    );
    assert_eq!(telegram.downloads(), 1);

    assert!(uploads(&runtime).is_empty(), "nothing stored");
    assert!(user_messages(&runtime).await.is_empty(), "no input");
    assert!(llm.requests().is_empty(), "no turn");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_document_becomes_a_file_attachment_named_plainly() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["Noted."]));
    let runtime = small_limit(&telegram, &llm).await;
    // No size announced: the download is bounded anyway.
    let notes = telegram.add_file(b"milk\neggs\n".to_vec(), None);
    telegram.push_document(ME, &notes, "../shopping.txt", None);
    assert_eq!(telegram.wait_for_sent(2).await[1].text, "Noted.");
    let messages = user_messages(&runtime).await;
    let attachment = &messages[0].attachments[0];
    assert_eq!(
        (attachment.name.as_str(), attachment.kind),
        ("_shopping.txt", AttachmentKind::Text)
    );
    let request = llm.requests_to(openai::CHAT_PATH)[0].text();
    assert!(request.contains("milk"), "{request}");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_slow_download_does_not_hold_up_the_messages_after_it() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["Quick answer."]));
    llm.push(openai::CHAT_PATH, openai::text(&["Got the file."]));
    let runtime = small_limit(&telegram, &llm).await;
    telegram.delay("getFile", Duration::from_secs(3));
    let notes = telegram.add_file(b"slow notes\n".to_vec(), None);
    telegram.push_document(ME, &notes, "notes.txt", Some("the file"));
    telegram
        .wait_until("getFile to be asked", |telegram| {
            (telegram.calls("getFile") == 1).then_some(())
        })
        .await;
    let asked = Instant::now();
    telegram.push_text(ME, "a quick question");
    let shown = telegram.wait_for_sent(2).await;
    assert_eq!(shown[1].text, "Quick answer.");
    assert!(
        asked.elapsed() < Duration::from_secs(3) && telegram.downloads() == 0,
        "answered while the file's getFile was still held"
    );
    telegram
        .wait_until("the file's answer", |telegram| {
            telegram
                .messages(ME)
                .iter()
                .any(|sent| sent.text == "Got the file.")
                .then_some(())
        })
        .await;
    let messages = user_messages(&runtime).await;
    let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["a quick question", "the file"]);
    assert_eq!(messages[1].attachments.len(), 1);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_download_stops_with_the_channel() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let runtime = small_limit(&telegram, &llm).await;
    telegram.delay("getFile", Duration::from_secs(30));
    let notes = telegram.add_file(b"never fetched\n".to_vec(), None);
    telegram.push_document(ME, &notes, "notes.txt", None);
    telegram
        .wait_until("getFile to be asked", |telegram| {
            (telegram.calls("getFile") == 1).then_some(())
        })
        .await;
    let stopping = Instant::now();
    let home = runtime.shutdown_keeping_home("test").await.unwrap();
    assert!(
        stopping.elapsed() < Duration::from_secs(5),
        "the shutdown did not wait for the download: {:?}",
        stopping.elapsed()
    );
    assert!(
        !home.path().join("Documents/souz/attachments").exists()
            || std::fs::read_dir(home.path().join("Documents/souz/attachments"))
                .unwrap()
                .next()
                .is_none(),
        "nothing stored"
    );
}

#[tokio::test]
async fn a_file_no_message_took_is_removed() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    llm.push(openai::CHAT_PATH, openai::text(&["Hello."]));
    let runtime = small_limit(&telegram, &llm).await;
    telegram.push_text(ME, "hi");
    assert_eq!(telegram.wait_for_sent(2).await[1].text, "Hello.");
    // Paused, Souz takes no input: the file was fetched and kept, then the input refused.
    runtime.handle().set_paused(true, "test").await.unwrap();
    let notes = telegram.add_file(b"kept for nothing\n".to_vec(), None);
    telegram.push_document(ME, &notes, "notes.txt", Some("read it"));
    let refused = telegram.wait_for_sent(3).await;
    assert!(
        refused[2]
            .text
            .starts_with(super::replies::NOT_DELIVERED.en),
        "{:?}",
        refused[2]
    );
    assert_eq!(telegram.downloads(), 1, "the file was fetched");
    // The refusal goes out first, then the upload is removed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !uploads(&runtime).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(uploads(&runtime).is_empty(), "and removed again");
    runtime.shutdown("test").await.unwrap();
}

#[test]
fn every_refusal_is_said_in_russian_too() {
    use souz_protocol::language::Language;
    let refusals = [
        Refusal::Unsupported("a voice message"),
        Refusal::Unsupported("a sticker"),
        Refusal::TooLarge("64 KiB".to_owned()),
        Refusal::NotFetched,
        Refusal::NotSaved("disk full".to_owned()),
    ];
    for refusal in refusals {
        let english = refusal.text(Language::En);
        let russian = refusal.text(Language::Ru);
        assert_eq!(english, refusal.to_string());
        assert_ne!(russian, english);
        assert!(
            russian.chars().any(|c| ('а'..='я').contains(&c)),
            "{russian}"
        );
        assert!(!russian.contains("such"), "{russian}");
    }
    assert!(
        Refusal::Unsupported("a sticker")
            .text(Language::Ru)
            .contains("стикер")
    );
}
