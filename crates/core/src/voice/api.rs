//! The OpenAI-compatible speech API: `POST {base}/audio/speech` with `{model, input, voice,
//! response_format}` answered by the audio bytes. OpenAI and AiTunnel (with the user's stored
//! key, through the provider HTTP client: retries, `Retry-After`, credentials scrubbed from
//! errors), or any compatible server (`[voice] tts = "server"`, no key).
//!
//! Invariants: the answer is read within [`MAX_AUDIO_BYTES`] and must be audio (an
//! `audio/*` type, or bytes that start like MP3/WAV/OGG/FLAC when the server sends none); the
//! whole call is bounded by [`SPEAK_TIMEOUT`]; the key is only ever in the request header.

use futures::future::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{MAX_AUDIO_BYTES, SPEAK_TIMEOUT, Speaker, SpeechRequest, SpokenAudio, VoiceError};
use crate::llm::http::{ProviderHttp, endpoint, read_body};
use crate::llm::keys::ApiKey;
use crate::llm::{LlmError, ProviderId};

/// The voice used when `[voice] tts_voice` is empty.
const DEFAULT_VOICE: &str = "alloy";

/// The format asked for: MP3 plays in every browser and is a tenth of WAV's size.
const RESPONSE_FORMAT: &str = "mp3";

/// Where the speech API is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The provider whose key and HTTP rules apply (`None`: a keyless server).
    provider: Option<ProviderId>,
    /// The full URL of `/audio/speech`.
    url: String,
    /// What the person reads.
    name: String,
    /// Whether the text leaves the machine.
    cloud: bool,
}

impl Endpoint {
    /// A provider's speech API under its chat base URL (`https://api.openai.com/v1`).
    pub fn provider(provider: ProviderId, base_url: &str) -> Self {
        let name = match provider {
            ProviderId::OpenAi => "OpenAI",
            ProviderId::AiTunnel => "AiTunnel",
            other => other.as_str(),
        };
        Self {
            provider: Some(provider),
            url: endpoint(base_url, "audio/speech"),
            name: name.to_owned(),
            cloud: !is_loopback(base_url),
        }
    }

    /// An OpenAI-compatible server at `base_url` (`http://127.0.0.1:8880/v1`).
    pub fn server(base_url: &str) -> Self {
        Self {
            provider: None,
            url: endpoint(base_url, "audio/speech"),
            name: "speech server".to_owned(),
            cloud: !is_loopback(base_url),
        }
    }
}

/// Whether `url`'s host is this machine.
fn is_loopback(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// A voice behind an OpenAI-compatible speech API.
pub struct ApiSpeaker {
    endpoint: Endpoint,
    key: Option<ApiKey>,
    model: String,
    voice: String,
    http: ProviderHttp,
}

impl ApiSpeaker {
    /// A speaker calling `endpoint` with `key` (when the API takes one), `model` and `voice`
    /// (empty: [`DEFAULT_VOICE`]) through `http`.
    pub fn new(
        endpoint: Endpoint,
        key: Option<ApiKey>,
        model: String,
        voice: String,
        http: ProviderHttp,
    ) -> Self {
        let voice = if voice.trim().is_empty() {
            DEFAULT_VOICE.to_owned()
        } else {
            voice.trim().to_owned()
        };
        Self {
            endpoint,
            key,
            model,
            voice,
            http,
        }
    }

    async fn call(
        &self,
        request: &SpeechRequest,
        cancel: &CancellationToken,
    ) -> Result<SpokenAudio, VoiceError> {
        // The provider HTTP client attributes errors to a provider; a server has none, and
        // every error is renamed to this voice below anyway.
        let provider = self.endpoint.provider.unwrap_or(ProviderId::LlamaCpp);
        let body = json!({
            "model": self.model,
            "input": request.text,
            "voice": self.voice,
            "response_format": RESPONSE_FORMAT,
        });
        let url = &self.endpoint.url;
        let build = |client: &reqwest::Client| {
            let builder = client.post(url).json(&body);
            match &self.key {
                Some(key) => builder.bearer_auth(key.expose()),
                None => builder,
            }
        };
        let response = self
            .http
            .send(provider, build, cancel)
            .await
            .map_err(|error| self.rename(error))?;
        let declared = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| {
                value
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .unwrap_or_default();
        let bytes = read_body(provider, response, MAX_AUDIO_BYTES, SPEAK_TIMEOUT, cancel)
            .await
            .map_err(|error| self.rename(error))?;
        let mime = audio_type(&declared, &bytes).ok_or_else(|| VoiceError::Malformed {
            voice: self.label(),
            detail: format!(
                "{} bytes of {}",
                bytes.len(),
                if declared.is_empty() {
                    "an unknown type"
                } else {
                    &declared
                }
            ),
        })?;
        Ok(SpokenAudio { bytes, mime })
    }

    /// The provider HTTP client's error, said as this voice's.
    fn rename(&self, error: LlmError) -> VoiceError {
        let voice = self.label();
        match error {
            LlmError::Status {
                status: status @ (401 | 403),
                message,
                ..
            } => VoiceError::Refused {
                voice,
                status,
                message,
            },
            LlmError::Status {
                status: 429,
                retry_after,
                ..
            } => VoiceError::RateLimited { voice, retry_after },
            LlmError::Status {
                status, message, ..
            } => VoiceError::Status {
                voice,
                status,
                message,
            },
            LlmError::Timeout { after, .. } => VoiceError::Timeout { voice, after },
            LlmError::TooLarge { limit, .. } => VoiceError::TooLarge { voice, limit },
            LlmError::Cancelled => VoiceError::Cancelled,
            LlmError::Transport { message, .. } => VoiceError::Unreachable { voice, message },
            other => VoiceError::Unreachable {
                voice,
                message: other.to_string(),
            },
        }
    }
}

/// The audio type of an answer: its declared `audio/*` type, else what its first bytes say.
fn audio_type(declared: &str, bytes: &[u8]) -> Option<String> {
    if bytes.is_empty() {
        return None;
    }
    if declared.starts_with("audio/") {
        return Some(declared.to_owned());
    }
    let sniffed = if bytes.starts_with(b"ID3") || bytes.starts_with(&[0xFF, 0xFB]) {
        "audio/mpeg"
    } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WAVE") {
        "audio/wav"
    } else if bytes.starts_with(b"OggS") {
        "audio/ogg"
    } else if bytes.starts_with(b"fLaC") {
        "audio/flac"
    } else if bytes.len() > 1 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0 {
        "audio/mpeg"
    } else {
        return None;
    };
    Some(sniffed.to_owned())
}

impl Speaker for ApiSpeaker {
    fn label(&self) -> String {
        format!("{} ({})", self.endpoint.name, self.voice)
    }

    fn cloud(&self) -> bool {
        self.endpoint.cloud
    }

    fn speak<'a>(
        &'a self,
        request: &'a SpeechRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SpokenAudio, VoiceError>> {
        Box::pin(async move {
            match tokio::time::timeout(SPEAK_TIMEOUT, self.call(request, cancel)).await {
                Ok(result) => result,
                Err(_) => Err(VoiceError::Timeout {
                    voice: self.label(),
                    after: SPEAK_TIMEOUT,
                }),
            }
        })
    }
}
