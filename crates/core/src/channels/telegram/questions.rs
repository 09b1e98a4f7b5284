//! The agents' questions (`AskUser`) in Telegram: a question asked in the linked account's Souz
//! chat is sent once, with one button per choice (fresh single-use handles, one row each); a
//! press answers it with that choice through the path the web UI's answer takes
//! ([`RuntimeHandle::answer_question`](crate::runtime::RuntimeHandle::answer_question)), and a
//! text reply answers a question that takes an answer in the person's own words
//! ([`inbound`](super::inbound)). When the question ends, however it ends — answered here or
//! in Souz, withdrawn because its turn ended, expired — its message is edited to say so and
//! its buttons are gone.
//!
//! Invariants: as for approval prompts ([`prompts`](super::prompts)): a prompt is claimed
//! before it is sent (so at most one per question), caught up from the database at start and
//! whenever the events fell behind, its text bounded and escaped.
//!
//! A multiple-choice question's buttons pick and unpick their choice instead, and a last
//! "Done" button answers with the choices picked (kept with the prompt, see
//! [`channels::store`](crate::channels::store)): each press uses up every button of the prompt
//! like any press, and the message is redrawn ([`redraw`]) with the picked choices ticked and
//! fresh handles. Done with nothing picked answers nothing. A single-choice question stays one
//! press.

use souz_protocol::RuntimeEvent;
use souz_protocol::chat::{OptionStatus, Question, SelectionMode};
use souz_protocol::language::Language;

use super::Channel;
use super::outbound::retrying;
use super::prompts::{bounded, close_one};
use super::replies::{self, outcome};
use super::text::escape_markdown_v2;
use crate::LOCAL_USER;
use crate::channels::store::{NewPrompt, PromptKind};
use crate::runtime::ServiceError;
use crate::runtime::facade::{ChatUser, TELEGRAM_VIA, VIA_KEY};

/// The longest choice label shown on a button, in characters.
const MAX_LABEL_CHARS: usize = 64;
/// What marks a picked choice of a multiple-choice question on its button.
const TICK: &str = "✅";
/// Pending questions looked at in one catch-up.
const CATCH_UP_LIMIT: usize = 200;

fn local() -> ChatUser {
    ChatUser(LOCAL_USER.to_owned())
}

/// What a runtime event about questions does to their prompts.
pub(crate) async fn on_event(channel: &Channel, event: &RuntimeEvent) -> Result<(), ServiceError> {
    match event {
        RuntimeEvent::OptionRequested { option } => offer(channel, option).await,
        RuntimeEvent::OptionAnswered { option_id, .. }
        | RuntimeEvent::OptionCancelled { option_id, .. }
        | RuntimeEvent::OptionExpired { option_id, .. } => close(channel, Some(option_id)).await,
        _ => Ok(()),
    }
}

/// Sends the prompts missing and closes those whose question ended.
pub(crate) async fn catch_up(channel: &Channel) {
    let outcome = async {
        let pending = channel.handle.questions(&local(), CATCH_UP_LIMIT).await?;
        for question in &pending.items {
            if let Err(error) = offer(channel, question).await {
                tracing::warn!(%error, "telegram: a question was not sent");
            }
        }
        close(channel, None).await
    };
    if let Err(error) = outcome.await {
        tracing::warn!(%error, "telegram: cannot catch up with the questions");
    }
}

/// The pending question of the Souz chat `chat_id`, if its agent waits for one.
pub(crate) async fn pending_in(
    channel: &Channel,
    chat_id: &str,
) -> Result<Option<Question>, ServiceError> {
    let pending = channel.handle.questions(&local(), CATCH_UP_LIMIT).await?;
    Ok(pending
        .items
        .into_iter()
        .find(|question| question.chat_id == chat_id))
}

/// Sends `question` with its buttons, unless it is not asked in the linked account's chat or
/// was sent before.
async fn offer(channel: &Channel, question: &Question) -> Result<(), ServiceError> {
    if question.status != OptionStatus::Pending {
        return Ok(());
    }
    let state = channel.handle.telegram_state().await?;
    let (Some(link), Some(souz_chat)) = (state.link, state.souz_chat) else {
        return Ok(());
    };
    if souz_chat != question.chat_id {
        return Ok(());
    }
    let language = channel.language();
    let mut text = replies::question(language, &question.title, question.free_text);
    if question.selection_mode == SelectionMode::Multiple && !question.options.is_empty() {
        text = format!("{text}\n\n{}", replies::PICK_SEVERAL.text(language));
    }
    let text = bounded(&text);
    let chat = link.telegram_chat;
    let prompt = NewPrompt {
        kind: PromptKind::Question,
        subject: question.id.clone(),
        telegram_chat: chat,
        text: text.clone(),
    };
    if !channel.handle.claim_telegram_prompt(prompt).await? {
        return Ok(());
    }
    let sent = match buttons(channel, question, &[]).await {
        Ok(keyboard) => {
            let escaped = escape_markdown_v2(&text);
            let rows = keyboard.rows();
            let sent = if rows.is_empty() {
                retrying(channel, || channel.api.send(chat, &escaped, true)).await
            } else {
                retrying(channel, || {
                    channel.api.send_with_buttons(chat, &escaped, &rows)
                })
                .await
            };
            sent.map_err(|error| ServiceError::Internal(error.to_string()))
        }
        Err(error) => Err(error),
    };
    let recorded = channel
        .handle
        .record_telegram_prompt(&question.id, sent.as_ref().ok().copied())
        .await;
    sent?;
    recorded
}

/// A question's buttons: a label and a fresh handle each, one row each.
struct Keyboard(Vec<(String, String)>);

impl Keyboard {
    fn rows(&self) -> Vec<Vec<(&str, &str)>> {
        self.0
            .iter()
            .map(|(label, handle)| vec![(label.as_str(), handle.as_str())])
            .collect()
    }
}

/// Fresh buttons for `question`: one per choice, and for a multiple-choice question the
/// choices in `picked` ticked and a last Done button.
async fn buttons(
    channel: &Channel,
    question: &Question,
    picked: &[String],
) -> Result<Keyboard, ServiceError> {
    let multiple = question.selection_mode == SelectionMode::Multiple;
    let choices: Vec<String> = question.options.iter().map(|c| c.id.clone()).collect();
    if choices.is_empty() {
        return Ok(Keyboard(Vec::new()));
    }
    let handles = channel
        .handle
        .telegram_choice_buttons(&question.id, choices, multiple)
        .await?;
    let mut keyboard: Vec<(String, String)> = question
        .options
        .iter()
        .zip(handles.choices)
        .map(|(choice, handle)| {
            let label: String = choice.label.chars().take(MAX_LABEL_CHARS).collect();
            let label = if multiple && picked.contains(&choice.id) {
                format!("{TICK} {label}")
            } else {
                label
            };
            (label, handle)
        })
        .collect();
    if let Some(done) = handles.done {
        let label = replies::DONE_BUTTON.text(channel.language()).to_owned();
        keyboard.push((label, done));
    }
    Ok(Keyboard(keyboard))
}

/// Redraws the prompt of the pending multiple-choice question `option_id` after a press used
/// up its buttons: the choices picked ticked, fresh handles. Failures are logged (the press
/// was answered; the buttons of a prompt that could not be redrawn are used up, and the
/// question can still be answered in Souz).
pub(crate) async fn redraw(channel: &Channel, option_id: &str) {
    let outcome = async {
        let question = channel.handle.question(&local(), option_id).await?;
        if question.status != OptionStatus::Pending {
            return Ok(());
        }
        let open = channel
            .handle
            .open_telegram_prompts(PromptKind::Question, Some(option_id.to_owned()))
            .await?;
        let Some(prompt) = open.into_iter().next() else {
            return Ok(());
        };
        let picked = channel.handle.telegram_picked(option_id).await?;
        let keyboard = buttons(channel, &question, &picked).await?;
        let rows = keyboard.rows();
        let escaped = escape_markdown_v2(&prompt.text);
        retrying(channel, || {
            channel
                .api
                .edit_with_buttons(prompt.telegram_chat, prompt.message_id, &escaped, &rows)
        })
        .await
        .map_err(|error| ServiceError::Internal(error.to_string()))
    };
    if let Err(error) = outcome.await {
        tracing::warn!(%error, "telegram: a question's prompt was not redrawn");
    }
}

/// Closes the open question prompts (of `option_id` only, when given) whose question ended.
async fn close(channel: &Channel, option_id: Option<&String>) -> Result<(), ServiceError> {
    let open = channel
        .handle
        .open_telegram_prompts(PromptKind::Question, option_id.cloned())
        .await?;
    for prompt in open {
        let said = match channel.handle.question(&local(), &prompt.subject).await {
            Ok(question) => match ending(&question, channel.language()) {
                Some(said) => said,
                None => continue,
            },
            // The chat went away with its question.
            Err(ServiceError::NotFound { .. }) => {
                outcome::WITHDRAWN.text(channel.language()).to_owned()
            }
            Err(error) => return Err(error),
        };
        close_one(channel, &prompt, &said).await?;
    }
    Ok(())
}

/// What a question's prompt says once the question ended; `None` while it is pending.
fn ending(question: &Question, language: Language) -> Option<String> {
    Some(match question.status {
        OptionStatus::Pending => return None,
        OptionStatus::Cancelled => outcome::WITHDRAWN.text(language).to_owned(),
        OptionStatus::Expired => outcome::EXPIRED.text(language).to_owned(),
        OptionStatus::Answered => {
            let answer = question.answer.as_ref();
            let here = answer
                .and_then(|answer| answer.metadata.get(VIA_KEY))
                .is_some_and(|via| via == TELEGRAM_VIA);
            let mut said: Vec<String> = answer
                .map(|answer| {
                    question
                        .options
                        .iter()
                        .filter(|choice| answer.selected_option_ids.contains(&choice.id))
                        .map(|choice| choice.label.clone())
                        .collect()
                })
                .unwrap_or_default();
            if let Some(text) = answer.and_then(|answer| answer.free_text.clone()) {
                said.push(text);
            }
            let said: String = said.join("; ").chars().take(500).collect();
            replies::answered(language, here, &said)
        }
    })
}
