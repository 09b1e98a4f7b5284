//! `[llm]`: the default model, where each provider is, and how model calls are timed and
//! retried. Provider keys are not here: they are stored encrypted through the API or read
//! from the environment (`OPENAI_API_KEY`, ...).

use std::collections::BTreeMap;

use souz_protocol::ProviderId;

use super::section::{Invalid, config_section};

config_section! {
    /// Language models: the default model, provider endpoints, timeouts and retries.
    /// Provider keys are not kept here: store them with `PUT /v1/me/provider-keys/{provider}`
    /// or set OPENAI_API_KEY, ANTHROPIC_API_KEY, QWEN_KEY (or DASHSCOPE_API_KEY), AITUNNEL_KEY
    /// or GIGA_KEY.
    #[section = "llm"]
    pub struct LlmConfig {
        /// Model used when a chat names none: a listed model (`gpt-5-mini`), an alias, or
        /// `provider/model` (`ollama/llama3.2`). Empty: the first provider with a key (or a
        /// signed-in account) in the order codex, openai, anthropic, qwen, ai_tunnel, giga
        /// (ai_tunnel, giga, qwen, openai, anthropic, codex in Russian), then the first of
        /// `local_models`.
        pub default_model: String = String::new(),
        /// Your own names for models: an inline table from a name to a listed model or
        /// `provider/model` (for example fast mapped to "openai/gpt-5-mini").
        pub aliases: BTreeMap<String, String> = BTreeMap::new(),
        /// Local models: on local OpenAI-compatible servers as `provider/model` with provider
        /// ollama, lm_studio or llama_cpp (e.g. "ollama/llama3.2"), or run in process as
        /// `local/<profile>` (e.g. "local/qwen3-4b-instruct-2507"; `souz models list`).
        /// Listing one enables its server.
        pub local_models: Vec<String> = Vec::new(),
        /// Providers never to use, even when a key is available (e.g. ["giga"]).
        pub disabled_providers: Vec<String> = Vec::new(),
        /// OpenAI's API, or any OpenAI-compatible server used as provider `openai`.
        pub openai_base_url: String = "https://api.openai.com/v1".to_owned(),
        /// Anthropic's API.
        pub anthropic_base_url: String = "https://api.anthropic.com/v1".to_owned(),
        /// Qwen through DashScope's OpenAI-compatible mode.
        pub qwen_base_url: String =
            "https://dashscope-intl.aliyuncs.com/compatible-mode/v1".to_owned(),
        /// AiTunnel's OpenAI-compatible API.
        pub ai_tunnel_base_url: String = "https://api.aitunnel.ru/v1".to_owned(),
        /// GigaChat's API.
        pub giga_base_url: String = "https://api.giga.chat/v1".to_owned(),
        /// GigaChat's OAuth endpoint (exchanges the authorization key for access tokens).
        pub giga_auth_url: String = "https://ngw.devices.sberbank.ru:9443/api/v2/oauth".to_owned(),
        /// GigaChat OAuth scope: GIGACHAT_API_PERS, GIGACHAT_API_B2B or GIGACHAT_API_CORP.
        pub giga_scope: String = "GIGACHAT_API_PERS".to_owned(),
        /// Codex through a ChatGPT account: the Responses API (`POST {url}/responses`).
        pub codex_base_url: String = "https://chatgpt.com/backend-api/codex".to_owned(),
        /// Codex's sign-in service: device codes (`{url}/api/accounts/deviceauth/...`) and
        /// tokens (`{url}/oauth/token`).
        pub codex_auth_url: String = "https://auth.openai.com".to_owned(),
        /// Ollama's OpenAI-compatible endpoint.
        pub ollama_base_url: String = "http://127.0.0.1:11434/v1".to_owned(),
        /// LM Studio's OpenAI-compatible endpoint.
        pub lm_studio_base_url: String = "http://127.0.0.1:1234/v1".to_owned(),
        /// The llama.cpp server's OpenAI-compatible endpoint.
        pub llama_cpp_base_url: String = "http://127.0.0.1:8080/v1".to_owned(),
        /// PEM files of extra root certificates to trust for provider connections (GigaChat's
        /// servers use the Russian Trusted Root CA, which most systems lack).
        pub extra_ca_files: Vec<String> = Vec::new(),
        /// Longest a model call may take, streaming included, in seconds.
        pub request_timeout_seconds: u64 = 400,
        /// Longest wait for a connection to a provider, in seconds.
        pub connect_timeout_seconds: u64 = 10,
        /// Longest silence inside a streamed answer before it counts as stalled, in seconds.
        pub stream_idle_timeout_seconds: u64 = 120,
        /// Retries of a call refused with 429 or 5xx, or whose connection failed.
        pub max_retries: u32 = 2,
        /// First retry delay in milliseconds; doubled per retry. A `Retry-After` from the
        /// provider is used instead when it sends one.
        pub retry_backoff_base_ms: u64 = 500,
        /// Longest retry delay in milliseconds. When a provider asks to wait longer, the call
        /// fails at once and says how long to wait.
        pub retry_backoff_max_ms: u64 = 5000,
        /// Context window assumed for models, in tokens.
        pub context_size: u32 = 16000,
        /// Most tokens one answer may have (the completion budget, not the context size).
        pub max_output_tokens: u32 = 4096,
        /// Sampling temperature for providers that accept one (0 to 2).
        pub temperature: f64 = 0.7,
        /// Where the key that encrypts stored provider keys is kept: "auto" (the OS keychain
        /// where one answers — the macOS Keychain, a Secret Service such as GNOME Keyring —
        /// else an owner-only file in the Souz home) or "file" (always the file). A key
        /// already kept in a file stays there.
        pub key_storage: String = "auto".to_owned(),
        /// In-process local models are unloaded after this many seconds without use.
        pub local_idle_unload_seconds: u64 = 300,
        /// Threads of in-process local models; 0 uses every core.
        pub local_threads: u32 = 0,
        /// Where `souz models pull` fetches in-process models from: a URL under which each
        /// profile's file is served as `<url>/<profile>/<file>` (a mirror inside your network).
        /// Only profiles with a pinned checksum are fetched, and the checksum is checked.
        pub local_model_mirror: String = String::new(),
        /// The model hub `souz models pull` asks when no mirror is set: Hugging Face, or a
        /// mirror that speaks its API (such as https://hf-mirror.com). Each model is pinned to
        /// a commit there, and each file is checked against the hub's own digest for that
        /// commit (the SHA-256 of a large file, the git blob id of a small one). The speech
        /// models (`[speech] local_model`) are fetched from here too.
        pub local_model_hub: String = "https://huggingface.co".to_owned(),
    }
}

/// Values `[llm] key_storage` accepts.
pub(crate) const KEY_STORAGES: &[&str] = &["auto", "file"];

/// What `local_models` accepts: the local servers, and `local` (in process).
const LOCAL_PROVIDERS: [ProviderId; 4] = [
    ProviderId::Ollama,
    ProviderId::LmStudio,
    ProviderId::LlamaCpp,
    ProviderId::Local,
];

impl LlmConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        for (key, url) in [
            ("openai_base_url", &self.openai_base_url),
            ("anthropic_base_url", &self.anthropic_base_url),
            ("qwen_base_url", &self.qwen_base_url),
            ("ai_tunnel_base_url", &self.ai_tunnel_base_url),
            ("giga_base_url", &self.giga_base_url),
            ("giga_auth_url", &self.giga_auth_url),
            ("codex_base_url", &self.codex_base_url),
            ("codex_auth_url", &self.codex_auth_url),
            ("ollama_base_url", &self.ollama_base_url),
            ("lm_studio_base_url", &self.lm_studio_base_url),
            ("llama_cpp_base_url", &self.llama_cpp_base_url),
        ] {
            let url = url.trim();
            let valid = (url.starts_with("https://") || url.starts_with("http://"))
                && url.len() > "https://".len()
                && !url.contains(char::is_whitespace);
            if !valid {
                problems.push(Invalid::new(key, format!("`{url}` is not an http(s) URL")));
            }
        }
        problems.extend(self.mirror_problem());
        if self.giga_scope.trim().is_empty() || self.giga_scope.contains(['&', '=', ' ']) {
            problems.push(Invalid::new(
                "giga_scope",
                "must be a scope name such as GIGACHAT_API_PERS",
            ));
        }
        for model in &self.local_models {
            if let Err(message) = local_model(model) {
                problems.push(Invalid::new("local_models", message));
            }
        }
        for name in &self.disabled_providers {
            if ProviderId::parse(name).is_none() {
                problems.push(Invalid::new(
                    "disabled_providers",
                    format!("`{name}` is not a provider; known: {}", provider_names()),
                ));
            }
        }
        for (alias, target) in &self.aliases {
            if alias.trim().is_empty() || alias.contains('/') {
                problems.push(Invalid::new(
                    "aliases",
                    format!("`{alias}` cannot be an alias name"),
                ));
            }
            if target.trim().is_empty() {
                problems.push(Invalid::new(
                    "aliases",
                    format!("alias `{alias}` points at nothing"),
                ));
            }
        }
        for (key, value) in [
            ("request_timeout_seconds", self.request_timeout_seconds),
            ("connect_timeout_seconds", self.connect_timeout_seconds),
            (
                "stream_idle_timeout_seconds",
                self.stream_idle_timeout_seconds,
            ),
            ("retry_backoff_base_ms", self.retry_backoff_base_ms),
            ("local_idle_unload_seconds", self.local_idle_unload_seconds),
        ] {
            if value == 0 {
                problems.push(Invalid::new(key, "must be at least 1"));
            }
        }
        if self.retry_backoff_max_ms < self.retry_backoff_base_ms {
            problems.push(Invalid::new(
                "retry_backoff_max_ms",
                "must be at least retry_backoff_base_ms",
            ));
        }
        if self.max_retries > 10 {
            problems.push(Invalid::new("max_retries", "must be at most 10"));
        }
        if self.context_size == 0 {
            problems.push(Invalid::new("context_size", "must be at least 1"));
        }
        if self.max_output_tokens == 0 || self.max_output_tokens > self.context_size {
            problems.push(Invalid::new(
                "max_output_tokens",
                "must be between 1 and context_size",
            ));
        }
        if !(self.temperature.is_finite() && (0.0..=2.0).contains(&self.temperature)) {
            problems.push(Invalid::new("temperature", "must be between 0 and 2"));
        }
        if !KEY_STORAGES.contains(&self.key_storage.as_str()) {
            problems.push(Invalid::new(
                "key_storage",
                format!("must be one of {}", KEY_STORAGES.join(", ")),
            ));
        }
        problems
    }

    fn mirror_problem(&self) -> Vec<Invalid> {
        let not_url = |url: &str| {
            !(url.starts_with("http://") || url.starts_with("https://"))
                || url.chars().any(|c| c.is_whitespace() || c.is_control())
        };
        let mut problems = Vec::new();
        let mirror = &self.local_model_mirror;
        if !mirror.is_empty() && not_url(mirror) {
            problems.push(Invalid::new(
                "local_model_mirror",
                format!("`{mirror}` is not an http:// or https:// URL"),
            ));
        }
        let hub = &self.local_model_hub;
        if not_url(hub) {
            problems.push(Invalid::new(
                "local_model_hub",
                format!("`{hub}` is not an http:// or https:// URL"),
            ));
        }
        problems
    }

    /// The disabled providers (invalid names are reported by validation).
    pub fn disabled(&self) -> Vec<ProviderId> {
        self.disabled_providers
            .iter()
            .filter_map(|name| ProviderId::parse(name))
            .collect()
    }

    /// The configured local models as (server, model).
    pub fn local(&self) -> Vec<(ProviderId, String)> {
        self.local_models
            .iter()
            .filter_map(|model| local_model(model).ok())
            .collect()
    }
}

fn provider_names() -> String {
    ProviderId::ALL.map(ProviderId::as_str).join(", ")
}

fn local_model(text: &str) -> Result<(ProviderId, String), String> {
    let shape = || {
        format!(
            "`{text}` is not `server/model` with server ollama, lm_studio or llama_cpp, nor \
             `local/<profile>`"
        )
    };
    let (server, model) = text.trim().split_once('/').ok_or_else(shape)?;
    let server = ProviderId::parse(server)
        .filter(|p| LOCAL_PROVIDERS.contains(p))
        .ok_or_else(shape)?;
    if model.trim().is_empty() {
        return Err(shape());
    }
    Ok((server, model.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::section::Section;

    #[test]
    fn defaults_are_valid_and_problems_name_their_key() {
        assert_eq!(LlmConfig::default().validate(), vec![]);
        let config = LlmConfig {
            openai_base_url: "api.openai.com".into(),
            local_models: vec![
                "ollama/llama3.2".into(),
                "local/smollm2-135m-instruct".into(),
                "openai/gpt".into(),
                "ollama/".into(),
            ],
            disabled_providers: vec!["nosuch".into()],
            retry_backoff_base_ms: 600,
            retry_backoff_max_ms: 500,
            max_output_tokens: 20_000,
            temperature: 3.0,
            local_model_hub: "hf-mirror.com".into(),
            ..LlmConfig::default()
        };
        let keys: Vec<&str> = config
            .validate()
            .iter()
            .map(|problem| problem.key)
            .collect();
        assert_eq!(
            keys,
            [
                "openai_base_url",
                "local_model_hub",
                "local_models",
                "local_models",
                "disabled_providers",
                "retry_backoff_max_ms",
                "max_output_tokens",
                "temperature"
            ]
        );
        assert_eq!(
            config.local(),
            [
                (ProviderId::Ollama, "llama3.2".to_owned()),
                (ProviderId::Local, "smollm2-135m-instruct".to_owned())
            ]
        );
    }
}
