//! In-process local models (provider `local`, original §7.6): an engine behind the
//! [`LocalBackend`] trait, the strict-JSON contract every engine shares, and the client that
//! makes a loaded model an [`LlmClient`](super::LlmClient) like any provider.
//!
//! What it owns: the trait ([`LocalBackend`] loads a model file, [`LoadedModel`] tokenizes,
//! names its chat template, generates with streaming and cancellation, embeds; unloading is
//! dropping the last handle), the model profiles ([`profiles`]), the prompt families
//! ([`template`]), the contract ([`contract`]: instructions, tool guidance, the grammar, the
//! rendering of tool calls and results), the parser with recovery ([`parse`]), the streaming
//! of a final answer while its JSON is written ([`stream`]), the loaded-model cache with idle
//! unload and the client ([`engine`]), and the llama.cpp engine ([`llama`], feature
//! `local-llm`, on by default). Without that feature no engine exists and `local/...` models
//! are refused with "built without local models".
//!
//! Invariants: an engine runs only on blocking threads, never on the async workers; a
//! generation stops within one token of its cancellation token firing or its stream being
//! dropped; everything but the tensor calls (templates, contract, parser, sampling settings)
//! is engine-independent and tested in the default build.

pub(crate) mod contract;
pub(crate) mod engine;
pub mod hub;
#[cfg(feature = "local-llm")]
pub mod llama;
pub(crate) mod parse;
pub mod profiles;
pub(crate) mod stream;
pub(crate) mod template;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use engine::{LocalClient, LocalModels, LocalModelsOptions};
pub use profiles::{LocalProfile, PROFILES};

/// How to load a model file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// The model file (GGUF for llama.cpp).
    pub path: PathBuf,
    /// Context window in tokens.
    pub context: u32,
    /// Threads for generation; `0` uses every core.
    pub threads: u32,
    /// Load for embeddings (mean-pooled) instead of generation.
    pub embeddings: bool,
}

/// One generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The rendered prompt, control tokens included.
    pub prompt: String,
    /// A GBNF grammar the output must follow (root rule `root`), if any.
    pub grammar: Option<String>,
    /// Most tokens to write (cut further to what the context leaves).
    pub max_tokens: u32,
    /// Sampling temperature; `0` is greedy.
    pub temperature: f32,
    /// The sampler's seed.
    pub seed: u32,
}

/// Why a generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model ended its answer (end-of-generation token, or the grammar completed).
    End,
    /// It hit `max_tokens` or the context's end.
    Length,
    /// The cancellation token fired or the receiver went away.
    Cancelled,
}

/// Figures of one generation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenerationStats {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens at the start of the prompt whose KV cache a previous generation left (not
    /// computed again).
    pub reused_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
    /// From the start to the first token written.
    pub first_token: Option<Duration>,
    /// From the start to the end.
    pub total: Duration,
    /// Why it stopped.
    pub stop: StopReason,
}

/// Why an engine call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    /// This build has no engine.
    #[error(
        "in-process local models are not available: this build was made without local models \
         (the `local-llm` feature); use ollama, lm_studio or llama_cpp through `local_models`"
    )]
    NotBuilt,
    /// The model's file is not there.
    #[error("local model {profile} is not downloaded: run `souz models pull {profile}` ({path})")]
    NotDownloaded {
        /// The profile.
        profile: String,
        /// Where its file belongs.
        path: String,
    },
    /// No profile has this name.
    #[error("`{0}` is not a local model profile; known: {known}", known = profiles::names())]
    UnknownProfile(String),
    /// The machine has too little memory for the profile.
    #[error("local model {profile} needs {needed_gb} GB of RAM; this machine has {have_gb} GB")]
    TooLittleMemory {
        /// The profile.
        profile: String,
        /// What it needs.
        needed_gb: u64,
        /// What there is.
        have_gb: u64,
    },
    /// The profile is of the other kind (chat for embeddings or the reverse).
    #[error("local model {0} cannot do this: {1}")]
    WrongKind(String, &'static str),
    /// The prompt does not fit the context.
    #[error(
        "the conversation ({prompt} tokens) does not fit the local model's context ({context})"
    )]
    ContextFull {
        /// Tokens of the prompt.
        prompt: u64,
        /// The context window.
        context: u32,
    },
    /// The engine failed.
    #[error("local engine: {0}")]
    Engine(String),
}

/// A model engine: loads model files.
pub trait LocalBackend: Send + Sync {
    /// The engine's name (`llama.cpp`).
    fn name(&self) -> &'static str;

    /// Loads a model (blocking: call from a blocking thread).
    fn load(&self, options: &LoadOptions) -> Result<Arc<dyn LoadedModel>, LocalError>;

    /// Unloads a model: by default drops this handle (the model is freed with its last one).
    fn unload(&self, model: Arc<dyn LoadedModel>) {
        drop(model);
    }
}

/// A loaded model. Every method blocks: call them from a blocking thread.
pub trait LoadedModel: Send + Sync {
    /// The tokens of `text` (control tokens parsed).
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, LocalError>;

    /// The chat template the model file carries, if any (Jinja source).
    fn chat_template(&self) -> Option<String>;

    /// Generates for `generation`, handing each decoded piece of text to `on_piece` as it is
    /// written; `on_piece` returning `false` or `cancel` firing stops it
    /// ([`StopReason::Cancelled`]).
    fn generate(
        &self,
        generation: &Generation,
        on_piece: &mut dyn FnMut(&str) -> bool,
        cancel: &CancellationToken,
    ) -> Result<GenerationStats, LocalError>;

    /// One normalised vector per text.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalError>;

    /// Bytes of the model's weights.
    fn size_bytes(&self) -> u64;
}

/// The prompt and the grammar `request` becomes for `profile` under the contract (what
/// [`LocalClient`] generates from; for benchmarks and tools outside the crate).
pub fn prepare(profile: &LocalProfile, request: &crate::llm::ChatRequest) -> (String, String) {
    let turns = contract::render(&request.messages, &request.tools, profile.context);
    (
        profile.family.render(&turns),
        contract::grammar(&request.tools),
    )
}

/// Whether `raw` is exactly the contract's JSON, with no recovery: one object, a `final` with
/// string content or `tool_calls` whose calls each have a string id, a name and an object of
/// arguments.
pub fn is_strict_contract(raw: &str) -> bool {
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(raw.trim()) else {
        return false;
    };
    match object.get("type").and_then(serde_json::Value::as_str) {
        Some("final") => object.len() == 2 && object.get("content").is_some_and(|c| c.is_string()),
        Some("tool_calls") => object
            .get("calls")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|calls| {
                !calls.is_empty()
                    && calls.iter().all(|call| {
                        call.get("id").is_some_and(serde_json::Value::is_string)
                            && call.get("name").is_some_and(serde_json::Value::is_string)
                            && call
                                .get("arguments")
                                .is_some_and(serde_json::Value::is_object)
                    })
            }),
        _ => false,
    }
}

/// The engine this build has: llama.cpp with the `local-llm` feature, else none.
pub fn default_backend() -> Option<Arc<dyn LocalBackend>> {
    #[cfg(feature = "local-llm")]
    {
        Some(Arc::new(llama::LlamaCpp))
    }
    #[cfg(not(feature = "local-llm"))]
    {
        None
    }
}

#[cfg(test)]
mod tests;
