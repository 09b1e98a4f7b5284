//! The LLM service the runtime owns: configuration, the process's HTTP client, provider keys
//! (the user's stored ones, then the environment's), the model registry, and clients built per
//! call.
//!
//! Invariants: a service acts for one user ([`LlmService::for_user`]; the one the runtime
//! builds is the local user's) and only ever reads that user's stored keys; a stored key wins
//! over the environment (original §1.11: user key, then server key); a provider is reachable
//! when it has a key (or, for local servers, a configured model); a model that does not
//! resolve explicitly is an error, never a substitute. A settings save swaps the whole
//! configuration (client, registry, base URLs) at once with [`LlmService::reload`]: calls that
//! started keep what they had, the next call uses the new one, every user's view included.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use souz_protocol::{KeySource, ProviderKeyInfo, ProviderKeyTest};
use tokio_util::sync::CancellationToken;

use super::anthropic::AnthropicClient;
use super::codex::auth::{AuthService, DeviceCode};
use super::codex::client::CodexClient;
use super::codex::login::{self, LoginError, Pacing};
use super::codex::session::Sessions;
use super::embeddings::{EmbeddingClient, OpenAiEmbeddings};
use super::gigachat::{GigaChatAuth, GigaChatClient};
use super::http::{HttpClientError, HttpSettings, ProviderHttp};
use super::keys::{ApiKey, KeyStore, KeyStoreError, Keychain, MAX_KEY_CHARS};
use super::local::LocalModels;
use super::local::engine::{LocalClient, LocalEmbeddings};
use super::models::{DEFAULT_CHAT_MODELS, ModelKind, ModelRegistry, Resolution, ResolvedModel};
use super::openai::{OpenAiClient, OpenAiEndpoint};
use super::openai_compatible::preset;
use super::{LlmClient, LlmError, ProviderId};
use crate::config::LlmConfig;
use crate::store::Store;

/// Reads an environment variable (the process environment, or a test's map).
pub type Environment = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Why an LLM service call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmServiceError {
    /// The provider name is not one we know.
    #[error("unknown provider `{0}`; known providers: {known}", known = key_provider_names())]
    UnknownProvider(String),
    /// The provider takes no API key.
    #[error("provider `{0}` does not use an API key")]
    KeylessProvider(ProviderId),
    /// The provider is used by signing in to an account, not with a key.
    #[error("provider `{0}` takes no API key: sign in with `souz login {0}` instead")]
    SignInInstead(ProviderId),
    /// One does not sign in to the provider (it takes a key, or nothing).
    #[error("provider `{0}` has no account to sign in to; `codex` has")]
    NoSignIn(ProviderId),
    /// The service key name is not one we know.
    #[error(
        "unknown service key `{0}`; known service keys: {known}",
        known = souz_protocol::SERVICE_KEYS.join(", ")
    )]
    UnknownServiceKey(String),
    /// The key is unusable as given.
    #[error("{0}")]
    InvalidKey(String),
    /// The model name does not resolve to one model.
    #[error("model {0}")]
    Model(String),
    /// No provider has a key and no local model is configured.
    #[error(
        "no model is available yet: add a provider's API key (`souz keys set openai`, or the \
         setup page of the web UI: `souz ui --open`), set one of {}, or start a local model \
         server (Ollama, LM Studio or llama.cpp on its usual port) or list a local model in \
         [llm] local_models",
        env_names()
    )]
    NoModel,
    /// The call itself failed (for example, no key).
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// Stored keys could not be read or written.
    #[error(transparent)]
    Keys(#[from] KeyStoreError),
    /// The HTTP client could not be built (bad extra CA file).
    #[error(transparent)]
    Http(#[from] HttpClientError),
    /// A configured CA file could not be read.
    #[error("[llm] extra_ca_files: cannot read {path}: {source}")]
    CaFile {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn key_provider_names() -> String {
    ProviderId::ALL
        .iter()
        .filter(|provider| provider.uses_key())
        .map(|provider| provider.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn env_names() -> String {
    ProviderId::ALL
        .iter()
        .flat_map(|provider| provider.key_variables())
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// Configuration, one user's keys, registry and the shared HTTP client.
pub struct LlmService {
    /// The current configuration, shared by every user's view and swapped on reload.
    cell: Arc<RwLock<Arc<Shared>>>,
    keys: KeyStore,
    /// The in-process models, when this build has an engine (provider `local`).
    local: Option<Arc<LocalModels>>,
    /// Account sign-ins waiting for their device code (every user's; shared by every view).
    logins: login::Logins,
}

/// What every user's view of the service shares.
struct Shared {
    config: LlmConfig,
    http: ProviderHttp,
    environment: Environment,
    registry: ModelRegistry,
    giga_auth: Arc<GigaChatAuth>,
    codex: Arc<Sessions>,
}

impl std::fmt::Debug for LlmService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmService")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Reads the extra CA files and builds the one HTTP client and the registry.
    fn build(
        config: &LlmConfig,
        environment: Environment,
        local_engine: bool,
    ) -> Result<Self, LlmServiceError> {
        let mut extra_ca = Vec::new();
        for path in &config.extra_ca_files {
            let pem = std::fs::read(path).map_err(|source| LlmServiceError::CaFile {
                path: path.clone(),
                source,
            })?;
            extra_ca.push((path.clone(), pem));
        }
        let http = ProviderHttp::new(
            http_settings(config),
            Duration::from_secs(config.connect_timeout_seconds),
            &extra_ca,
        )?;
        let registry =
            ModelRegistry::new(&config.aliases, config.disabled()).with_local_engine(local_engine);
        let giga_auth = Arc::new(GigaChatAuth::new(
            http.clone(),
            config.giga_auth_url.clone(),
            config.giga_scope.clone(),
        ));
        let codex = Arc::new(Sessions::new(AuthService::new(
            http.clone(),
            config.codex_auth_url.clone(),
        )));
        Ok(Self {
            config: config.clone(),
            http,
            environment,
            registry,
            giga_auth,
            codex,
        })
    }
}

/// The HTTP settings `[llm]` describes.
pub fn http_settings(config: &LlmConfig) -> HttpSettings {
    HttpSettings {
        request_timeout: Duration::from_secs(config.request_timeout_seconds),
        stream_idle_timeout: Duration::from_secs(config.stream_idle_timeout_seconds),
        max_retries: config.max_retries,
        backoff_base: Duration::from_millis(config.retry_backoff_base_ms),
        backoff_max: Duration::from_millis(config.retry_backoff_max_ms),
    }
}

impl LlmService {
    /// Builds the service, acting for the local user: reads the extra CA files and builds the
    /// one HTTP client.
    pub fn new(
        config: &LlmConfig,
        store: Store,
        key_file: PathBuf,
        environment: Environment,
    ) -> Result<Self, LlmServiceError> {
        let service = Self {
            // A build with an engine resolves `local/...` names from the start (the runtime
            // attaches the models before any call; `[llm] default_model` may name one).
            cell: Arc::new(RwLock::new(Arc::new(Shared::build(
                config,
                environment,
                super::local::default_backend().is_some(),
            )?))),
            local: None,
            logins: login::Logins::default(),
            keys: {
                let keychain = match config.key_storage.as_str() {
                    "file" => None,
                    _ => key_file.parent().and_then(Keychain::for_home),
                };
                KeyStore::new(store, key_file).with_keychain(keychain)
            },
        };
        if !config.default_model.trim().is_empty() {
            service
                .resolve(&config.default_model, ModelKind::Chat)
                .map_err(|error| {
                    LlmServiceError::Model(format!("in [llm] default_model: {error}"))
                })?;
        }
        Ok(service)
    }

    /// The same service with in-process models run by `local` (provider `local` becomes
    /// usable). Keeps every user's view, as they share the configuration.
    pub fn with_local_models(mut self, local: Arc<LocalModels>) -> Result<Self, LlmServiceError> {
        let shared = self.shared();
        let next = Shared::build(&shared.config, Arc::clone(&shared.environment), true)?;
        *self.cell.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        self.local = Some(local);
        Ok(self)
    }

    /// The in-process models, when this build has an engine.
    pub fn local_models(&self) -> Option<&Arc<LocalModels>> {
        self.local.as_ref()
    }

    /// The environment the service reads keys from (the daemon's, or a test's own).
    pub(crate) fn environment(&self) -> Environment {
        Arc::clone(&self.shared().environment)
    }

    /// Applies a new `[llm]` section: the next call uses its models, base URLs, timeouts and
    /// CA files. Nothing changes when it is not usable (a CA file that cannot be read, a
    /// default model that does not resolve).
    pub fn reload(&self, config: &LlmConfig) -> Result<(), LlmServiceError> {
        let environment = Arc::clone(&self.shared().environment);
        let local_engine = self.local.is_some() || super::local::default_backend().is_some();
        let next = Shared::build(config, environment, local_engine)?;
        if !config.default_model.trim().is_empty() {
            let resolution = next
                .registry
                .resolve(&config.default_model, ModelKind::Chat);
            if !matches!(resolution, Resolution::Resolved(_)) {
                return Err(LlmServiceError::Model(format!(
                    "in [llm] default_model: {}",
                    resolution.describe()
                )));
            }
        }
        *self.cell.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        tracing::info!("[llm] settings applied");
        Ok(())
    }

    /// The configuration now.
    fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.cell.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The same service acting for `user`: their stored keys, then the environment's.
    pub fn for_user(&self, user: &str) -> Self {
        Self {
            cell: Arc::clone(&self.cell),
            keys: self.keys.for_user(user),
            local: self.local.clone(),
            logins: self.logins.clone(),
        }
    }

    /// Whose stored keys this service uses.
    pub fn user(&self) -> &str {
        self.keys.user()
    }

    /// The encrypted key store (this user's keys).
    pub fn key_store(&self) -> &KeyStore {
        &self.keys
    }

    /// The shared HTTP client and settings.
    pub fn http(&self) -> ProviderHttp {
        self.shared().http.clone()
    }

    /// Configured keys (this user's stored ones, then environment ones for other providers), by
    /// provider.
    pub async fn provider_keys(&self) -> Result<Vec<ProviderKeyInfo>, LlmServiceError> {
        let mut items: Vec<ProviderKeyInfo> = self
            .keys
            .list()
            .await?
            .into_iter()
            // A signed-in account is not a key: its state is at `/v1/me/provider-logins`.
            .filter(|stored| !stored.provider.signs_in())
            .map(|stored| ProviderKeyInfo {
                provider: stored.provider,
                configured: true,
                key_hint: stored.key_hint,
                updated_at: Some(stored.updated_at),
                source: KeySource::Stored,
            })
            .collect();
        for provider in ProviderId::ALL {
            if items.iter().any(|item| item.provider == provider) {
                continue;
            }
            if let Some(key) = self.environment_key(provider) {
                items.push(ProviderKeyInfo {
                    provider,
                    configured: true,
                    key_hint: key.hint(),
                    updated_at: None,
                    source: KeySource::Environment,
                });
            }
        }
        items.sort_by_key(|item| item.provider.as_str());
        Ok(items)
    }

    /// Stores the key of the provider named `provider` (see [`ProviderId::parse`]).
    pub async fn set_provider_key(
        &self,
        provider: &str,
        api_key: &str,
    ) -> Result<ProviderKeyInfo, LlmServiceError> {
        let provider = key_provider(provider)?;
        let api_key = checked_key(api_key)?;
        let stored = self.keys.put(provider, api_key).await?;
        tracing::info!(%provider, user = self.user(), hint = %stored.key_hint, "provider key stored");
        Ok(ProviderKeyInfo {
            provider,
            configured: true,
            key_hint: stored.key_hint,
            updated_at: Some(stored.updated_at),
            source: KeySource::Stored,
        })
    }

    /// Deletes the stored key of `provider` (idempotent; environment keys are not touched).
    pub async fn delete_provider_key(&self, provider: &str) -> Result<(), LlmServiceError> {
        let provider = key_provider(provider)?;
        if self.keys.delete(provider).await? {
            tracing::info!(%provider, user = self.user(), "provider key deleted");
        }
        Ok(())
    }

    /// Checks `provider`'s key (stored or from the environment) with a real one-token request
    /// to its default chat model. The provider's refusal is the answer's `error`; a provider
    /// without a key, or an unknown one, is an `Err`.
    pub async fn test_provider_key(
        &self,
        provider: &str,
    ) -> Result<ProviderKeyTest, LlmServiceError> {
        let provider = key_provider(provider)?;
        let Some((_, model)) = DEFAULT_CHAT_MODELS
            .iter()
            .find(|(candidate, _)| *candidate == provider)
        else {
            return Err(LlmServiceError::Model(format!(
                "provider {provider} has no default chat model to test its key with"
            )));
        };
        let (resolved, client) = self.chat_client(&format!("{provider}/{model}")).await?;
        let mut request =
            super::ChatRequest::new(resolved.model.clone(), vec![super::Message::user("ping")]);
        request.max_tokens = Some(1);
        let outcome = super::complete(client.as_ref(), request, CancellationToken::new()).await;
        tracing::info!(%provider, user = self.user(), ok = outcome.is_ok(), "provider key tested");
        Ok(ProviderKeyTest {
            provider,
            model: resolved.model,
            ok: outcome.is_ok(),
            error: outcome.err().map(|error| error.to_string()),
        })
    }

    /// Names every key this daemon holds to the redactor by its value (stored provider keys of
    /// every user, stored secrets, the environment's provider and service keys), so a key of no
    /// known shape is redacted before this process first uses it. A store that cannot be read
    /// is logged, not fatal: its keys are registered when they are read.
    pub async fn register_keys_for_redaction(&self) {
        if let Err(error) = self.keys.register_for_redaction().await {
            tracing::warn!(%error, "cannot read the stored keys to redact them");
        }
        for provider in ProviderId::ALL {
            if let Some(key) = self.environment_key(provider) {
                crate::redact::register_secret(key.expose());
            }
        }
        for key in service_keys::KNOWN {
            if let Some(value) = self.environment_service_key(*key) {
                crate::redact::register_secret(value.expose());
            }
        }
    }

    fn environment_key(&self, provider: ProviderId) -> Option<ApiKey> {
        provider
            .key_variables()
            .iter()
            .filter_map(|name| (self.shared().environment)(name))
            .map(|value| value.trim().to_owned())
            .find(|value| !value.is_empty())
            .map(ApiKey::new)
    }

    /// The key of `provider`: this user's stored one, else the environment's.
    pub async fn key(&self, provider: ProviderId) -> Result<Option<ApiKey>, LlmServiceError> {
        if let Some(key) = self.keys.get(provider).await? {
            return Ok(Some(key));
        }
        Ok(self.environment_key(provider))
    }

    /// Providers that can be called now.
    pub async fn reachable_providers(&self) -> Result<Vec<ProviderId>, LlmServiceError> {
        let stored: Vec<ProviderId> = self
            .keys
            .list()
            .await?
            .iter()
            .map(|key| key.provider)
            .collect();
        let local: Vec<ProviderId> = self
            .shared()
            .config
            .local()
            .iter()
            .map(|(server, _)| *server)
            .collect();
        Ok(ProviderId::ALL
            .into_iter()
            .filter(|provider| {
                stored.contains(provider)
                    || self.environment_key(*provider).is_some()
                    || local.contains(provider)
            })
            .collect())
    }

    /// How a model name resolves, every outcome told apart (for validation messages).
    pub fn resolution(&self, name: &str, kind: ModelKind) -> Resolution {
        self.shared().registry.resolve(name, kind)
    }

    /// Resolves a model name explicitly.
    pub fn resolve(&self, name: &str, kind: ModelKind) -> Result<ResolvedModel, LlmServiceError> {
        match self.shared().registry.resolve(name, kind) {
            Resolution::Resolved(model) => Ok(model),
            other => Err(LlmServiceError::Model(other.describe())),
        }
    }

    /// Models of `kind` that can be called now.
    pub async fn available_models(
        &self,
        kind: ModelKind,
    ) -> Result<Vec<ResolvedModel>, LlmServiceError> {
        let reachable = self.reachable_providers().await?;
        let local: Vec<ResolvedModel> = self
            .shared()
            .config
            .local()
            .into_iter()
            .map(|(provider, model)| ResolvedModel {
                provider,
                model,
                kind: ModelKind::Chat,
                listed: false,
            })
            .collect();
        Ok(self
            .shared()
            .registry
            .available(kind, |provider| reachable.contains(&provider), &local))
    }

    /// The configured default model, or the first reachable one by priority.
    pub async fn default_model(&self) -> Result<ResolvedModel, LlmServiceError> {
        if !self.shared().config.default_model.trim().is_empty() {
            return self.resolve(&self.shared().config.default_model, ModelKind::Chat);
        }
        let reachable = self.reachable_providers().await?;
        let disabled = self.shared().config.disabled();
        let language = crate::config::system_language(&crate::config::process_lookup);
        for (provider, model) in super::models::default_chat_models(language) {
            if reachable.contains(&provider) && !disabled.contains(&provider) {
                return self.resolve(&format!("{provider}/{model}"), ModelKind::Chat);
            }
        }
        match self
            .shared()
            .config
            .local()
            .into_iter()
            .find(|(server, _)| !disabled.contains(server))
        {
            Some((server, model)) => self.resolve(&format!("{server}/{model}"), ModelKind::Chat),
            None => Err(LlmServiceError::NoModel),
        }
    }

    /// The base URL `[llm]` gives `provider` (also what the voice of that provider calls).
    pub(crate) fn base_url(&self, provider: ProviderId) -> String {
        let shared = self.shared();
        let url = match provider {
            ProviderId::OpenAi => &shared.config.openai_base_url,
            ProviderId::Anthropic => &shared.config.anthropic_base_url,
            ProviderId::Qwen => &shared.config.qwen_base_url,
            ProviderId::AiTunnel => &shared.config.ai_tunnel_base_url,
            ProviderId::Giga => &shared.config.giga_base_url,
            ProviderId::Codex => &shared.config.codex_base_url,
            ProviderId::Ollama => &shared.config.ollama_base_url,
            ProviderId::LmStudio => &shared.config.lm_studio_base_url,
            ProviderId::LlamaCpp | ProviderId::Local => &shared.config.llama_cpp_base_url,
        };
        url.clone()
    }

    async fn required_key(&self, provider: ProviderId) -> Result<Option<ApiKey>, LlmServiceError> {
        if !provider.uses_key() {
            return Ok(None);
        }
        match self.key(provider).await? {
            Some(key) => Ok(Some(key)),
            None => Err(LlmError::MissingKey { provider }.into()),
        }
    }

    /// A chat client for the model named `model`.
    pub async fn chat_client(
        &self,
        model: &str,
    ) -> Result<(ResolvedModel, Arc<dyn LlmClient>), LlmServiceError> {
        let resolved = self.resolve(model, ModelKind::Chat)?;
        let provider = resolved.provider;
        let key = self.required_key(provider).await?;
        let base_url = self.base_url(provider);
        let shared = self.shared();
        let max_tokens = shared.config.max_output_tokens;
        let client: Arc<dyn LlmClient> = match (provider, key) {
            (ProviderId::Local, _) => {
                let local = self.local.as_ref().ok_or_else(|| {
                    LlmServiceError::Model(super::local::LocalError::NotBuilt.to_string())
                })?;
                Arc::new(
                    LocalClient::new(
                        Arc::clone(local),
                        &resolved.model,
                        max_tokens,
                        shared.config.temperature as f32,
                    )
                    .map_err(|error| LlmServiceError::Model(error.to_string()))?,
                )
            }
            (ProviderId::Codex, _) => Arc::new(CodexClient::new(
                shared.http.clone(),
                Arc::clone(&shared.codex),
                base_url,
                self.keys.clone(),
            )),
            (ProviderId::Anthropic, Some(key)) => Arc::new(AnthropicClient::new(
                shared.http.clone(),
                base_url,
                key,
                max_tokens,
            )),
            (ProviderId::Giga, Some(key)) => Arc::new(GigaChatClient::new(
                shared.http.clone(),
                Arc::clone(&shared.giga_auth),
                base_url,
                key,
                max_tokens,
            )),
            (ProviderId::OpenAi, key) => Arc::new(OpenAiClient::new(
                shared.http.clone(),
                OpenAiEndpoint::official(base_url),
                key,
                max_tokens,
            )),
            (other, key) => match preset(other) {
                Some(preset) => Arc::new(OpenAiClient::new(
                    shared.http.clone(),
                    preset.endpoint(base_url),
                    key,
                    max_tokens,
                )),
                None => {
                    return Err(LlmServiceError::Model(format!(
                        "`{model}` cannot be used: provider {other} has no client in this build"
                    )));
                }
            },
        };
        Ok((resolved, client))
    }

    /// An embeddings client for the model named `model` (OpenAI-style endpoints only).
    pub async fn embedding_client(
        &self,
        model: &str,
    ) -> Result<(ResolvedModel, Arc<dyn EmbeddingClient>), LlmServiceError> {
        let resolved = self.resolve(model, ModelKind::Embedding)?;
        let provider = resolved.provider;
        if provider == ProviderId::Local {
            let local = self.local.as_ref().ok_or_else(|| {
                LlmServiceError::Model(super::local::LocalError::NotBuilt.to_string())
            })?;
            return Ok((resolved, Arc::new(LocalEmbeddings::new(Arc::clone(local)))));
        }
        if !(provider == ProviderId::OpenAi || preset(provider).is_some()) {
            return Err(LlmServiceError::Model(format!(
                "`{model}` cannot be used: embeddings are supported on OpenAI-style endpoints only"
            )));
        }
        let key = self.required_key(provider).await?;
        let client = OpenAiEmbeddings::new(
            self.shared().http.clone(),
            provider,
            self.base_url(provider),
            key,
        );
        Ok((resolved, Arc::new(client)))
    }
}

/// Signing in to a provider's account (Codex through ChatGPT).
impl LlmService {
    /// Asks the sign-in service of the provider named `provider` for a device code.
    pub(crate) async fn start_sign_in(
        &self,
        provider: &str,
        cancel: &CancellationToken,
    ) -> Result<DeviceCode, LlmServiceError> {
        sign_in_provider(provider)?;
        Ok(self.shared().codex.auth().start(cancel).await?)
    }

    /// Waits until `code` is entered (or expires, or `cancel` fires), then stores this user's
    /// session.
    pub(crate) async fn finish_sign_in(
        &self,
        code: &DeviceCode,
        pacing: Pacing,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, LoginError> {
        let shared = self.shared();
        let session = login::complete(&shared.codex, &self.keys, code, pacing, cancel).await?;
        Ok(session.email)
    }

    /// Every user's sign-in attempts that wait for a code or ended without signing in.
    pub(crate) fn sign_in_attempts(&self) -> &login::Logins {
        &self.logins
    }

    /// Whether this user is signed in to `provider`, and as which account.
    pub async fn signed_in(
        &self,
        provider: &str,
    ) -> Result<Option<Option<String>>, LlmServiceError> {
        sign_in_provider(provider)?;
        let session = self.shared().codex.stored(&self.keys).await?;
        Ok(session.map(|session| session.email))
    }

    /// Signs this user out of `provider` (idempotent). Souz forgets the tokens; the account
    /// itself stays as it is.
    pub async fn sign_out(&self, provider: &str) -> Result<(), LlmServiceError> {
        sign_in_provider(provider)?;
        if self.shared().codex.remove(&self.keys).await? {
            tracing::info!(%provider, user = self.user(), "signed out");
        }
        Ok(())
    }
}

/// The provider named `name`, when one signs in to it.
fn sign_in_provider(name: &str) -> Result<ProviderId, LlmServiceError> {
    let provider = ProviderId::parse(name)
        .ok_or_else(|| LlmServiceError::UnknownProvider(name.trim().to_owned()))?;
    if !provider.signs_in() {
        return Err(LlmServiceError::NoSignIn(provider));
    }
    Ok(provider)
}

fn key_provider(name: &str) -> Result<ProviderId, LlmServiceError> {
    let provider = ProviderId::parse(name)
        .ok_or_else(|| LlmServiceError::UnknownProvider(name.trim().to_owned()))?;
    if provider.signs_in() {
        return Err(LlmServiceError::SignInInstead(provider));
    }
    if !provider.uses_key() {
        return Err(LlmServiceError::KeylessProvider(provider));
    }
    Ok(provider)
}

/// `api_key` trimmed, as a key: one line of at most [`MAX_KEY_CHARS`] characters.
fn checked_key(api_key: &str) -> Result<ApiKey, LlmServiceError> {
    let api_key = api_key.trim();
    if api_key.is_empty() {
        return Err(LlmServiceError::InvalidKey(
            "apiKey must not be blank.".to_owned(),
        ));
    }
    if api_key.chars().count() > MAX_KEY_CHARS {
        return Err(LlmServiceError::InvalidKey(format!(
            "apiKey must be at most {MAX_KEY_CHARS} characters."
        )));
    }
    if api_key.chars().any(char::is_control) {
        return Err(LlmServiceError::InvalidKey(
            "apiKey must be one line without control characters.".to_owned(),
        ));
    }
    Ok(ApiKey::new(api_key))
}

mod media;
pub(crate) mod service_keys;

pub use media::ImageData;

#[cfg(test)]
mod tests;
