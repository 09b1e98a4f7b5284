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
    let mut input = chat.stdin.take().unwrap();
    screen.wait_for("Ctrl-D");

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
