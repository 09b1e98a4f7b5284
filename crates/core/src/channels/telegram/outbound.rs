//! What goes to Telegram: a text as one message or more ([`send_text`]: split at 4,096 UTF-16
//! units on paragraph boundaries, escaped for `MarkdownV2`, each sent with retries after a 429
//! or a network error), and the forwarder that sends the answer of every turn of the linked
//! account's Souz chat (a failure or a cancellation says so).
//!
//! Invariants: chunks go out in order, each once the one before was accepted; a chunk Telegram
//! refused outright (400) is not retried; the forwarder reads the link again at every turn's
//! end, so after an unlink nothing more is sent.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use souz_protocol::chat::{ChatEvent, ChatEventBody};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::Channel;
use super::api::TelegramError;
use super::poll::{Backoff, pause};
use super::text::{MAX_MESSAGE_UNITS, escape_markdown_v2, split_message};
use crate::LOCAL_USER;
use crate::runtime::facade::{ChatUser, MessagePage};

/// Tries per chunk before it is given up.
const SEND_ATTEMPTS: usize = 6;
/// The longest 429 wait honoured while sending (a longer one gives the chunk up).
const MAX_SEND_WAIT: Duration = Duration::from_secs(120);
/// Answers remembered per chat until their turn ends.
const REMEMBERED_ANSWERS: usize = 8;

/// Sends `text` to `chat` as one message or more.
pub(crate) async fn send_text(
    channel: &Channel,
    chat: i64,
    text: &str,
) -> Result<(), TelegramError> {
    for chunk in split_message(text, MAX_MESSAGE_UNITS) {
        send_chunk(channel, chat, &escape_markdown_v2(&chunk)).await?;
    }
    Ok(())
}

async fn send_chunk(channel: &Channel, chat: i64, escaped: &str) -> Result<(), TelegramError> {
    let mut backoff = Backoff::new();
    let mut attempt = 1;
    loop {
        let error = match channel.api.send(chat, escaped, true).await {
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        let wait = match &error {
            TelegramError::RateLimited(wait) if *wait <= MAX_SEND_WAIT => *wait,
            TelegramError::Network(_) => backoff.failed(),
            _ => return Err(error),
        };
        if attempt >= SEND_ATTEMPTS {
            return Err(error);
        }
        attempt += 1;
        tracing::info!(%error, ?wait, "telegram: sending again after a wait");
        if !pause(wait, &channel.shutdown).await {
            return Err(error);
        }
    }
}

/// Sends the linked account the end of every turn of its Souz chat, until `shutdown`.
pub(crate) async fn forward(channel: Arc<Channel>, shutdown: CancellationToken) {
    let mut events = channel.handle.subscribe_chat_events();
    let mut answers: VecDeque<(String, String)> = VecDeque::new();
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(event) => {
                if let ChatEventBody::ApprovalRequested(asked) = &event.body {
                    let text = format!("Souz asks to run {}: {}", asked.name, asked.summary);
                    ask(&channel, &event.chat_id, &asked.approval_id, &text).await;
                } else if let Some(text) = turn_end(&event, &mut answers) {
                    deliver_end(&channel, &event, text).await;
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "telegram: the forwarder fell behind the chat events"
                );
            }
            // The runtime is going away.
            Err(RecvError::Closed) => return,
        }
    }
}

/// What to send when `event` ends a turn (`Some(None)`: its answer is to be looked up); notes
/// the answers it sees.
fn turn_end(event: &ChatEvent, answers: &mut VecDeque<(String, String)>) -> Option<Option<String>> {
    match &event.body {
        ChatEventBody::MessageCompleted(message) if message.role == "assistant" => {
            if answers.len() >= REMEMBERED_ANSWERS {
                answers.pop_front();
            }
            answers.push_back((message.message_id.clone(), message.content.clone()));
            None
        }
        ChatEventBody::ExecutionFinished(finished) => {
            let position = answers
                .iter()
                .position(|(id, _)| *id == finished.assistant_message_id);
            Some(
                position
                    .and_then(|position| answers.remove(position))
                    .map(|(_, text)| text),
            )
        }
        ChatEventBody::ExecutionFailed(failed) => {
            Some(Some(format!("The task failed: {}", failed.error_message)))
        }
        ChatEventBody::ExecutionCancelled(_) => Some(Some("The task was cancelled.".to_owned())),
        _ => None,
    }
}

/// Sends a turn's end to the linked account when `event` is of its chat.
async fn deliver_end(channel: &Channel, event: &ChatEvent, text: Option<String>) {
    let Some(telegram_chat) = linked_chat(channel, &event.chat_id).await else {
        return;
    };
    let chat = event.chat_id.as_str();
    let text = match text {
        Some(text) => text,
        None => last_answer(channel, chat).await,
    };
    let text = if text.trim().is_empty() {
        "Done.".to_owned()
    } else {
        text
    };
    if let Err(error) = send_text(channel, telegram_chat, &text).await {
        tracing::warn!(%error, "telegram: an answer was not delivered");
    }
}

/// Sends the approval `approval_id` of `chat` (when it is the linked account's) with Approve
/// and Deny buttons, each a fresh single-use handle.
async fn ask(channel: &Channel, chat: &str, approval_id: &str, text: &str) {
    let Some(telegram_chat) = linked_chat(channel, chat).await else {
        return;
    };
    let outcome = match channel.handle.telegram_buttons(approval_id).await {
        Ok((approve, deny)) => channel
            .api
            .send_with_buttons(
                telegram_chat,
                &escape_markdown_v2(text),
                &[("Approve", &approve), ("Deny", &deny)],
            )
            .await
            .map(|_| ())
            .map_err(|error| error.to_string()),
        Err(error) => Err(error.to_string()),
    };
    if let Err(error) = outcome {
        tracing::warn!(%error, "telegram: an approval was not sent");
    }
}

/// The linked account's Telegram chat when `chat` is its Souz chat.
async fn linked_chat(channel: &Channel, chat: &str) -> Option<i64> {
    match channel.handle.telegram_state().await {
        Ok(state) => match (state.link, state.souz_chat) {
            (Some(link), Some(souz_chat)) if souz_chat == chat => Some(link.telegram_chat),
            _ => None,
        },
        Err(error) => {
            tracing::warn!(%error, "telegram: cannot read the channel's state");
            None
        }
    }
}

/// The chat's last assistant message (when its completion was not seen).
async fn last_answer(channel: &Channel, chat: &str) -> String {
    let user = ChatUser(LOCAL_USER.to_owned());
    let page = MessagePage {
        before: None,
        after: None,
        limit: 20,
    };
    match channel.handle.messages(&user, chat, page).await {
        Ok(list) => list
            .items
            .into_iter()
            .rev()
            .find(|message| message.role == "assistant")
            .map(|message| message.content)
            .unwrap_or_default(),
        Err(error) => {
            tracing::warn!(%error, "telegram: cannot read the answer");
            String::new()
        }
    }
}
