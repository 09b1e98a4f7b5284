//! The llama.cpp engine (feature `local-llm`, over the handles of [`binding`]): GGUF models
//! on the CPU (Metal on macOS), grammar-constrained sampling, mean-pooled embeddings.
//!
//! Invariants: llama.cpp's process-wide backend is initialised once and never torn down; a
//! generation has a context of its own, so concurrent requests never share state: it takes the
//! model's one kept context (what the last generation left in its KV cache, with the tokens
//! that cache holds) or makes a new one, reuses the cache for the prompt's prefix it shares
//! with those tokens (the system prompt and tool definitions of every turn of a chat), forgets
//! the rest, and hands the context back when it ends without an error (a failed one is dropped:
//! its cache is not known to match its tokens); the kept context goes with the model when it is
//! unloaded; output bytes are handed on only as whole UTF-8 characters.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use self::binding::{Batch, Candidates, Context, EngineError, Model, Sampler, Token};
use super::{
    Generation, GenerationStats, LoadOptions, LoadedModel, LocalBackend, LocalError, StopReason,
};

// FFI into llama.cpp; every unsafe block there says what it relies on.
#[allow(unsafe_code)]
mod binding;

/// Tokens decoded per batch of the prompt.
const BATCH: usize = 512;

/// The llama.cpp engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct LlamaCpp;

impl From<EngineError> for LocalError {
    fn from(error: EngineError) -> Self {
        LocalError::Engine(error.to_string())
    }
}

impl LocalBackend for LlamaCpp {
    fn name(&self) -> &'static str {
        "llama.cpp"
    }

    fn load(&self, options: &LoadOptions) -> Result<Arc<dyn LoadedModel>, LocalError> {
        let model = Model::load(&options.path).map_err(|error| {
            LocalError::Engine(format!("cannot load {}: {error}", options.path.display()))
        })?;
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n as usize,
        };
        Ok(Arc::new(Loaded {
            model: Arc::new(model),
            context: options.context,
            threads: i32::try_from(threads).unwrap_or(1),
            kept: Mutex::new(None),
        }))
    }
}

struct Loaded {
    model: Arc<Model>,
    context: u32,
    threads: i32,
    /// The context the last generation ended with, and the tokens its KV cache holds.
    kept: Mutex<Option<Kept>>,
}

/// A context kept between generations, with the tokens its KV cache holds (positions 0..).
struct Kept {
    context: Context,
    tokens: Vec<Token>,
}

/// Tokens at the start of `a` and `b` that are the same.
fn shared_prefix(a: &[Token], b: &[Token]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Loaded {
    /// The sampling chain without the grammar (checked apart: see [`Loaded::next_token`]).
    fn sampler(generation: &Generation) -> Result<Sampler<'static>, EngineError> {
        if generation.temperature <= 0.0 {
            Sampler::greedy()
        } else {
            Sampler::random(generation.temperature, generation.seed)
        }
    }

    /// The next token: sampled without the grammar, and only when the grammar refuses it
    /// sampled again from the candidates the grammar allows (what llama.cpp's own sampler
    /// does: checking one token is far cheaper than filtering the whole vocabulary).
    fn next_token(
        context: &Context,
        index: i32,
        chain: &mut Sampler<'_>,
        grammar: Option<&mut Sampler<'_>>,
    ) -> Result<Token, EngineError> {
        let token = chain.sample(context, index);
        let Some(grammar) = grammar else {
            return Ok(token);
        };
        let mut single = Candidates::single(token);
        grammar.apply(&mut single)?;
        let token = if single.first_allowed() {
            token
        } else {
            let mut all = context.candidates(index)?;
            grammar.apply(&mut all)?;
            chain.apply(&mut all)?;
            match all.selected().or_else(|| all.best()) {
                Some(token) => token,
                None => return Err(EngineError::new("the grammar allows no token here")),
            }
        };
        grammar.accept(token)?;
        Ok(token)
    }

    /// Decodes `tokens` from position `start` in batches; logits for the last one only.
    fn feed(
        context: &mut Context,
        batch: &mut Batch,
        tokens: &[Token],
        start: usize,
    ) -> Result<(), EngineError> {
        for (chunk_index, chunk) in tokens.chunks(BATCH).enumerate() {
            batch.clear();
            let last_chunk = (chunk_index + 1) * BATCH >= tokens.len();
            for (offset, token) in chunk.iter().enumerate() {
                let position = start + chunk_index * BATCH + offset;
                let last = last_chunk && offset + 1 == chunk.len();
                batch.add(*token, position, last)?;
            }
            context.decode(batch)?;
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

impl Loaded {
    /// A context for `prompt` and how many of its first tokens the context's KV cache holds
    /// already: the kept context, its cache cut back to the prefix it shares with `prompt`
    /// (at least the last prompt token is decoded again, so its logits are fresh), or a new
    /// context when none is kept or its cache cannot be cut.
    fn context_for(&self, prompt: &[Token]) -> Result<(Context, usize), EngineError> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(Kept {
            mut context,
            tokens,
        }) = kept
        {
            let reused = shared_prefix(&tokens, prompt).min(prompt.len().saturating_sub(1));
            if context.forget_from(reused) {
                return Ok((context, reused));
            }
            context.clear();
            return Ok((context, 0));
        }
        let context = self
            .model
            .context(self.context, BATCH as u32, self.threads, false)?;
        Ok((context, 0))
    }

    /// Keeps `kept` for the next generation (replacing what another one kept meanwhile).
    fn keep(&self, kept: Kept) {
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(kept);
    }
}

impl LoadedModel for Loaded {
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, LocalError> {
        Ok(self.model.vocab().tokenize(text, true, true)?)
    }

    fn chat_template(&self) -> Option<String> {
        self.model.chat_template()
    }

    fn generate(
        &self,
        generation: &Generation,
        on_piece: &mut dyn FnMut(&str) -> bool,
        cancel: &CancellationToken,
    ) -> Result<GenerationStats, LocalError> {
        let started = Instant::now();
        let vocab = self.model.vocab();
        let prompt = vocab.tokenize(&generation.prompt, true, true)?;
        let prompt_tokens = prompt.len() as u64;
        if prompt.len() + 2 > self.context as usize {
            return Err(LocalError::ContextFull {
                prompt: prompt_tokens,
                context: self.context,
            });
        }
        let room = self.context as usize - prompt.len() - 1;
        let max_tokens = (generation.max_tokens as usize).min(room);
        let (mut context, reused) = self.context_for(&prompt)?;
        let mut chain = Self::sampler(generation)?;
        let mut grammar = match &generation.grammar {
            Some(rules) => Some(Sampler::grammar(vocab, rules)?),
            None => None,
        };
        let mut batch = Batch::new(BATCH);
        let mut stats = GenerationStats {
            prompt_tokens,
            reused_tokens: reused as u64,
            output_tokens: 0,
            first_token: None,
            total: started.elapsed(),
            stop: StopReason::Length,
        };
        if cancel.is_cancelled() {
            stats.stop = StopReason::Cancelled;
            let tokens = prompt.get(..reused).unwrap_or_default().to_vec();
            self.keep(Kept { context, tokens });
            return Ok(stats);
        }
        let rest = prompt.get(reused..).unwrap_or_default();
        Self::feed(&mut context, &mut batch, rest, reused)?;
        // What the KV cache holds from here on: the prompt, then each token decoded after it.
        let mut tokens = prompt;
        let mut position = tokens.len();
        let mut text = Utf8Buffer::default();
        while (stats.output_tokens as usize) < max_tokens {
            if cancel.is_cancelled() {
                stats.stop = StopReason::Cancelled;
                break;
            }
            let token = Self::next_token(&context, batch.len() - 1, &mut chain, grammar.as_mut())?;
            if vocab.is_end(token) {
                stats.stop = StopReason::End;
                break;
            }
            stats.output_tokens += 1;
            stats.first_token.get_or_insert_with(|| started.elapsed());
            let piece = text.push(&vocab.piece(token));
            if !piece.is_empty() && !on_piece(&piece) {
                stats.stop = StopReason::Cancelled;
                break;
            }
            batch.clear();
            batch.add(token, position, true)?;
            position += 1;
            context.decode(&batch)?;
            tokens.push(token);
        }
        stats.total = started.elapsed();
        self.keep(Kept { context, tokens });
        Ok(stats)
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalError> {
        let vocab = self.model.vocab();
        let size = self.context.min(2048);
        let mut context = self.model.context(size, size, self.threads, true)?;
        let mut vectors = Vec::with_capacity(texts.len());
        for text in texts {
            let mut tokens = vocab.tokenize(text, true, false)?;
            tokens.truncate(size as usize);
            // Every token is an output: the embedding pools them all.
            let mut batch = Batch::new(tokens.len());
            for (position, token) in tokens.iter().enumerate() {
                batch.add(*token, position, true)?;
            }
            context.clear();
            context.decode(&batch)?;
            let vector = context.embedding()?;
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            vectors.push(vector.iter().map(|x| x / norm).collect());
        }
        Ok(vectors)
    }

    fn size_bytes(&self) -> u64 {
        self.model.size()
    }
}

#[cfg(test)]
mod tests;
