//! The loaded local models and the client over them: a model is loaded on first use (on a
//! blocking thread), kept while used, and unloaded after `idle_unload` without use;
//! [`LocalClient`] answers chat requests through the strict-JSON contract, streaming a final
//! answer as its JSON is written.
//!
//! Invariants: one load at a time (two requests for a model being loaded wait for the one
//! load); a model in use is never unloaded; a generation runs on a blocking thread and stops
//! when the request's cancellation token fires or its stream is dropped.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::contract;
use super::parse::{Reading, Reply, read_reply};
use super::profiles::{self, LocalProfile, ProfileKind};
use super::stream::FinalStreamer;
use super::{
    Generation, GenerationStats, LoadOptions, LoadedModel, LocalBackend, LocalError, StopReason,
};
use crate::llm::embeddings::EmbeddingClient;
use crate::llm::{
    ChatRequest, EventStream, FinishReason, LlmClient, LlmError, ProviderId, StreamEvent, Usage,
};

/// How local models are run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelsOptions {
    /// The models folder (`<home>/models`).
    pub dir: PathBuf,
    /// Unload a model after this long without use.
    pub idle_unload: Duration,
    /// Generation threads; `0` uses every core.
    pub threads: u32,
}

struct Slot {
    model: Arc<dyn LoadedModel>,
    last_used: Instant,
}

/// The engine and the models it has loaded.
pub struct LocalModels {
    backend: Arc<dyn LocalBackend>,
    options: LocalModelsOptions,
    loaded: Mutex<HashMap<(&'static str, bool), Slot>>,
    loading: tokio::sync::Mutex<()>,
    /// The resident memory measured before the last load that started with nothing loaded.
    rss_without_models: Mutex<Option<u64>>,
}

impl std::fmt::Debug for LocalModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModels")
            .field("engine", &self.backend.name())
            .field("options", &self.options)
            .field("loaded", &self.loaded_names())
            .finish()
    }
}

impl LocalModels {
    /// Models of `backend` under `options`.
    pub fn new(backend: Arc<dyn LocalBackend>, options: LocalModelsOptions) -> Self {
        Self {
            backend,
            options,
            loaded: Mutex::new(HashMap::new()),
            loading: tokio::sync::Mutex::new(()),
            rss_without_models: Mutex::new(None),
        }
    }

    /// The options.
    pub fn options(&self) -> &LocalModelsOptions {
        &self.options
    }

    /// The engine's name.
    pub fn engine(&self) -> &'static str {
        self.backend.name()
    }

    /// Names of the loaded models.
    pub fn loaded_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .slots()
            .keys()
            .map(|(name, _)| (*name).to_owned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(&'static str, bool), Slot>> {
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The loaded model of `profile` (for embeddings when `embeddings`), loading it first
    /// when needed.
    pub async fn acquire(
        &self,
        profile: &'static LocalProfile,
        embeddings: bool,
    ) -> Result<Arc<dyn LoadedModel>, LocalError> {
        let key = (profile.name, embeddings);
        if let Some(model) = self.touch(key) {
            return Ok(model);
        }
        let _loading = self.loading.lock().await;
        if let Some(model) = self.touch(key) {
            return Ok(model);
        }
        profile.check_memory(profiles::total_memory())?;
        let path = profile.path(&self.options.dir);
        // Read as placed: a person may place a model as a link to where they keep models (the
        // models folder is in the Souz home, out of confined commands' reach); removal never
        // follows one.
        let present = tokio::fs::try_exists(&path).await.unwrap_or(false);
        if !present {
            return Err(LocalError::NotDownloaded {
                profile: profile.name.to_owned(),
                path: path.display().to_string(),
            });
        }
        let options = LoadOptions {
            path,
            context: profile.context,
            threads: self.options.threads,
            embeddings,
        };
        if self.slots().is_empty() {
            *self
                .rss_without_models
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = profiles::resident_memory();
        }
        let backend = Arc::clone(&self.backend);
        let started = Instant::now();
        let model = tokio::task::spawn_blocking(move || backend.load(&options))
            .await
            .map_err(|error| LocalError::Engine(format!("the load task failed: {error}")))??;
        tracing::info!(
            profile = profile.name,
            embeddings,
            ms = started.elapsed().as_millis() as u64,
            "local model loaded"
        );
        self.slots().insert(
            key,
            Slot {
                model: Arc::clone(&model),
                last_used: Instant::now(),
            },
        );
        Ok(model)
    }

    fn touch(&self, key: (&'static str, bool)) -> Option<Arc<dyn LoadedModel>> {
        let mut slots = self.slots();
        let slot = slots.get_mut(&key)?;
        slot.last_used = Instant::now();
        Some(Arc::clone(&slot.model))
    }

    /// Unloads the models unused for `idle_unload` as of `now` and not in use; returns their
    /// names.
    pub fn unload_idle(&self, now: Instant) -> Vec<String> {
        let idle = self.options.idle_unload;
        let mut removed = Vec::new();
        let mut slots = self.slots();
        let keys: Vec<(&'static str, bool)> = slots
            .iter()
            .filter(|(_, slot)| {
                now.saturating_duration_since(slot.last_used) >= idle
                    && Arc::strong_count(&slot.model) == 1
            })
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            if let Some(slot) = slots.remove(&key) {
                self.backend.unload(slot.model);
                removed.push(key.0.to_owned());
            }
        }
        drop(slots);
        for name in &removed {
            tracing::info!(profile = %name, "local model unloaded after idle time");
        }
        removed
    }

    /// The daemon's resident memory measured just before a model was last loaded with none
    /// loaded (the daemon without local models), if a model was ever loaded.
    pub fn rss_without_models(&self) -> Option<u64> {
        *self
            .rss_without_models
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Unloads the model of the profile `name` (chat and embeddings); `false` when it is in
    /// use (then nothing is unloaded).
    pub fn unload(&self, name: &str) -> bool {
        let mut slots = self.slots();
        let keys: Vec<(&'static str, bool)> = slots
            .keys()
            .filter(|(profile, _)| *profile == name)
            .copied()
            .collect();
        if keys.iter().any(|key| {
            slots
                .get(key)
                .is_some_and(|slot| Arc::strong_count(&slot.model) > 1)
        }) {
            return false;
        }
        for key in keys {
            if let Some(slot) = slots.remove(&key) {
                self.backend.unload(slot.model);
            }
        }
        true
    }

    /// Unloads every model not in use now.
    pub fn unload_all(&self) -> Vec<String> {
        let now = Instant::now() + self.options.idle_unload;
        self.unload_idle(now)
    }

    /// Checks for idle models every few seconds until `cancel` fires.
    pub async fn run_idle_unloader(self: Arc<Self>, cancel: CancellationToken) {
        let period =
            (self.options.idle_unload / 4).clamp(Duration::from_secs(1), Duration::from_secs(30));
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(period) => {}
            }
            self.unload_idle(Instant::now());
        }
    }
}

/// A chat client over one local profile.
#[derive(Debug, Clone)]
pub struct LocalClient {
    models: Arc<LocalModels>,
    profile: &'static LocalProfile,
    max_tokens: u32,
    temperature: f32,
}

impl LocalClient {
    /// A client for the chat profile named `model` (`local-` prefix accepted).
    pub fn new(
        models: Arc<LocalModels>,
        model: &str,
        max_tokens: u32,
        temperature: f32,
    ) -> Result<Self, LocalError> {
        let profile = profiles::find(model)?;
        if profile.kind != ProfileKind::Chat {
            return Err(LocalError::WrongKind(
                profile.name.to_owned(),
                "it is an embedding model",
            ));
        }
        Ok(Self {
            models,
            profile,
            max_tokens,
            temperature,
        })
    }
}

fn engine_error(error: LocalError) -> LlmError {
    LlmError::Provider {
        provider: ProviderId::Local,
        kind: None,
        message: error.to_string(),
    }
}

type Sender = mpsc::UnboundedSender<Result<StreamEvent, LlmError>>;

impl LlmClient for LocalClient {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let client = self.clone();
        futures::stream::once(async move {
            let (tx, mut rx) = mpsc::unbounded_channel();
            #[allow(
                clippy::disallowed_methods,
                reason = "one answer of the local model, owned by its stream: it ends with the answer, the request's cancel token, or when the stream's receiver is dropped"
            )]
            tokio::spawn(async move {
                if let Err(error) = client.answer(request, cancel, &tx).await {
                    let _ = tx.send(Err(error));
                }
            });
            futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
        })
        .flatten()
        .boxed()
    }
}

impl LocalClient {
    async fn answer(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
        tx: &Sender,
    ) -> Result<(), LlmError> {
        let profile = self.profile;
        let model = tokio::select! {
            model = self.models.acquire(profile, false) => model.map_err(engine_error)?,
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
        };
        let context = profile.context;
        let turns = contract::render(&request.messages, &request.tools, context);
        let generation = Generation {
            prompt: profile.family.render(&turns),
            grammar: Some(contract::grammar(&request.tools)),
            max_tokens: request.max_tokens.unwrap_or(self.max_tokens).max(1),
            temperature: request.temperature.unwrap_or(self.temperature),
            seed: 0x5_0_0_2,
        };
        let stop = cancel.child_token();
        let (pieces, mut received) = mpsc::unbounded_channel::<String>();
        let worker_stop = stop.clone();
        let worker = tokio::task::spawn_blocking(move || {
            model.generate(
                &generation,
                &mut |piece| pieces.send(piece.to_owned()).is_ok(),
                &worker_stop,
            )
        });
        let mut streamer = FinalStreamer::default();
        let mut streamed = String::new();
        while let Some(piece) = received.recv().await {
            let text = streamer.push(&piece);
            if tx.is_closed() {
                stop.cancel();
            } else if !text.is_empty() {
                streamed.push_str(&text);
                let _ = tx.send(Ok(StreamEvent::TextDelta(text)));
            }
        }
        let stats = worker
            .await
            .map_err(|error| engine_error(LocalError::Engine(error.to_string())))?
            .map_err(engine_error)?;
        if stats.stop == StopReason::Cancelled {
            return Err(LlmError::Cancelled);
        }
        let finish = finish_events(streamer.raw(), &streamed, &stats)?;
        let reason = finish_reason(stats.stop, &finish);
        let usage = Usage {
            input_tokens: stats.prompt_tokens,
            output_tokens: stats.output_tokens,
            cached_input_tokens: stats.reused_tokens,
        };
        for event in finish
            .into_iter()
            .chain([StreamEvent::Usage(usage)])
            .chain([StreamEvent::Finish(reason)])
        {
            let _ = tx.send(Ok(event));
        }
        Ok(())
    }
}

/// The events after generation: the rest of a final answer's text, or the tool calls.
fn finish_events(
    raw: &str,
    streamed: &str,
    stats: &GenerationStats,
) -> Result<Vec<StreamEvent>, LlmError> {
    match read_reply(raw) {
        Ok(Reading {
            reply: Reply::ToolCalls(_),
            closed: true,
        }) if stats.stop == StopReason::Length => {
            tracing::debug!("a local model's tool call was cut at the token limit");
            Err(cut_off(stats))
        }
        Ok(Reading {
            reply: Reply::Final(content),
            ..
        }) => {
            let rest = content.strip_prefix(streamed).unwrap_or_else(|| {
                tracing::warn!("a local model's recovered answer differs from what was streamed");
                ""
            });
            Ok((!rest.is_empty())
                .then(|| StreamEvent::TextDelta(rest.to_owned()))
                .into_iter()
                .collect())
        }
        Ok(Reading {
            reply: Reply::ToolCalls(calls),
            ..
        }) => Ok(calls.into_iter().map(StreamEvent::ToolCall).collect()),
        Err(error) if stats.stop == StopReason::Length => {
            tracing::debug!(%error, "a local model's answer was cut at the token limit");
            Err(cut_off(stats))
        }
        Err(error) => Err(LlmError::Malformed {
            provider: ProviderId::Local,
            detail: error.to_string(),
        }),
    }
}

/// Generation reached the token limit before the answer was whole.
fn cut_off(stats: &GenerationStats) -> LlmError {
    LlmError::CutOff {
        provider: ProviderId::Local,
        limit: stats.output_tokens.try_into().unwrap_or(u32::MAX),
        used: Usage {
            input_tokens: stats.prompt_tokens,
            output_tokens: stats.output_tokens,
            cached_input_tokens: stats.reused_tokens,
        },
    }
}

/// Why the answer ended, from the events [`finish_events`] made of it (no second parse).
fn finish_reason(stop: StopReason, finish: &[StreamEvent]) -> FinishReason {
    if finish
        .iter()
        .any(|event| matches!(event, StreamEvent::ToolCall(_)))
    {
        FinishReason::ToolCalls
    } else if stop == StopReason::Length {
        FinishReason::Length
    } else {
        FinishReason::Stop
    }
}

/// An embeddings client over local embedding profiles (any chat profile works too: its hidden
/// states mean-pooled).
#[derive(Debug, Clone)]
pub(crate) struct LocalEmbeddings {
    models: Arc<LocalModels>,
}

impl LocalEmbeddings {
    /// Embeddings through `models`.
    pub(crate) fn new(models: Arc<LocalModels>) -> Self {
        Self { models }
    }
}

impl EmbeddingClient for LocalEmbeddings {
    fn embed(
        &self,
        model: String,
        inputs: Vec<String>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, LlmError>> {
        let models = Arc::clone(&self.models);
        Box::pin(async move {
            let profile = profiles::find(&model).map_err(engine_error)?;
            let loaded = tokio::select! {
                loaded = models.acquire(profile, true) => loaded.map_err(engine_error)?,
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
            };
            tokio::task::spawn_blocking(move || loaded.embed(&inputs))
                .await
                .map_err(|error| engine_error(LocalError::Engine(error.to_string())))?
                .map_err(engine_error)
        })
    }
}
