//! OpenAI-compatible endpoints: the Chat Completions client of [`super::openai`] pointed at
//! another base URL, with the quirks of each known server.
//!
//! Presets: Qwen through DashScope's compatible mode, AiTunnel, and the local servers Ollama,
//! LM Studio and the llama.cpp server (no key). Any other compatible server can be used
//! through the OpenAI provider with a different `openai_base_url`.

use super::ProviderId;
use super::openai::OpenAiEndpoint;

/// DashScope's OpenAI-compatible mode (international).
pub(crate) const QWEN_BASE_URL: &str = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1";
/// AiTunnel.
pub(crate) const AI_TUNNEL_BASE_URL: &str = "https://api.aitunnel.ru/v1";
/// Ollama's default local address.
pub(crate) const OLLAMA_BASE_URL: &str = "http://127.0.0.1:11434/v1";
/// LM Studio's default local address.
pub(crate) const LM_STUDIO_BASE_URL: &str = "http://127.0.0.1:1234/v1";
/// The llama.cpp server's default local address.
pub(crate) const LLAMA_CPP_BASE_URL: &str = "http://127.0.0.1:8080/v1";

/// A compatible provider's preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Preset {
    /// The provider.
    pub provider: ProviderId,
    /// Where it listens unless configured otherwise.
    pub default_base_url: &'static str,
    /// Whether requests carry a bearer key.
    pub needs_key: bool,
    /// Whether `parallel_tool_calls: true` must be sent to get several calls at once.
    pub parallel_tool_calls: bool,
}

/// Every compatible preset.
pub(crate) const PRESETS: [Preset; 5] = [
    Preset {
        provider: ProviderId::Qwen,
        default_base_url: QWEN_BASE_URL,
        needs_key: true,
        parallel_tool_calls: true,
    },
    Preset {
        provider: ProviderId::AiTunnel,
        default_base_url: AI_TUNNEL_BASE_URL,
        needs_key: true,
        parallel_tool_calls: false,
    },
    Preset {
        provider: ProviderId::Ollama,
        default_base_url: OLLAMA_BASE_URL,
        needs_key: false,
        parallel_tool_calls: false,
    },
    Preset {
        provider: ProviderId::LmStudio,
        default_base_url: LM_STUDIO_BASE_URL,
        needs_key: false,
        parallel_tool_calls: false,
    },
    Preset {
        provider: ProviderId::LlamaCpp,
        default_base_url: LLAMA_CPP_BASE_URL,
        needs_key: false,
        parallel_tool_calls: false,
    },
];

/// The preset of `provider`, if it is OpenAI-compatible.
pub(crate) fn preset(provider: ProviderId) -> Option<Preset> {
    PRESETS
        .into_iter()
        .find(|preset| preset.provider == provider)
}

impl Preset {
    /// The Chat Completions endpoint of this preset at `base_url`.
    pub(crate) fn endpoint(&self, base_url: impl Into<String>) -> OpenAiEndpoint {
        OpenAiEndpoint {
            provider: self.provider,
            base_url: base_url.into(),
            official: false,
            parallel_tool_calls: self.parallel_tool_calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compatible_provider_has_one_preset_and_only_local_ones_skip_keys() {
        for preset in PRESETS {
            assert_eq!(
                preset.needs_key,
                preset.provider.uses_key(),
                "{}",
                preset.provider
            );
            assert!(!preset.endpoint(preset.default_base_url).official);
        }
        assert!(preset(ProviderId::Qwen).unwrap().parallel_tool_calls);
        assert!(preset(ProviderId::OpenAi).is_none());
        assert!(preset(ProviderId::Anthropic).is_none());
    }
}
