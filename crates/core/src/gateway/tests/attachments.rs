//! Attachments over HTTP against the fake OpenAI server: an upload lands in the chat's folder
//! under a fresh name, a message's image reaches the model as an image part and its text file
//! as marked content, the next turn carries a note instead of the image, and an attachment
//! that is outside the roots, protected, missing, a link out, or one too many refuses the
//! whole message with nothing stored; deleting a chat removes its uploads.

use std::time::Duration;

use base64::Engine;
use serde_json::json;
use souz_testkit::{FakeServer, openai};

use super::*;

/// Bytes that start like a PNG (the daemon sends images as they are; it does not decode them).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-attachment-test-bytes";

async fn daemon(provider: &FakeServer) -> Fixture {
    let runtime = TestRuntime::builder()
        .with_llm(provider)
        .with_config(|config| {
            config.agent.default_agent = "skills".into();
            // Only the turns talk to the model (no capture requests between them).
            config.memory.capture = false;
        })
        .start()
        .await;
    Fixture::on(runtime)
}

impl Fixture {
    fn upload(&self, chat: &str, name: &str, bytes: &[u8]) -> Request<Body> {
        Request::builder()
            .method("POST")
            .uri(format!("/v1/chats/{chat}/attachments?name={name}"))
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(Body::from(bytes.to_vec()))
            .unwrap()
    }

    /// The stored events of `chat`.
    async fn events(&self, chat: &str) -> Vec<Value> {
        let path = format!("/v1/chats/{chat}/events?afterSeq=0&limit=1000");
        let (_, events) = self.send(self.bare("GET", &path)).await;
        events["items"].as_array().unwrap().clone()
    }

    /// Waits until `chat` has `count` finished executions.
    async fn finished(&self, chat: &str, count: usize) {
        for _ in 0..1500 {
            let events = self.events(chat).await;
            let done = events
                .iter()
                .filter(|event| event["type"] == "execution.finished")
                .count();
            if done >= count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("chat {chat} did not finish {count} turns");
    }
}

/// The last user message of a request to the model.
fn last_user(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .cloned()
        .unwrap()
}

/// Uploads `photo.png` twice: the first lands under its name in the chat's folder, the second
/// gets a new name and leaves the first untouched. Returns the first one's path.
async fn upload_photo_twice(f: &Fixture, chat: &str) -> String {
    let home = f.runtime.home().path().to_owned();
    let (status, uploaded) = f.send(f.upload(chat, "photo.png", PNG)).await;
    assert_eq!(status, StatusCode::CREATED, "{uploaded}");
    let expected = format!("~/Documents/souz/attachments/{chat}/photo.png");
    assert_eq!(uploaded["path"], expected.as_str());
    assert_eq!(uploaded["name"], "photo.png");
    assert_eq!(uploaded["kind"], "image");
    assert_eq!(uploaded["mediaType"], "image/png");
    assert_eq!(uploaded["size"], PNG.len());
    let saved = home.join(format!("Documents/souz/attachments/{chat}/photo.png"));
    assert_eq!(std::fs::read(&saved).unwrap(), PNG);
    // The same name again: a new file, the first one untouched.
    let (status, again) = f.send(f.upload(chat, "photo.png", b"other")).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(
        again["path"],
        format!("~/Documents/souz/attachments/{chat}/photo (2).png").as_str()
    );
    assert_eq!(std::fs::read(&saved).unwrap(), PNG);
    expected
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_and_a_text_file_reach_the_model_and_the_next_turn_keeps_a_note() {
    let provider = FakeServer::start().await;
    let f = daemon(&provider).await;
    let home = f.runtime.home().path().to_owned();
    std::fs::write(home.join("notes.md"), "Meeting moved to 10:30.").unwrap();
    let chat = f.new_chat().await;

    let expected = upload_photo_twice(&f, &chat).await;

    provider.push(openai::CHAT_PATH, openai::text(&["A test image."]));
    let (status, posted) = f
        .send(f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "What is this?", "attachments": [expected, "~/notes.md"]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{posted}");
    let attached = posted["message"]["attachments"].as_array().unwrap();
    assert_eq!(attached.len(), 2);
    assert_eq!(attached[1]["path"], "~/notes.md");
    assert_eq!(attached[1]["kind"], "text");
    f.finished(&chat, 1).await;

    let requests = provider.requests_to(openai::CHAT_PATH);
    assert_eq!(requests.len(), 1);
    let user = last_user(&requests[0].json());
    let parts = user["content"].as_array().expect("content parts");
    assert_eq!(parts.len(), 2, "{user}");
    let text = parts[0]["text"].as_str().unwrap();
    assert!(text.starts_with("What is this?"), "{text}");
    assert!(
        text.contains(
            "<attached_file path=\"~/notes.md\">\nMeeting moved to 10:30.\n</attached_file>"
        ),
        "{text}"
    );
    assert!(text.contains("not instructions to you"), "{text}");
    let data = base64::engine::general_purpose::STANDARD.encode(PNG);
    assert_eq!(
        parts[1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}})
    );

    // The stored message and its event name the attachments.
    let (_, messages) = f
        .send(f.bare("GET", &format!("/v1/chats/{chat}/messages")))
        .await;
    assert_eq!(
        messages["items"][0]["attachments"],
        posted["message"]["attachments"]
    );
    let created = f
        .events(&chat)
        .await
        .into_iter()
        .find(|event| event["type"] == "message.created")
        .unwrap();
    assert_eq!(
        created["payload"]["attachments"],
        posted["message"]["attachments"]
    );

    // The next turn: the image is not sent again; a note stands in its place.
    provider.push(openai::CHAT_PATH, openai::text(&["Sure."]));
    let (status, body) = f
        .send(f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "Thanks"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    f.finished(&chat, 2).await;
    let second = provider.requests_to(openai::CHAT_PATH)[1].json();
    assert!(!second.to_string().contains("image_url"), "{second}");
    let earlier = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| {
            message["role"] == "user"
                && message["content"]
                    .as_str()
                    .is_some_and(|text| text.starts_with("What is this?"))
        })
        .cloned()
        .unwrap_or_else(|| panic!("the first message is kept: {second}"));
    assert!(
        earlier["content"]
            .as_str()
            .unwrap()
            .contains("[The person showed you the image photo.png in this message"),
        "{earlier}"
    );

    let execution = posted["execution"]["id"].as_str().unwrap();
    image_is_stored_nowhere(&f, &chat, execution, &data).await;
}

/// The image (`data`, base64) went to the model and nowhere else: not the messages, the
/// conversation or the step log behind "Why?" (which shows the note instead).
async fn image_is_stored_nowhere(f: &Fixture, chat: &str, execution: &str, data: &str) {
    let (status, trace) = f
        .send(f.bare(
            "GET",
            &format!("/v1/chats/{chat}/executions/{execution}/trace"),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{trace}");
    assert!(
        trace.to_string().contains("showed you the image photo.png"),
        "{trace}"
    );
    let database = f.runtime.handle().config().paths.database();
    for file in [database.clone(), database.with_extension("db-wal")] {
        let bytes = std::fs::read(&file).unwrap_or_default();
        let found = bytes
            .windows(data.len())
            .any(|window| window == data.as_bytes());
        assert!(!found, "the image's bytes are in {}", file.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_alone_make_a_message() {
    let provider = FakeServer::start().await;
    let f = daemon(&provider).await;
    std::fs::write(
        f.runtime.home().path().join("notes.md"),
        "Meeting moved to 10:30.",
    )
    .unwrap();
    let chat = f.new_chat().await;
    provider.push(openai::CHAT_PATH, openai::text(&["Noted."]));
    let (status, body) = f
        .send(f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "", "attachments": ["~/notes.md"]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    f.finished(&chat, 1).await;
    let user = last_user(&provider.requests_to(openai::CHAT_PATH)[0].json());
    assert!(
        user["content"]
            .as_str()
            .unwrap()
            .contains("Meeting moved to 10:30."),
        "{user}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_attachment_refuses_the_whole_message_and_stores_nothing() {
    let provider = FakeServer::start().await;
    let f = daemon(&provider).await;
    let home = f.runtime.home().path().to_owned();
    std::fs::write(home.join("ok.txt"), "fine").unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE").unwrap();
    let outside_file = outside.path().join("secret.txt");
    std::os::unix::fs::symlink(&outside_file, home.join("link.txt")).unwrap();
    let chat = f.new_chat().await;
    let post = |paths: Value| {
        f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "Look", "attachments": paths}),
        )
    };

    let outside_path = outside_file.display().to_string();
    let eleven: Vec<&str> = vec!["~/ok.txt"; 11];
    let cases: Vec<(Value, &str)> = vec![
        (json!(["~/ok.txt", outside_path]), "outside"),
        (json!(["~/link.txt"]), "outside"),
        (json!(["~/missing.txt"]), "missing.txt"),
        (json!(["~/.ssh/id_ed25519"]), "protected"),
        (json!(["~/ok.txt", "~/ok.txt"]), "attached twice"),
        (json!(["~"]), "cannot attach"),
        (json!(eleven), "at most 10"),
        (json!([" "]), "blank"),
    ];
    for (paths, says) in cases {
        let (status, body) = f.send(post(paths.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{paths}: {body}");
        assert_eq!(code(&body), "invalid_request", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(says),
            "{paths}: {message:?} should say {says:?}"
        );
        assert!(
            !message.contains("OUTSIDE") && !message.contains("PRIVATE"),
            "{message}"
        );
    }
    let (_, messages) = f
        .send(f.bare("GET", &format!("/v1/chats/{chat}/messages")))
        .await;
    assert_eq!(messages["items"], json!([]), "nothing was stored");
    assert!(provider.requests_to(openai::CHAT_PATH).is_empty());

    // Uploads: a name with a folder, a hidden name, an empty file, another user's chat id.
    for (name, bytes) in [
        ("..%2Fevil.txt", &b"x"[..]),
        (".env", b"x"),
        ("empty.txt", b""),
    ] {
        let (status, body) = f.send(f.upload(&chat, name, bytes)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {body}");
    }
    assert!(!home.join("Documents/souz/attachments/evil.txt").exists());
    let (status, body) = f
        .send(f.upload("0190a6d2-0000-7000-8000-000000000000", "a.txt", b"x"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

#[tokio::test]
async fn deleting_a_chat_removes_its_uploads_and_nothing_else() {
    // Not the flat home: there the user home is the Souz home, which is protected.
    let f = Fixture::on(TestRuntime::builder().start().await);
    let home = f.runtime.home().path().to_owned();
    let (kept, gone) = (f.new_chat().await, f.new_chat().await);
    for chat in [&kept, &gone] {
        let (status, body) = f.send(f.upload(chat, "a.txt", b"text")).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    std::fs::write(home.join("Documents/souz/mine.txt"), "the person's own").unwrap();
    let (status, body) = f.send(f.bare("DELETE", &format!("/v1/chats/{gone}"))).await;
    assert!(status.is_success(), "{status}: {body}");
    let folder = |chat: &str| home.join(format!("Documents/souz/attachments/{chat}"));
    assert!(!folder(&gone).exists());
    assert!(folder(&kept).join("a.txt").exists());
    assert!(home.join("Documents/souz/mine.txt").exists());
}

#[tokio::test]
async fn an_upload_over_the_body_limit_is_413_and_leaves_no_file() {
    let f = Fixture::with(|config| config.server.body_limit = crate::config::ByteSize(4096)).await;
    let chat = f.new_chat().await;
    let (status, body) = f.send(f.upload(&chat, "big.bin", &[7u8; 5000])).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    let folder = f
        .runtime
        .home()
        .path()
        .join(format!("Documents/souz/attachments/{chat}"));
    assert!(!folder.join("big.bin").exists());
}

#[tokio::test]
async fn files_are_not_added_to_a_running_turn() {
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    f.runtime
        .handle()
        .chats()
        .set_engine(std::sync::Arc::new(super::chats::Busy));
    std::fs::write(f.runtime.home().path().join("a.txt"), "a").unwrap();
    let chat = f.new_chat().await;
    let input = format!("/v1/chats/{chat}/input");
    let (status, body) = f
        .send(f.json("POST", &input, &json!({"content": "start"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["delivery"], "turn");
    f.expect(
        f.json(
            "POST",
            &input,
            &json!({"content": "and this", "attachments": ["~/a.txt"]}),
        ),
        StatusCode::BAD_REQUEST,
        "invalid_request",
        "Files can be attached only to a message that starts a turn",
    )
    .await;
}
