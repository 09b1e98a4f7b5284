//! `[memory]`: long-term memory.

use super::section::{Invalid, config_section};

/// The models `local/<name>` may name (the profiles of `memory::local`, which a test keeps
/// in step).
pub(crate) const LOCAL_MODELS: &[&str] = &["multilingual-e5-small", "all-minilm-l6-v2"];

/// The local model memory uses unless `embeddings_model` says otherwise (a profile of
/// `memory::local`, named there as `DEFAULT_LOCAL_MODEL`).
const DEFAULT_LOCAL_MODEL: &str = "multilingual-e5-small";

/// The longest model name accepted.
const MAX_MODEL_NAME: usize = 200;

config_section! {
    /// Long-term memory: facts Souz remembers across conversations and recalls when they
    /// matter. Say "remember that ..." to store one, "forget that ..." to drop it.
    #[section = "memory"]
    pub struct MemoryConfig {
        /// Remember facts from conversations and recall them in later ones.
        pub enabled: bool = true,
        /// The embedding model for recall by meaning, named as in [llm] (for example
        /// "text-embedding-3-small" or "qwen/text-embedding-v3"), or a model run inside Souz
        /// on this computer: "local/multilingual-e5-small" (the default: Russian, English and
        /// ~100 more languages, so a question in one finds a fact in the other; about 470 MB,
        /// downloaded into the Souz home on first use, memory recalls by words until it is
        /// there) or "local/all-minilm-l6-v2" (English only, 90 MB). Empty: recall by words
        /// only, nothing downloaded.
        pub embeddings_model: String = format!("local/{}", DEFAULT_LOCAL_MODEL),
        /// A local embedding model is dropped from memory after this many seconds unused
        /// (and loaded again when needed).
        pub local_model_idle_seconds: u64 = 600,
        /// Where local embedding models are downloaded from instead of their home (Hugging
        /// Face): a URL under which each model's files are served as `<url>/<model
        /// name>/<file>` (a mirror inside your network). Each file's checksum is checked all
        /// the same. Empty: the model's home.
        pub local_model_mirror: String = String::new(),
        /// After each answered turn, ask the chat model which facts are worth keeping (one
        /// extra model request per turn). Off: only what you explicitly ask to remember.
        pub writer: bool = false,
        /// Store facts from chats: what you ask Souz to remember ("remember that ...") and,
        /// with `writer`, what the model picks. Off: memory is still recalled, and changes
        /// only by hand (the Memory page, `souz memory`, the MCP tools).
        pub capture: bool = true,
    }
}

impl MemoryConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        let mirror = &self.local_model_mirror;
        if !mirror.is_empty()
            && (!(mirror.starts_with("http://") || mirror.starts_with("https://"))
                || mirror.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            problems.push(Invalid::new(
                "local_model_mirror",
                format!("`{mirror}` is not an http:// or https:// URL"),
            ));
        }
        let model = &self.embeddings_model;
        if model.trim() != model
            || model.chars().any(|c| c.is_whitespace() || c.is_control())
            || model.chars().count() > MAX_MODEL_NAME
        {
            problems.push(Invalid::new(
                "embeddings_model",
                format!(
                    "must be a model name without spaces, at most {MAX_MODEL_NAME} characters \
                     (or empty for recall by words only)"
                ),
            ));
        }
        if let Some(name) = model.strip_prefix("local/")
            && !LOCAL_MODELS.contains(&name)
        {
            let known: Vec<String> = LOCAL_MODELS
                .iter()
                .map(|name| format!("local/{name}"))
                .collect();
            problems.push(Invalid::new(
                "embeddings_model",
                format!("unknown local model; known: {}", known.join(", ")),
            ));
        }
        if self.local_model_idle_seconds == 0 {
            problems.push(Invalid::new(
                "local_model_idle_seconds",
                "must be at least 1".to_owned(),
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Section;

    #[test]
    fn defaults_are_valid_and_bad_model_names_are_named() {
        assert!(MemoryConfig::default().validate().is_empty());
        let named = MemoryConfig {
            embeddings_model: "openai/text-embedding-3-small".into(),
            ..MemoryConfig::default()
        };
        assert!(named.validate().is_empty());
        for good in ["local/multilingual-e5-small", "local/all-minilm-l6-v2"] {
            let config = MemoryConfig {
                embeddings_model: good.into(),
                ..MemoryConfig::default()
            };
            assert!(config.validate().is_empty(), "{good}");
        }
        for bad in [" padded", "two words", "tab\tname", "local/no-such-model"] {
            let config = MemoryConfig {
                embeddings_model: bad.into(),
                ..MemoryConfig::default()
            };
            let keys: Vec<&str> = config.validate().iter().map(|p| p.key).collect();
            assert_eq!(keys, ["embeddings_model"], "{bad:?}");
        }
        let mirrored = MemoryConfig {
            local_model_mirror: "https://models.intranet.example/hf".into(),
            ..MemoryConfig::default()
        };
        assert!(mirrored.validate().is_empty());
        for bad in ["models.example", "ftp://models.example", "https://a b"] {
            let config = MemoryConfig {
                local_model_mirror: bad.into(),
                ..MemoryConfig::default()
            };
            let keys: Vec<&str> = config.validate().iter().map(|p| p.key).collect();
            assert_eq!(keys, ["local_model_mirror"], "{bad:?}");
        }
    }
}
