//! What one update does. A private text message from the linked account becomes input to its
//! Souz chat (a new turn, or steering for the running one); a photo or a document becomes an
//! attachment of that input, its caption the text ([`files`](super::files)); `/start CODE` or
//! a code alone from anyone while nobody is linked tries to link them; anyone else, once
//! linked, gets one refusal. Groups, channels, bots and other kinds of updates are skipped; a
//! button press of the linked account decides the approval (or answers the question) its
//! single-use handle names — a multiple-choice question's picks or unpicks a choice, its Done
//! answers with those picked ([`questions`](super::questions)) — and every press is answered
//! at once. While the chat's agent waits
//! for the answer to a question, a text message answers it when the question takes the
//! person's own words (as the app's answer field does); otherwise the bot says to press a
//! choice.
//!
//! Invariants: linking never starts a turn; of a stranger only an audit row is kept; the input
//! a message makes carries `telegram:<update id>` as its client message id, so handing the same
//! update over twice (a crash before the offset moved) starts one turn. A message with a file
//! is handed to a task of its own that fetches the file and then sends the input
//! ([`files`](super::files)), so the poll goes on meanwhile (a text sent after a photo may
//! reach the chat first, and a download cut off by a stop is not fetched again); a file no
//! input took is removed from the upload folder.

use std::sync::Arc;

use frankenstein::types::{CallbackQuery, ChatType, Message};
use frankenstein::updates::{Update, UpdateContent};
use souz_protocol::chat::{ChatInput, CreateChat, InputDelivery, Question};

use super::Channel;
use super::files::{self, Media, Wanted};
use super::outbound::send_text;
use super::questions;
use super::replies::{self, press};
use crate::LOCAL_USER;
use crate::channels::store::{Claim, Claimant, Link};
use crate::runtime::ServiceError;
use crate::runtime::facade::{ChatUser, Press};

/// The longest message taken as chat input, in characters.
const MAX_INPUT_CHARS: usize = 8000;

/// A private message's sender, text (or caption) and file.
struct Inbound<'a> {
    update_id: u32,
    user_id: i64,
    chat: i64,
    username: Option<String>,
    text: Option<&'a str>,
    media: Media<'a>,
}

impl<'a> Inbound<'a> {
    /// The private, human-sent message of `message`; `None` for groups, channels and bots.
    fn of(update_id: u32, message: &'a Message) -> Option<Self> {
        let from = message.from.as_deref()?;
        if from.is_bot || message.chat.type_field != ChatType::Private {
            return None;
        }
        Some(Self {
            update_id,
            user_id: i64::try_from(from.id).ok()?,
            chat: message.chat.id,
            username: from.username.clone(),
            text: message.text.as_deref().or(message.caption.as_deref()),
            media: Media::of(message),
        })
    }
}

/// Handles one update; failures are logged (the update counts as handled: retrying a message
/// Telegram or Souz refused would fail again).
pub(crate) async fn handle(channel: &Arc<Channel>, update: Update) {
    let outcome = match &update.content {
        UpdateContent::Message(message) => match Inbound::of(update.update_id, message) {
            Some(inbound) => on_message(channel, inbound).await,
            None => Ok(()),
        },
        UpdateContent::CallbackQuery(query) => on_press(channel, query).await,
        _ => Ok(()),
    };
    if let Err(error) = outcome {
        tracing::warn!(%error, update = update.update_id, "telegram: an update failed");
    }
}

/// A button press: only the linked account's presses act, each answered at once with what
/// happened; a press of anyone else, or of a used, unknown or forged handle, changes nothing.
async fn on_press(channel: &Channel, query: &CallbackQuery) -> Result<(), ServiceError> {
    let state = channel.handle.telegram_state().await?;
    let linked = state
        .link
        .is_some_and(|link| i64::try_from(query.from.id) == Ok(link.user_id));
    let answer = match query.data.as_deref() {
        Some(handle) if linked && handle.len() <= 64 => {
            match channel.handle.press_telegram_button(handle).await {
                Ok(Press::Approved) => press::APPROVED,
                Ok(Press::Denied) => press::DENIED,
                Ok(Press::Answered) => press::ANSWERED,
                Ok(Press::Invalid) => press::INVALID,
                Ok(Press::AlreadyDecided) => press::ALREADY_DECIDED,
                Ok(Press::AlreadyAnswered) => press::ALREADY_ANSWERED,
                Ok(Press::Expired) => press::EXPIRED,
                Ok(Press::Picked { option_id }) => {
                    questions::redraw(channel, &option_id).await;
                    press::PICKED
                }
                Ok(Press::NothingPicked { option_id }) => {
                    questions::redraw(channel, &option_id).await;
                    press::PICK_FIRST
                }
                Err(error) => {
                    // Answered all the same, so the person is not left waiting.
                    tracing::warn!(%error, "telegram: a press failed");
                    press::FAILED
                }
            }
        }
        _ if !linked => press::NOT_YOURS,
        _ => press::INVALID,
    };
    channel
        .api
        .answer_press(&query.id, answer.text(channel.language()))
        .await
        .map_err(|error| ServiceError::Internal(error.to_string()))
}

async fn on_message(channel: &Arc<Channel>, inbound: Inbound<'_>) -> Result<(), ServiceError> {
    let state = channel.handle.telegram_state().await?;
    match state.link {
        Some(link) if link.user_id == inbound.user_id && link.telegram_chat == inbound.chat => {
            deliver(channel, &link, state.souz_chat, &inbound).await
        }
        Some(_) => refuse(channel, &inbound).await,
        None => try_link(channel, &inbound).await,
    }
}

async fn refuse(channel: &Channel, inbound: &Inbound<'_>) -> Result<(), ServiceError> {
    if channel.handle.refuse_telegram_user(inbound.user_id).await? {
        reply(
            channel,
            inbound.chat,
            replies::REFUSED.text(channel.language()),
        )
        .await;
    }
    Ok(())
}

async fn try_link(channel: &Channel, inbound: &Inbound<'_>) -> Result<(), ServiceError> {
    let code = inbound.text.map(presented_code).unwrap_or_default();
    let claimant = Claimant {
        user_id: inbound.user_id,
        telegram_chat: inbound.chat,
        username: inbound.username.clone(),
    };
    let answer = match channel.handle.claim_telegram_link(code, claimant).await? {
        Claim::Linked => {
            tracing::info!("telegram account linked");
            replies::LINKED
        }
        Claim::Rejected => replies::BAD_CODE,
        Claim::Taken => replies::REFUSED,
    };
    reply(channel, inbound.chat, answer.text(channel.language())).await;
    Ok(())
}

/// The code in `/start CODE`, `/start@bot CODE` or a message that is the code alone.
pub(crate) fn presented_code(text: &str) -> String {
    let text = text.trim();
    let rest = match text.strip_prefix("/start") {
        Some(rest) if rest.starts_with('@') => rest.split_once(' ').map_or("", |(_, code)| code),
        Some(rest) => rest,
        None => text,
    };
    rest.trim().chars().take(64).collect()
}

async fn deliver(
    channel: &Arc<Channel>,
    link: &Link,
    souz_chat: Option<String>,
    inbound: &Inbound<'_>,
) -> Result<(), ServiceError> {
    let text = inbound.text.map(str::trim).unwrap_or_default();
    let limit = files::limit(channel, inbound.media);
    if let Err(refusal) = files::check(inbound.media, limit) {
        reply(channel, inbound.chat, &refusal.text(channel.language())).await;
        return Ok(());
    }
    if text.is_empty() && matches!(inbound.media, Media::None) {
        reply(
            channel,
            inbound.chat,
            replies::TEXT_ONLY.text(channel.language()),
        )
        .await;
        return Ok(());
    }
    if text.chars().count() > MAX_INPUT_CHARS {
        reply(
            channel,
            inbound.chat,
            replies::TOO_LONG.text(channel.language()),
        )
        .await;
        return Ok(());
    }
    let update = inbound.update_id.to_string();
    let chat_id = bound_chat(channel, link, souz_chat, &update).await?;
    if let Some(question) = questions::pending_in(channel, &chat_id).await? {
        return answer(channel, inbound, &question, text).await;
    }
    let wanted = match files::wanted(inbound.media, limit, inbound.update_id) {
        Ok(wanted) => wanted,
        Err(refusal) => {
            reply(channel, inbound.chat, &refusal.text(channel.language())).await;
            return Ok(());
        }
    };
    let input = Input {
        chat_id,
        telegram_chat: inbound.chat,
        content: text.to_owned(),
        update_id: inbound.update_id,
    };
    match wanted {
        None => send(channel, input, Vec::new()).await,
        // The download runs on its own task: the updates after this one do not wait for it.
        Some(wanted) => {
            let channel = Arc::clone(channel);
            channel
                .handle
                .clone()
                .spawn(async move { with_file(&channel, input, wanted).await });
            Ok(())
        }
    }
}

/// A message's input to its Souz chat, before its file (if any) is fetched.
struct Input {
    chat_id: String,
    telegram_chat: i64,
    content: String,
    update_id: u32,
}

/// Fetches `wanted` (waiting for a download turn) and sends `input` with it; stops, taking
/// nothing, when the channel stops first.
async fn with_file(channel: &Channel, input: Input, wanted: Wanted) {
    let fetched = tokio::select! {
        () = channel.shutdown.cancelled() => {
            tracing::info!("telegram: a file download was stopped with the channel");
            return;
        }
        fetched = async {
            let _turn = channel.downloads.acquire().await;
            files::fetch(channel, &input.chat_id, &wanted).await
        } => fetched,
    };
    let path = match fetched {
        Ok(path) => path,
        Err(refusal) => {
            let said = refusal.text(channel.language());
            reply(channel, input.telegram_chat, &said).await;
            return;
        }
    };
    let (chat_id, attached) = (input.chat_id.clone(), path.clone());
    if let Err(error) = send(channel, input, vec![path]).await {
        tracing::warn!(%error, "telegram: a message with a file was not taken");
        // No message took the file: it does not stay behind in the upload folder.
        let user = ChatUser(LOCAL_USER.to_owned());
        if let Err(error) = channel
            .handle
            .discard_upload(&user, &chat_id, &attached)
            .await
        {
            tracing::warn!(%error, "telegram: an upload no message took was not removed");
        }
    }
}

/// Sends `input` (with the files at `attachments`) to its Souz chat; says in Telegram when it
/// waits for the running turn, or why it was not taken.
async fn send(
    channel: &Channel,
    input: Input,
    attachments: Vec<String>,
) -> Result<(), ServiceError> {
    let user = ChatUser(LOCAL_USER.to_owned());
    let request = ChatInput {
        content: input.content,
        client_message_id: Some(format!("telegram:{}", input.update_id)),
        attachments,
    };
    match channel
        .handle
        .send_input(&user, &input.chat_id, request)
        .await
    {
        Ok(response) => {
            if response.delivery == InputDelivery::Queued {
                let queued = replies::QUEUED.text(channel.language());
                reply(channel, input.telegram_chat, queued).await;
            }
            Ok(())
        }
        Err(error) => {
            let not_delivered = replies::NOT_DELIVERED.text(channel.language());
            let shown = match &error {
                ServiceError::Internal(_) => not_delivered.to_owned(),
                other => format!("{not_delivered}: {other}"),
            };
            reply(channel, input.telegram_chat, &shown).await;
            Err(error)
        }
    }
}

/// A message while the chat's agent waits for the answer to `question`: its text answers a
/// question that takes the person's own words (as the app's answer field does); otherwise,
/// and for a file, the bot says what it waits for.
async fn answer(
    channel: &Channel,
    inbound: &Inbound<'_>,
    question: &Question,
    text: &str,
) -> Result<(), ServiceError> {
    let language = channel.language();
    let refusal = if !matches!(inbound.media, Media::None) {
        Some(replies::ANSWER_FIRST)
    } else if !question.free_text {
        Some(replies::PICK_A_CHOICE)
    } else {
        None
    };
    if let Some(refusal) = refusal {
        reply(channel, inbound.chat, refusal.text(language)).await;
        return Ok(());
    }
    // With the choices picked on a multiple-choice prompt so far, if any.
    let picked = channel.handle.telegram_picked(&question.id).await?;
    let said = channel
        .handle
        .answer_from_telegram(&question.id, picked, Some(text.to_owned()))
        .await?;
    let shown = match said {
        Press::Answered => return Ok(()),
        Press::Expired => press::EXPIRED,
        Press::AlreadyAnswered => press::ALREADY_ANSWERED,
        _ => replies::NOT_DELIVERED,
    };
    reply(channel, inbound.chat, shown.text(language)).await;
    Ok(())
}

/// The Souz chat the linked account talks in: `souz_chat` while it exists, else a new one,
/// recorded as its chat (`key` makes its creation idempotent: the update that asks for it).
pub(crate) async fn bound_chat(
    channel: &Channel,
    link: &Link,
    souz_chat: Option<String>,
    key: &str,
) -> Result<String, ServiceError> {
    let user = ChatUser(LOCAL_USER.to_owned());
    match souz_chat {
        Some(chat_id) if channel.handle.owns_chat(&user, &chat_id).await? => Ok(chat_id),
        _ => new_chat(channel, &user, link, key).await,
    }
}

/// A new Souz chat for the linked account, recorded as its chat.
async fn new_chat(
    channel: &Channel,
    user: &ChatUser,
    link: &Link,
    key: &str,
) -> Result<String, ServiceError> {
    let request = CreateChat {
        request_id: Some(format!("telegram:{}:{key}", link.user_id)),
        title: Some("Telegram".to_owned()),
        user_id: None,
        client_type: None,
    };
    let (created, _) = channel.handle.create_chat(user, request).await?;
    let chat_id = created.chat.id;
    channel
        .handle
        .set_telegram_chat(link.user_id, chat_id.clone())
        .await?;
    Ok(chat_id)
}

/// Sends `text` to `chat`, logging a failure (a reply lost is not worth more).
async fn reply(channel: &Channel, chat: i64, text: &str) {
    if let Err(error) = send_text(channel, chat, text).await {
        tracing::warn!(%error, "telegram: a reply was not delivered");
    }
}

#[cfg(test)]
mod tests {
    use super::presented_code;

    #[test]
    fn codes_are_read_from_start_commands_or_alone() {
        assert_eq!(presented_code("/start ABC123"), "ABC123");
        assert_eq!(presented_code("/start@souz_bot ABC123"), "ABC123");
        assert_eq!(presented_code("  abc123 "), "abc123");
        assert_eq!(presented_code("/start"), "");
        assert_eq!(presented_code("/start@souz_bot"), "");
    }
}
