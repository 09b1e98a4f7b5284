//! LLM provider wire types: provider names and the provider-key routes' bodies
//! (`/v1/me/provider-keys`) and the service keys of tools (`/v1/settings/service-keys`). Keys
//! themselves never appear here, only hints.

use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A provider of models.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ProviderId {
    /// OpenAI (Chat Completions).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic (Messages API).
    Anthropic,
    /// Alibaba Qwen through DashScope's OpenAI-compatible endpoint.
    Qwen,
    /// AiTunnel, an OpenAI-compatible gateway.
    AiTunnel,
    /// Sber GigaChat.
    Giga,
    /// A local Ollama server (OpenAI-compatible, no key).
    Ollama,
    /// A local LM Studio server (OpenAI-compatible, no key).
    LmStudio,
    /// A local llama.cpp server (OpenAI-compatible, no key).
    LlamaCpp,
    /// In-process models (MLX on Apple Silicon): not available in this build yet.
    Local,
    /// OpenAI's Codex models through a ChatGPT account (the Responses API at
    /// `chatgpt.com/backend-api/codex`): signed in with a device code, no API key.
    Codex,
}

impl ProviderId {
    /// Whether the provider's chat API takes images in a user message (GigaChat only as
    /// uploaded files, the in-process engines not at all). Whether a given model can look at
    /// them is the provider's to answer.
    pub fn takes_images(self) -> bool {
        !matches!(self, Self::Giga | Self::Local)
    }

    /// Every provider, in listing order.
    pub const ALL: [ProviderId; 10] = [
        Self::AiTunnel,
        Self::Anthropic,
        Self::Codex,
        Self::Giga,
        Self::LlamaCpp,
        Self::LmStudio,
        Self::Local,
        Self::Ollama,
        Self::OpenAi,
        Self::Qwen,
    ];

    /// The name on the wire and in config (`ai_tunnel`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Qwen => "qwen",
            Self::AiTunnel => "ai_tunnel",
            Self::Giga => "giga",
            Self::Ollama => "ollama",
            Self::LmStudio => "lm_studio",
            Self::LlamaCpp => "llama_cpp",
            Self::Local => "local",
            Self::Codex => "codex",
        }
    }

    /// Parses a provider name: case-insensitive, `-` same as `_`, `gigachat` for `giga`.
    pub fn parse(name: &str) -> Option<Self> {
        let normalized = name.trim().to_ascii_lowercase().replace('-', "_");
        match normalized.as_str() {
            "gigachat" => Some(Self::Giga),
            "aitunnel" => Some(Self::AiTunnel),
            "lmstudio" => Some(Self::LmStudio),
            "llamacpp" => Some(Self::LlamaCpp),
            other => Self::ALL.into_iter().find(|id| id.as_str() == other),
        }
    }

    /// Whether the provider is reached with an API key (else: a local server, in-process, or
    /// a signed-in account: [`ProviderId::signs_in`]).
    pub fn uses_key(self) -> bool {
        matches!(
            self,
            Self::OpenAi | Self::Anthropic | Self::Qwen | Self::AiTunnel | Self::Giga
        )
    }

    /// Whether the provider is reached by signing in to an account (a device code shown to the
    /// person, tokens kept encrypted and refreshed by Souz) instead of an API key.
    pub fn signs_in(self) -> bool {
        matches!(self, Self::Codex)
    }

    /// Environment variables that may hold its key, in order of precedence.
    pub fn key_variables(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &["OPENAI_API_KEY"],
            Self::Anthropic => &["ANTHROPIC_API_KEY"],
            Self::Qwen => &["QWEN_KEY", "DASHSCOPE_API_KEY"],
            Self::AiTunnel => &["AITUNNEL_KEY"],
            Self::Giga => &["GIGA_KEY"],
            Self::Ollama | Self::LmStudio | Self::LlamaCpp | Self::Local | Self::Codex => &[],
        }
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a provider's key comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// Stored through the API, encrypted in the database (wins over the environment).
    Stored,
    /// An environment variable of the daemon (`OPENAI_API_KEY`, ...).
    Environment,
}

/// A configured provider key, as clients may see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderKeyInfo {
    /// The provider (`openai`, `ai_tunnel`, ...).
    pub provider: ProviderId,
    /// Always true: only configured keys are listed.
    pub configured: bool,
    /// `...` and the last four characters of the key.
    pub key_hint: String,
    /// When the key was stored; `null` for keys from the environment.
    pub updated_at: Option<DateTime<Utc>>,
    /// Where the key comes from.
    pub source: KeySource,
}

/// `GET /v1/me/provider-keys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderKeyList {
    /// Configured keys, sorted by provider.
    pub items: Vec<ProviderKeyInfo>,
}

/// `PUT /v1/me/provider-keys/{provider}` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PutProviderKey {
    /// The API key (GigaChat: the authorization key). Write-only: never returned.
    #[schemars(extend("writeOnly" = true))]
    pub api_key: String,
}

/// `PUT /v1/me/provider-keys/{provider}` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderKeyResponse {
    /// The stored key's public facts.
    pub provider_key: ProviderKeyInfo,
}

/// `POST /v1/me/provider-keys/{provider}/test` answer: a one-token request to the provider's
/// default chat model with the caller's key, and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderKeyTest {
    /// The provider.
    pub provider: ProviderId,
    /// The model asked.
    pub model: String,
    /// Whether the provider answered.
    pub ok: bool,
    /// Why not, when it failed (the provider's refusal, an unreachable server, ...).
    pub error: Option<String>,
}

/// The keys of services other than model providers that tools use (stored under these names,
/// daemon-wide: `/v1/settings/service-keys/{name}`). `brave`: the Brave Search API, for
/// `InternetSearch` and `InternetResearch`; `telegram`: the Telegram bot's token
/// (`[channels.telegram]`).
pub const SERVICE_KEYS: &[&str] = &["brave", "salute_speech", "telegram"];

/// A configured service key (one of [`SERVICE_KEYS`]), as clients may see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceKeyInfo {
    /// The service (`brave`).
    pub name: String,
    /// What uses it.
    pub used_by: String,
    /// The environment variable the daemon also reads it from.
    pub variable: String,
    /// `...` and the last four characters of the key.
    pub key_hint: String,
    /// When the key was stored; `null` for a key from the environment.
    pub updated_at: Option<DateTime<Utc>>,
    /// Where the key comes from.
    pub source: KeySource,
}

/// `GET /v1/settings/service-keys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceKeyList {
    /// Configured keys, sorted by name (services without a key are not listed).
    pub items: Vec<ServiceKeyInfo>,
}

/// `POST /v1/settings/service-keys/{name}/test` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceKeyTest {
    /// The service.
    pub name: String,
    /// Whether the service accepted the key and answered.
    pub ok: bool,
    /// Why not, when it failed (a refused key, an unreachable service, ...).
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_parse_leniently() {
        for provider in ProviderId::ALL {
            let json = serde_json::to_value(provider).unwrap();
            assert_eq!(
                json,
                serde_json::Value::String(provider.as_str().to_owned())
            );
            assert_eq!(ProviderId::parse(provider.as_str()), Some(provider));
            assert_eq!(
                ProviderId::parse(&provider.as_str().to_uppercase().replace('_', "-")),
                Some(provider)
            );
        }
        assert_eq!(ProviderId::parse("GigaChat"), Some(ProviderId::Giga));
        assert_eq!(ProviderId::parse("AI-TUNNEL"), Some(ProviderId::AiTunnel));
        assert_eq!(ProviderId::parse("mistral"), None);
        let mut sorted = ProviderId::ALL.map(ProviderId::as_str);
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            ProviderId::ALL.map(ProviderId::as_str),
            "ALL is in name order"
        );
    }

    #[test]
    fn key_info_uses_the_original_field_names() {
        let info = ProviderKeyInfo {
            provider: ProviderId::AiTunnel,
            configured: true,
            key_hint: "...abcd".into(),
            updated_at: None,
            source: KeySource::Environment,
        };
        let json = serde_json::to_value(&info).unwrap();
        assert_eq!(json["provider"], "ai_tunnel");
        assert_eq!(json["keyHint"], "...abcd");
        assert!(json["updatedAt"].is_null());
        assert_eq!(json["source"], "environment");
        let body: PutProviderKey = serde_json::from_str(r#"{"apiKey":"k"}"#).unwrap();
        assert_eq!(body.api_key, "k");
    }
}

/// Where a provider sign-in stands (`/v1/me/provider-logins/{provider}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderLoginState {
    /// Not signed in, and no sign-in is waiting.
    SignedOut,
    /// A code was shown; Souz waits for the person to enter it at the verification page.
    Pending,
    /// Signed in: the provider's models can be used.
    SignedIn,
    /// The code expired before it was entered: start again.
    Expired,
    /// The sign-in failed (refused, or the provider could not be reached); `error` says why.
    Failed,
}

/// `POST /v1/me/provider-logins/{provider}` answer and `GET` answer: the sign-in's state and,
/// while it waits, the code to enter and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderLogin {
    /// The provider (`codex`).
    pub provider: ProviderId,
    /// Where the sign-in stands.
    pub state: ProviderLoginState,
    /// The page where the person enters the code (while `pending`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_url: Option<String>,
    /// The one-time code to enter there (while `pending`). Not a secret on its own, but
    /// never share it: whoever enters it signs this Souz in to their account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_code: Option<String>,
    /// When the code stops working (while `pending`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// The signed-in account, when the provider names it (an e-mail address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// Why the sign-in failed (when `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
