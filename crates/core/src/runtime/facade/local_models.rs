//! The in-process local models for the adapters (`/v1/models/local`, `souz models`): the
//! profiles with their state, fetching a pinned profile's file, removing one.
//!
//! Invariants: a fetch goes through the memory model's downloader (SSRF-safe web client,
//! resumed from a `.part` file, SHA-256-checked before the file takes its name), one at a time
//! per profile; a profile without a pinned checksum is never fetched; removing a model unloads
//! it first and refuses while it is in use.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use souz_protocol::{ErrorCode, LocalModelInfo, LocalModelList, LocalModelState};
use tokio_util::sync::CancellationToken;

use super::ServiceError;
use crate::llm::local::profiles::{self, LocalProfile, ProfileKind};
use crate::memory::download::{DownloadError, ModelFile, Source, fetch_file_from};
use crate::runtime::RuntimeHandle;
use crate::sandbox::net::{SystemLookup, WebClient, WebOptions};

/// A whole model file may take this long.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(12 * 3600);

/// Downloads running now: profile → (bytes so far, bytes in all).
static DOWNLOADS: LazyLock<Mutex<HashMap<&'static str, (u64, u64)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn downloads() -> std::sync::MutexGuard<'static, HashMap<&'static str, (u64, u64)>> {
    DOWNLOADS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unknown(error: crate::llm::local::LocalError) -> ServiceError {
    ServiceError::NotFound {
        code: ErrorCode::NotFound,
        message: error.to_string(),
    }
}

impl RuntimeHandle {
    /// Every local model profile with its state, the engine, and the daemon's memory.
    pub async fn local_models(&self) -> LocalModelList {
        let mut items = Vec::with_capacity(profiles::PROFILES.len());
        for profile in profiles::PROFILES {
            items.push(self.local_model_info(profile).await);
        }
        LocalModelList {
            engine: self
                .llm()
                .local_models()
                .map(|models| models.engine().to_owned()),
            items,
            rss_bytes: profiles::resident_memory(),
        }
    }

    fn models_dir(&self) -> std::path::PathBuf {
        self.config().paths.home().join("models")
    }

    fn mirror_url(&self, profile: &LocalProfile) -> Option<String> {
        let mirror = self
            .config()
            .llm
            .local_model_mirror
            .trim()
            .trim_end_matches('/');
        if mirror.is_empty() {
            return profile.url.map(str::to_owned);
        }
        Some(format!("{mirror}/{}/{}", profile.name, profile.file))
    }

    async fn local_model_info(&self, profile: &'static LocalProfile) -> LocalModelInfo {
        let path = profile.path(&self.models_dir());
        let loaded = self.llm().local_models().is_some_and(|models| {
            models
                .loaded_names()
                .iter()
                .any(|name| name == profile.name)
        });
        let downloading = downloads().get(profile.name).copied();
        let state = match downloading {
            Some((received, total)) => LocalModelState::Downloading { received, total },
            None if loaded => LocalModelState::Loaded,
            None if tokio::fs::try_exists(&path).await.unwrap_or(false) => LocalModelState::Ready,
            None => LocalModelState::Missing,
        };
        LocalModelInfo {
            name: profile.name.to_owned(),
            kind: match profile.kind {
                ProfileKind::Chat => "chat",
                ProfileKind::Embedding => "embedding",
            }
            .to_owned(),
            file: profile.file.to_owned(),
            path: path.display().to_string(),
            bytes: profile.bytes,
            context_tokens: profile.context,
            min_ram_gb: profile.min_ram_gb,
            pullable: profile.sha256.is_some() && self.mirror_url(profile).is_some(),
            test_model: profile.test_model,
            state,
        }
    }

    /// Fetches the file of the profile `name` (resumable, checksum-verified) and answers its
    /// state when done. Refused for a profile with no pinned checksum or no source.
    pub async fn pull_local_model(&self, name: &str) -> Result<LocalModelInfo, ServiceError> {
        let profile = profiles::find(name).map_err(unknown)?;
        let Some(sha256) = profile.sha256 else {
            return Err(ServiceError::Invalid(format!(
                "{} has no pinned checksum, so Souz does not download it; place {} at {}",
                profile.name,
                profile.file,
                profile.path(&self.models_dir()).display()
            )));
        };
        let Some(url) = self.mirror_url(profile) else {
            return Err(ServiceError::Invalid(format!(
                "{} has no download source; set [llm] local_model_mirror or place {} at {}",
                profile.name,
                profile.file,
                profile.path(&self.models_dir()).display()
            )));
        };
        if downloads()
            .insert(profile.name, (0, profile.bytes))
            .is_some()
        {
            return Err(ServiceError::Conflict {
                code: ErrorCode::Conflict,
                message: format!("{} is being downloaded already", profile.name),
            });
        }
        let outcome = self.fetch(profile, sha256, &url).await;
        downloads().remove(profile.name);
        outcome?;
        tracing::info!(profile = profile.name, "local model downloaded");
        Ok(self.local_model_info(profile).await)
    }

    async fn fetch(
        &self,
        profile: &'static LocalProfile,
        sha256: &'static str,
        url: &str,
    ) -> Result<(), ServiceError> {
        let client = WebClient::with_options(
            &self.config().sandbox.network_allow_hosts,
            WebOptions {
                request_timeout: DOWNLOAD_TIMEOUT,
                ..WebOptions::default()
            },
            Arc::new(SystemLookup),
        )
        .map_err(|error| ServiceError::Internal(error.to_string()))?;
        let file = ModelFile {
            name: profile.file,
            url: profile.url.unwrap_or_default(),
            sha256,
            bytes: profile.bytes,
        };
        let name = profile.name;
        let progress = move |_: &ModelFile, received: u64| {
            if let Some(entry) = downloads().get_mut(name) {
                entry.0 = received;
            }
        };
        fetch_file_from(
            &client,
            &profile.dir(&self.models_dir()),
            Source { file: &file, url },
            &progress,
            &CancellationToken::new(),
        )
        .await
        .map_err(|error| match error {
            DownloadError::Busy => ServiceError::Conflict {
                code: ErrorCode::Conflict,
                message: error.to_string(),
            },
            other => ServiceError::Invalid(format!("{name}: {other}")),
        })
    }

    /// Unloads and deletes the file of the profile `name` (also a partial download).
    pub async fn remove_local_model(&self, name: &str) -> Result<LocalModelInfo, ServiceError> {
        let profile = profiles::find(name).map_err(unknown)?;
        if downloads().contains_key(profile.name) {
            return Err(ServiceError::Conflict {
                code: ErrorCode::Conflict,
                message: format!("{} is being downloaded", profile.name),
            });
        }
        if let Some(models) = self.llm().local_models()
            && !models.unload(profile.name)
        {
            return Err(ServiceError::Conflict {
                code: ErrorCode::Conflict,
                message: format!("{} is in use; try again when its turn ends", profile.name),
            });
        }
        let path = profile.path(&self.models_dir());
        let part = path.with_file_name(format!("{}.part", profile.file));
        for file in [&path, &part] {
            match tokio::fs::remove_file(file).await {
                Ok(()) => tracing::info!(file = %file.display(), "local model file removed"),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(ServiceError::Internal(format!(
                        "cannot remove {}: {error}",
                        file.display()
                    )));
                }
            }
        }
        Ok(self.local_model_info(profile).await)
    }
}
