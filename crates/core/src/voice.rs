//! Spoken answers: text to speech behind one [`Speaker`] trait, with an OpenAI-compatible
//! `/audio/speech` client ([`api`]: OpenAI, AiTunnel, any compatible server) and this
//! machine's own voice ([`os`]: `espeak-ng` on Linux, `say` on macOS).
//!
//! Invariants:
//! - The text is bounded before any voice sees it ([`prepare_text`]: control characters
//!   dropped, at most `[voice] tts_max_chars`, cut at a sentence end), and the audio that
//!   comes back is bounded too ([`MAX_AUDIO_BYTES`]); over a bound is a clear error.
//! - Every call is cancellable and has a time limit ([`SPEAK_TIMEOUT`]).
//! - The text leaves the machine only for a cloud voice (`openai`, `ai_tunnel`, a `server`
//!   not on loopback); [`Speaker::cloud`] says which, so the UI can tell the person.
//! - Errors are typed ([`VoiceError`]) and say which voice failed and what to do; a
//!   provider's key never appears in them (the provider HTTP client scrubs what it sent).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub(crate) mod api;
pub(crate) mod os;

pub use api::ApiSpeaker;
pub use os::OsSpeaker;

use crate::config::VoiceConfig;
use crate::llm::ProviderId;
use crate::llm::service::LlmService;
use crate::sandbox::Sandbox;

/// The largest audio a voice may return (a few minutes of MP3 or WAV).
pub const MAX_AUDIO_BYTES: usize = 16 << 20;

/// Longest one spoken answer may take to make.
pub const SPEAK_TIMEOUT: Duration = Duration::from_secs(60);

/// What to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechRequest {
    /// The text, already bounded by [`prepare_text`].
    pub text: String,
    /// Its language (`ru`, `en`, ...), which picks the voice where the voice is not named.
    pub language: String,
}

/// Audio a voice made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpokenAudio {
    /// The encoded audio.
    pub bytes: Vec<u8>,
    /// Its media type (`audio/wav`, `audio/mpeg`).
    pub mime: String,
}

/// Why a voice could not speak.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VoiceError {
    /// `[voice] tts = "off"`.
    #[error("spoken answers are off: choose a voice in Settings (`[voice] tts`)")]
    Off,
    /// Nothing to say once the text was cleaned.
    #[error("there is no text to read aloud")]
    Empty,
    /// The voice does not exist on this machine.
    #[error("{0}")]
    NotAvailable(String),
    /// No key is stored for the provider.
    #[error(
        "no API key for {provider}: add one with `souz keys set {provider}` or in Settings, or \
         choose another voice (`[voice] tts`)"
    )]
    MissingKey {
        /// The provider.
        provider: ProviderId,
    },
    /// The voice refused the key (401/403).
    #[error("{voice} refused the key (HTTP {status}): {message}")]
    Refused {
        /// The voice.
        voice: String,
        /// The HTTP status.
        status: u16,
        /// Its explanation.
        message: String,
    },
    /// The voice is rate limited (429) even after the retries.
    #[error("{voice} is busy (HTTP 429: too many requests){}; try again later", retry_text(.retry_after))]
    RateLimited {
        /// The voice.
        voice: String,
        /// How long it asked to wait.
        retry_after: Option<Duration>,
    },
    /// Any other error status.
    #[error("{voice} answered HTTP {status}: {message}")]
    Status {
        /// The voice.
        voice: String,
        /// The HTTP status.
        status: u16,
        /// Its explanation.
        message: String,
    },
    /// The voice could not be reached.
    #[error("{voice} could not be reached: {message}")]
    Unreachable {
        /// The voice.
        voice: String,
        /// What failed.
        message: String,
    },
    /// It took longer than [`SPEAK_TIMEOUT`].
    #[error("{voice} did not answer in time ({} s)", .after.as_secs())]
    Timeout {
        /// The voice.
        voice: String,
        /// The limit.
        after: Duration,
    },
    /// The audio was larger than [`MAX_AUDIO_BYTES`].
    #[error("{voice} sent more than {limit} bytes of audio")]
    TooLarge {
        /// The voice.
        voice: String,
        /// The limit.
        limit: usize,
    },
    /// The answer is not audio.
    #[error("{voice} sent something that is not audio: {detail}")]
    Malformed {
        /// The voice.
        voice: String,
        /// What was wrong.
        detail: String,
    },
    /// The voice program failed or could not be run.
    #[error("{voice} failed: {detail}")]
    Program {
        /// The voice.
        voice: String,
        /// What happened.
        detail: String,
    },
    /// The caller gave up.
    #[error("cancelled")]
    Cancelled,
}

fn retry_text(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!(" and asked to wait {} s", wait.as_secs().max(1)),
        None => String::new(),
    }
}

/// A voice that reads text aloud.
pub trait Speaker: Send + Sync {
    /// What the person reads as its name ("OpenAI (alloy)", "espeak-ng").
    fn label(&self) -> String;

    /// Whether the text leaves this machine.
    fn cloud(&self) -> bool;

    /// Says `request` and returns the audio; cancelling `cancel` stops it.
    fn speak<'a>(
        &'a self,
        request: &'a SpeechRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SpokenAudio, VoiceError>>;
}

/// The voice `[voice] tts` names, for the user `llm` acts for (their keys); `Err(Off)` when
/// spoken answers are off.
pub async fn speaker_for(
    config: &VoiceConfig,
    llm: &LlmService,
    sandbox: &Arc<Sandbox>,
) -> Result<Arc<dyn Speaker>, VoiceError> {
    let voice = config.tts_voice.trim().to_owned();
    let model = config.tts_model.trim().to_owned();
    let provider = match config.tts.trim() {
        "off" | "" => return Err(VoiceError::Off),
        "os" => return Ok(Arc::new(OsSpeaker::new(Arc::clone(sandbox), voice)?)),
        "server" => {
            return Ok(Arc::new(ApiSpeaker::new(
                api::Endpoint::server(config.tts_url.trim()),
                None,
                model,
                voice,
                llm.http(),
            )));
        }
        "openai" => ProviderId::OpenAi,
        "ai_tunnel" => ProviderId::AiTunnel,
        other => {
            return Err(VoiceError::NotAvailable(format!(
                "`[voice] tts = \"{other}\"` is not a voice Souz knows"
            )));
        }
    };
    let key = match llm.key(provider).await {
        Ok(Some(key)) => key,
        Ok(None) => return Err(VoiceError::MissingKey { provider }),
        Err(error) => return Err(VoiceError::NotAvailable(error.to_string())),
    };
    Ok(Arc::new(ApiSpeaker::new(
        api::Endpoint::provider(provider, &llm.base_url(provider)),
        Some(key),
        model,
        voice,
        llm.http(),
    )))
}

/// The text a voice reads: control characters dropped, runs of blank space made one space,
/// Markdown's emphasis and code marks removed, and at most `max_chars` characters, cut at the
/// last sentence end before the limit (else at a space, else at the limit).
pub fn prepare_text(text: &str, max_chars: usize) -> Result<String, VoiceError> {
    let mut clean = String::with_capacity(text.len().min(max_chars * 4 + 8));
    let mut last_space = true;
    for character in text.chars() {
        let character = match character {
            '*' | '`' | '#' | '_' | '~' | '>' | '|' => ' ',
            c if c.is_whitespace() || c.is_control() => ' ',
            c => c,
        };
        if character == ' ' {
            if !last_space {
                clean.push(' ');
            }
            last_space = true;
        } else {
            clean.push(character);
            last_space = false;
        }
        // Enough to cut from; the rest is never read.
        if clean.len() > max_chars.saturating_mul(4) + 8 {
            break;
        }
    }
    let clean = clean.trim();
    if clean.is_empty() {
        return Err(VoiceError::Empty);
    }
    let count = clean.chars().count();
    if count <= max_chars {
        return Ok(clean.to_owned());
    }
    let cut: String = clean.chars().take(max_chars).collect();
    let sentence_end = cut
        .char_indices()
        .filter(|(_, c)| matches!(c, '.' | '!' | '?' | '…'))
        .map(|(index, c)| index + c.len_utf8())
        .next_back();
    let end = sentence_end
        .filter(|end| *end > cut.len() / 3)
        .or_else(|| cut.rfind(' '))
        .unwrap_or(cut.len());
    Ok(cut[..end].trim().to_owned())
}

/// The language a voice is asked for: the two-letter code of `language` (`ru-RU` → `ru`),
/// else `fallback`'s, else English.
pub fn spoken_language(language: Option<&str>, fallback: &str) -> String {
    [language.unwrap_or(""), fallback]
        .iter()
        .map(|value| {
            value
                .trim()
                .split(['-', '_'])
                .next()
                .unwrap_or("")
                .to_ascii_lowercase()
        })
        .find(|code| (2..=3).contains(&code.len()) && code.chars().all(|c| c.is_ascii_lowercase()))
        .unwrap_or_else(|| "en".to_owned())
}

#[cfg(test)]
mod tests;
