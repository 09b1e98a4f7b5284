//! Built-in tools backed by a model: `InternetSearch` and `InternetResearch` (web search,
//! sources read and cited), `ViewImage` (a local image to a vision model) and `GenerateImage`
//! (a provider's images API).
//!
//! This module owns what those tools share: the [`WebServices`] the runtime hands them (the
//! `[web]` settings, the database for the search cache, the per-host pacing, and the operator's
//! models through [`ModelAccess`], a trait because the model layer sits above the tools).
//!
//! Invariants: every request goes through the sandbox's SSRF-safe client (search backends,
//! result pages and their redirects alike); page text reaches a model only as quoted, untrusted
//! data; an answer cites only sources that were actually fetched; files are written only at the
//! path planned (and approved) before the call ran.

pub(crate) mod cache;
pub(crate) mod citations;
pub(crate) mod images;
pub(crate) mod research;
pub(crate) mod search;
pub(crate) mod tools;

pub(crate) mod brave;
mod duckduckgo;
mod searxng;

use std::sync::Arc;

use futures::future::BoxFuture;
use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use crate::config::WebConfig;
use crate::store::Store;
use crate::tools::{CatalogBuilder, CatalogError};

pub(crate) use search::Pacer;

/// The service key of the Brave Search API (`ModelAccess::secret`; the LLM service's
/// `service_keys::BRAVE`, which a test keeps in step).
pub(crate) const BRAVE_KEY_SECRET: &str = "brave";

/// An image handed to a vision model.
#[derive(Debug, Clone)]
pub(crate) struct ImageInput {
    /// Its media type (`image/png`).
    pub media_type: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What the model-backed tools use of the models and key store. `requester` is who made the
/// call: a chat's calls use that chat's model and its user's keys.
pub(crate) trait ModelAccess: Send + Sync {
    /// One answer of the chat model to `system` and `user` (temperature 0).
    fn complete<'a>(
        &'a self,
        requester: &'a Requester,
        system: &'a str,
        user: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>>;

    /// A vision-capable model's answer to `question` about `image`.
    fn view_image<'a>(
        &'a self,
        requester: &'a Requester,
        question: &'a str,
        image: &'a ImageInput,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>>;

    /// A PNG generated from `prompt` by the provider's images API.
    fn generate_image<'a>(
        &'a self,
        requester: &'a Requester,
        prompt: &'a str,
        size: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<u8>, String>>;

    /// A secret of the key store (the Brave key), `None` when none is stored.
    fn secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<String>, String>>;
}

/// What the tools of this module share. Cheap to clone through its `Arc`.
#[derive(Default)]
pub(crate) struct WebServices {
    /// `[web]`.
    pub config: WebConfig,
    /// The database of the search cache (none: no cache).
    pub store: Option<Store>,
    /// The operator's models (none: the model-backed steps report that no model is set up).
    pub model: Option<Arc<dyn ModelAccess>>,
    /// Spacing of requests to one search host.
    pub pacer: Pacer,
}

impl WebServices {
    /// Services over `config`, the cache in `store`, and `model`.
    pub(crate) fn new(
        config: WebConfig,
        store: Option<Store>,
        model: Option<Arc<dyn ModelAccess>>,
    ) -> Self {
        let pacer = Pacer::new(std::time::Duration::from_millis(config.host_pacing_ms));
        Self {
            config,
            store,
            model,
            pacer,
        }
    }
}

impl WebServices {
    /// The Brave Search API key, when one is stored (blank counts as none; a key store that
    /// cannot be read counts as none too: Brave is then skipped, not failed).
    pub(crate) async fn brave_key(&self) -> Option<String> {
        let model = self.model.as_ref()?;
        model
            .secret(BRAVE_KEY_SECRET)
            .await
            .ok()
            .flatten()
            .filter(|key| !key.trim().is_empty())
    }
}

impl std::fmt::Debug for WebServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebServices")
            .field("config", &self.config)
            .field("cache", &self.store.is_some())
            .field("model", &self.model.is_some())
            .finish_non_exhaustive()
    }
}

/// Registers this module's tools over `services`.
pub(crate) fn register(
    builder: &mut CatalogBuilder,
    services: &Arc<WebServices>,
) -> Result<(), CatalogError> {
    builder
        .add(tools::InternetSearch(Arc::clone(services)))?
        .add(tools::InternetResearch(Arc::clone(services)))?
        .add(images::ViewImage(Arc::clone(services)))?
        .add(images::GenerateImage(Arc::clone(services)))?;
    Ok(())
}

#[cfg(test)]
mod tests;
