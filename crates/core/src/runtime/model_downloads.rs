//! The downloads of model files (`souz models pull`, the Models page, Settings › Voice): which
//! run, how far each has come, and which failed last. One set per family of models ([`Family`]:
//! the local LLM profiles, the speech models), each with its own events.
//!
//! Invariants: at most one download per model; each runs as a runtime task, so a client that
//! goes away does not stop it, while removing the model or stopping the daemon does (cancel,
//! then wait until it has ended, so nothing writes the file after); it reports in order
//! ([`Running::run`]): a `<family>.model.download.progress` event when it starts and at each
//! whole percent, then exactly one of `completed`, `failed` or `cancelled`; a failure is kept
//! for the list (`failed`, with why) until the next pull or the model's removal.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use souz_protocol::{LocalModelState, RuntimeEvent};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::bus::EventBus;
use crate::memory::download::DownloadError;
use crate::sandbox::net::WebError;

/// Which models a set of downloads fetches: it names their events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Family {
    /// The local LLM profiles (`local.model.download.*`).
    #[default]
    Local,
    /// The speech models (`speech.model.download.*`).
    Speech,
}

impl Family {
    /// What its models are called in the log.
    fn noun(self) -> &'static str {
        match self {
            Self::Local => "local model",
            Self::Speech => "speech model",
        }
    }

    fn progress(self, model: String, received: u64, total: u64) -> RuntimeEvent {
        match self {
            Self::Local => RuntimeEvent::LocalModelDownloadProgress {
                model,
                received,
                total,
            },
            Self::Speech => RuntimeEvent::SpeechModelDownloadProgress {
                model,
                received,
                total,
            },
        }
    }

    fn completed(self, model: String) -> RuntimeEvent {
        match self {
            Self::Local => RuntimeEvent::LocalModelDownloadCompleted { model },
            Self::Speech => RuntimeEvent::SpeechModelDownloadCompleted { model },
        }
    }

    fn cancelled(self, model: String) -> RuntimeEvent {
        match self {
            Self::Local => RuntimeEvent::LocalModelDownloadCancelled { model },
            Self::Speech => RuntimeEvent::SpeechModelDownloadCancelled { model },
        }
    }

    fn failed(self, model: String, error: String) -> RuntimeEvent {
        match self {
            Self::Local => RuntimeEvent::LocalModelDownloadFailed { model, error },
            Self::Speech => RuntimeEvent::SpeechModelDownloadFailed { model, error },
        }
    }
}

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

/// The runtime's downloads: one set per family.
#[derive(Clone)]
pub(crate) struct Downloads {
    /// The local LLM profiles'.
    pub(crate) local: ModelDownloads,
    /// The speech models'.
    pub(crate) speech: ModelDownloads,
}

impl Default for Downloads {
    fn default() -> Self {
        Self {
            local: ModelDownloads::new(Family::Local),
            speech: ModelDownloads::new(Family::Speech),
        }
    }
}

/// The daemon's downloads of one family of models (one set per family per runtime).
#[derive(Clone, Default)]
pub(crate) struct ModelDownloads {
    family: Family,
    entries: Arc<Mutex<HashMap<&'static str, Entry>>>,
}

impl ModelDownloads {
    /// An empty set for `family`.
    pub(crate) fn new(family: Family) -> Self {
        Self {
            family,
            entries: Arc::default(),
        }
    }

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
        Some(
            self.downloads
                .family
                .progress(self.profile.to_owned(), received, *total),
        )
    }

    /// Records how the download ended and answers the event that says so.
    pub(crate) fn finish(&self, outcome: &Result<(), DownloadError>) -> RuntimeEvent {
        let model = self.profile.to_owned();
        let family = self.downloads.family;
        let mut entries = self.downloads.entries();
        match outcome {
            Ok(()) => {
                entries.remove(self.profile);
                family.completed(model)
            }
            Err(DownloadError::Web(WebError::Cancelled)) => {
                entries.remove(self.profile);
                family.cancelled(model)
            }
            Err(error) => {
                let error = error.to_string();
                entries.insert(self.profile, Entry::Failed(error.clone()));
                family.failed(model, error)
            }
        }
    }

    /// Runs `fetch` as this download to its end and publishes its progress and outcome on
    /// `events`, in order (the progress `fetch` reports through its [`Reporter`], then the
    /// one event that says how it ended).
    pub(crate) async fn run<F, Fut>(self, events: &EventBus, fetch: F)
    where
        F: FnOnce(Reporter) -> Fut,
        Fut: Future<Output = Result<(), DownloadError>>,
    {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<RuntimeEvent>();
        let events = events.clone();
        let publish = async move {
            while let Some(event) = receiver.recv().await {
                if let Err(error) = events.publish(event).await {
                    tracing::warn!(%error, "could not publish a model download event");
                }
            }
        };
        let (kind, model) = (self.downloads.family.noun(), self.profile);
        let running = Arc::new(self);
        let work = async move {
            tracing::info!(kind, model, "model download started");
            let reporter = Reporter {
                running: Arc::clone(&running),
                sender: sender.clone(),
            };
            let outcome = fetch(reporter).await;
            match &outcome {
                Ok(()) => tracing::info!(kind, model, "model downloaded"),
                Err(DownloadError::Web(WebError::Cancelled)) => {
                    tracing::info!(kind, model, "model download stopped")
                }
                Err(error) => tracing::warn!(kind, model, %error, "model download failed"),
            }
            let _ = sender.send(running.finish(&outcome));
        };
        tokio::join!(work, publish);
    }
}

/// What a running download's transfer reports through: its progress (recorded, and sent to be
/// published at each whole percent), its size once known, and what stops it.
#[derive(Clone)]
pub(crate) struct Reporter {
    running: Arc<Running>,
    sender: UnboundedSender<RuntimeEvent>,
}

impl Reporter {
    /// What stops the transfer.
    pub(crate) fn cancel(&self) -> &CancellationToken {
        self.running.cancel()
    }

    /// Sets the size the download will reach.
    pub(crate) fn set_total(&self, bytes: u64) {
        self.running.set_total(bytes);
    }

    /// Records `received` bytes, sending the progress event when one is due.
    pub(crate) fn report(&self, received: u64) {
        if let Some(event) = self.running.progress(received) {
            let _ = self.sender.send(event);
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

    #[test]
    fn each_family_says_so_in_its_own_events() {
        let speech = ModelDownloads::new(Family::Speech);
        let running = speech
            .begin("whisper-tiny", 10, &CancellationToken::new())
            .unwrap();
        assert_eq!(
            running.progress(0),
            Some(RuntimeEvent::SpeechModelDownloadProgress {
                model: "whisper-tiny".into(),
                received: 0,
                total: 10
            })
        );
        let failed = running.finish(&Err(DownloadError::Busy));
        assert!(
            matches!(&failed, RuntimeEvent::SpeechModelDownloadFailed { model, .. } if model == "whisper-tiny"),
            "{failed:?}"
        );
        let running = speech
            .begin("whisper-tiny", 10, &CancellationToken::new())
            .unwrap();
        assert_eq!(
            running.finish(&Ok(())),
            RuntimeEvent::SpeechModelDownloadCompleted {
                model: "whisper-tiny".into()
            }
        );
        // The local models' set is another, with its own names.
        let local = ModelDownloads::default();
        let running = local.begin("m", 10, &CancellationToken::new()).unwrap();
        assert!(matches!(
            running.finish(&Err(DownloadError::Web(WebError::Cancelled))),
            RuntimeEvent::LocalModelDownloadCancelled { .. }
        ));
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
