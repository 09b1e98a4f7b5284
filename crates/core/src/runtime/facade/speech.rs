//! Speech to text for the adapters (`/v1/speech`, `souz listen`): one transcription, and which
//! engine hears the person (with the in-process models' states, [`super::speech_models`]). Each [`SpeechError`] becomes a [`ServiceError`] here, said in the
//! person's interface language, and nowhere else.

use souz_protocol::language::Language;
use souz_protocol::{ErrorCode, SpeechStatus, SpeechTimings, SpeechTranscription};
use tokio_util::sync::CancellationToken;

use super::{ServiceError, UpstreamFailure};
use crate::chat::ChatUser;
use crate::runtime::RuntimeHandle;
use crate::speech::service::Person;
use crate::speech::{EngineKind, MAX_AUDIO, MAX_UPLOAD_BYTES, SpeechError};

pub(crate) use crate::speech::TranscriptionRequest;

/// The largest audio file a transcription takes, in bytes.
pub(crate) const MAX_SPEECH_UPLOAD: usize = MAX_UPLOAD_BYTES;

/// `error` as the client sees it, in `language`.
fn service_error(error: SpeechError, language: Language) -> ServiceError {
    let message = error.say(language);
    match error {
        SpeechError::Empty
        | SpeechError::TooLong { .. }
        | SpeechError::Unsupported(_)
        | SpeechError::Malformed(_)
        | SpeechError::UnknownEngine(_)
        | SpeechError::BadLanguage(_)
        | SpeechError::UnsupportedLanguage { .. } => ServiceError::Invalid(message),
        SpeechError::TooLarge { .. } => ServiceError::Conflict {
            code: ErrorCode::PayloadTooLarge,
            message,
        },
        SpeechError::MissingKey { .. }
        | SpeechError::NoServer
        | SpeechError::ModelMissing { .. }
        | SpeechError::ModelBroken(_)
        | SpeechError::UnknownModel(_) => ServiceError::Conflict {
            code: ErrorCode::Conflict,
            message,
        },
        SpeechError::Unauthorized { .. } => ServiceError::Upstream {
            failure: UpstreamFailure::Refused,
            message,
        },
        SpeechError::RateLimited { retry_after, .. } => ServiceError::Upstream {
            failure: UpstreamFailure::RateLimited(retry_after.map(|after| after.as_secs().max(1))),
            message,
        },
        SpeechError::TimedOut { .. } => ServiceError::Upstream {
            failure: UpstreamFailure::TimedOut,
            message,
        },
        SpeechError::Unreachable { .. } | SpeechError::Rejected { .. } => ServiceError::Upstream {
            failure: UpstreamFailure::Failed,
            message,
        },
        SpeechError::Cancelled => ServiceError::Unavailable,
        SpeechError::Internal(detail) => ServiceError::Internal(format!("speech: {detail}")),
    }
}

impl RuntimeHandle {
    /// The interface language of `user`.
    pub(super) async fn interface_language(&self, user: &ChatUser) -> Language {
        match self.settings(user).await {
            Ok(settings) => Language::from_code(&settings.interface_language).unwrap_or_default(),
            Err(_) => Language::default(),
        }
    }

    /// Transcribes an upload for `user`; stops when `cancel` fires (the client went away).
    pub async fn transcribe(
        &self,
        user: &ChatUser,
        request: TranscriptionRequest,
        cancel: &CancellationToken,
    ) -> Result<SpeechTranscription, ServiceError> {
        let started = std::time::Instant::now();
        let language = self.interface_language(user).await;
        let llm = self.llm().for_user(&user.0);
        let cancel = cancel.child_token();
        let stopping = self.shutdown_signal();
        let heard = tokio::select! {
            heard = self.speech().transcribe(
                self.config(),
                Person { llm: &llm, language },
                request,
                &cancel,
            ) => heard,
            () = stopping.cancelled() => Err(SpeechError::Cancelled),
        };
        let heard = match heard {
            Ok(heard) => heard,
            Err(error) => {
                tracing::info!(%error, "a transcription failed");
                return Err(service_error(error, language));
            }
        };
        tracing::info!(
            engine = heard.engine.name(),
            audio_ms = heard.audio_ms,
            decode_ms = heard.decode_ms,
            transcribe_ms = heard.transcribe_ms,
            "transcribed"
        );
        Ok(SpeechTranscription {
            text: heard.text,
            engine: heard.engine.name().to_owned(),
            engine_label: heard.engine.label(language),
            cloud: heard.cloud,
            language: heard.language,
            audio_ms: heard.audio_ms,
            timings: SpeechTimings {
                decode_ms: heard.decode_ms,
                transcribe_ms: heard.transcribe_ms,
                total_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            },
        })
    }

    /// Which engine hears `user`, and whether it can now.
    pub async fn speech_status(&self, user: &ChatUser) -> SpeechStatus {
        let language = self.interface_language(user).await;
        let llm = self.llm().for_user(&user.0);
        let status = self.speech().status(self.config(), &llm).await;
        let default_language =
            crate::speech::SpeechService::language(self.config(), None, language)
                .unwrap_or_else(|_| language.code().to_owned());
        SpeechStatus {
            engine: status.engine.name().to_owned(),
            engine_label: status.engine.label(language),
            cloud: status.cloud,
            model: status.model,
            ready: status.not_ready.is_none(),
            reason: status.not_ready.map(|error| error.say(language)),
            languages: status.languages,
            default_language,
            max_upload_bytes: MAX_UPLOAD_BYTES as u64,
            max_audio_ms: MAX_AUDIO.as_millis() as u64,
            models: self.speech_models(),
        }
    }

    /// The engines there are, by name (for the CLI's help).
    pub fn speech_engines(&self) -> Vec<&'static str> {
        EngineKind::ALL.iter().map(|kind| kind.name()).collect()
    }
}
