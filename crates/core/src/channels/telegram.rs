//! The Telegram channel's transport: a long-poll loop on `getUpdates` from the persisted
//! offset ([`poll`]), what each update does ([`inbound`]: link with a one-time code, refuse a
//! stranger once, or hand the linked person's text to their Souz chat), and a forwarder that
//! sends every answer of that chat back ([`outbound`], split and escaped by [`text`]).
//!
//! Invariants:
//! - It runs on the runtime's tasks ([`RuntimeHandle::spawn`]) and stops with its shutdown
//!   token; nothing else in Souz waits on Telegram.
//! - Idle, it holds one long-poll request; after an error it backs off (doubling to a minute),
//!   after a 429 it waits the `retry_after` Telegram names.
//! - Only the linked account (user and its private chat) reaches a chat; everyone else gets one
//!   refusal and leaves an audit row only.

pub(crate) mod api;
mod inbound;
mod outbound;
mod poll;
pub(crate) mod text;

#[cfg(test)]
mod approval_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;

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
    /// The runtime's shutdown: every wait of the channel ends with it.
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// Starts the Telegram transport on the runtime's tasks when `[channels.telegram] enabled` is
/// set and a bot token is configured; `Ok(false)` (and a log line saying why) when not.
pub async fn start(handle: &RuntimeHandle) -> Result<bool, ServiceError> {
    let config = handle.config().channels.telegram.clone();
    if !config.enabled {
        return Ok(false);
    }
    let Some(token) = handle.telegram_token().await? else {
        tracing::warn!(
            "[channels.telegram] is enabled but no bot token is set: `souz keys set telegram`"
        );
        return Ok(false);
    };
    let api = BotApi::new(&config.api_url, &token, config.poll_seconds)
        .map_err(|error| ServiceError::Internal(error.to_string()))?;
    let shutdown = handle.shutdown_signal();
    let channel = Arc::new(Channel {
        handle: handle.clone(),
        api,
        poll_seconds: config.poll_seconds,
        shutdown: shutdown.clone(),
    });
    handle.spawn(outbound::forward(Arc::clone(&channel), shutdown.clone()));
    handle.spawn(poll::run(channel, shutdown));
    tracing::info!("telegram channel started");
    Ok(true)
}
