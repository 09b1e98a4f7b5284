//! Sber SaluteSpeech: the authorization key is exchanged for an access token
//! (`POST <auth_url>`, `Authorization: Basic <key>`, a fresh `RqUID`, form body
//! `scope=SALUTE_SPEECH_PERS`; answer `{"access_token", "expires_at"}` in milliseconds), cached
//! until a minute before it expires, then synchronous recognition:
//! `POST <url>/speech:recognize?language=ru-RU` with `Authorization: Bearer <token>` and
//! `Content-Type: audio/x-pcm;bit=16;rate=16000`, answered with
//! `{"result": ["..."], "emotions": [...], "status": 200}`.
//!
//! Invariants: synchronous recognition takes at most a minute of audio, so longer audio is sent
//! in pieces of at most [`PIECE`] one after another; a 401 from recognition drops the cached
//! token and tries once more with a fresh one; tokens are cached by a SHA-256 of the key.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::openai::{answer_body, send};
use super::{Audio, EngineKind, SAMPLE_RATE, SpeechError, Transcriber};
use crate::llm::keys::ApiKey;

const ENGINE: &str = "salute";
/// Tokens this close to expiry are exchanged again.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// The longest piece of audio one recognition request carries.
pub(crate) const PIECE: Duration = Duration::from_secs(55);

#[derive(Debug, Clone)]
struct Token {
    access: ApiKey,
    expires_at: SystemTime,
}

/// The token cache, shared by every SaluteSpeech engine of the process.
#[derive(Debug, Default, Clone)]
pub(crate) struct SaluteTokens {
    cache: Arc<tokio::sync::Mutex<HashMap<[u8; 32], Token>>>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_at: Option<u64>,
}

#[derive(Deserialize)]
struct Recognition {
    #[serde(default)]
    result: Vec<String>,
}

/// SaluteSpeech for one authorization key.
#[derive(Debug, Clone)]
pub(crate) struct Salute {
    /// The HTTP client.
    pub client: reqwest::Client,
    /// The OAuth endpoint.
    pub auth_url: String,
    /// The recognition API's base (`https://smartspeech.sber.ru/rest/v1`).
    pub url: String,
    /// The OAuth scope.
    pub scope: String,
    /// The authorization key.
    pub key: ApiKey,
    /// The longest one request may take.
    pub timeout: Duration,
    /// The shared token cache.
    pub tokens: SaluteTokens,
}

/// SaluteSpeech's name for a language code.
fn locale(language: &str) -> Option<&'static str> {
    match language {
        "ru" => Some("ru-RU"),
        "en" => Some("en-US"),
        "kk" => Some("kk-KZ"),
        _ => None,
    }
}

impl Salute {
    fn cache_key(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(self.scope.as_bytes());
        hasher.update([0]);
        hasher.update(self.key.expose().as_bytes());
        hasher.finalize().into()
    }

    fn secrets(&self) -> Vec<String> {
        vec![self.key.expose().to_owned()]
    }

    async fn token(&self, cancel: &CancellationToken) -> Result<ApiKey, SpeechError> {
        let mut cache = self.tokens.cache.lock().await;
        if let Some(token) = cache.get(&self.cache_key())
            && token.expires_at > SystemTime::now() + REFRESH_MARGIN
        {
            return Ok(token.access.clone());
        }
        let request = crate::llm::gigachat::sber_token_request(
            &self.client,
            &self.auth_url,
            &self.key,
            &self.scope,
        );
        let response = send(ENGINE, request, self.timeout, cancel).await?;
        let body = answer_body(ENGINE, response, &self.secrets(), self.timeout, cancel).await?;
        let answer: TokenAnswer =
            serde_json::from_slice(&body).map_err(|_| SpeechError::Rejected {
                engine: ENGINE,
                status: 200,
                message: "the token answer is not what SaluteSpeech sends".to_owned(),
            })?;
        let expires_at = crate::llm::gigachat::sber_token_expiry(answer.expires_at, None);
        let token = Token {
            access: ApiKey::new(answer.access_token),
            expires_at,
        };
        crate::redact::register_secret(token.access.expose());
        cache.insert(self.cache_key(), token.clone());
        Ok(token.access)
    }

    /// Exchanges the key for a token (a key check that sends no audio).
    pub(crate) async fn check(&self, cancel: &CancellationToken) -> Result<(), SpeechError> {
        self.token(cancel).await.map(|_| ())
    }

    async fn recognize(
        &self,
        pcm: Vec<u8>,
        language: &'static str,
        cancel: &CancellationToken,
    ) -> Result<String, SpeechError> {
        let mut retried = false;
        loop {
            let token = self.token(cancel).await?;
            let url = format!(
                "{}/speech:recognize?language={language}",
                self.url.trim_end_matches('/')
            );
            let request = self
                .client
                .post(url)
                .bearer_auth(token.expose())
                .header(
                    reqwest::header::CONTENT_TYPE,
                    format!("audio/x-pcm;bit=16;rate={SAMPLE_RATE}"),
                )
                .header(reqwest::header::ACCEPT, "application/json")
                .body(pcm.clone());
            let response = send(ENGINE, request, self.timeout, cancel).await?;
            let mut secrets = self.secrets();
            secrets.push(token.expose().to_owned());
            match answer_body(ENGINE, response, &secrets, self.timeout, cancel).await {
                Err(SpeechError::Unauthorized { .. }) if !retried => {
                    // The token may have been revoked before its time: a fresh one, once.
                    self.tokens.cache.lock().await.remove(&self.cache_key());
                    retried = true;
                }
                Err(error) => return Err(error),
                Ok(body) => {
                    let answer: Recognition =
                        serde_json::from_slice(&body).map_err(|_| SpeechError::Rejected {
                            engine: ENGINE,
                            status: 200,
                            message: "the answer is not what SaluteSpeech sends".to_owned(),
                        })?;
                    return Ok(answer.result.join(" ").trim().to_owned());
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl Transcriber for Salute {
    fn kind(&self) -> EngineKind {
        EngineKind::Salute
    }

    fn model(&self) -> String {
        "general".to_owned()
    }

    async fn transcribe(
        &self,
        audio: &Audio,
        language: &str,
        cancel: &CancellationToken,
    ) -> Result<String, SpeechError> {
        let Some(language) = locale(language) else {
            return Err(SpeechError::UnsupportedLanguage {
                engine: ENGINE,
                language: language.to_owned(),
            });
        };
        let piece = (PIECE.as_secs() as usize) * SAMPLE_RATE as usize;
        let mut text = String::new();
        for samples in audio.samples().chunks(piece.max(1)) {
            let pcm = Audio::new(samples.to_vec()).to_pcm16();
            let heard = self.recognize(pcm, language, cancel).await?;
            if !heard.is_empty() {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(&heard);
            }
        }
        Ok(text)
    }
}
