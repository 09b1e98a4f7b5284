//! The Telegram channel as the channel tools see it ([`Messenger`]): the linked account is the
//! one active channel (type `telegram`, id its private chat with the bot); a message goes out
//! through the transport's own send path ([`send_text`]: split, escaped, retried after a 429).
//!
//! Invariant: a message goes only to the account linked at the moment it is sent; after an
//! unlink (or a link of another account) nothing is sent.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::Channel;
use super::outbound::send_text;
use super::text::{MAX_MESSAGE_UNITS, split_message};
use crate::channels::store::Link;
use crate::channels::tools::{ActiveChannel, ChannelError, Messenger};

/// The channel type the tools name.
pub(crate) const CHANNEL_TYPE: &str = "telegram";

/// The running Telegram channel, for the tools.
pub(crate) struct TelegramMessenger(pub(crate) Arc<Channel>);

impl TelegramMessenger {
    async fn link(&self) -> Result<Option<Link>, ChannelError> {
        let state = self
            .0
            .handle
            .telegram_state()
            .await
            .map_err(|error| ChannelError::Internal(error.to_string()))?;
        Ok(state.link)
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

impl Messenger for TelegramMessenger {
    fn channels(&self) -> BoxFuture<'_, Result<Vec<ActiveChannel>, ChannelError>> {
        Box::pin(async move { Ok(self.link().await?.iter().map(active).collect()) })
    }

    fn send<'a>(
        &'a self,
        channel: &'a ActiveChannel,
        text: &'a str,
    ) -> BoxFuture<'a, Result<usize, ChannelError>> {
        Box::pin(async move {
            let link = self
                .link()
                .await?
                .filter(|link| active(link) == *channel)
                .ok_or_else(|| {
                    ChannelError::NotFound(format!("{} is not linked", channel.label))
                })?;
            send_text(&self.0, link.telegram_chat, text)
                .await
                .map_err(|error| {
                    ChannelError::NotDelivered(format!(
                        "Telegram did not take the message (a part of a long one may have \
                         arrived): {error}"
                    ))
                })?;
            Ok(split_message(text, MAX_MESSAGE_UNITS).len())
        })
    }
}
