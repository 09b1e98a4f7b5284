//! Settings for the adapters: `config.toml` through the settings editor, the pause switch, the
//! caller's provider keys and the daemon's service keys (keys go in, only hints come out).

use souz_protocol::config::{ConfigDocument, ConfigSaved, ConfigValue, PauseState};
use souz_protocol::{ExpiryReason, ProviderKeyInfo, RuntimeEvent, ServiceKeyInfo, ServiceKeyTest};
use tokio_util::sync::CancellationToken;

use super::ServiceError;
use crate::bus::pause;
use crate::chat::ChatUser;
use crate::runtime::RuntimeHandle;
use crate::store::StoreError;

/// The longest `via` a pause change records.
const MAX_VIA: usize = 32;

impl RuntimeHandle {
    /// `config.toml`: its text, its schema with the values it sets, and what applies live.
    pub async fn config_document(&self) -> Result<ConfigDocument, ServiceError> {
        Ok(self.config_editor().document().await?)
    }

    /// Replaces `config.toml` with `text` (validated first; `base_revision` guards against a
    /// concurrent edit).
    pub async fn replace_config(
        &self,
        text: String,
        base_revision: Option<String>,
    ) -> Result<ConfigSaved, ServiceError> {
        Ok(self.config_editor().replace(text, base_revision).await?)
    }

    /// Sets or resets single keys of `config.toml`, keeping its comments.
    pub async fn patch_config(
        &self,
        changes: Vec<ConfigValue>,
        base_revision: Option<String>,
    ) -> Result<ConfigSaved, ServiceError> {
        Ok(self.config_editor().patch(changes, base_revision).await?)
    }

    /// Asks the embedding binary to restart the runtime in place (the answer goes out first:
    /// the gateway drains in-flight requests before the runtime stops).
    pub fn request_restart(&self) -> Result<souz_protocol::Restarting, ServiceError> {
        let switch = self
            .restart_switch()
            .ok_or_else(|| ServiceError::Conflict {
                code: souz_protocol::ErrorCode::Conflict,
                message: "This Souz cannot restart itself; stop it and start it again.".to_owned(),
            })?;
        tracing::info!("restart requested");
        switch.cancel();
        Ok(souz_protocol::Restarting { restarting: true })
    }

    /// Whether Souz is paused, and since when.
    pub fn pause_state(&self) -> PauseState {
        let since = self.approvals().pause().since();
        PauseState {
            paused: since.is_some(),
            since,
        }
    }

    /// Pauses or resumes Souz. Pausing denies every pending approval, cancels running agent
    /// turns, and from then on denies calls that would ask and refuses new turns. Idempotent.
    /// `via` (who flipped it) keeps at most 32 letters, digits, `-` and `_`; `api` when
    /// nothing is left.
    pub async fn set_paused(&self, paused: bool, via: &str) -> Result<PauseState, ServiceError> {
        let switch = self.approvals().pause().clone();
        if switch.is_paused() != paused {
            let since = paused.then(crate::store::codec::now);
            let via = recorded_via(via);
            self.events()
                .publish_with(move |transaction| {
                    pause::store(transaction, since)?;
                    let event = if paused {
                        RuntimeEvent::DaemonPaused { via }
                    } else {
                        RuntimeEvent::DaemonResumed { via }
                    };
                    Ok::<_, StoreError>(((), vec![event]))
                })
                .await?;
            // Flip first, then sweep: anything asked after the flip is refused by its producer.
            switch.set(since);
        }
        if paused {
            let expired = self
                .approvals()
                .expire_pending(ExpiryReason::Paused)
                .await?;
            let stopped = match self.chats().stop_running().await {
                Ok(stopped) => stopped,
                Err(error) => {
                    tracing::warn!(%error, "could not stop every agent turn while pausing");
                    0
                }
            };
            if expired > 0 || stopped > 0 {
                tracing::info!(
                    approvals = expired,
                    turns = stopped,
                    "paused: denied and stopped"
                );
            }
        }
        Ok(self.pause_state())
    }

    /// The user's configured provider keys (hints only), sorted by provider.
    pub async fn provider_keys(
        &self,
        user: &ChatUser,
    ) -> Result<Vec<ProviderKeyInfo>, ServiceError> {
        Ok(self.llm().for_user(&user.0).provider_keys().await?)
    }

    /// Stores (or replaces) the user's key for `provider`, encrypted at rest.
    pub async fn set_provider_key(
        &self,
        user: &ChatUser,
        provider: &str,
        api_key: &str,
    ) -> Result<ProviderKeyInfo, ServiceError> {
        Ok(self
            .llm()
            .for_user(&user.0)
            .set_provider_key(provider, api_key)
            .await?)
    }

    /// Checks the user's key for `provider` with a one-token request through the provider.
    pub async fn test_provider_key(
        &self,
        user: &ChatUser,
        provider: &str,
    ) -> Result<souz_protocol::ProviderKeyTest, ServiceError> {
        Ok(self
            .llm()
            .for_user(&user.0)
            .test_provider_key(provider)
            .await?)
    }

    /// Deletes the user's stored key for `provider` (idempotent).
    pub async fn delete_provider_key(
        &self,
        user: &ChatUser,
        provider: &str,
    ) -> Result<(), ServiceError> {
        Ok(self
            .llm()
            .for_user(&user.0)
            .delete_provider_key(provider)
            .await?)
    }
}

impl RuntimeHandle {
    /// The daemon's configured service keys (hints only), by name.
    pub async fn service_keys(&self) -> Result<Vec<ServiceKeyInfo>, ServiceError> {
        Ok(self.llm().service_keys().await?)
    }

    /// Stores (or replaces) the service key `name`, encrypted at rest.
    pub async fn set_service_key(
        &self,
        name: &str,
        api_key: &str,
    ) -> Result<ServiceKeyInfo, ServiceError> {
        let info = self.llm().set_service_key(name, api_key).await?;
        self.service_key_changed(&info.name);
        Ok(info)
    }

    /// Deletes the stored service key `name` (idempotent).
    pub async fn delete_service_key(&self, name: &str) -> Result<(), ServiceError> {
        self.llm().delete_service_key(name).await?;
        self.service_key_changed(name);
        Ok(())
    }

    /// A channel's key applies at once: the running channel restarts with it (or stops).
    fn service_key_changed(&self, name: &str) {
        if name.eq_ignore_ascii_case(crate::llm::service::service_keys::TELEGRAM.name) {
            self.channel_tools().keys_changed();
        }
    }

    /// Checks the service key `name` (the one the tools would use) with one real request to
    /// the service through the SSRF-safe client (`[web] brave_url` for `brave`).
    pub async fn test_service_key(&self, name: &str) -> Result<ServiceKeyTest, ServiceError> {
        let key = crate::llm::service::service_keys::service_key(name)?;
        let Some(api_key) = self.llm().service_key(key.name).await? else {
            return Err(ServiceError::conflict(
                souz_protocol::ErrorCode::Conflict,
                format!(
                    "No `{}` key is configured: store one (PUT /v1/settings/service-keys/{}) \
                     or set {}.",
                    key.name, key.name, key.variable
                ),
            ));
        };
        if key.name == crate::llm::service::service_keys::TELEGRAM.name {
            crate::redact::register_secret(api_key.expose());
            let checked =
                check_telegram_token(&self.config().channels.telegram.api_url, api_key.expose())
                    .await;
            return Ok(ServiceKeyTest {
                name: key.name.to_owned(),
                ok: checked.is_ok(),
                error: checked.err(),
            });
        }
        if key.name == crate::llm::service::service_keys::SALUTE_SPEECH.name {
            let checked = self
                .speech()
                .check_salute_key(self.config(), self.llm(), api_key)
                .await
                .map_err(|error| error.say(souz_protocol::language::Language::En));
            return Ok(ServiceKeyTest {
                name: key.name.to_owned(),
                ok: checked.is_ok(),
                error: checked.err(),
            });
        }
        let client = self
            .gate()
            .sandbox()
            .web()
            .map_err(|error| ServiceError::Internal(error.to_string()))?
            .clone();
        let checked = crate::tools::builtin::internet::brave::check_key(
            client,
            &self.config().web.brave_url,
            api_key.expose().to_owned(),
            &CancellationToken::new(),
        )
        .await;
        Ok(ServiceKeyTest {
            name: key.name.to_owned(),
            ok: checked.is_ok(),
            error: checked.err(),
        })
    }
}

/// Asks the Bot API at `api_url` who the bot of `token` is (`getMe`); why not, when it fails.
/// The error never carries the URL (the token is in its path).
async fn check_telegram_token(api_url: &str, token: &str) -> Result<(), String> {
    use frankenstein::AsyncTelegramApi;
    let bot = frankenstein::client_reqwest::Bot::new_url(format!(
        "{}/bot{token}",
        api_url.trim().trim_end_matches('/')
    ));
    match bot.get_me().await {
        Ok(_) => Ok(()),
        Err(frankenstein::Error::Api(response)) => Err(format!(
            "Telegram refused the token ({}): {}",
            response.error_code, response.description
        )),
        Err(error) => Err(crate::redact::redact_text(&error.to_string())),
    }
}

/// `via` as a pause event records it.
fn recorded_via(via: &str) -> String {
    let via: String = via
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(MAX_VIA)
        .collect();
    if via.is_empty() {
        "api".to_owned()
    } else {
        via
    }
}
