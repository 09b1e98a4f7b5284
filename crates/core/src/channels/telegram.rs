//! The Telegram channel's transport: a long-poll loop on `getUpdates` from the persisted
//! offset ([`poll`]), what each update does ([`inbound`]: link with a one-time code, refuse a
//! stranger once, or hand the linked person's text (photos and documents as attachments,
//! [`files`]) to their Souz chat), a forwarder that
//! streams every answer of that chat back ([`outbound`] follows the chat's events, [`stream`]
//! edits the answer's messages at a throttled rate, split and escaped by [`text`]), and the
//! approval prompts with their buttons, for that chat and for parked scheduled runs, closed
//! when the approval ends however it ends ([`prompts`]), and the questions its agent asks,
//! a button per choice ([`questions`]). The bot speaks the person's interface
//! language ([`replies`]). Once it runs, the channel tools list and message the linked account
//! through it ([`messenger`]).
//!
//! Invariants:
//! - It runs on the runtime's tasks ([`RuntimeHandle::spawn`]) and stops with its shutdown
//!   token; nothing else in Souz waits on Telegram. Saving `[channels.telegram]` or setting or
//!   removing the `telegram` key starts, restarts or stops it in place ([`lifecycle`]).
//! - Idle, it holds one long-poll request; after an error it backs off (doubling to a minute),
//!   after a 429 it waits the `retry_after` Telegram names.
//! - Only the linked account (user and its private chat) reaches a chat; everyone else gets one
//!   refusal and leaves an audit row only.

pub(crate) mod api;
mod files;
mod inbound;
mod lifecycle;
mod messenger;
mod outbound;
mod poll;
mod prompts;
mod questions;
pub(crate) mod replies;
mod stream;
pub(crate) mod text;

#[cfg(test)]
mod approval_tests;
#[cfg(test)]
mod file_tests;
#[cfg(test)]
mod prompt_tests;
#[cfg(test)]
mod question_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tool_tests;

use std::sync::Arc;
use std::time::Duration;

use souz_protocol::language::Language;

use self::api::BotApi;
use crate::runtime::{RuntimeHandle, ServiceError};

/// What the channel's tasks share.
pub(crate) struct Channel {
    /// The runtime, through its facade.
    pub handle: RuntimeHandle,
    /// The bot.
    pub api: BotApi,
    /// Seconds one long poll waits.
    pub poll_seconds: u64,
    /// The least time between two edits of a streamed answer.
    pub edit_interval: Duration,
    /// Turns for file downloads ([`files::MAX_DOWNLOADS`] at once).
    pub downloads: Arc<tokio::sync::Semaphore>,
    /// The channel's stop (a child of the runtime's shutdown): every wait of the channel ends
    /// with it.
    pub shutdown: tokio_util::sync::CancellationToken,
}

impl Channel {
    /// The language the bot speaks: the local person's interface language.
    pub(crate) fn language(&self) -> Language {
        self.handle.gate().language()
    }
}

/// Starts the Telegram channel's lifecycle on the runtime's tasks: the transport runs while
/// `[channels.telegram] enabled` is set and a bot token is configured, and follows both
/// without a restart ([`lifecycle`]). `Ok(true)` when the transport runs now; `Ok(false)` (and
/// a log line saying why) when not yet.
pub async fn start(handle: &RuntimeHandle) -> Result<bool, ServiceError> {
    lifecycle::start(handle).await
}
