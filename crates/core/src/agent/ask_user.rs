//! `AskUser`: lets the agent of a chat ask the person a question — with choices or free text —
//! and end its turn there. The chat shows the question (`option.requested`), the person
//! answers (`POST /v1/options/{id}/answer`), and the answer starts the next turn of the same
//! execution as the person's message ([`answer_text`]).
//!
//! For memory, a turn that continues after an answer is read back as the person said it
//! ([`answered`]): the message that led to the question(s) and the answer's own words, never
//! the question, which is the assistant's text.

use schemars::JsonSchema;
use serde::Deserialize;

use super::context::{AskedQuestion, is_injected_context, is_injected_memory};
use crate::llm::{self, Message};
use crate::tools::{input_schema, parse_arguments};

/// The tool's name.
pub(crate) const ASK_USER: &str = "AskUser";
/// Most choices offered at once.
const MAX_CHOICES: usize = 20;

/// Arguments of `AskUser`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct AskUserArgs {
    /// The question, in the person's language, complete enough to answer without context.
    pub question: String,
    /// Choices to pick from (short labels). Leave empty for a free-text answer.
    #[serde(default)]
    pub choices: Vec<String>,
    /// Whether the person may pick several choices. Default false.
    #[serde(default)]
    pub multiple: bool,
    /// Whether the person may answer in their own words besides the choices. Default: true
    /// when there are no choices.
    pub allow_free_text: Option<bool>,
}

/// The tool as the model sees it.
pub(crate) fn spec() -> llm::ToolDeclaration {
    llm::ToolDeclaration {
        name: ASK_USER.to_owned(),
        description: "Ask the person a question and stop until they answer: when a choice \
                      is theirs to make, when something important is ambiguous, or before \
                      an irreversible step they have not asked for. Offer choices when the \
                      possible answers are known. Their answer arrives as their next message; \
                      do not call other tools in the same step."
            .to_owned(),
        parameters: input_schema::<AskUserArgs>(),
    }
}

/// Checks the arguments and makes the question.
pub(crate) fn question(arguments: serde_json::Value) -> Result<AskedQuestion, String> {
    let args: AskUserArgs = parse_arguments(arguments).map_err(|error| error.to_string())?;
    let title = args.question.trim().to_owned();
    if title.is_empty() {
        return Err("question must not be blank".to_owned());
    }
    let mut choices: Vec<(String, String)> = Vec::new();
    for label in args.choices.iter().map(|label| label.trim()) {
        if label.is_empty() {
            return Err("choices must not be blank".to_owned());
        }
        if choices.iter().any(|(_, existing)| existing == label) {
            continue;
        }
        choices.push((format!("choice-{}", choices.len() + 1), label.to_owned()));
    }
    if choices.len() > MAX_CHOICES {
        return Err(format!("offer at most {MAX_CHOICES} choices"));
    }
    let free_text = args.allow_free_text.unwrap_or(choices.is_empty());
    if choices.is_empty() && !free_text {
        return Err("give choices, or allow a free-text answer".to_owned());
    }
    Ok(AskedQuestion {
        title,
        multiple: args.multiple && choices.len() > 1,
        choices,
        free_text,
    })
}

/// What the model reads after asking.
pub(crate) const ASKED: &str = "The question is shown to the person. Stop here and wait: their answer \
                         arrives as their next message.";

/// The text an answer becomes as the person's next message: the question, then the chosen
/// labels and the free text (`parts`), `; `-separated.
pub(crate) fn answer_text(question: &str, parts: &[String]) -> String {
    format!("{}{}", answer_prefix(question), parts.join("; "))
}

fn answer_prefix(question: &str) -> String {
    format!("Answer to \"{question}\": ")
}

/// Most questions of one execution read back by [`answered`].
const MAX_QUESTIONS: usize = 8;

/// What the person said over a turn that answers `AskUser` questions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answered {
    /// The person's messages, first to last: the one that led to the first question, then
    /// each answer's own words.
    pub said: Vec<String>,
    /// The questions asked, in order.
    pub questions: Vec<String>,
}

/// The question of `AskUser` called in `message`, if it is such a call.
fn asked_in(message: &Message) -> Option<String> {
    let Message::Assistant { tool_calls, .. } = message else {
        return None;
    };
    let call = tool_calls.iter().find(|call| call.name == ASK_USER)?;
    let arguments: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    Some(arguments.get("question")?.as_str()?.trim().to_owned())
}

/// If the person's message at `at` in `history` answers an `AskUser` question (it follows the
/// question's tool result), the question's index and text.
fn question_before(history: &[Message], at: usize) -> Option<(usize, String)> {
    let before = history[..at]
        .iter()
        .rposition(|message| !is_injected_memory(message) && !is_injected_context(message))?;
    if !matches!(&history[before], Message::Tool { name, .. } if name == ASK_USER) {
        return None;
    }
    let call = history[..before]
        .iter()
        .rposition(|message| matches!(message, Message::Assistant { .. }))?;
    Some((call, asked_in(&history[call])?))
}

fn person_message(history: &[Message], end: usize) -> Option<(usize, &str)> {
    let at = super::context::current_user_index(&history[..end])?;
    match &history[at] {
        Message::User { content, .. } => Some((at, content.as_str())),
        _ => None,
    }
}

/// What the person said over the turn whose current message is the last person's message of
/// `history`, when that message answers `AskUser` questions (`None` otherwise, or when the
/// history no longer holds the message that led to them).
pub(crate) fn answered(history: &[Message]) -> Option<Answered> {
    let (mut at, answer) = person_message(history, history.len())?;
    let mut said = vec![answer.to_owned()];
    let mut questions = Vec::new();
    while let Some((call, question)) = question_before(history, at) {
        if questions.len() == MAX_QUESTIONS {
            break;
        }
        let words = said.last_mut()?;
        if let Some(rest) = words.strip_prefix(&answer_prefix(&question)) {
            *words = rest.to_owned();
        }
        questions.push(question);
        let (earlier, text) = person_message(history, call)?;
        said.push(text.to_owned());
        at = earlier;
    }
    if questions.is_empty() {
        return None;
    }
    said.reverse();
    questions.reverse();
    Some(Answered { said, questions })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn questions_are_checked_and_normalized() {
        let q = question(json!({"question": " Which? ", "choices": ["A", " B ", "A"]})).unwrap();
        assert_eq!(q.title, "Which?");
        assert_eq!(
            q.choices,
            vec![
                ("choice-1".into(), "A".into()),
                ("choice-2".into(), "B".into())
            ]
        );
        assert!(!q.free_text && !q.multiple);
        let free = question(json!({"question": "Name?"})).unwrap();
        assert!(free.free_text && free.choices.is_empty());
        for bad in [
            json!({"question": " "}),
            json!({"question": "x", "choices": [" "]}),
            json!({"question": "x", "allowFreeText": false}),
            json!({"question": "x", "extra": 1}),
            json!({"question": "x", "choices": (0..21).map(|i| i.to_string()).collect::<Vec<_>>()}),
        ] {
            assert!(question(bad.clone()).is_err(), "{bad}");
        }
        assert!(spec().parameters["properties"]["question"].is_object());
    }

    fn ask(id: &str, question: &str) -> [Message; 2] {
        [
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![llm::ToolCall {
                    id: id.into(),
                    name: ASK_USER.into(),
                    arguments: json!({"question": question}).to_string(),
                }],
            },
            Message::Tool {
                tool_call_id: id.into(),
                name: ASK_USER.into(),
                content: ASKED.into(),
                is_error: false,
            },
        ]
    }

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    #[test]
    fn an_answer_is_read_back_as_the_persons_words_with_the_questions_apart() {
        let mut history = vec![user("earlier"), user("Book a table")];
        history.extend(ask("q1", "Where?"));
        history.push(user(&answer_text("Where?", &["Uno".into()])));
        history.extend(ask("q2", "When?"));
        history.push(user(&answer_text("When?", &["7pm".into(), "or 8".into()])));
        assert_eq!(
            answered(&history),
            Some(Answered {
                said: vec!["Book a table".into(), "Uno".into(), "7pm; or 8".into()],
                questions: vec!["Where?".into(), "When?".into()],
            })
        );
        // A message that answers nothing is not read back.
        assert_eq!(answered(&[user("hi")]), None);
        let mut plain = vec![user("Book a table")];
        plain.extend(ask("q1", "Where?"));
        plain.push(Message::Assistant {
            content: "Never mind.".into(),
            tool_calls: Vec::new(),
        });
        plain.push(user("Thanks"));
        assert_eq!(answered(&plain), None);
    }
}
