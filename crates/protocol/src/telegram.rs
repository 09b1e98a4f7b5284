//! The Telegram channel on the wire: whether it runs, who is linked, and the one-time code that
//! links a Telegram account (`souz telegram link`, `POST /v1/channels/telegram/link`).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The Telegram account Souz serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TelegramAccount {
    /// Its Telegram user id.
    pub user_id: i64,
    /// Its `@username`, when it has one.
    pub username: Option<String>,
    /// When it was linked.
    pub linked_at: DateTime<Utc>,
}

/// `GET /v1/channels/telegram`: the channel's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TelegramStatus {
    /// `[channels.telegram] enabled`.
    pub enabled: bool,
    /// Whether a bot token is configured (stored as the `telegram` key, or in
    /// `TELEGRAM_BOT_TOKEN`).
    pub token_configured: bool,
    /// The linked account; `null` when none is.
    pub linked: Option<TelegramAccount>,
    /// Until when the last link code is valid, when one is waiting to be used.
    pub code_expires_at: Option<DateTime<Utc>>,
}

/// `POST /v1/channels/telegram/link`: a one-time code to send to the bot. Shown once: only its
/// hash is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TelegramLinkCode {
    /// The code.
    pub code: String,
    /// What to send to the bot: `/start CODE` (the code alone works too).
    pub command: String,
    /// When the code stops working (it also stops at its first use).
    pub expires_at: DateTime<Utc>,
}
