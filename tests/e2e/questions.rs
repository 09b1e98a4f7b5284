//! `souz questions` end to end: a real turn against the fake OpenAI server asks with
//! `AskUser`; the CLI lists the question, shows it by an id prefix, refuses answers that do
//! not fit, answers it with several choices and free text, and the resumed turn reads them.

use serde_json::{Value, json};
use souz_e2e::Daemon;
use tungstenite::client::IntoClientRequest;

use crate::chats::{
    COMPLETIONS, ask_user, daemon, last_request, new_chat, post, provider, wait_event,
};
use souz_testkit::openai;

fn cli(daemon: &Daemon, args: &[&str]) -> (bool, String, String) {
    let output = daemon.cli().args(args).output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The runtime events stored so far, from `WS /v1/events` (replayed up to `live`).
fn runtime_events(daemon: &Daemon) -> Vec<Value> {
    let mut request = format!("ws://{}/v1/events?after_seq=0", daemon.address)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", daemon.token).parse().unwrap(),
    );
    let (mut socket, _) = tungstenite::connect(request).unwrap();
    if let tungstenite::stream::MaybeTlsStream::Plain(stream) = socket.get_ref() {
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
    }
    let mut events = Vec::new();
    loop {
        if let tungstenite::Message::Text(text) = socket.read().unwrap() {
            let frame: Value = serde_json::from_str(&text).unwrap();
            if frame["type"] == "live" {
                return events;
            }
            events.push(frame["event"].clone());
        }
    }
}

#[test]
fn the_cli_lists_shows_and_answers_a_question() {
    let setup = provider();
    setup.provider.push(
        COMPLETIONS,
        ask_user(json!({
            "question": "Which colors for the logo?",
            "choices": ["Red", "Green", "Blue"],
            "multiple": true,
            "allowFreeText": true,
        })),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Red and blue, with gold."]));
    let daemon = daemon(&setup);
    let (ok, stdout, _) = cli(&daemon, &["questions"]);
    assert!(ok);
    assert!(stdout.contains("No agent is waiting"), "{stdout}");

    let chat = new_chat(&daemon);
    let posted = post(&daemon, &chat, json!({"content": "Design a logo"})).json();
    let asked = wait_event(&daemon, &chat, "option.requested");
    let id = asked["payload"]["optionId"].as_str().unwrap().to_owned();
    let prefix = &id[..13];

    let (ok, stdout, stderr) = cli(&daemon, &["questions"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(&id[..9]), "{stdout}");
    assert!(stdout.contains("chat e2e"), "{stdout}");
    assert!(stdout.contains("Which colors for the logo?"), "{stdout}");
    assert!(stdout.contains("1. Red"), "{stdout}");

    let (ok, stdout, stderr) = cli(&daemon, &["questions", "show", prefix]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(&format!("Question  {id}")), "{stdout}");
    assert!(stdout.contains("Status    pending"), "{stdout}");
    assert!(stdout.contains("Choices   (pick any)"), "{stdout}");
    assert!(stdout.contains("  3. Blue"), "{stdout}");
    assert!(stdout.contains("Own words accepted"), "{stdout}");
    let (ok, stdout, _) = cli(&daemon, &["questions", "show", prefix, "--json"]);
    assert!(ok);
    let shown: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(shown["executionId"], posted["execution"]["id"]);
    assert_eq!(shown["selectionMode"], "multiple");

    let (ok, _, stderr) = cli(
        &daemon,
        &["questions", "answer", prefix, "--choice", "Purple"],
    );
    assert!(!ok);
    assert!(
        stderr.contains("`Purple` is not one of the choices"),
        "{stderr}"
    );
    let (ok, _, stderr) = cli(&daemon, &["questions", "answer", prefix]);
    assert!(!ok);
    assert!(stderr.contains("give --choice"), "{stderr}");
    let (ok, _, stderr) = cli(&daemon, &["questions", "show", "zzzz"]);
    assert!(!ok);
    assert!(
        stderr.contains("no question id starts with `zzzz`"),
        "{stderr}"
    );

    // By label (any case) and by number, plus free text.
    let (ok, stdout, stderr) = cli(
        &daemon,
        &[
            "questions",
            "answer",
            prefix,
            "--choice",
            "red",
            "--choice",
            "3",
            "--text",
            "and some gold",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("Answered \"Which colors for the logo?\": Red, Blue, and some gold"),
        "{stdout}"
    );
    wait_event(&daemon, &chat, "execution.finished");
    let (_, last_user) = last_request(&setup);
    assert!(
        last_user.contains("Red; Blue; and some gold"),
        "the model reads the answer: {last_user}"
    );

    let (ok, stdout, _) = cli(&daemon, &["questions"]);
    assert!(ok);
    assert!(stdout.contains("No agent is waiting"), "{stdout}");
    let (ok, stdout, _) = cli(&daemon, &["questions", "show", &id]);
    assert!(ok);
    assert!(stdout.contains("Status    answered"), "{stdout}");
    assert!(
        stdout.contains("Answer    Red, Blue, and some gold"),
        "{stdout}"
    );
    let (ok, _, stderr) = cli(&daemon, &["questions", "answer", &id, "--choice", "1"]);
    assert!(!ok);
    assert!(stderr.contains("is already answered"), "{stderr}");

    // Every surface follows the same two runtime events.
    let events = runtime_events(&daemon);
    let requested = events
        .iter()
        .find(|event| event["type"] == "option.requested")
        .expect("option.requested on /v1/events");
    assert_eq!(requested["option"]["id"], id.as_str());
    assert_eq!(requested["option"]["chatTitle"], "e2e");
    assert_eq!(requested["option"]["title"], "Which colors for the logo?");
    let answered = events
        .iter()
        .find(|event| event["type"] == "option.answered")
        .expect("option.answered on /v1/events");
    assert_eq!(answered["option_id"], id.as_str());
    assert_eq!(
        answered["selected_option_ids"],
        json!(["choice-1", "choice-3"])
    );
    assert_eq!(answered["free_text"], "and some gold");
}

/// `souz questions` in the interface language chosen in Souz: the list's headings and `show`'s
/// labels in Russian (the id, the status and the agent's words as they are), then in English.
#[test]
fn a_question_is_shown_in_the_interface_language() {
    let setup = provider();
    setup.provider.push(
        COMPLETIONS,
        ask_user(json!({"question": "Tea or coffee?", "choices": ["Tea", "Coffee"]})),
    );
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    post(&daemon, &chat, json!({"content": "Ask me"}));
    let asked = wait_event(&daemon, &chat, "option.requested");
    let id = asked["payload"]["optionId"].as_str().unwrap().to_owned();
    let choose = |language: &str| {
        let patched = daemon.patch("/v1/me/settings", &json!({"interfaceLanguage": language}));
        assert_eq!(patched.status, 200, "{}", patched.body);
    };

    choose("ru");
    let (ok, listed, stderr) = cli(&daemon, &["questions"]);
    assert!(ok, "{stderr}");
    assert!(
        listed.contains("ВОПРОС") && listed.contains("ВАРИАНТЫ"),
        "{listed}"
    );
    assert!(listed.contains("чат e2e"), "{listed}");
    let (ok, shown, stderr) = cli(&daemon, &["questions", "show", &id[..13]]);
    assert!(ok, "{stderr}");
    for line in [
        format!("Вопрос        {id}"),
        "Состояние     pending".to_owned(),
        "Кто           чат e2e".to_owned(),
        "Текст вопроса Tea or coffee?".to_owned(),
        "Варианты      (один вариант)".to_owned(),
    ] {
        assert!(shown.contains(&line), "{line:?} missing:\n{shown}");
    }
    assert!(shown.contains(" назад"), "{shown}");
    assert!(
        !shown.contains("Status") && !shown.contains(" ago"),
        "{shown}"
    );
    let (ok, _, stderr) = cli(&daemon, &["questions", "show", "zzzz"]);
    assert!(!ok);
    assert!(
        stderr.contains("ни один id вопроса не начинается с `zzzz`"),
        "{stderr}"
    );

    choose("en");
    let (ok, shown, stderr) = cli(&daemon, &["questions", "show", &id[..13]]);
    assert!(ok, "{stderr}");
    assert!(shown.contains("Asks      Tea or coffee?"), "{shown}");
    assert!(shown.contains("Choices   (pick one)"), "{shown}");
    assert!(!shown.contains("Вопрос"), "{shown}");
}
