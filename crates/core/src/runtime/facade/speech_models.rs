//! The in-process speech models for the adapters (`GET /v1/speech`'s `models`,
//! `POST /v1/speech/models/{id}/pull`, `DELETE /v1/speech/models/{id}`, `souz models`): each
//! model's state, fetching a pinned model's three files, removing them.
//!
//! Invariants: a pull is the local LLMs' machinery, not a copy of it: the model hub
//! (`[llm] local_model_hub`) asked at the commit each file pins ([`hub::resolve`]), its answer
//! checked against what the catalog pins besides ([`hub::agree`]) for **every** file before the
//! first byte is fetched, then the memory model's downloader (SSRF-safe client, resumed from a
//! `.part` file, verified by SHA-256 or git blob id before the file takes its name), run in the
//! background by the runtime's downloads ([`Family::Speech`]: one at a time per model,
//! `speech.model.download.*` events). The folder `<home>/models/speech/<id>/` is created `0700`
//! beneath the Souz home's handle; it holds all three names only once each arrived verified, so
//! a partial or refused pull never looks complete to [`SpeechModel::present`]. Removing a model
//! stops its download first, unloads it, and refuses while a transcription holds the model.
//!
//! [`Family::Speech`]: crate::runtime::model_downloads::Family::Speech

use souz_protocol::language::Language;
use souz_protocol::localized;
use souz_protocol::{ErrorCode, LocalModelState, SpeechModelInfo};

use super::ServiceError;
use crate::LOCAL_USER;
use crate::chat::ChatUser;
use crate::llm::local::hub::{self, HubFile};
use crate::memory::download::{
    DownloadError, FileDigest, ModelFile, Source, fetch_into, model_folder_beneath,
};
use crate::runtime::RuntimeHandle;
use crate::runtime::model_downloads::Reporter;
use crate::sandbox::DaemonFolder;
use crate::sandbox::net::WebClient;
use crate::speech::catalog::{self, FILES, SpeechModel};

/// What one speech model download fetches, and with which client.
struct Transfer {
    client: WebClient,
    /// The model hub's base URL.
    hub: String,
}

impl RuntimeHandle {
    /// The operator's interface language (model files are the operator's).
    async fn operator_language(&self) -> Language {
        self.interface_language(&ChatUser(LOCAL_USER.to_owned()))
            .await
    }

    /// The catalog's model `id`, or a 404 said in `language`.
    fn speech_model(id: &str, language: Language) -> Result<&'static SpeechModel, ServiceError> {
        catalog::find(id).ok_or_else(|| {
            let known = catalog::MODELS
                .iter()
                .map(|model| model.id)
                .collect::<Vec<_>>()
                .join(", ");
            ServiceError::NotFound {
                code: ErrorCode::NotFound,
                message: localized!(
                    language,
                    "There is no speech model `{}` (the models: {}).",
                    "Нет модели распознавания `{}` (модели: {}).",
                    id.trim(),
                    known
                ),
            }
        })
    }

    /// Every speech model of the catalog with its state.
    pub(crate) fn speech_models(&self) -> Vec<SpeechModelInfo> {
        catalog::MODELS
            .iter()
            .map(|model| self.speech_model_info(model))
            .collect()
    }

    fn speech_model_info(&self, model: &'static SpeechModel) -> SpeechModelInfo {
        let config = self.config();
        let dir = model.dir(&config.paths.home().join("models"));
        let selected = config.speech.local_model.trim() == model.id;
        // While a transcription holds the model, it is the selected one that is loaded.
        let loaded = self.speech().loaded_from(&dir).unwrap_or(selected);
        let state = match self.speech_downloads().state(model.id) {
            Some(downloading @ LocalModelState::Downloading { .. }) => downloading,
            _ if loaded => LocalModelState::Loaded,
            _ if SpeechModel::present(&dir) => LocalModelState::Ready,
            Some(failed) => failed,
            None => LocalModelState::Missing,
        };
        SpeechModelInfo {
            id: model.id.to_owned(),
            label: model.label.to_owned(),
            languages: model
                .languages
                .iter()
                .map(|&code| code.to_owned())
                .collect(),
            bytes: model.bytes,
            path: dir.display().to_string(),
            selected,
            pullable: model.pullable(),
            source: model.source(&config.llm.local_model_hub),
            test_model: model.test_model,
            state,
        }
    }

    /// Starts fetching the files of the speech model `id` in the background (resumable,
    /// verified) and answers its state: `downloading` (also when a fetch of it runs already),
    /// or `ready`/`loaded` when its files are there. Refused for the tests' model, which pins
    /// no source.
    pub async fn pull_speech_model(&self, id: &str) -> Result<SpeechModelInfo, ServiceError> {
        let language = self.operator_language().await;
        let model = Self::speech_model(id, language)?;
        let dir = model.dir(&self.config().paths.home().join("models"));
        if !model.pullable() {
            return Err(ServiceError::Invalid(localized!(
                language,
                "{} is the tests' model: Souz does not download it. Place config.json, \
                 tokenizer.json and model.safetensors in {}.",
                "{} — тестовая модель: Souz её не скачивает. Положите config.json, \
                 tokenizer.json и model.safetensors в {}.",
                model.id,
                dir.display()
            )));
        }
        if SpeechModel::present(&dir) {
            return Ok(self.speech_model_info(model));
        }
        let transfer = Transfer {
            client: self.download_client()?,
            hub: self.config().llm.local_model_hub.clone(),
        };
        // Registered before this answers, so `GET /v1/speech` shows it at once.
        if let Some(running) =
            self.speech_downloads()
                .begin(model.id, model.bytes, &self.shutdown_signal())
        {
            let handle = self.clone();
            self.spawn(async move {
                let events = handle.events().clone();
                running
                    .run(&events, |reporter| {
                        handle.fetch_speech_model(model, transfer, reporter)
                    })
                    .await;
            });
        }
        Ok(self.speech_model_info(model))
    }

    /// Resolves every file of `model` on the hub and checks each against the catalog's pins,
    /// then fetches them in order into the model's folder beneath the Souz home.
    async fn fetch_speech_model(
        &self,
        model: &'static SpeechModel,
        Transfer { client, hub }: Transfer,
        reporter: Reporter,
    ) -> Result<(), DownloadError> {
        let cancel = reporter.cancel();
        let mut listed: Vec<HubFile> = Vec::with_capacity(model.pins.len());
        for pin in model.pins {
            let file = hub::resolve(&client, &hub, &pin.hub, cancel).await?;
            hub::agree(&file, pin.hub.path, pin.sha256, pin.bytes)?;
            listed.push(file);
        }
        reporter.set_total(listed.iter().map(|file| file.bytes).sum());
        let folder = model_folder_beneath(self.config().paths.home(), &model.relative_dir())?;
        let reporter = &reporter;
        let mut done = 0;
        for (pin, file) in model.pins.iter().zip(&listed) {
            let model_file = ModelFile {
                name: pin.hub.file_name(),
                url: &file.url,
                digest: FileDigest::listed(&file.digest, pin.sha256),
                bytes: file.bytes,
            };
            let before = done;
            let progress =
                move |_: &ModelFile<'_>, received: u64| reporter.report(before + received);
            let source = Source {
                file: &model_file,
                url: &file.url,
            };
            fetch_into(&client, &folder, source, &progress, cancel).await?;
            done += file.bytes;
        }
        Ok(())
    }

    /// Stops a download of the speech model `id`, unloads it and deletes its files (also
    /// partial ones).
    pub async fn remove_speech_model(&self, id: &str) -> Result<SpeechModelInfo, ServiceError> {
        let language = self.operator_language().await;
        let model = Self::speech_model(id, language)?;
        // A download of it stops first (and has closed its file when this returns).
        self.speech_downloads().stop(model.id).await;
        let dir = model.dir(&self.config().paths.home().join("models"));
        if !self.speech().unload_from(&dir) {
            return Err(ServiceError::Conflict {
                code: ErrorCode::Conflict,
                message: localized!(
                    language,
                    "A transcription is using the speech model; try again when it ends.",
                    "Модель распознавания сейчас занята распознаванием; попробуйте, когда оно закончится."
                ),
            });
        }
        // Removed by name inside the model's folder, opened beneath the Souz home without
        // following a link: a link planted at the folder or a file is refused or removed
        // itself, never followed.
        let folder = DaemonFolder::open(self.config().paths.home(), &model.relative_dir())
            .map_err(|error| ServiceError::Conflict {
                code: ErrorCode::Conflict,
                message: error.to_string(),
            })?;
        if let Some(folder) = folder {
            for name in FILES {
                for file in [name.to_owned(), format!("{name}.part")] {
                    match folder.remove_file(&file) {
                        Ok(true) => {
                            tracing::info!(file = %folder.path().join(&file).display(), "speech model file removed");
                        }
                        Ok(false) => {}
                        Err(error) => {
                            return Err(ServiceError::Internal(format!("cannot remove: {error}")));
                        }
                    }
                }
            }
        }
        Ok(self.speech_model_info(model))
    }
}
