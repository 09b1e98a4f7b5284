//! `AskUser`: lets the agent of a chat ask the person a question — with choices or free text —
//! and end its turn there. The chat shows the question (`option.requested`), the person
//! answers (`POST /v1/options/{id}/answer`), and the answer starts the next turn of the same
//! execution as the person's message.

use schemars::JsonSchema;
use serde::Deserialize;

use super::context::AskedQuestion;
use crate::llm;
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
pub(crate) fn spec() -> llm::ToolSpec {
    llm::ToolSpec {
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
}
