//! Uploads to [`Audio`]: the container is recognised by its first bytes (never by the name or
//! the MIME type a client claims), its codec decoded, the channels mixed to mono and the rate
//! brought to 16 kHz.
//!
//! Formats: WAV (PCM 8/16/24/32-bit, float 32/64-bit, any rate, up to 8 channels), OGG/Opus
//! (what Firefox's `MediaRecorder` and `opusenc` write) and WebM/Opus (Chromium's
//! `MediaRecorder`, with the unknown-size Segment and Clusters a live recording has). The
//! containers are parsed here ([`wav`], [`ogg`], [`webm`]); Opus packets go to a pure-Rust
//! decoder ([`opus`]).
//!
//! Invariants (the upload is untrusted):
//! - Input is at most [`super::MAX_UPLOAD_BYTES`]; the decoded audio at most
//!   [`super::MAX_AUDIO`]: decoding stops with [`SpeechError::TooLong`] as soon as the samples
//!   pass it, so a small file that claims hours (a bomb) costs no more than the bound.
//! - Every length read from the file is checked against what is left of it before it is used.
//!   No recursion follows the file's structure: WebM is walked in one flat pass (the parser
//!   steps into the few master elements it reads and over every other one), so nesting depth
//!   costs nothing.

pub(crate) mod ogg;
pub(crate) mod opus;
pub(crate) mod resample;
pub(crate) mod wav;
pub(crate) mod webm;

use super::{Audio, MAX_AUDIO, MAX_UPLOAD_BYTES, SAMPLE_RATE, SpeechError};

/// Which container an upload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// RIFF/WAVE.
    Wav,
    /// Ogg (Opus inside).
    Ogg,
    /// Matroska/WebM (Opus inside).
    WebM,
}

impl Container {
    /// The container `bytes` start with.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
            Some(Self::Wav)
        } else if bytes.starts_with(b"OggS") {
            Some(Self::Ogg)
        } else if bytes.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
            Some(Self::WebM)
        } else {
            None
        }
    }
}

/// Samples as they come out of a codec: interleaved frames at `rate`, `channels` wide.
#[derive(Debug, Default)]
pub(crate) struct Pcm {
    pub rate: u32,
    /// Mono samples (channels already mixed).
    pub mono: Vec<f32>,
}

/// The most samples (at the source rate, mono) a decoder may produce: [`MAX_AUDIO`] at
/// `rate`, plus one Opus frame of slack.
pub(crate) fn sample_budget(rate: u32) -> usize {
    let seconds = usize::try_from(MAX_AUDIO.as_secs()).unwrap_or(usize::MAX);
    seconds
        .saturating_mul(usize::try_from(rate).unwrap_or(usize::MAX))
        .saturating_add(5760)
}

/// The error for audio that went past the bound while decoding.
pub(crate) fn too_long(samples: usize, rate: u32) -> SpeechError {
    SpeechError::TooLong {
        seconds: (samples as u64) / u64::from(rate.max(1)),
        limit: MAX_AUDIO.as_secs(),
    }
}

/// Decodes an upload to 16 kHz mono.
pub fn decode(bytes: &[u8]) -> Result<Audio, SpeechError> {
    if bytes.is_empty() {
        return Err(SpeechError::Empty);
    }
    if bytes.len() > MAX_UPLOAD_BYTES {
        return Err(SpeechError::TooLarge {
            limit: MAX_UPLOAD_BYTES as u64,
        });
    }
    let pcm = match Container::sniff(bytes) {
        Some(Container::Wav) => wav::decode(bytes)?,
        Some(Container::Ogg) => ogg::decode(bytes)?,
        Some(Container::WebM) => webm::decode(bytes)?,
        None => {
            return Err(SpeechError::Unsupported(
                "not a WAV, OGG or WebM file".to_owned(),
            ));
        }
    };
    let samples = resample::to_rate(&pcm.mono, pcm.rate, SAMPLE_RATE);
    let audio = Audio::new(samples);
    if audio.duration_ms() > MAX_AUDIO.as_millis() as u64 + 100 {
        return Err(too_long(audio.samples().len(), SAMPLE_RATE));
    }
    Ok(audio)
}

#[cfg(test)]
mod tests;
