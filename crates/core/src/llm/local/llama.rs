//! The llama.cpp engine (`llama-cpp-2`, feature `local-llm`): GGUF models on the CPU (Metal on
//! macOS), grammar-constrained sampling, mean-pooled embeddings.
//!
//! Invariants: llama.cpp's process-wide backend is initialised once and never torn down; a
//! generation makes its own context (its KV cache freed when it ends), so concurrent requests
//! never share state; output bytes are handed on only as whole UTF-8 characters.

use std::num::NonZeroU32;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use tokio_util::sync::CancellationToken;

use super::{
    Generation, GenerationStats, LoadOptions, LoadedModel, LocalBackend, LocalError, StopReason,
};

/// Tokens decoded per batch of the prompt.
const BATCH: usize = 512;

/// The llama.cpp engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct LlamaCpp;

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

fn backend() -> Result<&'static LlamaBackend, LocalError> {
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| LocalError::Engine(error.clone()))
}

fn engine(error: impl std::fmt::Display) -> LocalError {
    LocalError::Engine(error.to_string())
}

impl LocalBackend for LlamaCpp {
    fn name(&self) -> &'static str {
        "llama.cpp"
    }

    fn load(&self, options: &LoadOptions) -> Result<Arc<dyn LoadedModel>, LocalError> {
        let backend = backend()?;
        let params = LlamaModelParams::default();
        let model =
            LlamaModel::load_from_file(backend, &options.path, &params).map_err(|error| {
                LocalError::Engine(format!("cannot load {}: {error}", options.path.display()))
            })?;
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n as usize,
        };
        Ok(Arc::new(Loaded {
            model,
            context: options.context,
            threads: i32::try_from(threads).unwrap_or(1),
        }))
    }
}

struct Loaded {
    model: LlamaModel,
    context: u32,
    threads: i32,
}

impl Loaded {
    fn new_context(&self, embeddings: bool, size: u32) -> Result<LlamaContext<'_>, LocalError> {
        let mut params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(size))
            .with_n_batch(BATCH as u32)
            .with_n_threads(self.threads)
            .with_n_threads_batch(self.threads);
        if embeddings {
            params = params
                .with_embeddings(true)
                .with_pooling_type(LlamaPoolingType::Mean)
                .with_n_batch(size)
                .with_n_ubatch(size);
        }
        self.model.new_context(backend()?, params).map_err(engine)
    }

    /// The sampling chain without the grammar (checked apart: see [`Loaded::next_token`]).
    fn sampler(generation: &Generation) -> LlamaSampler {
        let mut chain = Vec::new();
        if generation.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.extend([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::temp(generation.temperature),
                LlamaSampler::dist(generation.seed),
            ]);
        }
        LlamaSampler::chain_simple(chain)
    }

    /// The next token: sampled without the grammar, and only when the grammar refuses it
    /// sampled again from the candidates the grammar allows (what llama.cpp's own sampler
    /// does: checking one token is far cheaper than filtering the whole vocabulary).
    fn next_token(
        context: &LlamaContext<'_>,
        index: i32,
        chain: &mut LlamaSampler,
        grammar: Option<&mut LlamaSampler>,
    ) -> LlamaToken {
        let token = chain.sample(context, index);
        let Some(grammar) = grammar else {
            return token;
        };
        let mut single =
            LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
        grammar.apply(&mut single);
        let allowed = single
            .data
            .first()
            .is_some_and(|data| data.logit().is_finite());
        let token = if allowed {
            token
        } else {
            let mut all = context.token_data_array_ith(index);
            grammar.apply(&mut all);
            chain.apply(&mut all);
            all.selected_token()
                .unwrap_or_else(|| all.sample_token_greedy())
        };
        grammar.accept(token);
        token
    }

    /// Decodes `tokens` from position `start` in batches; logits for the last one only.
    fn feed(
        context: &mut LlamaContext<'_>,
        batch: &mut LlamaBatch<'_>,
        tokens: &[LlamaToken],
        start: usize,
    ) -> Result<(), LocalError> {
        for (chunk_index, chunk) in tokens.chunks(BATCH).enumerate() {
            batch.clear();
            let last_chunk = (chunk_index + 1) * BATCH >= tokens.len();
            for (offset, token) in chunk.iter().enumerate() {
                let position = start + chunk_index * BATCH + offset;
                let last = last_chunk && offset + 1 == chunk.len();
                batch
                    .add(*token, position as i32, &[0], last)
                    .map_err(engine)?;
            }
            context.decode(batch).map_err(engine)?;
        }
        Ok(())
    }
}

/// Bytes of pieces handed on as whole UTF-8 characters.
#[derive(Default)]
struct Utf8Buffer(Vec<u8>);

impl Utf8Buffer {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.0.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.0) {
            Ok(text) => text.len(),
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            // Bytes that never become UTF-8: replaced.
            Err(_) => {
                let text = String::from_utf8_lossy(&self.0).into_owned();
                self.0.clear();
                return text;
            }
        };
        let rest = self.0.split_off(valid);
        String::from_utf8(std::mem::replace(&mut self.0, rest)).unwrap_or_default()
    }
}

impl LoadedModel for Loaded {
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, LocalError> {
        Ok(self
            .model
            .vocab()
            .tokenize(text.as_bytes(), true, true)
            .into_iter()
            .map(|token| token.0)
            .collect())
    }

    fn chat_template(&self) -> Option<String> {
        self.model
            .chat_template(None)
            .ok()
            .and_then(|template| template.to_string().ok())
    }

    fn generate(
        &self,
        generation: &Generation,
        on_piece: &mut dyn FnMut(&str) -> bool,
        cancel: &CancellationToken,
    ) -> Result<GenerationStats, LocalError> {
        let started = Instant::now();
        let vocab = self.model.vocab();
        let prompt = vocab.tokenize(generation.prompt.as_bytes(), true, true);
        let prompt_tokens = prompt.len() as u64;
        if prompt.len() + 2 > self.context as usize {
            return Err(LocalError::ContextFull {
                prompt: prompt_tokens,
                context: self.context,
            });
        }
        let room = self.context as usize - prompt.len() - 1;
        let max_tokens = (generation.max_tokens as usize).min(room);
        let mut context = self.new_context(false, self.context)?;
        let mut chain = Self::sampler(generation);
        let mut grammar = match &generation.grammar {
            Some(rules) => Some(LlamaSampler::grammar(&self.model, rules, "root").map_err(engine)?),
            None => None,
        };
        let mut batch = LlamaBatch::new(BATCH, 1);
        let mut stats = GenerationStats {
            prompt_tokens,
            output_tokens: 0,
            first_token: None,
            total: started.elapsed(),
            stop: StopReason::Length,
        };
        if cancel.is_cancelled() {
            stats.stop = StopReason::Cancelled;
            return Ok(stats);
        }
        Self::feed(&mut context, &mut batch, &prompt, 0)?;
        let mut position = prompt.len();
        let mut text = Utf8Buffer::default();
        while (stats.output_tokens as usize) < max_tokens {
            if cancel.is_cancelled() {
                stats.stop = StopReason::Cancelled;
                break;
            }
            let token =
                Self::next_token(&context, batch.n_tokens() - 1, &mut chain, grammar.as_mut());
            if vocab.is_eog(token) {
                stats.stop = StopReason::End;
                break;
            }
            stats.output_tokens += 1;
            stats.first_token.get_or_insert_with(|| started.elapsed());
            let piece = text.push(&vocab.token_to_piece(token, false, None));
            if !piece.is_empty() && !on_piece(&piece) {
                stats.stop = StopReason::Cancelled;
                break;
            }
            batch.clear();
            batch
                .add(token, position as i32, &[0], true)
                .map_err(engine)?;
            position += 1;
            context.decode(&mut batch).map_err(engine)?;
        }
        stats.total = started.elapsed();
        Ok(stats)
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalError> {
        let vocab = self.model.vocab();
        let size = self.context.min(2048);
        let mut context = self.new_context(true, size)?;
        let mut vectors = Vec::with_capacity(texts.len());
        for text in texts {
            let mut tokens = vocab.tokenize(text.as_bytes(), true, false);
            tokens.truncate(size as usize);
            let mut batch = LlamaBatch::new(tokens.len().max(1), 1);
            batch.add_sequence(&tokens, 0, true).map_err(engine)?;
            context.clear_kv_cache();
            context.decode(&mut batch).map_err(engine)?;
            let vector = context.embeddings_seq_ith(0).map_err(engine)?;
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            vectors.push(vector.iter().map(|x| x / norm).collect());
        }
        Ok(vectors)
    }

    fn size_bytes(&self) -> u64 {
        self.model.size()
    }
}
