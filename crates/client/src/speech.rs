//! Speech to text: `POST /v1/speech/transcriptions` (a recording in, text out) and `GET
//! /v1/speech` (which engine hears the person).

use souz_protocol::{SpeechStatus, SpeechTranscription};

use crate::{ClientError, DaemonClient};

impl DaemonClient {
    /// Transcribes `audio` (WAV, OGG/Opus or WebM/Opus), in `language` and with `engine` when
    /// given (else the daemon's `[speech]` choices).
    pub async fn transcribe(
        &self,
        audio: &[u8],
        language: Option<&str>,
        engine: Option<&str>,
    ) -> Result<SpeechTranscription, ClientError> {
        let boundary = format!("souz-listen-{:016x}", rand_part(audio));
        let mut body = Vec::with_capacity(audio.len() + 512);
        for (name, value) in [("language", language), ("engine", engine)] {
            if let Some(value) = value {
                body.extend_from_slice(
                    format!(
                        "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                    )
                    .as_bytes(),
                );
            }
        }
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"audio\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(audio);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        self.post_multipart("/v1/speech/transcriptions", &boundary, body)
            .await
    }

    /// Which engine hears the person, and whether it can now.
    pub async fn speech_status(&self) -> Result<SpeechStatus, ClientError> {
        self.get("/v1/speech").await
    }
}

/// A boundary part that does not occur in `audio`: a hash of the audio and the clock.
fn rand_part(audio: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    audio.len().hash(&mut hasher);
    audio
        .iter()
        .take(4096)
        .collect::<Vec<_>>()
        .hash(&mut hasher);
    std::time::SystemTime::now().hash(&mut hasher);
    hasher.finish()
}
