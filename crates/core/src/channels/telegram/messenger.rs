//! The Telegram channel as the channel tools see it ([`Messenger`]): the linked account is the
//! one active channel (type `telegram`, id its private chat with the bot); a message goes out
//! through the transport's own send path ([`send_parts`]: split, escaped, retried after a
//! 429), and what Telegram took is recorded in the Souz chat the account talks in (original
//! §1.15), so the conversation there shows it.
//!
//! Invariant: a message goes only to the account linked at the moment it is sent, through the
//! transport running then; after an unlink (or a link of another account), or while no
//! transport runs, nothing is sent.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::Channel;
use super::inbound::bound_chat;
use super::lifecycle::Slot;
use super::outbound::send_parts;
use crate::LOCAL_USER;
use crate::channels::store::Link;
use crate::channels::tools::{ActiveChannel, ChannelError, Messenger};
use crate::runtime::facade::ChatUser;

/// The channel type the tools name.
pub(crate) const CHANNEL_TYPE: &str = "telegram";

/// The Telegram channel, for the tools: whichever transport runs now.
pub(crate) struct TelegramMessenger(pub(crate) Arc<Slot>);

impl TelegramMessenger {
    /// The running transport and the linked account; `None` while no transport runs.
    async fn link(&self) -> Result<Option<(Arc<Channel>, Link)>, ChannelError> {
        let Some(channel) = self.0.current() else {
            return Ok(None);
        };
        let state = channel
            .handle
            .telegram_state()
            .await
            .map_err(|error| ChannelError::Internal(error.to_string()))?;
        Ok(state.link.map(|link| (channel, link)))
    }
}

/// The linked account as a channel.
fn active(link: &Link) -> ActiveChannel {
    let label = match &link.username {
        Some(name) => format!("Telegram @{name}"),
        None => format!("Telegram (account {})", link.user_id),
    };
    ActiveChannel {
        channel_type: CHANNEL_TYPE.to_owned(),
        channel_id: link.telegram_chat.to_string(),
        label,
    }
}

/// Records what was delivered in the Souz chat the linked account talks in (a new one when
/// it has none yet), so the conversation there shows it; a failure is logged (the message
/// went out all the same).
async fn record(channel: &Channel, link: &Link, delivered: &str) {
    let recorded = async {
        let state = channel.handle.telegram_state().await?;
        let key = format!("delivered:{}", uuid::Uuid::now_v7());
        let chat_id = bound_chat(channel, link, state.souz_chat, &key).await?;
        let user = ChatUser(LOCAL_USER.to_owned());
        channel
            .handle
            .record_delivered(&user, &chat_id, CHANNEL_TYPE, delivered)
            .await
    };
    if let Err(error) = recorded.await {
        tracing::warn!(%error, "telegram: a delivered message was not recorded in its chat");
    }
}

impl Messenger for TelegramMessenger {
    fn channels(&self) -> BoxFuture<'_, Result<Vec<ActiveChannel>, ChannelError>> {
        Box::pin(async move {
            let linked = self.link().await?;
            Ok(linked.iter().map(|(_, link)| active(link)).collect())
        })
    }

    fn send<'a>(
        &'a self,
        channel: &'a ActiveChannel,
        text: &'a str,
    ) -> BoxFuture<'a, Result<usize, ChannelError>> {
        Box::pin(async move {
            let (running, link) = self
                .link()
                .await?
                .filter(|(_, link)| active(link) == *channel)
                .ok_or_else(|| {
                    ChannelError::NotFound(format!("{} is not linked", channel.label))
                })?;
            let (sent, outcome) = send_parts(&running, link.telegram_chat, text).await;
            if !sent.is_empty() {
                record(&running, &link, &sent.join("\n\n")).await;
            }
            outcome.map_err(|error| {
                ChannelError::NotDelivered(format!(
                    "Telegram did not take the message (a part of a long one may have \
                     arrived): {error}"
                ))
            })?;
            Ok(sent.len())
        })
    }
}
