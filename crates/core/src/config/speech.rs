//! `[speech]`: which engine turns the person's voice into text, in which language, and
//! whether the audio is kept.
//!
//! Invariant: the default engine is `local` (Whisper in the daemon), so audio never leaves the
//! machine unless the person chooses a cloud engine here.

use super::section::{Invalid, config_section};

/// The engines, by the name `engine` uses.
pub(crate) const SPEECH_ENGINES: &[&str] = &["local", "openai", "ai_tunnel", "salute", "server"];

config_section! {
    /// Speech to text (the mic button, `souz listen`, `POST /v1/speech/transcriptions`): which
    /// engine hears you. `local` runs Whisper inside Souz and the audio never leaves this
    /// computer; `openai`, `ai_tunnel` and `salute` send it to that company's servers;
    /// `server` sends it to the transcription server you name (or one found on this computer).
    #[section = "speech"]
    pub struct SpeechConfig {
        /// The engine: `local` (Whisper in Souz, the default), `openai` (OpenAI's
        /// transcription API, the `openai` provider key), `ai_tunnel` (AiTunnel, its key),
        /// `salute` (Sber SaluteSpeech, the `salute_speech` service key) or `server` (an
        /// OpenAI-compatible transcription server, `server_url`).
        pub engine: String = "local".to_owned(),
        /// The language you speak, as a code (`ru`, `en`, ...). Empty: the interface language.
        pub language: String = String::new(),
        /// The Whisper model `local` uses: `whisper-base`, `whisper-tiny` (multilingual) or
        /// `whisper-tiny-en` (English only); its files (`config.json`, `tokenizer.json`,
        /// `model.safetensors`) belong in `<SOUZ_HOME>/models/speech/<id>/`. Settings › Voice
        /// or `souz models pull <id>` downloads `whisper-base` and `whisper-tiny` from the model
        /// hub (`[llm] local_model_hub`), pinned and verified; `whisper-tiny-en` is the tests'
        /// model, placed by hand.
        pub local_model: String = "whisper-base".to_owned(),
        /// Minutes the local model stays loaded after its last use.
        pub local_idle_minutes: u64 = 5,
        /// The OpenAI-compatible server (`http://host:port/v1`) `server` sends audio to.
        /// Empty: a whisper.cpp server found on this computer (127.0.0.1:8080).
        pub server_url: String = String::new(),
        /// The model name sent to OpenAI, AiTunnel or the server.
        pub cloud_model: String = "whisper-1".to_owned(),
        /// SaluteSpeech's OAuth endpoint.
        pub salute_auth_url: String = "https://ngw.devices.sberbank.ru:9443/api/v2/oauth".to_owned(),
        /// SaluteSpeech's recognition API.
        pub salute_url: String = "https://smartspeech.sber.ru/rest/v1".to_owned(),
        /// SaluteSpeech OAuth scope: SALUTE_SPEECH_PERS, SALUTE_SPEECH_CORP or SALUTE_SPEECH_B2B.
        pub salute_scope: String = "SALUTE_SPEECH_PERS".to_owned(),
        /// Seconds a cloud engine or server may take to answer.
        pub timeout_seconds: u64 = 60,
        /// Keep each recording after it was transcribed (in `<SOUZ_HOME>/speech/`). Off: the
        /// audio is dropped as soon as the text is there.
        pub keep_audio: bool = false,
    }
}

impl SpeechConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if !SPEECH_ENGINES.contains(&self.engine.trim()) {
            problems.push(Invalid::new(
                "engine",
                format!("must be one of {}", SPEECH_ENGINES.join(", ")),
            ));
        }
        let language = self.language.trim();
        let code = language.len() >= 2
            && language.len() <= 3
            && language.bytes().all(|b| b.is_ascii_lowercase());
        if !(language.is_empty() || code) {
            problems.push(Invalid::new(
                "language",
                "must be empty or a two- or three-letter lowercase language code (ru, en)",
            ));
        }
        if self.local_model.trim().is_empty() {
            problems.push(Invalid::new(
                "local_model",
                "must name a model (whisper-base)",
            ));
        }
        for (key, url) in [
            ("server_url", &self.server_url),
            ("salute_auth_url", &self.salute_auth_url),
            ("salute_url", &self.salute_url),
        ] {
            let url = url.trim();
            if !(url.is_empty() || url.starts_with("http://") || url.starts_with("https://")) {
                problems.push(Invalid::new(key, "must be an http:// or https:// URL"));
            }
        }
        if !(1..=600).contains(&self.timeout_seconds) {
            problems.push(Invalid::new("timeout_seconds", "must be between 1 and 600"));
        }
        if self.local_idle_minutes == 0 || self.local_idle_minutes > 24 * 60 {
            problems.push(Invalid::new(
                "local_idle_minutes",
                "must be between 1 and 1440 minutes",
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Section;

    #[test]
    fn defaults_are_local_and_valid_and_bad_values_are_named() {
        let defaults = SpeechConfig::default();
        assert_eq!(defaults.engine, "local");
        assert!(!defaults.keep_audio);
        assert!(defaults.validate().is_empty());
        let config = SpeechConfig {
            engine: "google".into(),
            language: "Russian".into(),
            server_url: "ftp://x".into(),
            timeout_seconds: 0,
            ..SpeechConfig::default()
        };
        let problems = format!("{:?}", config.validate());
        for key in ["engine", "language", "server_url", "timeout_seconds"] {
            assert!(problems.contains(key), "{key} not in {problems}");
        }
    }
}
