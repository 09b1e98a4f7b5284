//! `[voice]`: push-to-talk in the chat page and the app, and spoken answers (text to speech).
//!
//! Invariants: what is heard is turned into text by `[speech]`; this section only says what
//! the page does with the text, which key starts listening, and which voice reads answers.
//! Spoken answers are off unless both `tts` names a voice and a chat turns them on.

use super::section::{Invalid, config_section};

/// The text-to-speech choices, by the name `tts` uses.
pub(crate) const TTS_ENGINES: &[&str] = &["off", "os", "openai", "ai_tunnel", "server"];

/// Longest hotkey accepted (a few modifiers and a key).
const MAX_HOTKEY_CHARS: usize = 64;

config_section! {
    /// Push-to-talk and spoken answers. The mic button in the chat (and the app's hotkey)
    /// records what you say; `[speech]` turns it into text. A chat with spoken answers on reads
    /// the agent's answers aloud with the voice chosen here.
    #[section = "voice"]
    pub struct VoiceConfig {
        /// Send what you said at once (on: like pressing Send). Off: the text goes into the
        /// message box so you can review it before sending.
        pub send_at_once: bool = false,
        /// The app's global shortcut that starts and stops listening, even with the window
        /// closed (Tauri's names: `CmdOrCtrl+Shift+Space`, `Alt+F9`, ...; empty: none).
        pub hotkey: String = "CmdOrCtrl+Shift+Space".to_owned(),
        /// Who reads answers aloud: `off`, `os` (this machine's voice: espeak-ng on Linux,
        /// the system voice on macOS; nothing leaves the machine), `openai` or `ai_tunnel`
        /// (their speech API with the stored key: the answer's text is sent to them), or
        /// `server` (an OpenAI-compatible `/v1/audio/speech` server at `tts_url`).
        pub tts: String = "off".to_owned(),
        /// The voice: for `openai`/`ai_tunnel`/`server` the API's voice name (`alloy`, ...),
        /// for `os` an espeak-ng or macOS voice name (empty: the one for the language).
        pub tts_voice: String = String::new(),
        /// The model of the speech API (`openai`, `ai_tunnel`, `server`).
        pub tts_model: String = "gpt-4o-mini-tts".to_owned(),
        /// The base URL of the `server` voice (`http://127.0.0.1:8880/v1`); its
        /// `/audio/speech` is called.
        pub tts_url: String = String::new(),
        /// Longest text read aloud at once, in characters (longer answers are cut at a
        /// sentence end before it).
        pub tts_max_chars: usize = 4000,
    }
}

impl VoiceConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        let tts = self.tts.trim();
        if !TTS_ENGINES.contains(&tts) {
            problems.push(Invalid::new(
                "tts",
                format!("must be one of {}", TTS_ENGINES.join(", ")),
            ));
        }
        let url = self.tts_url.trim();
        if !(url.is_empty() || url.starts_with("http://") || url.starts_with("https://")) {
            problems.push(Invalid::new(
                "tts_url",
                "must be an http:// or https:// URL",
            ));
        }
        if tts == "server" && url.is_empty() {
            problems.push(Invalid::new("tts_url", "must be set when tts is server"));
        }
        if let Err(message) = check_hotkey(&self.hotkey) {
            problems.push(Invalid::new("hotkey", message));
        }
        if !(1..=20_000).contains(&self.tts_max_chars) {
            problems.push(Invalid::new("tts_max_chars", "must be between 1 and 20000"));
        }
        if self.tts_voice.chars().count() > 64
            || self
                .tts_voice
                .chars()
                .any(|c| !(c.is_alphanumeric() || "-_+. ".contains(c)))
        {
            problems.push(Invalid::new(
                "tts_voice",
                "must be a voice name: letters, digits, `-`, `_`, `+`, `.` (at most 64)",
            ));
        }
        problems
    }
}

/// Whether `hotkey` reads as a shortcut: `+`-separated parts, the last one a key, the others
/// modifiers. The app's plugin is the final judge; this catches typos at `souz config check`.
pub fn check_hotkey(hotkey: &str) -> Result<(), String> {
    let hotkey = hotkey.trim();
    if hotkey.is_empty() {
        return Ok(());
    }
    if hotkey.chars().count() > MAX_HOTKEY_CHARS {
        return Err(format!("must be at most {MAX_HOTKEY_CHARS} characters"));
    }
    const MODIFIERS: &[&str] = &[
        "cmdorctrl",
        "commandorcontrol",
        "cmd",
        "command",
        "super",
        "meta",
        "ctrl",
        "control",
        "alt",
        "option",
        "shift",
    ];
    let parts: Vec<&str> = hotkey.split('+').map(str::trim).collect();
    let (key, modifiers) = match parts.split_last() {
        Some((key, modifiers)) if !key.is_empty() => (*key, modifiers),
        _ => return Err("must end with a key, e.g. CmdOrCtrl+Shift+Space".to_owned()),
    };
    if let Some(unknown) = modifiers
        .iter()
        .find(|part| !MODIFIERS.contains(&part.to_ascii_lowercase().as_str()))
    {
        return Err(format!(
            "`{unknown}` is not a modifier (CmdOrCtrl, Ctrl, Alt, Shift, Super)"
        ));
    }
    if !key.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("`{key}` is not a key name (Space, A, F9, ...)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Section;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(VoiceConfig::default().validate().is_empty());
        let config = VoiceConfig {
            tts: "espeak".into(),
            tts_url: "ftp://example.com".into(),
            hotkey: "Hyper+Space".into(),
            tts_max_chars: 0,
            tts_voice: "en; rm -rf".into(),
            ..VoiceConfig::default()
        };
        let problems = format!("{:?}", config.validate());
        for key in ["\"tts\"", "tts_url", "hotkey", "tts_max_chars", "tts_voice"] {
            assert!(problems.contains(key), "{key} not in {problems}");
        }
        let server = VoiceConfig {
            tts: "server".into(),
            ..VoiceConfig::default()
        };
        assert!(format!("{:?}", server.validate()).contains("must be set when tts is server"));
    }

    #[test]
    fn hotkeys_are_read_like_the_app_reads_them() {
        for good in ["CmdOrCtrl+Shift+Space", "Alt+F9", "ctrl + alt + K", ""] {
            assert_eq!(check_hotkey(good), Ok(()), "{good}");
        }
        for bad in ["Shift+", "Hyper+K", "Ctrl+Space Bar", "+"] {
            assert!(check_hotkey(bad).is_err(), "{bad}");
        }
    }
}
