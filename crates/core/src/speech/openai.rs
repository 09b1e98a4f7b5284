//! The OpenAI-compatible transcription client: `POST <endpoint>` as `multipart/form-data` with
//! `file` (a 16 kHz 16-bit WAV), `model`, `language` and `response_format=json`, answered with
//! `{"text": "..."}`. OpenAI (`<base>/audio/transcriptions`), AiTunnel (the same path under its
//! base URL), a transcription server named in `[speech] server_url`, and whisper.cpp's server
//! (`/inference`, the same fields) all speak it.
//!
//! Invariants: one request, bounded by the engine's timeout and `cancel`; the answer is read
//! to at most [`MAX_ANSWER`] bytes; a key is sent only as `Authorization: Bearer` and never
//! appears in an error (the server's error text is scrubbed of it).

use std::time::{Duration, SystemTime};

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{Audio, EngineKind, SpeechError, Transcriber};
use crate::llm::keys::ApiKey;

/// The largest answer read.
pub(crate) const MAX_ANSWER: usize = 1 << 20;

/// What a transcription server answers.
#[derive(Debug, Deserialize)]
struct Answer {
    text: String,
}

/// One OpenAI-compatible transcription endpoint.
#[derive(Debug, Clone)]
pub(crate) struct OpenAiCompatible {
    /// The HTTP client (the providers' one: their extra CA roots, no logging of bodies).
    pub client: reqwest::Client,
    /// Which engine this is.
    pub kind: EngineKind,
    /// The full URL requests go to.
    pub endpoint: String,
    /// Sent as `Authorization: Bearer`, when set.
    pub key: Option<ApiKey>,
    /// The `model` field.
    pub model: String,
    /// The longest the request may take.
    pub timeout: Duration,
}

/// A multipart body of text fields and one file, with its boundary.
pub(crate) fn multipart(fields: &[(&str, &str)], file: (&str, &str, &[u8])) -> (String, Vec<u8>) {
    let boundary = format!("souz-{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::with_capacity(file.2.len() + 1024);
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    let (name, file_name, bytes) = file;
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\nContent-Type: audio/wav\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (boundary, body)
}

/// Sends `request` within `timeout` and `cancel`, mapping transport failures.
pub(crate) async fn send(
    engine: &'static str,
    request: reqwest::RequestBuilder,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<reqwest::Response, SpeechError> {
    let sent = tokio::select! {
        () = cancel.cancelled() => return Err(SpeechError::Cancelled),
        sent = tokio::time::timeout(timeout, request.send()) => sent,
    };
    match sent {
        Err(_) => Err(SpeechError::TimedOut {
            engine,
            seconds: timeout.as_secs(),
        }),
        Ok(Err(error)) if error.is_timeout() => Err(SpeechError::TimedOut {
            engine,
            seconds: timeout.as_secs(),
        }),
        Ok(Err(error)) => Err(SpeechError::Unreachable {
            engine,
            detail: if error.is_connect() {
                "the connection was refused or failed".to_owned()
            } else {
                "the request failed".to_owned()
            },
        }),
        Ok(Ok(response)) => Ok(response),
    }
}

/// The body of a successful answer, or the error its status means.
pub(crate) async fn answer_body(
    engine: &'static str,
    response: reqwest::Response,
    secrets: &[String],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, SpeechError> {
    let status = response.status().as_u16();
    let retry_after = crate::llm::http::retry_after(response.headers(), SystemTime::now());
    let read = crate::llm::http::bounded::read_limited(response, MAX_ANSWER);
    let body = tokio::select! {
        () = cancel.cancelled() => return Err(SpeechError::Cancelled),
        body = tokio::time::timeout(timeout, read) => body,
    };
    let body = match body {
        Err(_) => {
            return Err(SpeechError::TimedOut {
                engine,
                seconds: timeout.as_secs(),
            });
        }
        Ok(Err(_)) => {
            return Err(SpeechError::Rejected {
                engine,
                status,
                message: "the answer could not be read".to_owned(),
            });
        }
        Ok(Ok(body)) => body,
    };
    match status {
        200..=299 => Ok(body),
        401 | 403 => Err(SpeechError::Unauthorized { engine, status }),
        429 => Err(SpeechError::RateLimited {
            engine,
            retry_after,
        }),
        _ => {
            let message = crate::llm::http::error_message(&String::from_utf8_lossy(&body));
            Err(SpeechError::Rejected {
                engine,
                status,
                message: crate::llm::http::scrub(&message, secrets)
                    .chars()
                    .take(300)
                    .collect(),
            })
        }
    }
}

#[async_trait::async_trait]
impl Transcriber for OpenAiCompatible {
    fn kind(&self) -> EngineKind {
        self.kind
    }

    fn model(&self) -> String {
        self.model.clone()
    }

    async fn transcribe(
        &self,
        audio: &Audio,
        language: &str,
        cancel: &CancellationToken,
    ) -> Result<String, SpeechError> {
        let engine = self.kind.name();
        let wav = audio.to_wav();
        let (boundary, body) = multipart(
            &[
                ("model", &self.model),
                ("language", language),
                ("response_format", "json"),
            ],
            ("file", "audio.wav", &wav),
        );
        let mut request = self
            .client
            .post(&self.endpoint)
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body);
        let mut secrets = Vec::new();
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
            secrets.push(key.expose().to_owned());
        }
        let response = send(engine, request, self.timeout, cancel).await?;
        let body = answer_body(engine, response, &secrets, self.timeout, cancel).await?;
        let answer: Answer = serde_json::from_slice(&body).map_err(|_| SpeechError::Rejected {
            engine,
            status: 200,
            message: "the answer has no `text`".to_owned(),
        })?;
        Ok(answer.text.trim().to_owned())
    }
}
