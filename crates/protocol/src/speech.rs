//! `/v1/speech`: speech to text. Which engine hears the person and the in-process models with
//! their state (`GET /v1/speech`), one transcription (`POST /v1/speech/transcriptions`,
//! multipart audio in, text out), and fetching or removing an in-process model's files
//! (`POST /v1/speech/models/{id}/pull`, `DELETE /v1/speech/models/{id}`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::LocalModelState;

/// How long each stage of one transcription took, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechTimings {
    /// Reading the upload's container and codec into 16 kHz mono samples.
    pub decode_ms: u64,
    /// The engine's own time (in process, or the round trip to a server).
    pub transcribe_ms: u64,
    /// The whole request inside the daemon.
    pub total_ms: u64,
}

/// `POST /v1/speech/transcriptions`: what was heard, and by whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechTranscription {
    /// The text (blank when nothing was said).
    pub text: String,
    /// The engine: `local`, `openai`, `ai_tunnel`, `salute` or `server`.
    pub engine: String,
    /// The engine's name for people (`Whisper tiny (on this computer)`).
    pub engine_label: String,
    /// Whether the audio left this machine (a cloud engine).
    pub cloud: bool,
    /// The language the engine was told (`ru`, `en`, ...).
    pub language: String,
    /// The length of the audio, in milliseconds.
    pub audio_ms: u64,
    /// Where the time went.
    pub timings: SpeechTimings,
}

/// `GET /v1/speech`: which engine hears the person, and whether it can now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechStatus {
    /// The engine `[speech] engine` names.
    pub engine: String,
    /// Its name for people.
    pub engine_label: String,
    /// Whether audio leaves this machine with it.
    pub cloud: bool,
    /// The model it uses (a catalog id for `local`, the server's model name otherwise).
    pub model: String,
    /// Whether a transcription can run now (the model file is there, the key is set, the
    /// server is known).
    pub ready: bool,
    /// Why it is not ready, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The languages it can be told (`ru`, `en`, ...).
    pub languages: Vec<String>,
    /// The language used when a request names none.
    pub default_language: String,
    /// The largest upload accepted, in bytes.
    pub max_upload_bytes: u64,
    /// The longest audio accepted, in milliseconds.
    pub max_audio_ms: u64,
    /// The in-process Whisper models Souz knows (`[speech] local_model` picks one), each with
    /// its state.
    #[serde(default)]
    pub models: Vec<SpeechModelInfo>,
}

/// One in-process speech model and where its files stand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechModelInfo {
    /// Its id (`whisper-base`), as `[speech] local_model` names it.
    pub id: String,
    /// Its name for people.
    pub label: String,
    /// The languages it hears (codes).
    pub languages: Vec<String>,
    /// About how many bytes its files take.
    pub bytes: u64,
    /// Where its files (`config.json`, `tokenizer.json`, `model.safetensors`) are, or belong.
    pub path: String,
    /// Whether `[speech] local_model` names it.
    pub selected: bool,
    /// Whether Souz can fetch its files (pinned to a commit on the model hub); the test model
    /// is placed by hand.
    pub pullable: bool,
    /// Where a pull fetches it from, when it can: the repository's files at the pinned commit
    /// on the model hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A small model for tests.
    pub test_model: bool,
    /// On disk (all its files), loaded, being fetched, or missing.
    #[serde(flatten)]
    pub state: LocalModelState,
}
