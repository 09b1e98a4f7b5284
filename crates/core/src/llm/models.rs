//! The model registry: which models exist, under which names, and how a name someone typed
//! resolves.
//!
//! Invariants:
//! - Resolution has four explicit outcomes: [`Resolution::Resolved`], `Unknown`, `Ambiguous`
//!   and `Unsupported`. A name never silently becomes another model: an ambiguous name (one
//!   alias, two providers) is an error listing the qualified names to use instead.
//! - `provider/model` always resolves to exactly that model of that provider, listed in the
//!   catalog or not (providers ship models faster than any catalog), unless the provider is
//!   disabled or not available in this build.
//! - Listing is key-aware: only models whose provider is reachable (a key, or a configured
//!   local server) are offered.

use std::collections::BTreeMap;

use super::ProviderId;

/// What a model does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// Chat completions.
    Chat,
    /// Text embeddings.
    Embedding,
}

impl ModelKind {
    fn noun(self) -> &'static str {
        match self {
            Self::Chat => "a chat model",
            Self::Embedding => "an embedding model",
        }
    }
}

/// A catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelInfo {
    /// The provider's name for the model.
    pub id: &'static str,
    /// Who serves it.
    pub provider: ProviderId,
    /// What it does.
    pub kind: ModelKind,
    /// Other names that resolve to it (legacy names, short forms).
    pub aliases: &'static [&'static str],
}

const fn chat(
    provider: ProviderId,
    id: &'static str,
    aliases: &'static [&'static str],
) -> ModelInfo {
    ModelInfo {
        id,
        provider,
        kind: ModelKind::Chat,
        aliases,
    }
}

const fn embedding(provider: ProviderId, id: &'static str) -> ModelInfo {
    ModelInfo {
        id,
        provider,
        kind: ModelKind::Embedding,
        aliases: &[],
    }
}

use ProviderId::{AiTunnel, Anthropic, Codex, Giga, Local, OpenAi, Qwen};

/// Every known model.
pub(crate) const CATALOG: &[ModelInfo] = &[
    chat(OpenAi, "gpt-5.2", &[]),
    chat(OpenAi, "gpt-5-mini", &[]),
    embedding(OpenAi, "text-embedding-3-small"),
    chat(Anthropic, "claude-opus-4-5", &[]),
    chat(Anthropic, "claude-opus-4-6", &[]),
    chat(
        Anthropic,
        "claude-sonnet-4-5-20250929",
        &["claude-sonnet-4-5"],
    ),
    chat(
        Anthropic,
        "claude-haiku-4-5-20251001",
        &["claude-haiku-4-5"],
    ),
    chat(Qwen, "qwen-flash", &[]),
    chat(Qwen, "qwen-plus", &[]),
    chat(Qwen, "qwen3-vl-32b-instruct", &[]),
    chat(Qwen, "qwen-max", &[]),
    embedding(Qwen, "text-embedding-v3"),
    chat(AiTunnel, "gpt-4o-mini", &[]),
    chat(AiTunnel, "gpt-5.4-mini", &[]),
    chat(AiTunnel, "gemini-3.6-flash", &[]),
    chat(AiTunnel, "gemini-3.5-flash-lite", &[]),
    chat(AiTunnel, "claude-opus-4.8", &[]),
    chat(AiTunnel, "claude-haiku-4.5", &[]),
    chat(AiTunnel, "claude-fable-5", &[]),
    chat(AiTunnel, "kimi-k3", &[]),
    embedding(AiTunnel, "text-embedding-3-small"),
    embedding(AiTunnel, "text-embedding-ada-002"),
    embedding(AiTunnel, "qwen3-embedding-8b"),
    chat(Giga, "GigaChat-2", &["GigaChat"]),
    chat(Giga, "GigaChat-2-Pro", &[]),
    chat(Giga, "GigaChat-2-Max", &[]),
    chat(Giga, "GigaChat-3-Ultra", &[]),
    embedding(Giga, "Embeddings"),
    chat(Codex, "gpt-5.2-codex", &[]),
    chat(Codex, "gpt-5.1-codex-mini", &[]),
    chat(Local, "local-qwen3-4b-instruct-2507", &[]),
    chat(Local, "local-gemma-4-e2b-it", &[]),
    chat(Local, "local-gemma-4-e4b-it", &[]),
    embedding(Local, "local-embeddinggemma-300m"),
];

/// Providers with keys (or a signed-in account), in the order a default model is picked, with
/// their default model. The original offered Codex through a ChatGPT account first in its
/// English-region defaults.
pub(crate) const DEFAULT_CHAT_MODELS: [(ProviderId, &str); 6] = [
    (Codex, "gpt-5.2-codex"),
    (OpenAi, "gpt-5-mini"),
    (Anthropic, "claude-haiku-4-5-20251001"),
    (Qwen, "qwen-max"),
    (AiTunnel, "claude-haiku-4.5"),
    (Giga, "GigaChat-2-Max"),
];

/// [`DEFAULT_CHAT_MODELS`] in the order of the system language's region (the original's
/// region priorities): Russian puts AI Tunnel, GigaChat and Qwen first (Codex last); English
/// keeps Codex, OpenAI, Anthropic and Qwen first.
pub(crate) fn default_chat_models(
    language: souz_protocol::language::Language,
) -> [(ProviderId, &'static str); 6] {
    const RU_ORDER: [ProviderId; 6] = [AiTunnel, Giga, Qwen, OpenAi, Anthropic, Codex];
    let mut models = DEFAULT_CHAT_MODELS;
    if language == souz_protocol::language::Language::Ru {
        models.sort_by_key(|(provider, _)| RU_ORDER.iter().position(|wanted| wanted == provider));
    }
    models
}

/// A model ready to call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedModel {
    /// Who serves it.
    pub provider: ProviderId,
    /// The provider's name for it.
    pub model: String,
    /// What it does.
    pub kind: ModelKind,
    /// Whether it is in the catalog (else it was named explicitly as `provider/model`).
    pub listed: bool,
}

impl ResolvedModel {
    /// `provider/model`, the unambiguous name.
    pub fn qualified(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// What a model name means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Exactly one model.
    Resolved(ResolvedModel),
    /// No model has this name.
    Unknown {
        /// The name.
        name: String,
        /// Close names, if any.
        suggestions: Vec<String>,
    },
    /// Several models have this name.
    Ambiguous {
        /// The name.
        name: String,
        /// The qualified names to choose from.
        candidates: Vec<String>,
    },
    /// The model exists but cannot be used here.
    Unsupported {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
}

impl Resolution {
    /// A sentence for people.
    pub fn describe(&self) -> String {
        match self {
            Self::Resolved(model) => format!("resolves to {}", model.qualified()),
            Self::Unknown { name, suggestions } if suggestions.is_empty() => {
                format!("`{name}` is not a known model; use a listed model or `provider/model`")
            }
            Self::Unknown { name, suggestions } => format!(
                "`{name}` is not a known model; did you mean {}?",
                suggestions.join(", ")
            ),
            Self::Ambiguous { name, candidates } => format!(
                "`{name}` is ambiguous; use one of {}",
                candidates.join(", ")
            ),
            Self::Unsupported { name, reason } => format!("`{name}` cannot be used: {reason}"),
        }
    }
}

/// The catalog plus configured aliases and disabled providers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelRegistry {
    aliases: BTreeMap<String, String>,
    disabled: Vec<ProviderId>,
    /// Whether this build runs local models in process (provider `local`).
    local_engine: bool,
}

impl ModelRegistry {
    /// A registry with the user's `aliases` (lower-cased name → target name) and
    /// `disabled` providers.
    pub(crate) fn new(aliases: &BTreeMap<String, String>, disabled: Vec<ProviderId>) -> Self {
        Self {
            aliases: aliases
                .iter()
                .map(|(alias, target)| (alias.trim().to_lowercase(), target.trim().to_owned()))
                .collect(),
            disabled,
            local_engine: false,
        }
    }

    /// The registry with in-process local models enabled (this build has an engine).
    pub(crate) fn with_local_engine(mut self, enabled: bool) -> Self {
        self.local_engine = enabled;
        self
    }

    fn unusable(&self, provider: ProviderId) -> Option<String> {
        if provider == ProviderId::Local && !self.local_engine {
            return Some(
                "in-process local models are not available in this build (built without local \
                 models, the `local-llm` feature); use ollama, lm_studio or llama_cpp through \
                 `local_models`"
                    .to_owned(),
            );
        }
        self.disabled
            .contains(&provider)
            .then(|| format!("provider {provider} is disabled ([llm] disabled_providers)"))
    }

    /// Resolves `name` to a model of `kind`.
    pub(crate) fn resolve(&self, name: &str, kind: ModelKind) -> Resolution {
        let name = name.trim();
        if let Some(target) = self.aliases.get(&name.to_lowercase()) {
            // Aliases point at real names; an alias of an alias is not followed.
            return match Self::plain(self, target, kind) {
                Resolution::Resolved(model) => Resolution::Resolved(model),
                other => Resolution::Unsupported {
                    name: name.to_owned(),
                    reason: format!("its alias target {}", other.describe()),
                },
            };
        }
        self.plain(name, kind)
    }

    fn plain(&self, name: &str, kind: ModelKind) -> Resolution {
        if name.is_empty() {
            return Resolution::Unknown {
                name: String::new(),
                suggestions: Vec::new(),
            };
        }
        if let Some((prefix, model)) = name.split_once('/')
            && let Some(provider) = ProviderId::parse(prefix)
        {
            let model = model.trim();
            if model.is_empty() {
                return Resolution::Unknown {
                    name: name.to_owned(),
                    suggestions: Vec::new(),
                };
            }
            if let Some(reason) = self.unusable(provider) {
                return Resolution::Unsupported {
                    name: name.to_owned(),
                    reason,
                };
            }
            let listed = CATALOG.iter().find(|info| {
                info.provider == provider
                    && (info.id.eq_ignore_ascii_case(model)
                        || info
                            .aliases
                            .iter()
                            .any(|alias| alias.eq_ignore_ascii_case(model)))
            });
            return match listed {
                Some(info) if info.kind != kind => Resolution::Unsupported {
                    name: name.to_owned(),
                    reason: format!("it is {}, not {}", info.kind.noun(), kind.noun()),
                },
                Some(info) => Resolution::Resolved(resolved(info)),
                None => Resolution::Resolved(ResolvedModel {
                    provider,
                    model: model.to_owned(),
                    kind,
                    listed: false,
                }),
            };
        }
        let mut candidates: Vec<&ModelInfo> = CATALOG
            .iter()
            .filter(|info| info.id.eq_ignore_ascii_case(name))
            .collect();
        if candidates.is_empty() {
            candidates = CATALOG
                .iter()
                .filter(|info| {
                    info.aliases
                        .iter()
                        .any(|alias| alias.eq_ignore_ascii_case(name))
                })
                .collect();
        }
        if candidates.is_empty() {
            return Resolution::Unknown {
                name: name.to_owned(),
                suggestions: suggestions(name, kind),
            };
        }
        let of_kind: Vec<&ModelInfo> = candidates
            .iter()
            .copied()
            .filter(|info| info.kind == kind)
            .collect();
        match of_kind.as_slice() {
            [] => Resolution::Unsupported {
                name: name.to_owned(),
                reason: format!("it is {}, not {}", candidates[0].kind.noun(), kind.noun()),
            },
            [only] => match self.unusable(only.provider) {
                Some(reason) => Resolution::Unsupported {
                    name: name.to_owned(),
                    reason,
                },
                None => Resolution::Resolved(resolved(only)),
            },
            several => Resolution::Ambiguous {
                name: name.to_owned(),
                candidates: several
                    .iter()
                    .map(|info| format!("{}/{}", info.provider, info.id))
                    .collect(),
            },
        }
    }

    /// Catalog models of `kind` whose provider `reachable` says can be called, plus `extra`
    /// (configured local models), catalog order.
    pub(crate) fn available(
        &self,
        kind: ModelKind,
        reachable: impl Fn(ProviderId) -> bool,
        extra: &[ResolvedModel],
    ) -> Vec<ResolvedModel> {
        CATALOG
            .iter()
            .filter(|info| info.kind == kind && self.unusable(info.provider).is_none())
            .filter(|info| reachable(info.provider))
            .map(resolved)
            .chain(
                extra
                    .iter()
                    .filter(|model| model.kind == kind && self.unusable(model.provider).is_none())
                    .cloned(),
            )
            .collect()
    }
}

fn resolved(info: &ModelInfo) -> ResolvedModel {
    ResolvedModel {
        provider: info.provider,
        model: info.id.to_owned(),
        kind: info.kind,
        listed: true,
    }
}

fn suggestions(name: &str, kind: ModelKind) -> Vec<String> {
    let needle = name.to_lowercase();
    let prefix: String = needle.chars().take(4).collect();
    let mut found: Vec<String> = CATALOG
        .iter()
        .filter(|info| info.kind == kind)
        .filter(|info| {
            let id = info.id.to_lowercase();
            id.contains(&needle) || (prefix.chars().count() == 4 && id.starts_with(&prefix))
        })
        .map(|info| format!("{}/{}", info.provider, info.id))
        .collect();
    found.truncate(5);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> ModelRegistry {
        let aliases = BTreeMap::from([
            ("fast".to_owned(), "openai/gpt-5-mini".to_owned()),
            ("broken".to_owned(), "nobody-knows".to_owned()),
        ]);
        ModelRegistry::new(&aliases, vec![ProviderId::Giga])
    }

    fn model(resolution: Resolution) -> ResolvedModel {
        match resolution {
            Resolution::Resolved(model) => model,
            other => panic!("expected a model, got {other:?}"),
        }
    }

    #[test]
    fn exact_names_aliases_and_qualified_names_resolve() {
        let registry = registry();
        let haiku = model(registry.resolve(" claude-haiku-4-5 ", ModelKind::Chat));
        assert_eq!(haiku.qualified(), "anthropic/claude-haiku-4-5-20251001");
        assert!(haiku.listed);
        assert_eq!(
            model(registry.resolve("QWEN-MAX", ModelKind::Chat)).qualified(),
            "qwen/qwen-max"
        );
        assert_eq!(
            model(registry.resolve("Fast", ModelKind::Chat)).qualified(),
            "openai/gpt-5-mini"
        );
        let custom = model(registry.resolve("ollama/llama3.2", ModelKind::Chat));
        assert_eq!(custom.provider, ProviderId::Ollama);
        assert_eq!(custom.model, "llama3.2");
        assert!(!custom.listed);
        let new_openai = model(registry.resolve("openai/gpt-9", ModelKind::Chat));
        assert_eq!(
            (new_openai.provider, new_openai.listed),
            (ProviderId::OpenAi, false)
        );
    }

    #[test]
    fn unknown_ambiguous_and_unsupported_are_explicit() {
        let registry = registry();
        let Resolution::Unknown { suggestions, .. } =
            registry.resolve("gpt-5-min", ModelKind::Chat)
        else {
            panic!("expected unknown");
        };
        assert!(
            suggestions.contains(&"openai/gpt-5-mini".to_owned()),
            "{suggestions:?}"
        );
        assert!(matches!(
            registry.resolve("", ModelKind::Chat),
            Resolution::Unknown { .. }
        ));

        let Resolution::Ambiguous { candidates, .. } =
            registry.resolve("text-embedding-3-small", ModelKind::Embedding)
        else {
            panic!("expected ambiguity");
        };
        assert_eq!(
            candidates,
            [
                "openai/text-embedding-3-small",
                "ai_tunnel/text-embedding-3-small"
            ]
        );
        assert_eq!(
            model(registry.resolve("ai_tunnel/text-embedding-3-small", ModelKind::Embedding))
                .provider,
            ProviderId::AiTunnel
        );

        for (name, kind, reason) in [
            ("GigaChat", ModelKind::Chat, "disabled"),
            ("giga/GigaChat-2-Max", ModelKind::Chat, "disabled"),
            (
                "local-gemma-4-e2b-it",
                ModelKind::Chat,
                "not available in this build",
            ),
            ("text-embedding-v3", ModelKind::Chat, "embedding model"),
            ("qwen-max", ModelKind::Embedding, "chat model"),
            ("broken", ModelKind::Chat, "alias target"),
        ] {
            match registry.resolve(name, kind) {
                Resolution::Unsupported { reason: why, .. } => {
                    assert!(why.contains(reason), "{name}: {why}");
                }
                other => panic!("{name}: expected unsupported, got {other:?}"),
            }
        }
    }

    #[test]
    fn listing_offers_only_reachable_providers() {
        let registry = ModelRegistry::default();
        let extra = [ResolvedModel {
            provider: ProviderId::Ollama,
            model: "llama3.2".into(),
            kind: ModelKind::Chat,
            listed: false,
        }];
        let models = registry.available(ModelKind::Chat, |p| p == ProviderId::Anthropic, &extra);
        let names: Vec<String> = models.iter().map(ResolvedModel::qualified).collect();
        assert_eq!(names.len(), 5, "{names:?}");
        assert!(
            names
                .iter()
                .take(4)
                .all(|name| name.starts_with("anthropic/"))
        );
        assert_eq!(names[4], "ollama/llama3.2");
        assert!(
            registry
                .available(ModelKind::Chat, |_| false, &[])
                .is_empty()
        );
        // In-process models are never offered by a build without an engine.
        assert!(
            registry
                .available(ModelKind::Chat, |_| true, &[])
                .iter()
                .all(|model| model.provider != ProviderId::Local)
        );
        // Every default model is in the catalog.
        for (provider, id) in DEFAULT_CHAT_MODELS {
            assert!(model(registry.resolve(&format!("{provider}/{id}"), ModelKind::Chat)).listed);
        }
    }

    #[test]
    fn local_models_resolve_only_with_an_engine() {
        let without = ModelRegistry::default();
        let Resolution::Unsupported { reason, .. } =
            without.resolve("local/smollm2-135m-instruct", ModelKind::Chat)
        else {
            panic!("expected unsupported");
        };
        assert!(reason.contains("built without local models"), "{reason}");
        let with = ModelRegistry::default().with_local_engine(true);
        let test_model = model(with.resolve("local/smollm2-135m-instruct", ModelKind::Chat));
        assert_eq!(
            (
                test_model.provider,
                test_model.model.as_str(),
                test_model.listed
            ),
            (ProviderId::Local, "smollm2-135m-instruct", false)
        );
        assert_eq!(
            model(with.resolve("local-qwen3-4b-instruct-2507", ModelKind::Chat)).qualified(),
            "local/local-qwen3-4b-instruct-2507"
        );
        assert!(
            with.available(ModelKind::Chat, |p| p == ProviderId::Local, &[])
                .iter()
                .all(|model| model.provider == ProviderId::Local)
        );
        assert!(
            !with
                .available(ModelKind::Chat, |p| p == ProviderId::Local, &[])
                .is_empty()
        );
    }

    #[test]
    fn the_default_model_order_follows_the_region() {
        use souz_protocol::language::Language;
        let order = |language| default_chat_models(language).map(|(provider, _)| provider);
        assert_eq!(
            order(Language::Ru),
            [AiTunnel, Giga, Qwen, OpenAi, Anthropic, Codex]
        );
        assert_eq!(
            order(Language::En),
            DEFAULT_CHAT_MODELS.map(|(provider, _)| provider)
        );
        // The original offered Codex through a ChatGPT account first in English regions.
        assert_eq!(order(Language::En)[..4], [Codex, OpenAi, Anthropic, Qwen]);
    }
}
