//! The embedder `[memory] embeddings_model` names when it is a local model (`local/<name>`):
//! its folder in the Souz home, the web client that fetches it (the sandbox's network policy,
//! long transfers allowed; none when the environment forbids downloads, as every test harness
//! does), and its status changes published as `memory.model.download.*` runtime events.
//!
//! Invariant: progress events are only published while a download runs; a download that ends
//! publishes exactly one `completed` or `failed` event.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use souz_protocol::RuntimeEvent;

use crate::bus::EventBus;
use crate::config::Config;
use crate::config::env::Var;
use crate::llm::service::Environment;
use crate::memory::local::{LocalEmbedder, LocalOptions, ModelStatus, StatusSink, profile};
use crate::sandbox::net::{SystemLookup, WebClient, WebOptions};

/// A whole model file may take this long (470 MB over a slow line).
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

/// After a failed download the next use tries again no sooner than this (doubling with each
/// failure in a row, up to [`crate::memory::local::MAX_RETRY_AFTER`]).
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// Whether `environment` forbids downloading models ([`Var::NoModelDownloads`]: every test
/// harness sets it, so no test reaches the model's home on the internet).
pub(crate) fn downloads_forbidden(environment: &Environment) -> bool {
    environment(Var::NoModelDownloads.name())
        .is_some_and(|value| !value.trim().is_empty() && value.trim() != "0")
}

/// The local embedder `model` names, or `None` when it names no local model. It downloads
/// its missing files on first use unless `environment` forbids it ([`downloads_forbidden`]).
/// What a local embedder takes of the runtime.
pub(crate) struct ModelHost<'a> {
    /// Where its status changes are published.
    pub events: &'a EventBus,
    /// Where its download and idle sweeper run.
    pub tasks: &'a crate::tasks::Tasks,
    /// The daemon's environment ([`downloads_forbidden`]).
    pub environment: &'a Environment,
}

pub(crate) fn local_embedder(
    config: &Config,
    model: &str,
    host: &ModelHost<'_>,
) -> Option<LocalEmbedder> {
    let profile = profile(model)?;
    let options = WebOptions {
        request_timeout: DOWNLOAD_TIMEOUT,
        ..WebOptions::default()
    };
    let client = if downloads_forbidden(host.environment) {
        tracing::info!(
            model,
            "model downloads are off (SOUZ_NO_MODEL_DOWNLOADS); memory recalls by words until the model's files are in place"
        );
        None
    } else {
        web_client(config, options)
    };
    Some(LocalEmbedder::on_tasks(
        LocalOptions {
            profile,
            dir: config.paths.home().join("models").join(profile.name),
            client,
            mirror: Some(config.memory.local_model_mirror.trim().to_owned())
                .filter(|mirror| !mirror.is_empty()),
            idle_unload: Duration::from_secs(config.memory.local_model_idle_seconds.max(1)),
            retry_after: RETRY_AFTER,
            on_status: Some(status_events(host.events.clone())),
        },
        host.tasks.clone(),
    ))
}

/// The client that fetches model files (the sandbox's network policy, long transfers).
fn web_client(config: &Config, options: WebOptions) -> Option<WebClient> {
    match WebClient::with_options(
        &config.sandbox.network_allow_hosts,
        options,
        Arc::new(SystemLookup),
    ) {
        Ok(client) => Some(client),
        Err(error) => {
            tracing::warn!(%error, "no web client for the local embedding model; it will not be downloaded");
            None
        }
    }
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
