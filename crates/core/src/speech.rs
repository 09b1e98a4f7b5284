//! Speech to text: the [`Transcriber`] trait every engine implements, the audio it takes, the
//! bounds of an upload, and the one error type ([`SpeechError`]) that the runtime's facade maps
//! to the wire.
//!
//! The engines: Whisper in process through candle ([`whisper`], the default: audio never leaves
//! the machine), an OpenAI-compatible `/v1/audio/transcriptions` client ([`openai`]: OpenAI,
//! AiTunnel, or a transcription server such as whisper.cpp's) and SaluteSpeech ([`salute`]).
//!
//! Why the trait takes decoded audio (16 kHz mono f32) rather than the upload: every upload is
//! decoded once, here, under one set of bounds ([`decode`]), before any engine sees it — so the
//! length limit holds whatever the engine, the answer's `audioMs` is the same for all, an
//! upload that is not audio never reaches a cloud, and each engine gets the one format it
//! reads best (Whisper its samples; the servers a 16-bit WAV or PCM stream, which every one of
//! them accepts, instead of whatever container a browser chose). The cost is a few MB of WAV
//! sent where the browser's Opus would have been smaller: 3.8 MB for the longest (120 s).
//!
//! Invariants:
//! - An upload is at most [`MAX_UPLOAD_BYTES`] and [`MAX_AUDIO`] of sound, refused with
//!   [`SpeechError::TooLarge`] / [`SpeechError::TooLong`] before any engine runs.
//! - Every engine call is cancellable and bounded in time (`[speech] timeout_seconds` for the
//!   servers; the in-process model stops between windows and tokens, and decodes at most
//!   [`whisper::MAX_TOKENS_PER_WINDOW`] tokens a window).
//! - Audio is not stored unless `[speech] keep_audio` says so.

pub mod catalog;
pub mod decode;
pub(crate) mod error;
pub(crate) mod mel;
pub(crate) mod openai;
pub(crate) mod salute;
pub(crate) mod service;
pub mod whisper;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use error::SpeechError;
pub use service::{SpeechService, Transcription, TranscriptionRequest};

/// The sample rate every engine receives.
pub const SAMPLE_RATE: u32 = 16_000;
/// The largest upload accepted (a 120 s WAV at 48 kHz stereo 16-bit is 23 MB).
pub const MAX_UPLOAD_BYTES: usize = 25 << 20;
/// The longest audio accepted.
pub const MAX_AUDIO: Duration = Duration::from_secs(120);

/// Decoded audio: mono samples in [-1, 1] at [`SAMPLE_RATE`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Audio {
    samples: Vec<f32>,
}

impl Audio {
    /// Audio of `samples` (mono, [`SAMPLE_RATE`]).
    pub fn new(samples: Vec<f32>) -> Self {
        Self { samples }
    }

    /// The samples.
    pub fn samples(&self) -> &[f32] {
        &self.samples
    }

    /// Its length in milliseconds.
    pub fn duration_ms(&self) -> u64 {
        (self.samples.len() as u64).saturating_mul(1000) / u64::from(SAMPLE_RATE)
    }

    /// The samples as a 16-bit mono WAV file (what the servers are sent).
    pub fn to_wav(&self) -> Vec<u8> {
        let data_bytes = u32::try_from(self.samples.len() * 2).unwrap_or(u32::MAX);
        let mut out = Vec::with_capacity(44 + self.samples.len() * 2);
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&(36u32.saturating_add(data_bytes)).to_le_bytes());
        out.extend_from_slice(b"WAVEfmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes()); // PCM
        out.extend_from_slice(&1u16.to_le_bytes()); // mono
        out.extend_from_slice(&SAMPLE_RATE.to_le_bytes());
        out.extend_from_slice(&(SAMPLE_RATE * 2).to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data_bytes.to_le_bytes());
        out.extend_from_slice(&self.to_pcm16());
        out
    }

    /// The samples as raw little-endian 16-bit PCM (SaluteSpeech's `audio/x-pcm`).
    pub fn to_pcm16(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.samples.len() * 2);
        for sample in &self.samples {
            // Saturating by construction: clamped to [-1, 1] first.
            let value = (sample.clamp(-1.0, 1.0) * 32767.0).round() as i16;
            out.extend_from_slice(&value.to_le_bytes());
        }
        out
    }
}

/// The engines, by the name `[speech] engine` and a request's `engine` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Whisper in the daemon (candle, CPU).
    Local,
    /// OpenAI's transcription API.
    OpenAi,
    /// AiTunnel's OpenAI-compatible API.
    AiTunnel,
    /// Sber SaluteSpeech.
    Salute,
    /// An OpenAI-compatible transcription server (`[speech] server_url`, or whisper.cpp found
    /// on loopback).
    Server,
}

impl EngineKind {
    /// Every engine.
    pub const ALL: [Self; 5] = [
        Self::Local,
        Self::OpenAi,
        Self::AiTunnel,
        Self::Salute,
        Self::Server,
    ];

    /// The engine `name` names.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == name.trim().to_ascii_lowercase())
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::OpenAi => "openai",
            Self::AiTunnel => "ai_tunnel",
            Self::Salute => "salute",
            Self::Server => "server",
        }
    }

    /// Whether audio leaves the machine with it. A server is counted as a cloud unless it is
    /// on loopback (decided by the service, which knows its URL).
    pub fn cloud(self) -> bool {
        !matches!(self, Self::Local)
    }

    /// Its name for people.
    pub fn label(self, language: souz_protocol::language::Language) -> String {
        use souz_protocol::localized;
        match self {
            Self::Local => localized!(
                language,
                "Whisper on this computer",
                "Whisper на этом компьютере"
            ),
            Self::OpenAi => localized!(language, "OpenAI (cloud)", "OpenAI (облако)"),
            Self::AiTunnel => localized!(language, "AiTunnel (cloud)", "AiTunnel (облако)"),
            Self::Salute => localized!(
                language,
                "SaluteSpeech (Sber cloud)",
                "SaluteSpeech (облако Сбера)"
            ),
            Self::Server => localized!(language, "Transcription server", "Сервер распознавания"),
        }
    }
}

/// One engine: hears `audio` in `language` and answers the text.
#[async_trait::async_trait]
pub trait Transcriber: Send + Sync {
    /// Which engine this is.
    fn kind(&self) -> EngineKind;

    /// The model it uses.
    fn model(&self) -> String;

    /// The text of `audio` (at most [`MAX_AUDIO`] long, [`SAMPLE_RATE`] mono), spoken in
    /// `language` (a code such as `ru`). Stops with [`SpeechError::Cancelled`] soon after
    /// `cancel` fires.
    async fn transcribe(
        &self,
        audio: &Audio,
        language: &str,
        cancel: &CancellationToken,
    ) -> Result<String, SpeechError>;
}

#[cfg(test)]
mod tests;
