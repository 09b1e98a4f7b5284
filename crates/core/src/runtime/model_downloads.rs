//! The downloads of local model files (`souz models pull`, the Models page): which run, how far
//! each has come, and which failed last.
//!
//! Invariants: at most one download per profile; each runs as a runtime task, so a client that
//! goes away does not stop it, while removing the model or stopping the daemon does (cancel,
//! then wait until it has ended, so nothing writes the file after); it reports in order: a
//! `local.model.download.progress` event when it starts and at each whole percent, then exactly
//! one of `completed`, `failed` or `cancelled`; a failure is kept for the list (`failed`, with
//! why) until the next pull or the model's removal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use souz_protocol::{LocalModelState, RuntimeEvent};
use tokio_util::sync::CancellationToken;

use crate::memory::download::DownloadError;
use crate::sandbox::net::WebError;

enum Entry {
    Running {
        received: u64,
        total: u64,
        /// The last whole percent reported (`None`: nothing reported yet).
        percent: Option<u64>,
        cancel: CancellationToken,
        /// Cancelled once the download has ended (its file closed).
        ended: CancellationToken,
    },
    Failed(String),
}

/// The daemon's local model downloads (one set per runtime).
#[derive(Clone, Default)]
pub(crate) struct ModelDownloads {
    entries: Arc<Mutex<HashMap<&'static str, Entry>>>,
}

impl ModelDownloads {
    fn entries(&self) -> MutexGuard<'_, HashMap<&'static str, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `profile`'s download as the list shows it: running, or the last one failed.
    pub(crate) fn state(&self, profile: &str) -> Option<LocalModelState> {
        match self.entries().get(profile)? {
            Entry::Running {
                received, total, ..
            } => Some(LocalModelState::Downloading {
                received: *received,
                total: *total,
            }),
            Entry::Failed(error) => Some(LocalModelState::Failed {
                error: error.clone(),
            }),
        }
    }

    /// Registers a download of `profile` (`total` bytes) that `stop` (a child of it) cancels;
    /// `None` when one runs already.
    pub(crate) fn begin(
        &self,
        profile: &'static str,
        total: u64,
        stop: &CancellationToken,
    ) -> Option<Running> {
        let mut entries = self.entries();
        if matches!(entries.get(profile), Some(Entry::Running { .. })) {
            return None;
        }
        let cancel = stop.child_token();
        let ended = CancellationToken::new();
        entries.insert(
            profile,
            Entry::Running {
                received: 0,
                total,
                percent: None,
                cancel: cancel.clone(),
                ended: ended.clone(),
            },
        );
        Some(Running {
            downloads: self.clone(),
            profile,
            cancel,
            ended,
        })
    }

    /// Stops `profile`'s download, if one runs, and waits until it has ended; forgets a failure.
    pub(crate) async fn stop(&self, profile: &str) {
        let ended = match self.entries().get(profile) {
            Some(Entry::Running { cancel, ended, .. }) => {
                cancel.cancel();
                Some(ended.clone())
            }
            _ => None,
        };
        if let Some(ended) = ended {
            ended.cancelled().await;
        }
        let mut entries = self.entries();
        if matches!(entries.get(profile), Some(Entry::Failed(_))) {
            entries.remove(profile);
        }
    }
}

/// One running download, held by the task that runs it; dropping it ends the download's entry.
pub(crate) struct Running {
    downloads: ModelDownloads,
    profile: &'static str,
    cancel: CancellationToken,
    ended: CancellationToken,
}

impl Running {
    /// What stops the transfer.
    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Sets the size the download will reach, once known (a hub says it before the transfer).
    pub(crate) fn set_total(&self, bytes: u64) {
        if let Some(Entry::Running { total, .. }) = self.downloads.entries().get_mut(self.profile) {
            *total = bytes;
        }
    }

    /// Records `received` bytes; answers the progress event to publish when the download
    /// starts or passes a whole percent.
    pub(crate) fn progress(&self, received: u64) -> Option<RuntimeEvent> {
        let mut entries = self.downloads.entries();
        let Some(Entry::Running {
            received: at,
            total,
            percent,
            ..
        }) = entries.get_mut(self.profile)
        else {
            return None;
        };
        *at = received;
        let now = received.saturating_mul(100) / (*total).max(1);
        if percent.is_some_and(|last| now <= last) {
            return None;
        }
        *percent = Some(now);
        Some(RuntimeEvent::LocalModelDownloadProgress {
            model: self.profile.to_owned(),
            received,
            total: *total,
        })
    }

    /// Records how the download ended and answers the event that says so.
    pub(crate) fn finish(self, outcome: &Result<(), DownloadError>) -> RuntimeEvent {
        let model = self.profile.to_owned();
        let mut entries = self.downloads.entries();
        match outcome {
            Ok(()) => {
                entries.remove(self.profile);
                RuntimeEvent::LocalModelDownloadCompleted { model }
            }
            Err(DownloadError::Web(WebError::Cancelled)) => {
                entries.remove(self.profile);
                RuntimeEvent::LocalModelDownloadCancelled { model }
            }
            Err(error) => {
                let error = error.to_string();
                entries.insert(self.profile, Entry::Failed(error.clone()));
                RuntimeEvent::LocalModelDownloadFailed { model, error }
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut entries = self.downloads.entries();
        if matches!(entries.get(self.profile), Some(Entry::Running { .. })) {
            entries.remove(self.profile);
        }
        drop(entries);
        self.ended.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_reported_at_start_and_at_each_whole_percent() {
        let downloads = ModelDownloads::default();
        let running = downloads
            .begin("m", 1000, &CancellationToken::new())
            .unwrap();
        assert!(
            downloads
                .begin("m", 1000, &CancellationToken::new())
                .is_none()
        );
        let reported: Vec<u64> = [0, 5, 9, 10, 11, 25, 26, 999, 1000]
            .into_iter()
            .filter_map(|received| running.progress(received))
            .map(|event| match event {
                RuntimeEvent::LocalModelDownloadProgress { received, .. } => received,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(reported, [0, 10, 25, 999, 1000]);
        assert_eq!(
            downloads.state("m"),
            Some(LocalModelState::Downloading {
                received: 1000,
                total: 1000
            })
        );
    }

    #[tokio::test]
    async fn a_failure_is_kept_until_the_next_pull_or_removal_and_a_cancel_is_not() {
        let downloads = ModelDownloads::default();
        let running = downloads.begin("m", 10, &CancellationToken::new()).unwrap();
        let event = running.finish(&Err(DownloadError::Busy));
        assert!(matches!(
            event,
            RuntimeEvent::LocalModelDownloadFailed { .. }
        ));
        assert!(matches!(
            downloads.state("m"),
            Some(LocalModelState::Failed { .. })
        ));
        // The next pull starts over; a removal forgets the failure.
        let running = downloads.begin("m", 10, &CancellationToken::new()).unwrap();
        let event = running.finish(&Err(DownloadError::Web(WebError::Cancelled)));
        assert!(matches!(
            event,
            RuntimeEvent::LocalModelDownloadCancelled { .. }
        ));
        assert_eq!(downloads.state("m"), None);
        let running = downloads.begin("m", 10, &CancellationToken::new()).unwrap();
        running.finish(&Err(DownloadError::Busy));
        downloads.stop("m").await;
        assert_eq!(downloads.state("m"), None);
    }

    #[tokio::test]
    async fn stop_cancels_a_running_download_and_waits_until_it_has_ended() {
        let downloads = ModelDownloads::default();
        let parent = CancellationToken::new();
        let running = downloads.begin("m", 10, &parent).unwrap();
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let task_closed = Arc::clone(&closed);
        crate::tasks::spawn_in_test(async move {
            running.cancel().cancelled().await;
            // Still writing for a moment after the cancel.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            task_closed.store(true, std::sync::atomic::Ordering::SeqCst);
            running.finish(&Err(DownloadError::Web(WebError::Cancelled)))
        });
        downloads.stop("m").await;
        assert!(
            closed.load(std::sync::atomic::Ordering::SeqCst),
            "stop returned before the download ended"
        );
        assert_eq!(downloads.state("m"), None);
        // The daemon's stop cancels a download too.
        let running = downloads.begin("m", 10, &parent).unwrap();
        parent.cancel();
        assert!(running.cancel().is_cancelled());
    }
}
