//! What one update does. A private text message from the linked account becomes input to its
//! Souz chat (a new turn, or steering for the running one); a photo or a document becomes an
//! attachment of that input, its caption the text ([`files`](super::files)); `/start CODE` or
//! a code alone from anyone while nobody is linked tries to link them; anyone else, once
//! linked, gets one refusal. Groups, channels, bots and other kinds of updates are skipped; a
//! button press of the linked account decides the approval its single-use handle names, and
//! every press is answered at once.
//!
//! Invariants: linking never starts a turn; of a stranger only an audit row is kept; the input
//! a message makes carries `telegram:<update id>` as its client message id, so handing the same
//! update over twice (a crash before the offset moved) starts one turn.

use frankenstein::types::{CallbackQuery, ChatType, Message};
use frankenstein::updates::{Update, UpdateContent};
use souz_protocol::chat::{ChatInput, CreateChat, InputDelivery};

use super::Channel;
use super::files::{self, Media};
use super::outbound::send_text;
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
pub(crate) async fn handle(channel: &Channel, update: Update) {
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
            match channel.handle.press_telegram_button(handle).await? {
                Press::Approved => press::APPROVED,
                Press::Denied => press::DENIED,
                Press::Invalid => press::INVALID,
                Press::AlreadyDecided => press::ALREADY_DECIDED,
                Press::Expired => press::EXPIRED,
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

async fn on_message(channel: &Channel, inbound: Inbound<'_>) -> Result<(), ServiceError> {
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
    channel: &Channel,
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
    let user = ChatUser(LOCAL_USER.to_owned());
    let chat_id = match souz_chat {
        Some(chat_id) if channel.handle.owns_chat(&user, &chat_id).await? => chat_id,
        _ => new_chat(channel, &user, link, inbound.update_id).await?,
    };
    let attachments =
        match files::fetch(channel, &chat_id, inbound.media, limit, inbound.update_id).await {
            Ok(paths) => paths,
            Err(refusal) => {
                reply(channel, inbound.chat, &refusal.text(channel.language())).await;
                return Ok(());
            }
        };
    let input = ChatInput {
        content: text.to_owned(),
        client_message_id: Some(format!("telegram:{}", inbound.update_id)),
        attachments,
    };
    match channel.handle.send_input(&user, &chat_id, input).await {
        Ok(response) => {
            if response.delivery == InputDelivery::Queued {
                let queued = replies::QUEUED.text(channel.language());
                reply(channel, inbound.chat, queued).await;
            }
            Ok(())
        }
        Err(error) => {
            let not_delivered = replies::NOT_DELIVERED.text(channel.language());
            let shown = match &error {
                ServiceError::Internal(_) => not_delivered.to_owned(),
                other => format!("{not_delivered}: {other}"),
            };
            reply(channel, inbound.chat, &shown).await;
            Err(error)
        }
    }
}

/// A new Souz chat for the linked account, recorded as its chat.
async fn new_chat(
    channel: &Channel,
    user: &ChatUser,
    link: &Link,
    update_id: u32,
) -> Result<String, ServiceError> {
    let request = CreateChat {
        request_id: Some(format!("telegram:{}:{update_id}", link.user_id)),
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
