//! The Bot API as the transport uses it, over `frankenstein`'s client on the workspace's
//! reqwest: long polls, sending, editing, answering button presses. Its errors are mapped once
//! here into [`TelegramError`], which says what the caller should do (wait, back off, stop).
//!
//! Invariants: the token is part of the request path only; no error or log line carries a URL
//! (`frankenstein` strips it from reqwest's errors, and the token is registered for redaction
//! before a client is made). A long poll's HTTP timeout exceeds the poll's own wait, so an idle
//! poll ends with Telegram's empty answer, not a client error.

use std::time::Duration;

use frankenstein::AsyncTelegramApi;
use frankenstein::ParseMode;
use frankenstein::client_reqwest::Bot;
use frankenstein::methods::{
    AnswerCallbackQueryParams, EditMessageTextParams, GetUpdatesParams, SendMessageParams,
};
use frankenstein::types::{AllowedUpdate, InlineKeyboardButton, InlineKeyboardMarkup, ReplyMarkup};
use frankenstein::updates::Update;

/// Seconds added to a long poll's wait for the HTTP timeout.
const POLL_GRACE_SECONDS: u64 = 15;
/// Seconds to connect to the Bot API.
const CONNECT_SECONDS: u64 = 10;

/// Why a Bot API call failed, by what to do about it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelegramError {
    /// Too many requests: wait this long, then try again.
    #[error("Telegram asks to wait {0:?}")]
    RateLimited(Duration),
    /// The token was refused (401, 403 on the bot itself, 404 for an unknown bot).
    #[error("Telegram refused the bot token ({0})")]
    Unauthorized(u64),
    /// Another poller or a webhook holds the updates (409).
    #[error("another poller or a webhook takes this bot's updates: {0}")]
    Conflict(String),
    /// Telegram refused this request (400 and the like): retrying it would fail again.
    #[error("Telegram refused the request ({code}): {description}")]
    Refused {
        /// The error code.
        code: u64,
        /// Telegram's description.
        description: String,
    },
    /// The network, a timeout, or an answer that is not the Bot API's: try again later.
    #[error("cannot reach the Bot API: {0}")]
    Network(String),
}

impl From<frankenstein::Error> for TelegramError {
    fn from(error: frankenstein::Error) -> Self {
        match error {
            frankenstein::Error::Api(response) => {
                let retry_after = response
                    .parameters
                    .and_then(|parameters| parameters.retry_after);
                match (response.error_code, retry_after) {
                    (429, wait) => {
                        Self::RateLimited(Duration::from_secs(u64::from(wait.unwrap_or(1).max(1))))
                    }
                    (401 | 404, _) => Self::Unauthorized(response.error_code),
                    (409, _) => Self::Conflict(response.description),
                    (code, _) if code >= 500 => Self::Network(response.description),
                    (code, _) => Self::Refused {
                        code,
                        description: response.description,
                    },
                }
            }
            // Also what a proxy's HTML error page becomes: transient.
            other => Self::Network(crate::redact::redact_text(&other.to_string())),
        }
    }
}

/// A bot: the Bot API at `api_url` with one token.
#[derive(Clone)]
pub(crate) struct BotApi {
    bot: Bot,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BotApi").finish_non_exhaustive()
    }
}

impl BotApi {
    /// The bot of `token` at `api_url` (`https://api.telegram.org`), whose long polls wait
    /// `poll_seconds`.
    pub(crate) fn new(
        api_url: &str,
        token: &str,
        poll_seconds: u64,
    ) -> Result<Self, TelegramError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(CONNECT_SECONDS))
            .timeout(Duration::from_secs(poll_seconds + POLL_GRACE_SECONDS))
            .build()
            .map_err(|error| TelegramError::Network(error.without_url().to_string()))?;
        let api_url = format!("{}/bot{token}", api_url.trim().trim_end_matches('/'));
        Ok(Self {
            bot: Bot::builder().api_url(api_url).client(client).build(),
        })
    }

    /// The updates from `offset` on, waiting up to `wait_seconds` for the first.
    pub(crate) async fn updates(
        &self,
        offset: i64,
        wait_seconds: u64,
    ) -> Result<Vec<Update>, TelegramError> {
        let params = GetUpdatesParams::builder()
            .offset(offset)
            .timeout(u32::try_from(wait_seconds).unwrap_or(u32::MAX))
            .allowed_updates(vec![AllowedUpdate::Message, AllowedUpdate::CallbackQuery])
            .build();
        Ok(self.bot.get_updates(&params).await?.result)
    }

    /// Sends `text` (already escaped for `MarkdownV2` when `markdown`) to `chat`; the new
    /// message's id.
    pub(crate) async fn send(
        &self,
        chat: i64,
        text: &str,
        markdown: bool,
    ) -> Result<i32, TelegramError> {
        let params = SendMessageParams::builder()
            .chat_id(chat)
            .text(text)
            .maybe_parse_mode(markdown.then_some(ParseMode::MarkdownV2))
            .build();
        Ok(self.bot.send_message(&params).await?.result.message_id)
    }

    /// Sends `text` (escaped for `MarkdownV2`) to `chat` with one row of inline buttons, each
    /// `(label, callback data)`.
    pub(crate) async fn send_with_buttons(
        &self,
        chat: i64,
        text: &str,
        buttons: &[(&str, &str)],
    ) -> Result<i32, TelegramError> {
        let row = buttons
            .iter()
            .map(|(label, data)| {
                InlineKeyboardButton::builder()
                    .text(*label)
                    .callback_data(*data)
                    .build()
            })
            .collect();
        let markup = InlineKeyboardMarkup::builder()
            .inline_keyboard(vec![row])
            .build();
        let params = SendMessageParams::builder()
            .chat_id(chat)
            .text(text)
            .parse_mode(ParseMode::MarkdownV2)
            .reply_markup(ReplyMarkup::InlineKeyboardMarkup(markup))
            .build();
        Ok(self.bot.send_message(&params).await?.result.message_id)
    }

    /// Replaces the text of `message` in `chat` (escaped for `MarkdownV2`).
    #[expect(dead_code, reason = "streamed edits come next")]
    pub(crate) async fn edit(
        &self,
        chat: i64,
        message: i32,
        text: &str,
    ) -> Result<(), TelegramError> {
        let params = EditMessageTextParams::builder()
            .chat_id(chat)
            .message_id(message)
            .text(text)
            .parse_mode(ParseMode::MarkdownV2)
            .build();
        self.bot.edit_message_text(&params).await?;
        Ok(())
    }

    /// Answers the button press `query` with `text` (shown briefly to the person).
    pub(crate) async fn answer_press(&self, query: &str, text: &str) -> Result<(), TelegramError> {
        let params = AnswerCallbackQueryParams::builder()
            .callback_query_id(query)
            .text(text)
            .build();
        self.bot.answer_callback_query(&params).await?;
        Ok(())
    }
}
