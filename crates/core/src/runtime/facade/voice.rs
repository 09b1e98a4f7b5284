//! Spoken answers and push-to-talk for the adapters: the `[voice]` settings the chat page
//! follows (`GET /v1/voice`) and reading a text aloud (`POST /v1/speech/synthesis`).
//!
//! Invariants: the voice acts for the caller (their stored keys, never the operator's for a
//! proxied user); the text is bounded before any voice sees it; the language defaults to the
//! caller's interface language.

use souz_protocol::ErrorCode;
use souz_protocol::voice::{SpeechSynthesis, VoiceSettings};
use tokio_util::sync::CancellationToken;

use super::{ChatUser, ServiceError};
use crate::runtime::RuntimeHandle;
use crate::voice::{self, SpeechRequest, SpokenAudio, VoiceError};

impl From<VoiceError> for ServiceError {
    fn from(error: VoiceError) -> Self {
        let message = error.to_string();
        match error {
            VoiceError::Empty => Self::Invalid(message),
            VoiceError::Cancelled => Self::Unavailable,
            // Off, not installed, no key, refused, busy, unreachable, broken: the message says
            // which voice and what to do, and holds no secret.
            _ => Self::Conflict {
                code: ErrorCode::Conflict,
                message,
            },
        }
    }
}

impl RuntimeHandle {
    /// The `[voice]` settings as the chat page uses them, with whether the voice can speak
    /// for `user` now.
    pub async fn voice_settings(&self, user: &ChatUser) -> VoiceSettings {
        let config = &self.config().voice;
        let mut settings = VoiceSettings {
            send_at_once: config.send_at_once,
            hotkey: config.hotkey.trim().to_owned(),
            tts: config.tts.trim().to_owned(),
            tts_label: String::new(),
            tts_cloud: false,
            tts_ready: false,
            tts_problem: None,
        };
        match voice::speaker_for(
            config,
            &self.llm().for_user(&user.0),
            &self.gate().sandbox(),
        )
        .await
        {
            Ok(speaker) => {
                settings.tts_label = speaker.label();
                settings.tts_cloud = speaker.cloud();
                settings.tts_ready = true;
            }
            Err(VoiceError::Off) => {}
            Err(error) => settings.tts_problem = Some(error.to_string()),
        }
        settings
    }

    /// `request.text` read aloud by the `[voice] tts` voice, for `user`.
    pub async fn synthesize_speech(
        &self,
        user: &ChatUser,
        request: SpeechSynthesis,
    ) -> Result<SpokenAudio, ServiceError> {
        let config = &self.config().voice;
        let text = voice::prepare_text(&request.text, config.tts_max_chars)?;
        let interface = self.settings(user).await?.interface_language;
        let language = voice::spoken_language(request.language.as_deref(), &interface);
        let speaker = voice::speaker_for(
            config,
            &self.llm().for_user(&user.0),
            &self.gate().sandbox(),
        )
        .await?;
        // The request's end (a closed page) drops this future, which stops the voice: the
        // provider call is dropped and the voice program is killed with its group.
        let cancel = CancellationToken::new();
        let spoken = speaker
            .speak(&SpeechRequest { text, language }, &cancel)
            .await?;
        Ok(spoken)
    }
}
