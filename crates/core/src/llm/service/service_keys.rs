//! Keys of services other than model providers that tools use (`souz_protocol::SERVICE_KEYS`:
//! the Brave Search API, the Telegram bot's token), daemon-wide: stored encrypted among the key store's secrets under
//! their name, else read from their environment variable. Keys go in, only hints come out.
//!
//! Invariants: only the names of `SERVICE_KEYS` are read, written or listed here (the same
//! `secrets` table holds MCP servers' tokens, which this never touches); a stored key wins over
//! the environment's; a stored key is registered for log redaction before it is used.

use souz_protocol::{KeySource, ServiceKeyInfo};

use super::{LlmService, LlmServiceError, checked_key};
use crate::llm::keys::ApiKey;

/// What a service key is for and where else it may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServiceKey {
    /// Its name (one of `SERVICE_KEYS`), also the key store's secret name.
    pub name: &'static str,
    /// What uses it.
    pub used_by: &'static str,
    /// The environment variable read when none is stored.
    pub variable: &'static str,
}

/// The Brave Search API key.
pub(crate) const BRAVE: ServiceKey = ServiceKey {
    name: "brave",
    used_by: "InternetSearch and InternetResearch (the Brave Search API)",
    variable: "BRAVE_SEARCH_API_KEY",
};

/// The Telegram bot's token (`[channels.telegram]`).
pub(crate) const TELEGRAM: ServiceKey = ServiceKey {
    name: "telegram",
    used_by: "The Telegram channel ([channels.telegram]: the bot you talk to Souz through)",
    variable: "TELEGRAM_BOT_TOKEN",
};

/// SaluteSpeech's authorization key (`[speech] engine = "salute"`).
pub(crate) const SALUTE_SPEECH: ServiceKey = ServiceKey {
    name: "salute_speech",
    used_by: "Speech to text with SaluteSpeech ([speech] engine = \"salute\")",
    variable: "SALUTE_SPEECH_KEY",
};

/// Every service key, in `SERVICE_KEYS` order.
pub(super) const KNOWN: &[ServiceKey] = &[BRAVE, SALUTE_SPEECH, TELEGRAM];

/// The service key `name` names (case-insensitive, surrounding blanks ignored).
pub(crate) fn service_key(name: &str) -> Result<ServiceKey, LlmServiceError> {
    let wanted = name.trim().to_ascii_lowercase();
    KNOWN
        .iter()
        .find(|key| key.name == wanted)
        .copied()
        .ok_or_else(|| LlmServiceError::UnknownServiceKey(name.trim().to_owned()))
}

impl LlmService {
    pub(super) fn environment_service_key(&self, key: ServiceKey) -> Option<ApiKey> {
        (self.shared().environment)(key.variable)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
            .map(ApiKey::new)
    }

    /// The configured service keys (stored ones, else the environment's), in name order.
    pub async fn service_keys(&self) -> Result<Vec<ServiceKeyInfo>, LlmServiceError> {
        let mut items = Vec::new();
        for key in KNOWN {
            let info = |hint: String, updated_at, source| ServiceKeyInfo {
                name: key.name.to_owned(),
                used_by: key.used_by.to_owned(),
                variable: key.variable.to_owned(),
                key_hint: hint,
                updated_at,
                source,
            };
            if let Some((stored, updated_at)) = self.keys.stored_secret(key.name).await? {
                items.push(info(stored.hint(), Some(updated_at), KeySource::Stored));
            } else if let Some(environment) = self.environment_service_key(*key) {
                items.push(info(environment.hint(), None, KeySource::Environment));
            }
        }
        items.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(items)
    }

    /// Stores (or replaces) the service key `name`, encrypted at rest.
    pub async fn set_service_key(
        &self,
        name: &str,
        api_key: &str,
    ) -> Result<ServiceKeyInfo, LlmServiceError> {
        let key = service_key(name)?;
        let api_key = checked_key(api_key)?;
        crate::redact::register_secret(api_key.expose());
        self.keys.put_secret(key.name, &api_key).await?;
        tracing::info!(service = key.name, hint = %api_key.hint(), "service key stored");
        self.service_keys()
            .await?
            .into_iter()
            .find(|info| info.name == key.name)
            .ok_or_else(|| LlmServiceError::UnknownServiceKey(key.name.to_owned()))
    }

    /// Deletes the stored service key `name` (idempotent; the environment's stays).
    pub async fn delete_service_key(&self, name: &str) -> Result<(), LlmServiceError> {
        let key = service_key(name)?;
        if self.keys.delete_secret(key.name).await? {
            tracing::info!(service = key.name, "service key deleted");
        }
        Ok(())
    }

    /// The service key `name` a tool uses: the stored one, else the environment's; `None`
    /// when neither is set.
    pub async fn service_key(&self, name: &str) -> Result<Option<ApiKey>, LlmServiceError> {
        let key = service_key(name)?;
        if let Some((stored, _)) = self.keys.stored_secret(key.name).await? {
            crate::redact::register_secret(stored.expose());
            return Ok(Some(stored));
        }
        Ok(self.environment_service_key(key))
    }
}

#[cfg(test)]
mod tests;
