//! The long-poll loop: ask for the updates from the persisted offset, handle each, move the
//! offset past it, repeat. Errors back off; a 429 waits what Telegram says; a refused token
//! stops the loop (a new token takes a restart).
//!
//! Invariant: the offset moves past an update only after the update was handled, so a crash
//! in between hands the update over again after the restart (the chat input it made is
//! idempotent by the update's id) and none is ever skipped.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Channel;
use super::api::TelegramError;
use super::inbound;

/// The first wait after an error.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait after errors in a row.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Waits growing from [`FIRST_BACKOFF`] to [`MAX_BACKOFF`], doubling per failure in a row.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self {
            next: FIRST_BACKOFF,
        }
    }

    /// The wait after one more failure.
    pub(crate) fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        wait
    }

    /// A success: the next failure waits [`FIRST_BACKOFF`] again.
    pub(crate) fn reset(&mut self) {
        self.next = FIRST_BACKOFF;
    }
}

/// Sleeps `wait`; `false` when `shutdown` came first.
pub(crate) async fn pause(wait: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => false,
        () = tokio::time::sleep(wait) => true,
    }
}

/// Polls until `shutdown` (or until Telegram refuses the token).
pub(crate) async fn run(channel: Arc<Channel>, shutdown: CancellationToken) {
    let mut backoff = Backoff::new();
    let mut offset = loop {
        match channel.handle.telegram_state().await {
            Ok(state) => break state.next_offset,
            Err(error) => {
                tracing::warn!(%error, "telegram: cannot read the channel's state");
                if !pause(backoff.failed(), &shutdown).await {
                    return;
                }
            }
        }
    };
    loop {
        let polled = tokio::select! {
            () = shutdown.cancelled() => return,
            polled = channel.api.updates(offset, channel.poll_seconds) => polled,
        };
        let wait = match polled {
            Ok(updates) => {
                backoff.reset();
                for update in updates {
                    if shutdown.is_cancelled() {
                        return;
                    }
                    let next = i64::from(update.update_id) + 1;
                    inbound::handle(&channel, update).await;
                    if let Err(error) = channel.handle.advance_telegram_offset(next).await {
                        tracing::warn!(%error, "telegram: cannot record the offset");
                    }
                    offset = offset.max(next);
                }
                continue;
            }
            Err(TelegramError::RateLimited(wait)) => {
                tracing::info!(?wait, "telegram: rate limited on getUpdates");
                wait
            }
            Err(error @ TelegramError::Unauthorized(_)) => {
                tracing::error!(%error, "telegram: the channel stops; set a valid token and restart");
                return;
            }
            Err(error) => {
                let wait = backoff.failed();
                tracing::warn!(%error, ?wait, "telegram: polling failed; retrying");
                wait
            }
        };
        if !pause(wait, &shutdown).await {
            return;
        }
    }
}
