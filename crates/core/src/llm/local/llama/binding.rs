//! Owned handles over llama.cpp's C API (`llama-cpp-sys-2` without its `common` library, which
//! Souz does not use and which was half of the C++ build): the backend, a model and its
//! vocabulary, a context, a batch, samplers over candidate arrays, and llama.cpp's log into
//! `tracing`.
//!
//! Invariants: each handle frees what it owns exactly once; a vocabulary borrows its model and
//! a context holds it (an `Arc`), so neither outlives it; contexts of one model are made one at a time (llama.cpp
//! writes to the model while making one); the calls that throw C++ exceptions on bad input (a
//! grammar's parse, a grammar accepting a token it does not allow) go through `guard.cpp`, so an exception becomes an error instead of unwinding into Rust; nothing here
//! panics on a value that comes from the engine or the model file.

use std::ffi::{CStr, CString, c_char, c_void};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Once, PoisonError};

use llama_cpp_sys_2 as sys;

pub(super) use sys::llama_token as Token;

// `guard.cpp`: the same calls inside `try`/`catch`.
unsafe extern "C" {
    fn souz_llama_sampler_init_grammar(
        vocab: *const sys::llama_vocab,
        grammar: *const c_char,
        root: *const c_char,
    ) -> *mut sys::llama_sampler;
    fn souz_llama_sampler_accept(sampler: *mut sys::llama_sampler, token: Token) -> i32;
}

/// What a call into llama.cpp answered instead of a result.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct EngineError(String);

impl EngineError {
    pub(super) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

fn fail<T>(message: impl Into<String>) -> Result<T, EngineError> {
    Err(EngineError::new(message))
}

/// Initialises llama.cpp's backend and routes its log into `tracing` (target `llama.cpp`);
/// once per process, never torn down.
pub(super) fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // SAFETY: `log` has the callback's signature and lives for the whole process; the
        // backend is initialised before any model is loaded (every path goes through here).
        unsafe {
            sys::llama_log_set(Some(log), std::ptr::null_mut());
            sys::llama_backend_init();
        }
    });
}

/// llama.cpp's log: warnings and errors as such; its info (a model's metadata, hundreds of
/// lines per load) at debug; debug and continuation fragments at trace.
unsafe extern "C" fn log(level: sys::ggml_log_level, text: *const c_char, _: *mut c_void) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string that lives for the call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    let text = text.trim_end();
    if text.is_empty() {
        return;
    }
    match level {
        sys::GGML_LOG_LEVEL_ERROR => tracing::error!(target: "llama.cpp", "{text}"),
        sys::GGML_LOG_LEVEL_WARN => tracing::warn!(target: "llama.cpp", "{text}"),
        sys::GGML_LOG_LEVEL_INFO => tracing::debug!(target: "llama.cpp", "{text}"),
        _ => tracing::trace!(target: "llama.cpp", "{text}"),
    }
}

/// A loaded GGUF model.
pub(super) struct Model {
    raw: NonNull<sys::llama_model>,
    /// Held while a context is made from the model.
    making_context: Mutex<()>,
}

// SAFETY: a llama.cpp model is read-only once loaded, apart from making a context, which
// `making_context` serialises; it can be used and freed from any thread.
unsafe impl Send for Model {}
// SAFETY: as above.
unsafe impl Sync for Model {}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: the model was loaded by `load`, is freed once, and every vocabulary borrowing
        // it is gone (their lifetimes end with the borrow of `self`), and so is every context
        // (each holds an `Arc` of the model).
        unsafe { sys::llama_model_free(self.raw.as_ptr()) }
    }
}

impl Model {
    /// Loads a GGUF file with llama.cpp's default model parameters (memory-mapped).
    pub(super) fn load(path: &Path) -> Result<Self, EngineError> {
        init();
        let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
            return fail("the path has a NUL byte");
        };
        // SAFETY: `path` is NUL-terminated and outlives the call; the default parameters are
        // llama.cpp's own.
        let raw = unsafe {
            sys::llama_model_load_from_file(path.as_ptr(), sys::llama_model_default_params())
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Self {
                raw,
                making_context: Mutex::new(()),
            }),
            None => fail("llama.cpp could not load the model (see the log)"),
        }
    }

    /// The model's tokenizer.
    pub(super) fn vocab(&self) -> Vocab<'_> {
        // SAFETY: the model is alive for the vocabulary's lifetime.
        let raw = unsafe { sys::llama_model_get_vocab(self.raw.as_ptr()) };
        Vocab {
            raw,
            _model: PhantomData,
        }
    }

    /// The chat template in the model's metadata, if any.
    pub(super) fn chat_template(&self) -> Option<String> {
        // SAFETY: a null name asks for the default template; the answer is null or a
        // NUL-terminated string owned by the model, copied before the model can go.
        let raw = unsafe { sys::llama_model_chat_template(self.raw.as_ptr(), std::ptr::null()) };
        if raw.is_null() {
            return None;
        }
        // SAFETY: checked non-null above.
        let text = unsafe { CStr::from_ptr(raw) };
        text.to_str().ok().map(str::to_owned)
    }

    /// Bytes of the model's tensors.
    pub(super) fn size(&self) -> u64 {
        // SAFETY: the model is alive.
        unsafe { sys::llama_model_size(self.raw.as_ptr()) }
    }

    /// Values in one embedding vector.
    fn embedding_len(&self) -> usize {
        // SAFETY: the model is alive.
        let len = unsafe { sys::llama_model_n_embd_out(self.raw.as_ptr()) };
        usize::try_from(len).unwrap_or(0)
    }

    /// A new context (its own KV cache) of `size` tokens; `embeddings` makes one that pools
    /// the last layer by mean instead of producing logits.
    pub(super) fn context(
        self: &Arc<Self>,
        size: u32,
        batch: u32,
        threads: i32,
        embeddings: bool,
    ) -> Result<Context, EngineError> {
        // SAFETY: llama.cpp's own defaults, then plain values.
        let mut params = unsafe { sys::llama_context_default_params() };
        params.n_ctx = size;
        params.n_batch = batch;
        params.n_threads = threads;
        params.n_threads_batch = threads;
        if embeddings {
            params.embeddings = true;
            params.pooling_type = sys::LLAMA_POOLING_TYPE_MEAN;
            params.n_ubatch = batch;
        }
        let raw = {
            let _one_at_a_time = self
                .making_context
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // SAFETY: the model is alive and no other context is being made from it.
            unsafe { sys::llama_init_from_model(self.raw.as_ptr(), params) }
        };
        match NonNull::new(raw) {
            Some(raw) => Ok(Context {
                raw,
                model: Arc::clone(self),
            }),
            None => fail("llama.cpp could not make a context (see the log)"),
        }
    }
}

/// A model's tokenizer, borrowed from it.
#[derive(Clone, Copy)]
pub(super) struct Vocab<'m> {
    raw: *const sys::llama_vocab,
    _model: PhantomData<&'m Model>,
}

impl Vocab<'_> {
    /// Tokens of `text`; `add_special` adds the model's start token, `parse_special` reads
    /// control tokens written in the text.
    pub(super) fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<Token>, EngineError> {
        let Ok(len) = i32::try_from(text.len()) else {
            return fail("the text is too long to tokenize");
        };
        let mut tokens: Vec<Token> = Vec::with_capacity(text.len() / 2 + 8);
        for _ in 0..2 {
            let room = i32::try_from(tokens.capacity()).unwrap_or(i32::MAX);
            // SAFETY: `text` is `len` bytes; `tokens` has room for `room` tokens, and
            // llama.cpp writes at most that many.
            let written = unsafe {
                sys::llama_tokenize(
                    self.raw,
                    text.as_ptr().cast(),
                    len,
                    tokens.as_mut_ptr(),
                    room,
                    add_special,
                    parse_special,
                )
            };
            match usize::try_from(written) {
                Ok(written) => {
                    // SAFETY: llama.cpp initialised the first `written` (≤ capacity) tokens.
                    unsafe { tokens.set_len(written.min(tokens.capacity())) };
                    return Ok(tokens);
                }
                // Negative: the count it needs.
                Err(_) if written != i32::MIN => {
                    tokens.reserve_exact(written.unsigned_abs() as usize);
                }
                Err(_) => break,
            }
        }
        fail("llama.cpp could not tokenize the text")
    }

    /// Whether `token` ends a generation (end of turn or of text).
    pub(super) fn is_end(&self, token: Token) -> bool {
        // SAFETY: the vocabulary is alive; any token id is accepted.
        unsafe { sys::llama_vocab_is_eog(self.raw, token) }
    }

    /// The bytes `token` stands for (control tokens as nothing); not always whole UTF-8.
    pub(super) fn piece(&self, token: Token) -> Vec<u8> {
        let mut buffer = vec![0_u8; 32];
        for _ in 0..2 {
            let room = i32::try_from(buffer.len()).unwrap_or(i32::MAX);
            // SAFETY: `buffer` has `room` writable bytes; llama.cpp writes at most that many.
            let written = unsafe {
                sys::llama_token_to_piece(
                    self.raw,
                    token,
                    buffer.as_mut_ptr().cast(),
                    room,
                    0,
                    false,
                )
            };
            match usize::try_from(written) {
                Ok(written) => {
                    buffer.truncate(written);
                    return buffer;
                }
                Err(_) => buffer.resize(written.unsigned_abs() as usize, 0),
            }
        }
        Vec::new()
    }

    /// How many tokens the vocabulary has.
    fn len(&self) -> usize {
        // SAFETY: the vocabulary is alive.
        usize::try_from(unsafe { sys::llama_vocab_n_tokens(self.raw) }).unwrap_or(0)
    }
}

/// A context of a model: its KV cache and the outputs of the last decode.
pub(super) struct Context {
    raw: NonNull<sys::llama_context>,
    model: Arc<Model>,
}

// SAFETY: a context is used by one thread at a time (its methods that change it take `&mut`,
// and the engine keeps a spare one behind a mutex); llama.cpp's context has no thread
// affinity.
unsafe impl Send for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: made by `Model::context`, freed once.
        unsafe { sys::llama_free(self.raw.as_ptr()) }
    }
}

impl Context {
    /// Runs the model over the batch.
    pub(super) fn decode(&mut self, batch: &Batch) -> Result<(), EngineError> {
        if batch.len() == 0 {
            return fail("an empty batch");
        }
        // SAFETY: the context is alive and exclusive (`&mut`); the batch's arrays hold
        // `n_tokens` initialised entries (see `Batch::add`).
        let status = unsafe { sys::llama_decode(self.raw.as_ptr(), batch.raw) };
        match status {
            0 => Ok(()),
            1 => fail("the context has no room for the batch"),
            2 => fail("the decode was aborted"),
            status => fail(format!("llama.cpp's decode failed ({status})")),
        }
    }

    /// Every token with its logit at output `index` of the last decode (which asked for
    /// logits there).
    pub(super) fn candidates(&self, index: i32) -> Result<Candidates, EngineError> {
        let len = self.model.vocab().len();
        // SAFETY: the context is alive; llama.cpp answers null for an index without logits.
        let logits = unsafe { sys::llama_get_logits_ith(self.raw.as_ptr(), index) };
        if logits.is_null() || len == 0 {
            return fail(format!("no logits at output {index}"));
        }
        // SAFETY: non-null logits of the last decode hold one value per vocabulary token, and
        // live until the next decode, which needs `&mut self`.
        let logits = unsafe { std::slice::from_raw_parts(logits, len) };
        let data = (0..)
            .zip(logits)
            .map(|(id, &logit)| sys::llama_token_data { id, logit, p: 0.0 })
            .collect();
        Ok(Candidates {
            data,
            selected: None,
            sorted: false,
        })
    }

    /// The pooled embedding of sequence 0 after the last decode (an embeddings context).
    pub(super) fn embedding(&self) -> Result<Vec<f32>, EngineError> {
        let len = self.model.embedding_len();
        // SAFETY: the context is alive; null when it pooled nothing.
        let values = unsafe { sys::llama_get_embeddings_seq(self.raw.as_ptr(), 0) };
        if values.is_null() || len == 0 {
            return fail("the context has no embedding (not an embeddings context?)");
        }
        // SAFETY: a pooled embedding holds `n_embd_out` values and lives until the next decode.
        Ok(unsafe { std::slice::from_raw_parts(values, len) }.to_vec())
    }

    /// Empties the KV cache (every sequence).
    pub(super) fn clear(&mut self) {
        // SAFETY: the context and its memory are alive; `true` clears the data too.
        unsafe {
            let memory = sys::llama_get_memory(self.raw.as_ptr());
            if !memory.is_null() {
                sys::llama_memory_clear(memory, true);
            }
        }
    }

    /// Forgets the KV cache of sequence 0 from `position` on, and answers whether what is
    /// left is what decoding positions `0..position` would leave: `false` when this kind of
    /// cache cannot forget part of a sequence, or when a sliding-window cache no longer holds
    /// the window before `position` (then nothing may be reused: [`Context::clear`]).
    pub(super) fn forget_from(&mut self, position: usize) -> bool {
        let Ok(end) = i32::try_from(position) else {
            return false;
        };
        // SAFETY: the model is alive (held by the context).
        let window = unsafe { sys::llama_model_n_swa(self.model.raw.as_ptr()) };
        // SAFETY: the context and its memory are alive and exclusive (`&mut`); -1 is "to the
        // end" in llama.cpp's API; the first position is -1 for an empty sequence.
        unsafe {
            let memory = sys::llama_get_memory(self.raw.as_ptr());
            if memory.is_null() || !sys::llama_memory_seq_rm(memory, 0, end, -1) {
                return false;
            }
            let first = sys::llama_memory_seq_pos_min(memory, 0);
            // What llama.cpp's own server checks: a sliding window must still reach back
            // `window` positions from the end (non-windowed caches hold everything: 0).
            first <= 0 || (window > 0 && first <= (end - window).max(0))
        }
    }

    fn as_ptr(&self) -> *mut sys::llama_context {
        self.raw.as_ptr()
    }
}

/// Tokens to decode, all of sequence 0.
pub(super) struct Batch {
    raw: sys::llama_batch,
    capacity: usize,
}

impl Drop for Batch {
    fn drop(&mut self) {
        // SAFETY: made by `llama_batch_init`, freed once.
        unsafe { sys::llama_batch_free(self.raw) }
    }
}

impl Batch {
    /// A batch with room for `capacity` tokens (at least one).
    pub(super) fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, i32::MAX as usize);
        // SAFETY: token ids (no embeddings), one sequence per token.
        let raw = unsafe { sys::llama_batch_init(capacity as i32, 0, 1) };
        Self { raw, capacity }
    }

    /// Tokens in the batch.
    pub(super) fn len(&self) -> i32 {
        self.raw.n_tokens
    }

    pub(super) fn clear(&mut self) {
        self.raw.n_tokens = 0;
    }

    /// Adds `token` at `position` of sequence 0; `logits` asks for its output.
    pub(super) fn add(
        &mut self,
        token: Token,
        position: usize,
        logits: bool,
    ) -> Result<(), EngineError> {
        let index = usize::try_from(self.raw.n_tokens).unwrap_or(usize::MAX);
        if index >= self.capacity {
            return fail(format!("the batch holds {} tokens", self.capacity));
        }
        let Ok(position) = i32::try_from(position) else {
            return fail("a position past what llama.cpp counts");
        };
        // SAFETY: `index` < capacity, the length of every array `llama_batch_init` made, and
        // each `seq_id[index]` points at room for one sequence id (`n_seq_max` = 1).
        unsafe {
            *self.raw.token.add(index) = token;
            *self.raw.pos.add(index) = position;
            *self.raw.n_seq_id.add(index) = 1;
            **self.raw.seq_id.add(index) = 0;
            *self.raw.logits.add(index) = i8::from(logits);
        }
        self.raw.n_tokens += 1;
        Ok(())
    }
}

/// Tokens with their logits, as samplers read and rewrite them.
pub(super) struct Candidates {
    data: Vec<sys::llama_token_data>,
    selected: Option<usize>,
    sorted: bool,
}

impl Candidates {
    /// One token, as if the model had given it every chance.
    pub(super) fn single(token: Token) -> Self {
        Self {
            data: vec![sys::llama_token_data {
                id: token,
                logit: 1.0,
                p: 0.0,
            }],
            selected: None,
            sorted: false,
        }
    }

    /// Whether the first candidate is still possible (a finite logit).
    pub(super) fn first_allowed(&self) -> bool {
        self.data.first().is_some_and(|data| data.logit.is_finite())
    }

    /// The token the last sampler selected.
    pub(super) fn selected(&self) -> Option<Token> {
        self.data.get(self.selected?).map(|data| data.id)
    }

    /// The possible token with the highest logit.
    pub(super) fn best(&self) -> Option<Token> {
        self.data
            .iter()
            .filter(|data| data.logit.is_finite())
            .max_by(|a, b| a.logit.total_cmp(&b.logit))
            .map(|data| data.id)
    }
}

/// A llama.cpp sampler (one stage, a chain or a grammar); a grammar borrows its model's
/// vocabulary.
pub(super) struct Sampler<'m> {
    raw: NonNull<sys::llama_sampler>,
    _vocab: PhantomData<Vocab<'m>>,
}

// SAFETY: a sampler is plain state, used through `&mut` only; the vocabulary a grammar reads
// is read-only.
unsafe impl Send for Sampler<'_> {}

impl Drop for Sampler<'_> {
    fn drop(&mut self) {
        // SAFETY: owned (a stage added to a chain is the chain's, and not dropped here: see
        // `random`), freed once.
        unsafe { sys::llama_sampler_free(self.raw.as_ptr()) }
    }
}

impl Sampler<'static> {
    /// The most likely token.
    pub(super) fn greedy() -> Result<Self, EngineError> {
        // SAFETY: no arguments.
        Self::from_raw(
            unsafe { sys::llama_sampler_init_greedy() },
            "the greedy sampler",
        )
    }

    /// top-k 40, top-p 0.95, `temperature`, then a draw seeded with `seed`.
    pub(super) fn random(temperature: f32, seed: u32) -> Result<Self, EngineError> {
        // SAFETY: plain values.
        let stages = unsafe {
            [
                Self::from_raw(sys::llama_sampler_init_top_k(40), "the top-k sampler")?,
                Self::from_raw(sys::llama_sampler_init_top_p(0.95, 1), "the top-p sampler")?,
                Self::from_raw(sys::llama_sampler_init_temp(temperature), "the temperature")?,
                Self::from_raw(sys::llama_sampler_init_dist(seed), "the random draw")?,
            ]
        };
        // SAFETY: default chain parameters.
        let chain = Self::from_raw(
            unsafe {
                sys::llama_sampler_chain_init(sys::llama_sampler_chain_params { no_perf: true })
            },
            "the sampler chain",
        )?;
        for stage in stages {
            let stage = std::mem::ManuallyDrop::new(stage);
            // SAFETY: the chain takes ownership of the stage (it frees it), so the stage is
            // not dropped here.
            unsafe { sys::llama_sampler_chain_add(chain.raw.as_ptr(), stage.raw.as_ptr()) };
        }
        Ok(chain)
    }
}

impl<'m> Sampler<'m> {
    /// Owns what llama.cpp made; `what` names it in the error when it made nothing.
    fn from_raw(raw: *mut sys::llama_sampler, what: &str) -> Result<Self, EngineError> {
        match NonNull::new(raw) {
            Some(raw) => Ok(Self {
                raw,
                _vocab: PhantomData,
            }),
            None => fail(format!("llama.cpp could not make {what} (see the log)")),
        }
    }

    /// A GBNF grammar (root rule `root`) over the model's vocabulary.
    pub(super) fn grammar(vocab: Vocab<'m>, rules: &str) -> Result<Self, EngineError> {
        if rules.trim().is_empty() {
            // llama.cpp would make a sampler that constrains nothing.
            return fail("an empty grammar");
        }
        let Ok(rules) = CString::new(rules) else {
            return fail("the grammar has a NUL byte");
        };
        // SAFETY: the vocabulary is alive, and outlives the sampler (`'m`), which keeps a
        // pointer to it; the strings are NUL-terminated.
        let raw =
            unsafe { souz_llama_sampler_init_grammar(vocab.raw, rules.as_ptr(), c"root".as_ptr()) };
        Self::from_raw(raw, "a sampler of this grammar")
    }

    /// Samples the token at output `index` of the context's last decode.
    pub(super) fn sample(&mut self, context: &Context, index: i32) -> Token {
        // SAFETY: the sampler and the context are alive; llama.cpp checks the index.
        unsafe { sys::llama_sampler_sample(self.raw.as_ptr(), context.as_ptr(), index) }
    }

    /// Rewrites the candidates (masks, sorts, cuts, selects).
    pub(super) fn apply(&mut self, candidates: &mut Candidates) -> Result<(), EngineError> {
        let data = candidates.data.as_mut_ptr();
        let mut array = sys::llama_token_data_array {
            data,
            size: candidates.data.len(),
            selected: candidates
                .selected
                .and_then(|selected| i64::try_from(selected).ok())
                .unwrap_or(-1),
            sorted: candidates.sorted,
        };
        // SAFETY: `array` points at the vector's initialised elements; samplers only shrink
        // `size`, reorder in place and set `selected`.
        unsafe { sys::llama_sampler_apply(self.raw.as_ptr(), &raw mut array) };
        if array.size > candidates.data.len() || !std::ptr::eq(array.data, data) {
            return fail("a sampler rewrote the candidates out of place");
        }
        candidates.data.truncate(array.size);
        candidates.sorted = array.sorted;
        candidates.selected = usize::try_from(array.selected)
            .ok()
            .filter(|&selected| selected < candidates.data.len());
        Ok(())
    }

    /// Moves the sampler's state past `token` (a grammar advances; an error when the grammar
    /// does not allow it).
    pub(super) fn accept(&mut self, token: Token) -> Result<(), EngineError> {
        // SAFETY: the sampler is alive; exceptions are caught in `guard.cpp`.
        match unsafe { souz_llama_sampler_accept(self.raw.as_ptr(), token) } {
            0 => Ok(()),
            _ => fail(format!("the grammar does not allow token {token}")),
        }
    }
}
