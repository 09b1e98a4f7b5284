//! The embedder `[memory] embeddings_model` names when it is a local model (`local/<name>`):
//! its folder in the Souz home, the web client that fetches it (the sandbox's network policy,
//! long transfers allowed), and its status changes published as `memory.model.download.*`
//! runtime events.
//!
//! Invariant: progress events are only published while a download runs; a download that ends
//! publishes exactly one `completed` or `failed` event.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use souz_protocol::RuntimeEvent;

use crate::bus::EventBus;
use crate::config::Config;
use crate::memory::local::{LocalEmbedder, LocalOptions, ModelStatus, StatusSink, profile};
use crate::sandbox::net::{SystemLookup, WebClient, WebOptions};

/// A whole model file may take this long (470 MB over a slow line).
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

/// The local embedder `model` names, or `None` when it names no local model.
pub(crate) fn local_embedder(
    config: &Config,
    model: &str,
    events: &EventBus,
    tasks: crate::tasks::Tasks,
) -> Option<LocalEmbedder> {
    let profile = profile(model)?;
    let options = WebOptions {
        request_timeout: DOWNLOAD_TIMEOUT,
        ..WebOptions::default()
    };
    let client = match WebClient::with_options(
        &config.sandbox.network_allow_hosts,
        options,
        Arc::new(SystemLookup),
    ) {
        Ok(client) => Some(client),
        Err(error) => {
            tracing::warn!(%error, "no web client for the local embedding model; it will not be downloaded");
            None
        }
    };
    Some(LocalEmbedder::on_tasks(
        LocalOptions {
            profile,
            dir: config.paths.home().join("models").join(profile.name),
            client,
            mirror: Some(config.memory.local_model_mirror.trim().to_owned())
                .filter(|mirror| !mirror.is_empty()),
            idle_unload: Duration::from_secs(config.memory.local_model_idle_seconds.max(1)),
            on_status: Some(status_events(events.clone())),
        },
        tasks,
    ))
}

/// Publishes download progress, completion and failure, in order (one forwarding task).
fn status_events(events: EventBus) -> StatusSink {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<RuntimeEvent>();
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        #[allow(
            clippy::disallowed_methods,
            reason = "the forwarder owns only the channel's receiver: it ends when the last status sender (the download's) is dropped, and holds nothing shutdown must wait for"
        )]
        runtime.spawn(async move {
            while let Some(event) = receiver.recv().await {
                if let Err(error) = events.publish(event).await {
                    tracing::warn!(%error, "could not publish a memory model event");
                }
            }
        });
    }
    let downloading = Mutex::new(false);
    Arc::new(move |model: &str, status: &ModelStatus| {
        let mut running = downloading.lock().unwrap_or_else(PoisonError::into_inner);
        let event = match status {
            ModelStatus::Downloading { received, total } => {
                *running = true;
                RuntimeEvent::MemoryModelDownloadProgress {
                    model: model.to_owned(),
                    received: *received,
                    total: *total,
                }
            }
            ModelStatus::Ready if *running => {
                *running = false;
                RuntimeEvent::MemoryModelDownloadCompleted {
                    model: model.to_owned(),
                }
            }
            ModelStatus::Failed { error } if *running => {
                *running = false;
                RuntimeEvent::MemoryModelDownloadFailed {
                    model: model.to_owned(),
                    error: error.clone(),
                }
            }
            _ => return,
        };
        drop(running);
        // Closed only when the forwarding task ended with the runtime.
        let _ = sender.send(event);
    })
}
