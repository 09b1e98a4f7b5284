//! The in-process local models for the adapters (`/v1/models/local`, `souz models`): the
//! profiles with their state, fetching a pinned profile's file, removing one.
//!
//! Invariants: a fetch goes through the memory model's downloader (SSRF-safe web client,
//! resumed from a `.part` file, SHA-256-checked before the file takes its name) and runs in the
//! background ([`super::super::model_downloads`]: one at a time per profile, progress on
//! `local.model.download.*` events); the SHA-256 is pinned in the code (a mirror's files) or
//! given by the model hub's metadata at the profile's pinned commit (asked inside the
//! download, so a hub that does not answer fails it like a broken transfer); a profile with
//! neither is never fetched; removing a model stops its download first, unloads it, and
//! refuses while it is in use.

use std::sync::Arc;
use std::time::Duration;

use souz_protocol::{ErrorCode, LocalModelInfo, LocalModelList, LocalModelState};

use super::ServiceError;
use crate::llm::local::hub::{self, HubPin};
use crate::llm::local::profiles::{self, LocalProfile, ProfileKind};
use crate::memory::download::{DownloadError, FileDigest, ModelFile, Source, fetch_file_from};
use crate::runtime::RuntimeHandle;
use crate::runtime::model_downloads::Reporter;
use crate::sandbox::net::{SystemLookup, WebClient, WebOptions};

/// A whole model file may take this long.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(12 * 3600);

/// What one download fetches, and with which client.
struct Transfer {
    client: WebClient,
    origin: Origin,
}

/// Where a profile's file is fetched from.
#[derive(Debug, Clone)]
enum Origin {
    /// The operator's mirror, checked against the SHA-256 pinned in the profile.
    Mirror { url: String, sha256: &'static str },
    /// The model hub at the profile's pinned commit, checked against the hub's SHA-256.
    Hub { hub: String, pin: HubPin },
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

    /// Where `profile` is fetched from: the mirror when one is set and the profile pins its
    /// SHA-256, else the hub at the profile's commit; `None` when neither applies.
    fn origin(&self, profile: &LocalProfile) -> Option<Origin> {
        let llm = &self.config().llm;
        let mirror = llm.local_model_mirror.trim().trim_end_matches('/');
        if let (false, Some(sha256)) = (mirror.is_empty(), profile.sha256) {
            let url = format!("{mirror}/{}/{}", profile.name, profile.file);
            return Some(Origin::Mirror { url, sha256 });
        }
        profile.hub.map(|pin| Origin::Hub {
            hub: llm.local_model_hub.clone(),
            pin,
        })
    }

    async fn local_model_info(&self, profile: &'static LocalProfile) -> LocalModelInfo {
        let path = profile.path(&self.models_dir());
        let loaded = self.llm().local_models().is_some_and(|models| {
            models
                .loaded_names()
                .iter()
                .any(|name| name == profile.name)
        });
        let download = self.model_downloads().state(profile.name);
        let origin = self.origin(profile);
        let state = match download {
            Some(downloading @ LocalModelState::Downloading { .. }) => downloading,
            _ if loaded => LocalModelState::Loaded,
            _ if tokio::fs::try_exists(&path).await.unwrap_or(false) => LocalModelState::Ready,
            Some(failed) => failed,
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
            pullable: origin.is_some(),
            source: origin.map(|origin| match origin {
                Origin::Mirror { url, .. } => url,
                Origin::Hub { hub, pin } => pin.page_url(&hub),
            }),
            test_model: profile.test_model,
            state,
        }
    }

    /// Starts fetching the file of the profile `name` in the background (resumable,
    /// checksum-verified) and answers its state: `downloading` (also when a fetch of it runs
    /// already), or `ready`/`loaded` when the file is there. Refused for a profile with no
    /// source: no hub pin, and no mirror set or no SHA-256 pinned for one.
    pub async fn pull_local_model(&self, name: &str) -> Result<LocalModelInfo, ServiceError> {
        let profile = profiles::find(name).map_err(unknown)?;
        let Some(origin) = self.origin(profile) else {
            return Err(ServiceError::Invalid(format!(
                "{} has no download source: set [llm] local_model_mirror to a mirror serving \
                 it, or place {} at {}",
                profile.name,
                profile.file,
                profile.path(&self.models_dir()).display()
            )));
        };
        let there = tokio::fs::try_exists(profile.path(&self.models_dir()))
            .await
            .unwrap_or(false);
        if there {
            return Ok(self.local_model_info(profile).await);
        }
        let client = self.download_client()?;
        // Registered before this answers, so the list shows it at once.
        if let Some(running) =
            self.model_downloads()
                .begin(profile.name, profile.bytes, &self.shutdown_signal())
        {
            let handle = self.clone();
            self.spawn(async move {
                let transfer = Transfer { client, origin };
                let events = handle.events().clone();
                running
                    .run(&events, |reporter| {
                        handle.transfer(profile, transfer, reporter)
                    })
                    .await;
            });
        }
        Ok(self.local_model_info(profile).await)
    }

    /// The web client model files are fetched with (the sandbox's allowed hosts, a long
    /// timeout for a whole file).
    pub(super) fn download_client(&self) -> Result<WebClient, ServiceError> {
        WebClient::with_options(
            &self.config().sandbox.network_allow_hosts,
            WebOptions {
                request_timeout: DOWNLOAD_TIMEOUT,
                ..WebOptions::default()
            },
            Arc::new(SystemLookup),
        )
        .map_err(|error| ServiceError::Internal(error.to_string()))
    }

    /// Finds the file's checksum (asking the hub when the origin is the hub) and fetches it.
    async fn transfer(
        &self,
        profile: &'static LocalProfile,
        Transfer { client, origin }: Transfer,
        reporter: Reporter,
    ) -> Result<(), DownloadError> {
        let client = &client;
        let listed;
        let (url, digest, bytes) = match origin {
            Origin::Mirror { url, sha256 } => (url, FileDigest::Sha256(sha256), profile.bytes),
            Origin::Hub { hub, pin } => {
                listed = hub::resolve(client, &hub, &pin, reporter.cancel()).await?;
                reporter.set_total(listed.bytes);
                let digest = FileDigest::listed(&listed.digest, profile.sha256);
                (listed.url.clone(), digest, listed.bytes)
            }
        };
        let file = ModelFile {
            name: profile.file,
            url: &url,
            digest,
            bytes,
        };
        let progress = |_: &ModelFile<'_>, received: u64| reporter.report(received);
        fetch_file_from(
            client,
            &profile.dir(&self.models_dir()),
            Source {
                file: &file,
                url: &url,
            },
            &progress,
            reporter.cancel(),
        )
        .await
    }

    /// Stops a download of the profile `name`, unloads it and deletes its file (also a
    /// partial download).
    pub async fn remove_local_model(&self, name: &str) -> Result<LocalModelInfo, ServiceError> {
        let profile = profiles::find(name).map_err(unknown)?;
        // A download of it stops first (and has closed its file when this returns).
        self.model_downloads().stop(profile.name).await;
        if let Some(models) = self.llm().local_models()
            && !models.unload(profile.name)
        {
            return Err(ServiceError::Conflict {
                code: ErrorCode::Conflict,
                message: format!("{} is in use; try again when its turn ends", profile.name),
            });
        }
        // Removed by name inside the model's folder, opened without following a link: a link
        // planted at the folder or the file is refused or removed itself, never followed.
        let folder =
            profile
                .open_dir(&self.models_dir())
                .map_err(|error| ServiceError::Conflict {
                    code: ErrorCode::Conflict,
                    message: error.to_string(),
                })?;
        let part = format!("{}.part", profile.file);
        for name in [profile.file, part.as_str()] {
            let Some(folder) = &folder else { break };
            match folder.remove_file(name) {
                Ok(true) => {
                    tracing::info!(file = %folder.path().join(name).display(), "local model file removed");
                }
                Ok(false) => {}
                Err(error) => {
                    return Err(ServiceError::Internal(format!("cannot remove: {error}")));
                }
            }
        }
        Ok(self.local_model_info(profile).await)
    }
}
