//! When the Telegram transport runs: from the start while `[channels.telegram] enabled` is set
//! and a bot token is configured, and from then on as they change — a save of the section
//! (the settings editor's reload hook for `[channels]`) or the `telegram` key set or removed
//! ([`ChannelTools::key_changes`](crate::channels::tools::ChannelTools::key_changes)) starts,
//! restarts or stops it in place, without a daemon restart.
//!
//! Invariants:
//! - At most one transport runs. A restart stops the old one and waits until each of its
//!   tasks ended (an update being handled is finished and its offset recorded) before the new
//!   one polls, so no update is handled twice.
//! - The channel tools reach whichever transport runs now ([`Slot`]); while none runs, they
//!   list no channel and send nothing.
//! - A save or a key change that leaves the section and the token as they were changes
//!   nothing.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::api::BotApi;
use super::messenger::TelegramMessenger;
use super::{Channel, files, outbound, poll, prompts};
use crate::config::TelegramConfig;
use crate::runtime::{RuntimeHandle, ServiceError};

/// The transport running now, for the channel tools.
#[derive(Default)]
pub(crate) struct Slot(RwLock<Option<Arc<Channel>>>);

impl Slot {
    /// The running transport, if one runs.
    pub(crate) fn current(&self) -> Option<Arc<Channel>> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set(&self, channel: Option<Arc<Channel>>) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = channel;
    }
}

/// What the transport runs from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wanted {
    config: TelegramConfig,
    token: Option<String>,
}

/// A running transport.
struct Running {
    wanted: Wanted,
    /// Stops its tasks.
    stop: CancellationToken,
    /// Ends (`None`) once every task of it ended.
    ended: mpsc::Receiver<()>,
}

/// Binds the channel tools, applies the configuration now, and follows its changes.
pub(crate) async fn start(handle: &RuntimeHandle) -> Result<bool, ServiceError> {
    let slot = Arc::new(Slot::default());
    handle
        .channel_tools()
        .bind(Arc::new(TelegramMessenger(Arc::clone(&slot))));
    let editor = handle.config_editor();
    let (saved, config) = watch::channel(editor.current().await.channels.telegram);
    editor.on_save("channels", move |config| {
        saved.send_replace(config.channels.telegram.clone());
        Ok(())
    });
    let keys = handle.channel_tools().key_changes();
    let mut running = None;
    let first = config.borrow().clone();
    apply(handle, &slot, &mut running, first).await?;
    let started = running.is_some();
    let follower = Follower {
        handle: handle.clone(),
        slot,
        running,
        config,
        keys,
    };
    handle.spawn(follower.run());
    Ok(started)
}

/// Follows the section and the key until the runtime stops.
struct Follower {
    handle: RuntimeHandle,
    slot: Arc<Slot>,
    running: Option<Running>,
    config: watch::Receiver<TelegramConfig>,
    keys: watch::Receiver<u64>,
}

impl Follower {
    async fn run(mut self) {
        let shutdown = self.handle.shutdown_signal();
        loop {
            let changed = tokio::select! {
                () = shutdown.cancelled() => break,
                changed = self.config.changed() => changed,
                changed = self.keys.changed() => changed,
            };
            if changed.is_err() {
                break;
            }
            let wanted = self.config.borrow_and_update().clone();
            self.keys.borrow_and_update();
            if let Err(error) = apply(&self.handle, &self.slot, &mut self.running, wanted).await {
                tracing::warn!(%error, "the Telegram channel could not apply its new settings");
            }
        }
        if let Some(running) = self.running.take() {
            stop(&self.slot, running).await;
        }
    }
}

/// Makes the transport run as `config` and the stored token say: starts, restarts or stops
/// it, or leaves it be when nothing it runs from changed.
async fn apply(
    handle: &RuntimeHandle,
    slot: &Slot,
    running: &mut Option<Running>,
    config: TelegramConfig,
) -> Result<(), ServiceError> {
    let token = if config.enabled {
        handle.telegram_token().await?
    } else {
        None
    };
    let wanted = Wanted { config, token };
    if running.as_ref().is_some_and(|now| now.wanted == wanted) {
        return Ok(());
    }
    if let Some(old) = running.take() {
        stop(slot, old).await;
        tracing::info!("telegram channel stopped to apply new settings");
    }
    if !wanted.config.enabled {
        return Ok(());
    }
    let Some(token) = wanted.token.as_deref() else {
        tracing::warn!(
            "[channels.telegram] is enabled but no bot token is set: `souz keys set telegram`"
        );
        return Ok(());
    };
    let config = &wanted.config;
    let api = BotApi::new(&config.api_url, token, config.poll_seconds)
        .map_err(|error| ServiceError::Internal(error.to_string()))?;
    let stop = handle.shutdown_signal().child_token();
    let channel = Arc::new(Channel {
        handle: handle.clone(),
        api,
        poll_seconds: config.poll_seconds,
        edit_interval: Duration::from_millis(config.edit_interval_ms),
        downloads: Arc::new(tokio::sync::Semaphore::new(files::MAX_DOWNLOADS)),
        shutdown: stop.clone(),
    });
    let (alive, ended) = mpsc::channel(1);
    let forward = outbound::forward(Arc::clone(&channel), stop.clone());
    spawn_tracked(handle, alive.clone(), forward);
    let prompts = prompts::follow(Arc::clone(&channel), stop.clone());
    spawn_tracked(handle, alive.clone(), prompts);
    spawn_tracked(handle, alive, poll::run(Arc::clone(&channel), stop.clone()));
    slot.set(Some(channel));
    *running = Some(Running {
        wanted,
        stop,
        ended,
    });
    tracing::info!("telegram channel started");
    Ok(())
}

/// Runs `task` on the runtime's tasks, holding `alive` until it ends.
fn spawn_tracked(
    handle: &RuntimeHandle,
    alive: mpsc::Sender<()>,
    task: impl Future<Output = ()> + Send + 'static,
) {
    handle.spawn(async move {
        task.await;
        drop(alive);
    });
}

/// Stops `running` and waits until each of its tasks ended.
async fn stop(slot: &Slot, mut running: Running) {
    slot.set(None);
    running.stop.cancel();
    while running.ended.recv().await.is_some() {}
}
