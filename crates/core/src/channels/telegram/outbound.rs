//! What goes to Telegram: a text as one message or more ([`send_text`]: split at 4,096 UTF-16
//! units on paragraph boundaries, escaped for `MarkdownV2`), every call retried after a 429 or
//! a network error ([`retrying`]), and the forwarder that follows the chat events and hands the
//! linked account's turns to their answer streams ([`super::stream`]).
//!
//! Invariants: chunks go out in order, each once the one before was accepted; a request
//! Telegram refused outright (400) is not retried; the forwarder only updates in-memory drafts
//! (the streams make the requests on their own tasks), so it never falls behind the events
//! because Telegram is slow; it reads the link again at every turn's start and end, so after an
//! unlink nothing more is sent.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use souz_protocol::chat::{ChatEvent, ChatEventBody};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::Channel;
use super::api::TelegramError;
use super::poll::{Backoff, pause};
use super::replies;
use super::stream::{Answers, Ending};
use super::text::{MAX_MESSAGE_UNITS, escape_markdown_v2, split_message};
use crate::LOCAL_USER;
use crate::runtime::facade::{ChatUser, MessagePage};

/// Tries per request before it is given up.
const SEND_ATTEMPTS: usize = 6;
/// The longest 429 wait honoured while sending (a longer one gives the request up).
pub(crate) const MAX_SEND_WAIT: Duration = Duration::from_secs(120);

/// Sends `text` to `chat` as one message or more.
pub(crate) async fn send_text(
    channel: &Channel,
    chat: i64,
    text: &str,
) -> Result<(), TelegramError> {
    send_parts(channel, chat, text).await.1
}

/// Sends `text` to `chat` as one message or more: the parts Telegram took (in order), and
/// the error that stopped the rest.
pub(crate) async fn send_parts(
    channel: &Channel,
    chat: i64,
    text: &str,
) -> (Vec<String>, Result<(), TelegramError>) {
    let mut sent = Vec::new();
    for chunk in split_message(text, MAX_MESSAGE_UNITS) {
        let escaped = escape_markdown_v2(&chunk);
        if let Err(error) = retrying(channel, || channel.api.send(chat, &escaped, true)).await {
            return (sent, Err(error));
        }
        sent.push(chunk);
    }
    (sent, Ok(()))
}

/// `call` until it succeeds: again after a 429's `retry_after` (up to [`MAX_SEND_WAIT`]) or
/// a network error (backing off), [`SEND_ATTEMPTS`] times at most; a refusal at once.
pub(crate) async fn retrying<T, F, Fut>(channel: &Channel, mut call: F) -> Result<T, TelegramError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, TelegramError>>,
{
    let mut backoff = Backoff::new();
    let mut attempt = 1;
    loop {
        let error = match call().await {
            Ok(value) => return Ok(value),
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
        tracing::info!(%error, ?wait, "telegram: trying again after a wait");
        if !pause(wait, &channel.shutdown).await {
            return Err(error);
        }
    }
}

/// The linked account's Souz chat and its Telegram chat, as last read.
type Linked = Option<(String, i64)>;

/// Streams the linked account every answer of its Souz chat, until `shutdown`.
pub(crate) async fn forward(channel: Arc<Channel>, shutdown: CancellationToken) {
    let mut events = channel.handle.subscribe_chat_events();
    let mut answers = Answers::new(Arc::clone(&channel));
    let mut linked = linked(&channel).await;
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(event) => on_event(&channel, &mut answers, &mut linked, &event).await,
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

async fn on_event(
    channel: &Channel,
    answers: &mut Answers,
    linked: &mut Linked,
    event: &ChatEvent,
) {
    let Some(execution) = event.execution_id.as_deref() else {
        return;
    };
    let ends = matches!(
        event.body,
        ChatEventBody::ExecutionFinished(_)
            | ChatEventBody::ExecutionFailed(_)
            | ChatEventBody::ExecutionCancelled(_)
    );
    if ends || matches!(event.body, ChatEventBody::ExecutionStarted(_)) {
        // A turn's edges: the link may have changed since the last one.
        *linked = self::linked(channel).await;
    }
    let Some(telegram_chat) = linked
        .as_ref()
        .filter(|(souz_chat, _)| *souz_chat == event.chat_id)
        .map(|(_, telegram_chat)| *telegram_chat)
    else {
        // Not (or no longer) the linked chat: a stream of it stops without more requests.
        answers.forget(execution);
        return;
    };
    let language = channel.language();
    match &event.body {
        ChatEventBody::MessageDelta(delta) => {
            answers.draft(execution, telegram_chat, |draft| {
                draft.push(delta.attempt, &delta.delta);
            });
        }
        ChatEventBody::MessageDiscarded(discarded) => {
            answers.draft(execution, telegram_chat, |draft| {
                draft.discard(discarded.attempt);
            });
        }
        ChatEventBody::MessageCompleted(message) if message.role == "assistant" => {
            let content = message.content.clone();
            answers.draft(execution, telegram_chat, |draft| {
                draft.complete(content);
            });
        }
        ChatEventBody::ExecutionFinished(_) => {
            let completed = answers.completed(execution);
            let answer = match completed {
                Some(text) => text,
                None => last_answer(channel, &event.chat_id).await,
            };
            let ending = Ending::answered(answer, replies::DONE.text(language));
            answers.end(execution, telegram_chat, ending);
        }
        ChatEventBody::ExecutionFailed(failed) => {
            let note = replies::failed(language, &failed.error_message);
            answers.end(execution, telegram_chat, Ending::note(note));
        }
        ChatEventBody::ExecutionCancelled(_) => {
            let note = replies::CANCELLED.text(language).to_owned();
            answers.end(execution, telegram_chat, Ending::note(note));
        }
        _ => {}
    }
}

/// The linked account's Souz and Telegram chats, when it has written.
async fn linked(channel: &Channel) -> Linked {
    match channel.handle.telegram_state().await {
        Ok(state) => match (state.link, state.souz_chat) {
            (Some(link), Some(souz_chat)) => Some((souz_chat, link.telegram_chat)),
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
