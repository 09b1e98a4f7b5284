//! `souz chat` end to end: the real CLI in a pipe against the real daemon and its agent over
//! the fake OpenAI server. The answer streams in; an approval is asked inline and answered
//! with `y`; a question is answered by its number; the end of input ends the chat.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use souz_testkit::openai;

use crate::chats::{COMPLETIONS, ask_user, daemon, provider};

/// What the chat printed so far, read by a thread as it comes.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<String>>);

impl Screen {
    fn follow(&self, out: impl std::io::Read + Send + 'static) {
        let screen = self.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let mut text = screen.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
    }

    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    /// Waits up to 30 s until the screen holds `wanted`.
    fn wait_for(&self, wanted: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.text().contains(wanted) {
            assert!(
                Instant::now() < deadline,
                "no `{wanted}` on the screen:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_terminal_chat_streams_asks_inline_and_answers_questions() {
    let setup = provider();
    let write = json!({"skillId": "NewFile", "arguments": {"path": "note.txt", "text": "hello\n"}});
    setup.provider.push(
        COMPLETIONS,
        openai::tool_calls(&[("w1", "RunSkillCommand", &write.to_string())], 3),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Wrote ", "the note."]));
    setup.provider.push(
        COMPLETIONS,
        ask_user(json!({"question": "Which colour?", "choices": ["Red", "Green", "Blue"]})),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Green", " it is."]));
    let daemon = daemon(&setup);
    let (mut chat, screen, mut input) = open_chat(&daemon);

    writeln!(input, "Write a note").unwrap();
    // Asked inline, with the diff and the choices; nothing is written before the answer.
    screen.wait_for("[y] approve once");
    let shown = screen.text();
    assert!(shown.contains("? "), "{shown}");
    assert!(shown.contains("note.txt"), "{shown}");
    assert!(!daemon.user_home().join("note.txt").exists());
    // An answer that is none of the choices asks again.
    writeln!(input, "maybe").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while screen.text().matches("[y] approve once").count() < 2 {
        assert!(Instant::now() < deadline, "{}", screen.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    writeln!(input, "y").unwrap();
    screen.wait_for("souz> Wrote the note.");
    assert_eq!(
        std::fs::read_to_string(daemon.user_home().join("note.txt")).unwrap(),
        "hello\n"
    );
    let shown = screen.text();
    assert!(shown.contains("NewFile approved (cli)"), "{shown}");
    assert_eq!(
        shown.matches("souz> Wrote the note.").count(),
        1,
        "streamed once, not printed again when stored:\n{shown}"
    );

    writeln!(input, "Pick a colour for me").unwrap();
    screen.wait_for("? Which colour?");
    screen.wait_for("2. Green");
    writeln!(input, "2").unwrap();
    screen.wait_for("souz> Green it is.");
    let request = setup
        .provider
        .requests_to(COMPLETIONS)
        .last()
        .unwrap()
        .json();
    assert!(request.to_string().contains("Green"), "{request}");

    // The end of input ends the chat, with success.
    drop(input);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = chat.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running:\n{}",
            screen.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}\n{}", screen.text());
}

/// The id the chat printed after `prefix` (`Chat `, `New chat `), up to the next space or dot.
/// `souz chat` started against `daemon` in pipes, its output followed, once it shows its
/// greeting (which ends by naming Ctrl-D): the process, its screen and its input.
fn open_chat(daemon: &souz_e2e::Daemon) -> (std::process::Child, Screen, std::process::ChildStdin) {
    let mut chat = daemon
        .cli()
        .arg("chat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let screen = Screen::default();
    screen.follow(chat.stdout.take().unwrap());
    screen.follow(chat.stderr.take().unwrap());
    let input = chat.stdin.take().unwrap();
    screen.wait_for("Ctrl-D");
    (chat, screen, input)
}

fn chat_id_after(screen: &Screen, prefix: &str) -> String {
    let text = screen.text();
    let start = text.rfind(prefix).expect(prefix) + prefix.len();
    text[start..]
        .split([' ', '.', '\n'])
        .next()
        .unwrap()
        .to_owned()
}

/// The contents of a chat's stored messages, in order.
fn contents(daemon: &souz_e2e::Daemon, chat: &str) -> Vec<String> {
    daemon.get(&format!("/v1/chats/{chat}/messages")).json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The model request whose last user message says `text`: its model and its user messages,
/// in order.
fn request_for(setup: &crate::chats::Setup, text: &str) -> (serde_json::Value, Vec<String>) {
    let users = |request: &serde_json::Value| -> Vec<String> {
        request["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|message| message["role"] == "user")
            .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let requests: Vec<serde_json::Value> = setup
        .provider
        .requests_to(COMPLETIONS)
        .iter()
        .map(|request| request.json())
        .collect();
    let request = requests
        .iter()
        .find(|request| {
            users(request)
                .last()
                .is_some_and(|last| last.contains(text))
        })
        .unwrap_or_else(|| panic!("no request for {text:?}: {requests:?}"));
    (request["model"].clone(), users(request))
}

/// Whether `messages` hold `wanted` in this order (each in a message of its own).
fn in_order(messages: &[String], wanted: &[&str]) -> bool {
    let mut rest = messages.iter();
    wanted
        .iter()
        .all(|text| rest.any(|message| message.contains(text)))
}

#[test]
fn a_terminal_chat_keeps_lines_for_after_the_turn_changes_model_and_starts_anew() {
    let setup = provider();
    // The first answer holds its turn open for 4 s after its first words.
    let held = openai::text_frames(&["Working"])
        .delay(Duration::from_secs(4))
        .data(openai::chunk(json!({"content": " hard."}), None))
        .data(openai::chunk(json!({}), Some("stop")))
        .data("[DONE]")
        .end();
    setup.provider.push(COMPLETIONS, held);
    for answer in ["Second answer.", "Third answer.", "Fourth answer."] {
        setup.provider.push(COMPLETIONS, openai::text(&[answer]));
    }
    let daemon = daemon(&setup);
    let (mut chat, screen, mut input) = open_chat(&daemon);
    let first_chat = chat_id_after(&screen, "Chat ");

    // A line typed while the turn works is kept, and sent once it ends.
    writeln!(input, "First question").unwrap();
    writeln!(input, "Second question").unwrap();
    screen.wait_for("(kept: sent when this turn ends");
    screen.wait_for("souz> Second answer.");
    let (first_model, first_users) = request_for(&setup, "First question");
    assert!(
        in_order(&first_users, &["First question"]),
        "{first_users:?}"
    );
    let (_, second_users) = request_for(&setup, "Second question");
    assert!(
        in_order(&second_users, &["First question", "Second question"]),
        "sent after the first turn, in order: {second_users:?}"
    );
    let shown = screen.text();
    assert!(
        shown.find("Working hard.").unwrap() < shown.find("Second answer.").unwrap(),
        "{shown}"
    );

    // `/model NAME`: this chat's next turn asks the provider for that model.
    writeln!(input, "/model openai/gpt-5.2").unwrap();
    screen.wait_for("This chat now uses openai/gpt-5.2.");
    writeln!(input, "Third question").unwrap();
    screen.wait_for("souz> Third answer.");
    assert_ne!(first_model, "gpt-5.2", "the default model is another");
    assert_eq!(request_for(&setup, "Third question").0, "gpt-5.2");

    // `/new`: the next message starts another chat (its own history, the default model).
    writeln!(input, "/new").unwrap();
    screen.wait_for("New chat ");
    let second_chat = chat_id_after(&screen, "New chat ");
    assert_ne!(second_chat, first_chat);
    writeln!(input, "Fourth question").unwrap();
    screen.wait_for("souz> Fourth answer.");
    let (fourth_model, fourth_users) = request_for(&setup, "Fourth question");
    assert_eq!(fourth_model, first_model);
    assert!(
        !in_order(&fourth_users, &["First question"]),
        "{fourth_users:?}"
    );
    let second = contents(&daemon, &second_chat);
    assert!(in_order(&second, &["Fourth question"]), "{second:?}");
    let first = contents(&daemon, &first_chat);
    assert!(!in_order(&first, &["Fourth question"]), "{first:?}");
    assert!(
        in_order(&first, &["First question", "Third question"]),
        "{first:?}"
    );

    drop(input);
    let deadline = Instant::now() + Duration::from_secs(10);
    while chat.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "still running:\n{}",
            screen.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
