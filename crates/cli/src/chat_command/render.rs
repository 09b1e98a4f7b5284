//! What `souz chat` prints, and how it reads the person's answers: pure functions over the
//! protocol's types (tested here), no I/O.
//!
//! Invariants:
//! - A streamed answer is printed as it comes, once: the stored message that follows its
//!   deltas only ends the line; a message that came without deltas (a provider that does not
//!   stream, a replay) is printed whole.
//! - Every other line starts on a line of its own, even in the middle of a streamed answer.

use souz_protocol::Approval;
use souz_protocol::chat::events::OptionRequestedPayload;
use souz_protocol::chat::{ChatEvent, ChatEventBody, OptionAnswer};

use crate::texts::{fill, tr};

/// What has been printed of the answers so far.
#[derive(Debug, Default)]
pub struct Shown {
    /// The answer being streamed (its message id), if any.
    streaming: Option<String>,
    /// Whether the cursor is in the middle of a line.
    mid_line: bool,
}

impl Shown {
    /// What to print for `event` (with its own line breaks), if anything.
    pub fn render(&mut self, event: &ChatEvent) -> Option<String> {
        let text = match &event.body {
            ChatEventBody::MessageDelta(delta) => {
                let mut text = String::new();
                if self.streaming.as_deref() != Some(delta.message_id.as_str()) {
                    text.push_str(&self.line_break());
                    text.push_str("souz> ");
                    self.streaming = Some(delta.message_id.clone());
                }
                text.push_str(&delta.delta);
                self.mid_line = !text.ends_with('\n');
                return Some(text);
            }
            ChatEventBody::MessageDiscarded(_) => tr(
                "(that text was discarded; the answer is written again)",
                "(этот текст отброшен; ответ пишется заново)",
            )
            .to_owned(),
            ChatEventBody::MessageCreated(message) if message.role == "assistant" => {
                if self.streaming.take().as_deref() == Some(message.message_id.as_str()) {
                    let text = self.line_break();
                    return (!text.is_empty()).then_some(text);
                }
                format!("souz> {}", message.content.trim_end())
            }
            ChatEventBody::ToolCallStarted(started) => {
                let arguments = started.arguments_preview.to_string();
                format!("  ▶ {} {}", started.name, shorten(&arguments, 120))
            }
            ChatEventBody::ToolCallFinished(finished) => {
                format!("  ✓ {} ({} ms)", finished.name, finished.duration_ms)
            }
            ChatEventBody::ToolCallFailed(failed) => format!(
                "  ✗ {} ({} ms): {}",
                failed.name,
                failed.duration_ms,
                shorten(&failed.error, 200)
            ),
            ChatEventBody::ApprovalDecided(decided) => {
                let approved = decided.status == souz_protocol::ApprovalStatus::Approved;
                let via = decided
                    .via
                    .as_ref()
                    .map(|via| format!(" ({via})"))
                    .unwrap_or_default();
                let said = if approved {
                    tr("approved", "одобрено")
                } else {
                    tr("denied", "отклонено")
                };
                format!("  {} {said}{via}", decided.name)
            }
            ChatEventBody::ApprovalExpired(expired) => format!(
                "  {} {}",
                expired.name,
                tr("expired: denied", "истекло: отклонено")
            ),
            ChatEventBody::ExecutionFailed(failed) => format!(
                "✗ {} [{}]",
                failed.error_message.trim_end(),
                failed.error_code
            ),
            ChatEventBody::ExecutionCancelled(_) => {
                tr("(the turn was cancelled)", "(ход отменён)").to_owned()
            }
            _ => return None,
        };
        Some(format!("{}{text}\n", self.line_break()))
    }

    /// A newline when the cursor is mid-line (it is not after this).
    pub fn line_break(&mut self) -> String {
        if std::mem::take(&mut self.mid_line) {
            "\n".to_owned()
        } else {
            String::new()
        }
    }
}

/// `text` cut to at most `limit` characters, with `…` when cut.
fn shorten(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The person's answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// This call only.
    Yes,
    /// Deny.
    No,
    /// Approve with the suggested scope.
    Suggested,
}

impl Answer {
    /// `y`/`yes`/`д`/`да`, `n`/`no`/`н`/`нет`, `s`/`scope`/`о`/`область` (any case); `None`
    /// for anything else (the question is asked again).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_lowercase().as_str() {
            "y" | "yes" | "д" | "да" => Some(Self::Yes),
            "n" | "no" | "н" | "нет" => Some(Self::No),
            "s" | "scope" | "о" | "область" => Some(Self::Suggested),
            _ => None,
        }
    }
}

/// An approval as asked inline: who, what, the diff or command, and the choices.
pub fn approval(approval: &Approval) -> String {
    let mut text = format!(
        "? {}: {}",
        approval.requester_label,
        approval.summary.trim_end()
    );
    if let Some(diff) = &approval.diff {
        text.push('\n');
        text.push_str(&shorten(diff.trim_end(), 4_000));
    }
    text.push('\n');
    text.push_str(&approval_choices(approval));
    text
}

/// The choices of an approval, one line.
pub fn approval_choices(approval: &Approval) -> String {
    fill(
        tr(
            "  [y] approve once  [s] {suggested}  [n] deny",
            "  [д] одобрить один раз  [о] {suggested}  [н] отклонить",
        ),
        &[("suggested", &approval.suggested.label)],
    )
}

/// A question as asked inline: its title and numbered choices.
pub fn question(question: &OptionRequestedPayload) -> String {
    let mut text = format!("? {}", question.title);
    for (index, choice) in question.options.iter().enumerate() {
        text.push_str(&format!("\n  {}. {}", index + 1, choice.label));
    }
    let hint = match (question.options.is_empty(), question.free_text) {
        (false, true) => tr(
            "a number, a label, or your own words",
            "номер, вариант или свои слова",
        ),
        (false, false) => tr("a number or a label", "номер или вариант"),
        (true, _) => tr("your answer", "ваш ответ"),
    };
    text.push_str(&format!("\n  ({hint})"));
    text
}

/// The answer `text` gives to `question`: a choice by number, id or label (several, comma
/// separated, when it takes several), else the person's own words where it takes them.
pub fn choose(question: &OptionRequestedPayload, text: &str) -> Result<OptionAnswer, String> {
    let find = |wanted: &str| {
        let wanted = wanted.trim();
        question
            .options
            .iter()
            .find(|choice| choice.id == wanted || choice.label.eq_ignore_ascii_case(wanted))
            .or_else(|| {
                wanted
                    .parse::<usize>()
                    .ok()
                    .and_then(|number| number.checked_sub(1))
                    .and_then(|index| question.options.get(index))
            })
    };
    let parts: Vec<&str> = match question.selection_mode {
        souz_protocol::chat::SelectionMode::Multiple => text.split(',').collect(),
        souz_protocol::chat::SelectionMode::Single => vec![text],
    };
    let chosen: Option<Vec<String>> = parts
        .iter()
        .map(|part| find(part).map(|choice| choice.id.clone()))
        .collect();
    match chosen {
        Some(ids) if !ids.is_empty() => Ok(OptionAnswer {
            selected_option_ids: ids,
            ..OptionAnswer::default()
        }),
        _ if question.free_text => Ok(OptionAnswer {
            free_text: Some(text.trim().to_owned()),
            ..OptionAnswer::default()
        }),
        _ => Err(fill(
            tr(
                "`{text}` is not one of the choices; answer with a number or a label.",
                "`{text}` — не из вариантов; ответьте номером или вариантом.",
            ),
            &[("text", &text.trim())],
        )),
    }
}

/// The commands, for `/help`.
pub fn help() -> &'static str {
    tr(
        "/new          a new chat\n\
         /model [NAME] show or set this chat's model\n\
         /cancel       stop the running turn (and drop the lines kept for after it)\n\
         /quit         leave (Ctrl-D too)\n\
         While Souz asks: y approves once, s approves as suggested, n denies.",
        "/new          новый чат\n\
         /model [ИМЯ]  показать или задать модель этого чата\n\
         /cancel       остановить ход (и забыть строки, сохранённые на после него)\n\
         /quit         выйти (или Ctrl-D)\n\
         Когда Souz спрашивает: д — одобрить один раз, о — как предложено, н — отклонить.",
    )
}

/// A fresh idempotency key for a message.
pub fn request_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("cli-chat-{}-{nanos}", std::process::id())
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use serde_json::json;
    use souz_protocol::chat::events::{
        MessageDeltaPayload, MessagePayload, ToolCallStartedPayload,
    };
    use souz_protocol::chat::{OptionChoice, SelectionMode};

    use super::*;

    fn event(body: ChatEventBody) -> ChatEvent {
        ChatEvent {
            seq: None,
            durable: false,
            chat_id: "c".into(),
            execution_id: Some("e".into()),
            body,
            created_at: Utc::now(),
        }
    }

    fn delta(text: &str) -> ChatEvent {
        event(ChatEventBody::MessageDelta(MessageDeltaPayload {
            message_id: "m1".into(),
            execution_id: "e".into(),
            attempt: 1,
            delta: text.into(),
        }))
    }

    fn created(id: &str, content: &str) -> ChatEvent {
        event(ChatEventBody::MessageCreated(MessagePayload {
            message_id: id.into(),
            seq: 3,
            role: "assistant".into(),
            content: content.into(),
            client_message_id: None,
            attachments: Vec::new(),
        }))
    }

    #[test]
    fn a_streamed_answer_is_printed_once_and_other_lines_start_on_their_own() {
        let mut shown = Shown::default();
        let mut out = String::new();
        out.extend(shown.render(&delta("Hel")));
        out.extend(shown.render(&delta("lo")));
        out.extend(shown.render(&event(ChatEventBody::ToolCallStarted(
            ToolCallStartedPayload {
                tool_call_id: "t".into(),
                name: "ListFiles".into(),
                argument_keys: vec!["path".into()],
                arguments_preview: json!({"path": "~"}),
            },
        ))));
        out.extend(shown.render(&created("m1", "Hello")));
        assert_eq!(out, "souz> Hello\n  ▶ ListFiles {\"path\":\"~\"}\n");
        // A message with no deltas (a provider that does not stream) is printed whole.
        assert_eq!(
            shown.render(&created("m2", "Whole answer\n")).as_deref(),
            Some("souz> Whole answer\n")
        );
        // The end of a streamed line is closed by the stored message.
        let mut shown = Shown::default();
        let mut out = String::new();
        out.extend(shown.render(&delta("Done.")));
        out.extend(shown.render(&created("m1", "Done.")));
        assert_eq!(out, "souz> Done.\n");
    }

    #[test]
    fn approval_answers_in_both_languages_and_anything_else_asks_again() {
        assert_eq!(Answer::parse(" Y "), Some(Answer::Yes));
        assert_eq!(Answer::parse("да"), Some(Answer::Yes));
        assert_eq!(Answer::parse("нет"), Some(Answer::No));
        assert_eq!(Answer::parse("s"), Some(Answer::Suggested));
        assert_eq!(Answer::parse("maybe"), None);
        assert_eq!(Answer::parse(""), None);
    }

    fn question(mode: SelectionMode, free_text: bool) -> OptionRequestedPayload {
        OptionRequestedPayload {
            option_id: "o".into(),
            kind: "generic_choice".into(),
            title: "Which colour?".into(),
            selection_mode: mode,
            options: ["Blue", "Green", "Red"]
                .iter()
                .enumerate()
                .map(|(index, label)| OptionChoice {
                    id: format!("id-{index}"),
                    label: (*label).into(),
                    content: None,
                })
                .collect(),
            free_text,
            expires_at: None,
        }
    }

    #[test]
    fn a_question_is_answered_by_number_label_id_or_own_words() {
        let single = question(SelectionMode::Single, false);
        assert_eq!(choose(&single, "2").unwrap().selected_option_ids, ["id-1"]);
        assert_eq!(
            choose(&single, "red").unwrap().selected_option_ids,
            ["id-2"]
        );
        assert_eq!(
            choose(&single, "id-0").unwrap().selected_option_ids,
            ["id-0"]
        );
        let refused = choose(&single, "purple").unwrap_err();
        assert!(refused.contains("purple"), "{refused}");
        assert!(choose(&single, "4").is_err(), "out of range");
        let several = question(SelectionMode::Multiple, false);
        assert_eq!(
            choose(&several, "1, green").unwrap().selected_option_ids,
            ["id-0", "id-1"]
        );
        let open = question(SelectionMode::Single, true);
        let answer = choose(&open, " teal, please ").unwrap();
        assert!(answer.selected_option_ids.is_empty());
        assert_eq!(answer.free_text.as_deref(), Some("teal, please"));
    }

    #[test]
    fn long_arguments_are_shortened_on_a_character_boundary() {
        assert_eq!(shorten("абвгд", 3), "абв…");
        assert_eq!(shorten("abc", 3), "abc");
    }
}
