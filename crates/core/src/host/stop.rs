//! What stops a running daemon: the embedder's `shutdown` future and, when asked for, the
//! process's stop signals; the first to arrive gives the reason.
//!
//! Invariant: once stopped, a [`StopLatch`] stays stopped with its first reason, so every
//! round (and recovery) that looks at it afterwards sees the same stop.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

/// A future resolving with a stop reason (a signal's name, the embedder's word).
pub(super) type StopFuture = Pin<Box<dyn Future<Output = String> + Send>>;

/// Set once, with the reason, when the daemon is told to stop.
#[derive(Default)]
pub(super) struct StopLatch {
    stopped: CancellationToken,
    reason: Mutex<Option<String>>,
}

impl StopLatch {
    /// Stops with `reason`, unless already stopped.
    pub(super) fn trigger(&self, reason: String) {
        let mut slot = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(reason);
        }
        drop(slot);
        self.stopped.cancel();
    }

    /// Whether the daemon was told to stop.
    pub(super) fn is_stopped(&self) -> bool {
        self.stopped.is_cancelled()
    }

    /// Resolves with the reason once the daemon was told to stop.
    pub(super) async fn wait(&self) -> String {
        self.stopped.cancelled().await;
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "stopped".to_owned())
    }
}

/// Installs the SIGINT and SIGTERM handlers now (before anyone can reach the daemon) and
/// returns a future that resolves with the signal's name.
pub(super) fn signals() -> StopFuture {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        Box::pin(async move {
            let (Ok(mut interrupt), Ok(mut terminate)) = handlers else {
                tracing::error!("cannot install signal handlers; stop Souz with Ctrl-C");
                let _ = tokio::signal::ctrl_c().await;
                return "SIGINT".to_owned();
            };
            tokio::select! {
                _ = interrupt.recv() => "SIGINT".to_owned(),
                _ = terminate.recv() => "SIGTERM".to_owned(),
            }
        })
    }
    #[cfg(not(unix))]
    {
        Box::pin(async move {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C".to_owned()
        })
    }
}
