//! The agents' questions as inline buttons, end to end against the fake Bot API: a question
//! comes with a button per choice and a press answers it (its turn goes on with that answer);
//! a press of another account, a replay and a press after the question was answered in Souz
//! change nothing (a late press says the question no longer waits); a text reply answers a question that takes the person's own words and is
//! refused (with what to do) by one that does not; every press leaves no handle behind. A
//! multiple-choice question's presses pick and unpick choices (the message redrawn with ticks
//! and fresh buttons, an old button used up), Done with nothing picked answers nothing, and
//! Done answers with the choices picked.

use serde_json::json;
use souz_protocol::chat::{OptionAnswer, OptionStatus};
use souz_testkit::telegram::{FakeTelegram, Sent};
use souz_testkit::{FakeServer, Reply, openai};

use super::replies::{self, press};
use super::tests::{ME, STRANGER, TOKEN, link, runtime};
use crate::channels::store::press_count;
use crate::runtime::facade::ChatUser;
use crate::testing::{TestHome, TestRuntime};

fn local() -> ChatUser {
    ChatUser(crate::LOCAL_USER.to_owned())
}

/// A model reply that asks `question` with `choices`.
fn asks(question: &str, choices: &[&str], free_text: bool) -> Reply {
    let arguments = json!({"question": question, "choices": choices, "allowFreeText": free_text});
    openai::tool_calls(&[("q1", "AskUser", &arguments.to_string())], 2)
}

/// Waits until a message of the linked chat satisfies `check`, and returns it.
async fn wait_for_message(
    telegram: &FakeTelegram,
    what: &str,
    check: impl Fn(&Sent) -> bool,
) -> Sent {
    telegram
        .wait_until(what, |telegram| {
            telegram.messages(ME).into_iter().find(|sent| check(sent))
        })
        .await
}

/// Links, has the agent ask `question`, and returns the runtime and the question's message.
async fn asked(
    telegram: &FakeTelegram,
    llm: &FakeServer,
    question: &str,
    choices: &[&str],
    free_text: bool,
) -> (TestRuntime, Sent) {
    llm.push(openai::CHAT_PATH, asks(question, choices, free_text));
    llm.push(openai::CHAT_PATH, openai::text(&["Thanks, noted."]));
    let runtime = runtime(telegram, llm, TestHome::new()).await;
    link(&runtime, telegram).await;
    telegram.push_text(ME, "ask me something");
    let shown = format!("Souz asks: {question}");
    let prompt = wait_for_message(telegram, "the question", |sent| {
        sent.text.starts_with(&shown)
    })
    .await;
    (runtime, prompt)
}

/// Waits for `prompt` to close with `Answered: {answer}` and no buttons, and for the turn to
/// go on: the agent's next request carries `answer_to` and the agent's reply is sent.
async fn closed_and_resumed(
    telegram: &FakeTelegram,
    llm: &FakeServer,
    prompt: &Sent,
    answer: &str,
    answer_to: &str,
) {
    let closed = format!("{}\n\nAnswered: {answer}", prompt.text);
    wait_for_message(telegram, "the closed question", |sent| {
        sent.message_id == prompt.message_id && sent.text == closed && sent.buttons.is_empty()
    })
    .await;
    wait_for_message(telegram, "the answer", |sent| sent.text == "Thanks, noted.").await;
    let resumed = llm.requests_to(openai::CHAT_PATH)[1].text();
    assert!(
        resumed.contains(answer_to),
        "the turn went on with the answer: {resumed}"
    );
}

async fn pending_questions(runtime: &TestRuntime) -> Vec<String> {
    let list = runtime.handle().questions(&local(), 10).await.unwrap();
    list.items.into_iter().map(|question| question.id).collect()
}

#[tokio::test]
async fn a_question_comes_with_a_button_per_choice_and_a_press_answers_it() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, prompt) = asked(&telegram, &llm, "Which colour?", &["Red", "Blue"], false).await;
    assert_eq!(prompt.labels, ["Red", "Blue"]);
    let [red, blue] = <[String; 2]>::try_from(prompt.buttons.clone()).unwrap();
    let pending = pending_questions(&runtime).await;
    assert_eq!(pending.len(), 1);
    for handle in [&red, &blue] {
        assert!(handle.len() <= 64 && !handle.contains(&pending[0]));
    }

    // A text reply cannot answer a question of choices only: the bot says what it waits for.
    telegram.push_text(ME, "green");
    wait_for_message(&telegram, "the hint", |sent| {
        sent.text == replies::PICK_A_CHOICE.en
    })
    .await;
    telegram.push_press(STRANGER, &blue);
    assert_eq!(
        telegram.wait_for_answered(1).await[0].1,
        press::NOT_YOURS.en
    );
    assert_eq!(pending_questions(&runtime).await, pending, "still waiting");

    telegram.push_press(ME, &blue);
    assert_eq!(telegram.wait_for_answered(2).await[1].1, press::ANSWERED.en);
    closed_and_resumed(
        &telegram,
        &llm,
        &prompt,
        "Blue",
        "Answer to \\\"Which colour?\\\": Blue",
    )
    .await;
    let question = runtime
        .handle()
        .question(&local(), &pending[0])
        .await
        .unwrap();
    assert_eq!(question.status, OptionStatus::Answered);

    telegram.push_press(ME, &blue);
    telegram.push_press(ME, &red);
    let answered = telegram.wait_for_answered(4).await;
    assert_eq!(answered[2].1, press::INVALID.en, "a replay");
    assert_eq!(answered[3].1, press::INVALID.en, "the other choice");
    let kept = runtime.handle().store().read(press_count).await.unwrap();
    assert_eq!(kept, 0, "no handle outlives its question");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_question_answered_in_souz_closes_its_prompt_and_its_buttons_do_nothing() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, prompt) =
        asked(&telegram, &llm, "Which day?", &["Monday", "Friday"], false).await;
    let id = pending_questions(&runtime).await.remove(0);
    let answer = OptionAnswer {
        selected_option_ids: vec!["choice-2".into()],
        free_text: None,
        metadata: Default::default(),
    };
    runtime
        .handle()
        .answer_question(&local(), &id, answer)
        .await
        .unwrap();
    let closed = format!("{}\n\nAnswered in Souz: Friday", prompt.text);
    wait_for_message(&telegram, "the closed question", |sent| {
        sent.message_id == prompt.message_id && sent.text == closed && sent.buttons.is_empty()
    })
    .await;
    telegram.push_press(ME, &prompt.buttons[0]);
    assert_eq!(
        telegram.wait_for_answered(1).await[0].1,
        press::ALREADY_ANSWERED.en
    );
    let question = runtime.handle().question(&local(), &id).await.unwrap();
    let chosen = question.answer.map(|answer| answer.selected_option_ids);
    assert_eq!(chosen, Some(vec!["choice-2".to_owned()]), "unchanged");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_text_reply_answers_a_question_that_takes_own_words() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let (runtime, prompt) = asked(&telegram, &llm, "What name?", &["Anna"], true).await;
    assert_eq!(prompt.labels, ["Anna"]);
    telegram.push_text(ME, "Boris");
    let closed = format!("{}\n\nAnswered: Boris", prompt.text);
    wait_for_message(&telegram, "the closed question", |sent| {
        sent.message_id == prompt.message_id && sent.text == closed && sent.buttons.is_empty()
    })
    .await;
    wait_for_message(&telegram, "the answer", |sent| {
        sent.text == "Thanks, noted."
    })
    .await;
    let resumed = llm.requests_to(openai::CHAT_PATH)[1].text();
    assert!(resumed.contains("Boris"), "{resumed}");
    assert!(pending_questions(&runtime).await.is_empty());
    runtime.shutdown("test").await.unwrap();
}

/// The message `prompt` as it stands once its labels are `labels`.
async fn redrawn(telegram: &FakeTelegram, prompt: &Sent, labels: &[&str]) -> Sent {
    wait_for_message(telegram, "the redrawn question", |sent| {
        sent.message_id == prompt.message_id && sent.labels == labels
    })
    .await
}

#[tokio::test]
async fn a_multiple_choice_question_toggles_its_choices_and_done_answers_with_them() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeServer::start().await;
    let arguments = json!({"question": "Which fruits?", "choices": ["Apple", "Pear", "Plum"],
                           "multiple": true, "allowFreeText": false});
    llm.push(
        openai::CHAT_PATH,
        openai::tool_calls(&[("q1", "AskUser", &arguments.to_string())], 2),
    );
    llm.push(openai::CHAT_PATH, openai::text(&["Thanks, noted."]));
    let runtime = runtime(&telegram, &llm, TestHome::new()).await;
    link(&runtime, &telegram).await;
    telegram.push_text(ME, "ask me something");
    let prompt = wait_for_message(&telegram, "the question", |sent| {
        sent.text.starts_with("Souz asks: Which fruits?")
    })
    .await;
    assert!(
        prompt.text.ends_with(replies::PICK_SEVERAL.en),
        "{prompt:?}"
    );
    assert_eq!(prompt.labels, ["Apple", "Pear", "Plum", "Done"]);
    let first_apple = prompt.buttons[0].clone();

    // Done with nothing picked answers nothing; the buttons come back fresh.
    telegram.push_press(ME, &prompt.buttons[3]);
    assert_eq!(
        telegram.wait_for_answered(1).await[0].1,
        press::PICK_FIRST.en
    );
    let shown = wait_for_message(&telegram, "fresh buttons", |sent| {
        sent.message_id == prompt.message_id && sent.buttons[3] != prompt.buttons[3]
    })
    .await;
    assert_eq!(shown.labels, ["Apple", "Pear", "Plum", "Done"]);
    assert_eq!(pending_questions(&runtime).await.len(), 1, "still waiting");

    // Each press picks or unpicks its choice and ticks it.
    let mut shown = shown;
    let mut presses = 1;
    for (choice, labels) in [
        (0, ["✅ Apple", "Pear", "Plum", "Done"]),
        (2, ["✅ Apple", "Pear", "✅ Plum", "Done"]),
        (1, ["✅ Apple", "✅ Pear", "✅ Plum", "Done"]),
        (1, ["✅ Apple", "Pear", "✅ Plum", "Done"]),
    ] {
        telegram.push_press(ME, &shown.buttons[choice]);
        presses += 1;
        assert_eq!(
            telegram.wait_for_answered(presses).await[presses - 1].1,
            press::PICKED.en
        );
        shown = redrawn(&telegram, &prompt, &labels).await;
        assert!(
            shown.text.starts_with("Souz asks: Which fruits?"),
            "{shown:?}"
        );
    }
    // An old button is used up: it changes nothing.
    telegram.push_press(ME, &first_apple);
    presses += 1;
    assert_eq!(
        telegram.wait_for_answered(presses).await[presses - 1].1,
        press::INVALID.en
    );
    assert_eq!(
        telegram
            .messages(ME)
            .into_iter()
            .find(|sent| sent.message_id == prompt.message_id)
            .unwrap()
            .labels,
        ["✅ Apple", "Pear", "✅ Plum", "Done"]
    );

    telegram.push_press(ME, &shown.buttons[3]);
    presses += 1;
    assert_eq!(
        telegram.wait_for_answered(presses).await[presses - 1].1,
        press::ANSWERED.en
    );
    closed_and_resumed(
        &telegram,
        &llm,
        &prompt,
        "Apple; Plum",
        "Answer to \\\"Which fruits?\\\": Apple; Plum",
    )
    .await;
    let kept = runtime.handle().store().read(press_count).await.unwrap();
    assert_eq!(kept, 0, "no handle outlives its question");
    runtime.shutdown("test").await.unwrap();
}
