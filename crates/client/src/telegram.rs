//! The calls of `/v1/channels/telegram`: the channel's state, a one-time link code, unlinking.

use souz_protocol::telegram::{TelegramLinkCode, TelegramStatus};

use crate::{ClientError, DaemonClient};

impl DaemonClient {
    /// The Telegram channel's state.
    pub async fn telegram_status(&self) -> Result<TelegramStatus, ClientError> {
        self.get("/v1/channels/telegram").await
    }

    /// A new one-time code linking the Telegram account that sends it to the bot.
    pub async fn telegram_link(&self) -> Result<TelegramLinkCode, ClientError> {
        self.post("/v1/channels/telegram/link", &serde_json::json!({}))
            .await
    }

    /// Unlinks the Telegram account (idempotent).
    pub async fn telegram_unlink(&self) -> Result<(), ClientError> {
        self.delete("/v1/channels/telegram/link").await
    }
}
