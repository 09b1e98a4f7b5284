//! A user's chat settings, onboarding and the models offered to them: effective settings are
//! the stored ones over the daemon's defaults; a model named anywhere must resolve to exactly
//! one model that can serve chats, with the user's provider keys first, then the daemon's.

use std::sync::PoisonError;

use chrono::Utc;
use souz_protocol::chat::{Settings, SettingsPatch};
use souz_protocol::llm::KeySource;
use souz_protocol::{Capabilities, ModelCapability, ToolCapability};

use super::settings::SettingsDefaults;
use super::{ChatError, ChatUser, Chats, records, settings};
use crate::llm::models::{ModelKind, Resolution, ResolvedModel};
use crate::llm::service::LlmService;
use crate::store::codec::now;

impl Chats {
    /// Updates what the settings default to (after a config change or a new provider key).
    pub fn set_defaults(&self, defaults: SettingsDefaults) {
        *self
            .inner
            .defaults
            .write()
            .unwrap_or_else(PoisonError::into_inner) = defaults;
    }

    pub(super) fn defaults(&self) -> SettingsDefaults {
        self.inner
            .defaults
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The user's effective settings (a default model is picked when none is set).
    pub async fn settings(&self, user: &ChatUser) -> Result<Settings, ChatError> {
        let (stored, _) = self.stored_settings(user).await?;
        let mut defaults = self.defaults();
        if defaults.default_model.is_empty()
            && let Ok(model) = self.llm(user).default_model().await
        {
            defaults.default_model = model.qualified();
        }
        Ok(settings::effective(&defaults, &stored))
    }

    /// Applies a validated patch; the default model must be usable now.
    pub async fn patch_settings(
        &self,
        user: &ChatUser,
        patch: SettingsPatch,
    ) -> Result<Settings, ChatError> {
        self.save_patch(user, patch, false).await?;
        self.settings(user).await
    }

    /// Validates `patch` (its default model must be usable by `user` now), merges it into the
    /// stored settings and saves them, marking onboarding done when `completes_onboarding`.
    async fn save_patch(
        &self,
        user: &ChatUser,
        patch: SettingsPatch,
        completes_onboarding: bool,
    ) -> Result<(), ChatError> {
        let patch =
            settings::normalize(&patch, &self.defaults().tools).map_err(ChatError::Invalid)?;
        if let Some(model) = &patch.default_model {
            self.require_available_model(
                user,
                model,
                "defaultModel must be available to the current user.",
            )
            .await?;
        }
        let (stored, _) = self.stored_settings(user).await?;
        let merged = settings::merge(&stored, &patch);
        let user_id = user.0.clone();
        self.inner
            .store
            .write(move |tx| {
                let at = now();
                let completed = completes_onboarding.then_some(at);
                records::save_settings(tx, &user_id, &merged, completed, at)
            })
            .await?;
        Ok(())
    }

    /// Whether onboarding is done, and what is missing.
    pub async fn onboarding(&self, user: &ChatUser) -> Result<(bool, bool), ChatError> {
        let (_, completed) = self.stored_settings(user).await?;
        let has_model = self.llm(user).default_model().await.is_ok();
        Ok((completed.is_some(), has_model))
    }

    /// Completes onboarding with optional preferences.
    pub async fn complete_onboarding(
        &self,
        user: &ChatUser,
        patch: SettingsPatch,
    ) -> Result<(), ChatError> {
        if self.llm(user).default_model().await.is_err() {
            return Err(ChatError::RequiresModelAccess(
                "Add a provider key or a local model before finishing onboarding.".into(),
            ));
        }
        self.save_patch(user, patch, true).await
    }

    pub(super) async fn stored_settings(
        &self,
        user: &ChatUser,
    ) -> Result<(SettingsPatch, Option<chrono::DateTime<Utc>>), ChatError> {
        let user_id = user.0.clone();
        Ok(self
            .inner
            .store
            .write(move |tx| {
                records::ensure_user(tx, &user_id, now())?;
                records::load_settings(tx, &user_id)
            })
            .await?)
    }

    /// The LLM service acting for `user`: their provider keys, then the daemon's.
    pub(super) fn llm(&self, user: &ChatUser) -> LlmService {
        self.inner.llm.for_user(&user.0)
    }

    pub(super) async fn require_available_model(
        &self,
        user: &ChatUser,
        name: &str,
        unavailable: &str,
    ) -> Result<(), ChatError> {
        let resolved = self.resolve_model("defaultModel", name)?;
        let available = self.llm(user).available_models(ModelKind::Chat).await?;
        if available
            .iter()
            .any(|model| model.qualified() == resolved.qualified())
        {
            Ok(())
        } else {
            Err(ChatError::Invalid(unavailable.to_owned()))
        }
    }

    /// Resolves a model a request names (`field` says where); see [`check_model`].
    pub(super) fn resolve_model(
        &self,
        field: &str,
        name: &str,
    ) -> Result<ResolvedModel, ChatError> {
        check_model(field, self.inner.llm.resolution(name, ModelKind::Chat))
    }

    /// Usable chat models (with where their keys come from) and the tools with the user's
    /// enabled flags, for the bootstrap.
    pub async fn capabilities(
        &self,
        user: &ChatUser,
    ) -> Result<(Settings, Capabilities), ChatError> {
        let settings = self.settings(user).await?;
        let llm = self.llm(user);
        let keys = llm.provider_keys().await?;
        let models = llm
            .available_models(ModelKind::Chat)
            .await?
            .into_iter()
            .map(|model| {
                let source = keys
                    .iter()
                    .find(|key| key.provider == model.provider)
                    .map(|key| key.source);
                ModelCapability {
                    provider: model.provider.to_string(),
                    model: model.model,
                    server_managed_key: source == Some(KeySource::Environment),
                    user_managed_key: source == Some(KeySource::Stored),
                }
            })
            .collect();
        let mut tools: Vec<ToolCapability> = self
            .defaults()
            .tools
            .into_iter()
            .map(|name| ToolCapability {
                enabled: settings.enabled_tools.contains(&name),
                name,
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Ok((settings, Capabilities { models, tools }))
    }
}

/// A model named in a request: a name that matches no model or several is a bad request
/// (§1.6); one that names a model that cannot serve chats is `unsupported_backend_model`
/// (§1.7).
pub(super) fn check_model(field: &str, resolution: Resolution) -> Result<ResolvedModel, ChatError> {
    match resolution {
        Resolution::Resolved(model) => Ok(model),
        Resolution::Unknown { suggestions, .. } => {
            let mut message = format!("{field} must be a known model alias.");
            if !suggestions.is_empty() {
                message.push_str(&format!(" Did you mean {}?", suggestions.join(", ")));
            }
            Err(ChatError::Invalid(message))
        }
        Resolution::Ambiguous { candidates, .. } => Err(ChatError::Invalid(format!(
            "{field} is ambiguous; use a model enum name ({}).",
            candidates.join(", ")
        ))),
        unsupported @ Resolution::Unsupported { .. } => {
            Err(ChatError::UnsupportedModel(unsupported.describe()))
        }
    }
}
