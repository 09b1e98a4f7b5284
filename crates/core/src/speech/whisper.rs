//! Whisper in process: candle's `whisper::model::Whisper` on the CPU, loaded from a folder of
//! `config.json` (candle's `whisper::Config`), `tokenizer.json` and `model.safetensors` (Hugging
//! Face names; float16 or float32, run as float32).
//!
//! Decoding is greedy with the prompt `<|startoftranscript|>` + language (multilingual models
//! only) + `<|transcribe|>` + `<|notimestamps|>`, over 30 s windows of the log-mel spectrogram
//! one after another; the model's suppressed tokens and every special token are masked out of
//! the choice, except the end of text.
//!
//! Invariants: at most [`MAX_TOKENS_PER_WINDOW`] tokens a window (a model that loops stops
//! there); `cancel` is checked before every window and every token, so a cancelled
//! transcription stops within one decoder step; everything here is blocking and runs on a
//! blocking thread ([`super::service`]).

use std::path::Path;

use candle_core::{D, DType, Device, IndexOp, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper::{self as model, Config, audio, model::Whisper};
use tokenizers::Tokenizer;
use tokio_util::sync::CancellationToken;

use super::SpeechError;

/// The most tokens decoded from one 30 s window (a fast speaker says about 150 words).
pub const MAX_TOKENS_PER_WINDOW: usize = 224;
/// The largest model file read.
const MAX_MODEL_BYTES: u64 = 2 << 30;
/// The largest config or tokenizer read.
const MAX_SMALL_FILE: u64 = 32 << 20;

fn broken(what: impl std::fmt::Display) -> SpeechError {
    SpeechError::ModelBroken(what.to_string())
}

/// Reads `name` in the model folder `dir` beneath a handle of its parent (no link followed, the
/// folder itself not a link) and at most `limit` bytes, as the memory model's files are read.
fn read(dir: &Path, name: &str, limit: u64) -> Result<Vec<u8>, SpeechError> {
    let (anchor, folder) = match (dir.parent(), dir.file_name()) {
        (Some(parent), Some(folder)) => (parent, Path::new(folder)),
        _ => (dir, Path::new("")),
    };
    crate::sandbox::DaemonFolder::open(anchor, folder)
        .and_then(|opened| match opened {
            Some(opened) => opened.read(name, limit),
            None => Ok(None),
        })
        .map_err(|error| broken(format!("{name}: {error}")))?
        .ok_or_else(|| broken(format!("{name}: not found")))
}

/// A loaded Whisper model.
pub struct WhisperModel {
    model: Whisper,
    tokenizer: Tokenizer,
    config: Config,
    filters: Vec<f32>,
    device: Device,
    multilingual: bool,
    sot: u32,
    transcribe: u32,
    no_timestamps: u32,
    eot: u32,
    /// Added to the logits: 0, or minus infinity for tokens never chosen.
    suppress: Tensor,
}

impl std::fmt::Debug for WhisperModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhisperModel")
            .field("multilingual", &self.multilingual)
            .field("vocab_size", &self.config.vocab_size)
            .finish_non_exhaustive()
    }
}

impl WhisperModel {
    /// Loads the model in `dir` (blocking).
    pub fn load(dir: &Path) -> Result<Self, SpeechError> {
        let config: Config = serde_json::from_slice(&read(dir, "config.json", MAX_SMALL_FILE)?)
            .map_err(|error| broken(format!("config.json: {error}")))?;
        let tokenizer = Tokenizer::from_bytes(read(dir, "tokenizer.json", MAX_SMALL_FILE)?)
            .map_err(|error| broken(format!("tokenizer.json: {error}")))?;
        let weights = read(dir, "model.safetensors", MAX_MODEL_BYTES)?;
        let device = Device::Cpu;
        let builder =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &device).map_err(broken)?;
        let model = Whisper::load(&builder, config.clone()).map_err(broken)?;
        let token = |name: &str| {
            tokenizer
                .token_to_id(name)
                .ok_or_else(|| broken(format!("the tokenizer has no {name}")))
        };
        let sot = token(model::SOT_TOKEN)?;
        let transcribe = token(model::TRANSCRIBE_TOKEN)?;
        let no_timestamps = token(model::NO_TIMESTAMPS_TOKEN)?;
        let eot = token(model::EOT_TOKEN)?;
        // Multilingual vocabularies have one more token (51865) than English-only ones.
        let multilingual = config.vocab_size >= 51_865;
        let vocab = u32::try_from(config.vocab_size).map_err(broken)?;
        let mask: Vec<f32> = (0..vocab)
            .map(|id| {
                let special = id > eot;
                if special || config.suppress_tokens.contains(&id) {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let suppress = Tensor::new(mask.as_slice(), &device).map_err(broken)?;
        let filters = super::mel::filters(config.num_mel_bins);
        Ok(Self {
            model,
            tokenizer,
            config,
            filters,
            device,
            multilingual,
            sot,
            transcribe,
            no_timestamps,
            eot,
            suppress,
        })
    }

    /// The language token of `language`, for a multilingual model.
    fn language_token(&self, language: &str) -> Result<Option<u32>, SpeechError> {
        if !self.multilingual {
            if language != "en" {
                return Err(SpeechError::UnsupportedLanguage {
                    engine: "local (an English-only model)",
                    language: language.to_owned(),
                });
            }
            return Ok(None);
        }
        self.tokenizer
            .token_to_id(&format!("<|{language}|>"))
            .map(Some)
            .ok_or_else(|| SpeechError::UnsupportedLanguage {
                engine: "local",
                language: language.to_owned(),
            })
    }

    /// The text of 16 kHz mono `samples` spoken in `language` (blocking).
    pub fn transcribe(
        &mut self,
        samples: &[f32],
        language: &str,
        cancel: &CancellationToken,
    ) -> Result<String, SpeechError> {
        let language_token = self.language_token(language)?;
        let mut prompt = vec![self.sot];
        prompt.extend(language_token);
        prompt.extend([self.transcribe, self.no_timestamps]);

        let bins = self.config.num_mel_bins;
        let mel = audio::pcm_to_mel(&self.config, samples, &self.filters);
        let frames = mel.len() / bins;
        let mel = Tensor::from_vec(mel, (1, bins, frames), &self.device).map_err(broken)?;
        // Frames that hold audio (the spectrogram is padded with silence past them).
        let audio_frames = samples.len() / model::HOP_LENGTH;
        let mut text = String::new();
        let mut start = 0;
        while start < audio_frames.max(1) {
            if cancel.is_cancelled() {
                return Err(SpeechError::Cancelled);
            }
            let size = model::N_FRAMES.min(frames.saturating_sub(start));
            if size == 0 {
                break;
            }
            let window = mel.narrow(2, start, size).map_err(broken)?;
            let window = if size < model::N_FRAMES {
                window
                    .pad_with_zeros(2, 0, model::N_FRAMES - size)
                    .map_err(broken)?
            } else {
                window
            };
            let tokens = self.decode_window(&window, &prompt, cancel)?;
            let piece = self
                .tokenizer
                .decode(&tokens, true)
                .map_err(|error| broken(format!("decoding tokens: {error}")))?;
            let piece = piece.trim();
            if !piece.is_empty() {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(piece);
            }
            start += model::N_FRAMES;
        }
        Ok(text)
    }

    /// Greedy decoding of one 30 s window: the tokens after the prompt, up to the end of text.
    fn decode_window(
        &mut self,
        mel: &Tensor,
        prompt: &[u32],
        cancel: &CancellationToken,
    ) -> Result<Vec<u32>, SpeechError> {
        let features = self.model.encoder.forward(mel, true).map_err(broken)?;
        let mut tokens = prompt.to_vec();
        let limit = MAX_TOKENS_PER_WINDOW.min(
            self.config
                .max_target_positions
                .saturating_sub(prompt.len() + 1),
        );
        for step in 0..limit {
            if cancel.is_cancelled() {
                return Err(SpeechError::Cancelled);
            }
            let input = Tensor::new(tokens.as_slice(), &self.device)
                .and_then(|t| t.unsqueeze(0))
                .map_err(broken)?;
            let hidden = self
                .model
                .decoder
                .forward(&input, &features, step == 0)
                .map_err(broken)?;
            let length = hidden.dim(1).map_err(broken)?;
            let logits = self
                .model
                .decoder
                .final_linear(&hidden.i((..1, length - 1..)).map_err(broken)?)
                .and_then(|logits| logits.i(0))
                .and_then(|logits| logits.i(0))
                .and_then(|logits| logits.broadcast_add(&self.suppress))
                .map_err(broken)?;
            let next = logits
                .argmax(D::Minus1)
                .and_then(|index| index.to_scalar::<u32>())
                .map_err(broken)?;
            if next == self.eot {
                break;
            }
            tokens.push(next);
        }
        self.model.reset_kv_cache();
        Ok(tokens[prompt.len()..].to_vec())
    }
}
