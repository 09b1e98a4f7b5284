//! The Bot API as the transport uses it, over `frankenstein`'s client on the workspace's
//! reqwest: long polls, sending, editing, answering button presses. Its errors are mapped once
//! here into [`TelegramError`], which says what the caller should do (wait, back off, stop).
//!
//! Files the person sends are fetched here too: `getFile`, then a download from the Bot API's
//! file URL (`<api_url>/file/bot<token>/<file_path>`), bounded in size and time ([`Download`]).
//!
//! Invariants: the token is part of the request path only; no error or log line carries a URL
//! (`frankenstein` strips it from reqwest's errors, downloads strip it with `without_url`, and
//! the token is registered for redaction before a client is made). A long poll's HTTP timeout
//! exceeds the poll's own wait, so an idle poll ends with Telegram's empty answer, not a
//! client error. A download never holds more than its limit in memory: a size announced over
//! it is refused before any byte is read, and a body that grows past it is cut off.

use std::time::Duration;

use frankenstein::AsyncTelegramApi;
use frankenstein::ParseMode;
use frankenstein::client_reqwest::Bot;
use frankenstein::methods::{
    AnswerCallbackQueryParams, DeleteMessageParams, EditMessageTextParams, GetFileParams,
    GetUpdatesParams, SendMessageParams,
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

/// Why a file could not be fetched.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DownloadError {
    /// Larger than the limit (announced so, or found so while reading).
    #[error("the file is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// `getFile` failed, or named no usable path.
    #[error(transparent)]
    Api(#[from] TelegramError),
    /// The Bot API named a file path that is not a plain relative path.
    #[error("the Bot API named an unusable file path")]
    BadPath,
    /// The download failed or took too long.
    #[error("the download failed: {0}")]
    Network(String),
}

/// A file to fetch: what `getFile` said of it.
#[derive(Debug, Clone)]
pub(crate) struct RemoteFile {
    /// Its size, when Telegram says.
    pub size: Option<u64>,
    /// Its path below the bot's file URL.
    pub path: String,
}

/// A download's bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Download {
    /// The most bytes taken.
    pub limit: u64,
    /// The longest it may take, from the request to the last byte.
    pub time: Duration,
}

/// A download error without its URL (which holds the token).
fn network(error: reqwest::Error) -> DownloadError {
    DownloadError::Network(crate::redact::redact_text(&error.without_url().to_string()))
}

/// Whether `path` is a plain relative path: letters, digits and `_-./`, no empty, `.` or `..`
/// part (Telegram's are like `documents/file_12.pdf`).
fn plain_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 512
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// The edit of `message` in `chat` to `text` (escaped for `MarkdownV2`), without buttons.
fn edit_params(chat: i64, message: i32, text: &str) -> EditMessageTextParams {
    EditMessageTextParams::builder()
        .chat_id(chat)
        .message_id(message)
        .text(text)
        .parse_mode(ParseMode::MarkdownV2)
        .build()
}

/// Inline buttons in `rows`, each `(label, callback data)`.
fn keyboard(rows: &[Vec<(&str, &str)>]) -> InlineKeyboardMarkup {
    let keyboard = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|(label, data)| {
                    InlineKeyboardButton::builder()
                        .text(*label)
                        .callback_data(*data)
                        .build()
                })
                .collect()
        })
        .collect();
    InlineKeyboardMarkup::builder()
        .inline_keyboard(keyboard)
        .build()
}

/// A bot: the Bot API at `api_url` with one token.
#[derive(Clone)]
pub(crate) struct BotApi {
    bot: Bot,
    /// The client under `bot`, for downloads.
    client: reqwest::Client,
    /// `<api_url>/file/bot<token>`: holds the token, never shown.
    files_url: String,
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
        let base = api_url.trim().trim_end_matches('/');
        Ok(Self {
            bot: Bot::builder()
                .api_url(format!("{base}/bot{token}"))
                .client(client.clone())
                .build(),
            client,
            files_url: format!("{base}/file/bot{token}"),
        })
    }

    /// What Telegram keeps of the file `file_id` (`getFile`).
    pub(crate) async fn file(&self, file_id: &str) -> Result<RemoteFile, DownloadError> {
        let params = GetFileParams::builder().file_id(file_id).build();
        let file = self
            .bot
            .get_file(&params)
            .await
            .map_err(TelegramError::from)?;
        let path = file.result.file_path.ok_or(DownloadError::BadPath)?;
        Ok(RemoteFile {
            size: file.result.file_size,
            path,
        })
    }

    /// The bytes of `file`, within `bounds`: refused when announced (by `getFile` or the
    /// response's length) over the limit, cut off when the body grows past it.
    pub(crate) async fn download(
        &self,
        file: &RemoteFile,
        bounds: Download,
    ) -> Result<Vec<u8>, DownloadError> {
        let too_large = DownloadError::TooLarge {
            limit: bounds.limit,
        };
        if file.size.is_some_and(|size| size > bounds.limit) {
            return Err(too_large);
        }
        if !plain_path(&file.path) {
            return Err(DownloadError::BadPath);
        }
        let url = format!("{}/{}", self.files_url, file.path);
        let fetch = async {
            let mut response = self
                .client
                .get(url)
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(network)?;
            if response
                .content_length()
                .is_some_and(|length| length > bounds.limit)
            {
                return Err(too_large);
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(network)? {
                if bytes.len() as u64 + chunk.len() as u64 > bounds.limit {
                    return Err(too_large);
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(bytes)
        };
        tokio::time::timeout(bounds.time, fetch)
            .await
            .unwrap_or_else(|_| {
                Err(DownloadError::Network(format!(
                    "no complete file within {} seconds",
                    bounds.time.as_secs()
                )))
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

    /// Sends `text` (escaped for `MarkdownV2`) to `chat` with inline buttons in `rows`, each
    /// `(label, callback data)`.
    pub(crate) async fn send_with_buttons(
        &self,
        chat: i64,
        text: &str,
        rows: &[Vec<(&str, &str)>],
    ) -> Result<i32, TelegramError> {
        let params = SendMessageParams::builder()
            .chat_id(chat)
            .text(text)
            .parse_mode(ParseMode::MarkdownV2)
            .reply_markup(ReplyMarkup::InlineKeyboardMarkup(keyboard(rows)))
            .build();
        Ok(self.bot.send_message(&params).await?.result.message_id)
    }

    /// Replaces the text of `message` in `chat` (escaped for `MarkdownV2`) and its buttons
    /// with `rows`, each `(label, callback data)`. As [`Self::edit`], "not modified" is a success.
    pub(crate) async fn edit_with_buttons(
        &self,
        chat: i64,
        message: i32,
        text: &str,
        rows: &[Vec<(&str, &str)>],
    ) -> Result<(), TelegramError> {
        let mut params = edit_params(chat, message, text);
        params.reply_markup = Some(keyboard(rows));
        self.edit_message(&params).await
    }

    /// Replaces the text of `message` in `chat` (escaped for `MarkdownV2`) and removes its
    /// buttons. Telegram's "message is not modified" (the text is already this) is a success.
    pub(crate) async fn edit(
        &self,
        chat: i64,
        message: i32,
        text: &str,
    ) -> Result<(), TelegramError> {
        self.edit_message(&edit_params(chat, message, text)).await
    }

    async fn edit_message(&self, params: &EditMessageTextParams) -> Result<(), TelegramError> {
        match self.bot.edit_message_text(params).await {
            Ok(_) => Ok(()),
            Err(error) => match TelegramError::from(error) {
                TelegramError::Refused { description, .. }
                    if description.contains("message is not modified") =>
                {
                    Ok(())
                }
                other => Err(other),
            },
        }
    }

    /// Deletes `message` in `chat`.
    pub(crate) async fn delete(&self, chat: i64, message: i32) -> Result<(), TelegramError> {
        let params = DeleteMessageParams::builder()
            .chat_id(chat)
            .message_id(message)
            .build();
        self.bot.delete_message(&params).await?;
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use souz_testkit::telegram::FakeTelegram;

    use super::{BotApi, Download, DownloadError, RemoteFile};

    const TOKEN: &str = "4242:download-token-never-shown";

    fn bounds() -> Download {
        Download {
            limit: 1024,
            time: Duration::from_secs(5),
        }
    }

    #[tokio::test]
    async fn download_errors_never_carry_the_token() {
        let telegram = FakeTelegram::start(TOKEN).await;
        let missing = RemoteFile {
            size: None,
            path: "documents/missing.bin".to_owned(),
        };
        let api = BotApi::new(telegram.url(), TOKEN, 1).unwrap();
        let not_found = api.download(&missing, bounds()).await.unwrap_err();
        // A closed port: the connection itself fails.
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let unreachable = BotApi::new(&url, TOKEN, 1)
            .unwrap()
            .download(&missing, bounds())
            .await
            .unwrap_err();
        for error in [not_found, unreachable] {
            assert!(matches!(error, DownloadError::Network(_)), "{error:?}");
            let shown = format!("{error} {error:?}");
            assert!(!shown.contains(TOKEN), "{shown}");
            assert!(!shown.contains("download-token"), "{shown}");
        }
        let escaping = RemoteFile {
            size: None,
            path: "../bot/getMe".to_owned(),
        };
        assert!(matches!(
            api.download(&escaping, bounds()).await,
            Err(DownloadError::BadPath)
        ));
        let announced = RemoteFile {
            size: Some(4096),
            path: "documents/file_1.bin".to_owned(),
        };
        assert!(matches!(
            api.download(&announced, bounds()).await,
            Err(DownloadError::TooLarge { limit: 1024 })
        ));
        assert_eq!(
            telegram.downloads(),
            1,
            "only the missing file was asked for"
        );
    }
}
