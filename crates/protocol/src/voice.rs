//! Push-to-talk and spoken answers on the wire: the `[voice]` settings the chat page follows
//! (`GET /v1/voice`) and the text it asks to hear (`POST /v1/speech/synthesis`, answered by
//! the audio bytes).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/speech/synthesis`: text to read aloud with the `[voice] tts` voice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechSynthesis {
    /// The text (Markdown marks are dropped; cut at a sentence end past
    /// `[voice] tts_max_chars`).
    pub text: String,
    /// Its language (`ru`, `en`, ...); absent: the interface language.
    #[serde(default)]
    pub language: Option<String>,
}

/// `GET /v1/voice`: what the chat page does with what you say and who reads answers aloud.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoiceSettings {
    /// `[voice] send_at_once`: a transcript is sent at once instead of put in the box for
    /// review.
    pub send_at_once: bool,
    /// `[voice] hotkey`: the app's global shortcut that starts and stops listening.
    pub hotkey: String,
    /// `[voice] tts`: `off`, `os`, `openai`, `ai_tunnel` or `server`.
    pub tts: String,
    /// The voice as a person reads it ("espeak-ng", "OpenAI (alloy)"); empty when off.
    pub tts_label: String,
    /// Whether the answers' text leaves this machine to be read aloud.
    pub tts_cloud: bool,
    /// Whether the voice can speak now (installed, key stored).
    pub tts_ready: bool,
    /// Why it cannot, when it cannot (and is not off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts_problem: Option<String>,
}
