//! `[memory]`: long-term memory.

use super::section::{Invalid, config_section};

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
        /// "text-embedding-3-small" or "qwen/text-embedding-v3"). Empty: recall by words only.
        pub embeddings_model: String = String::new(),
        /// After each answered turn, ask the chat model which facts are worth keeping (one
        /// extra model request per turn). Off: only what you explicitly ask to remember.
        pub writer: bool = false,
    }
}

impl MemoryConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
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
        for bad in [" padded", "two words", "tab\tname"] {
            let config = MemoryConfig {
                embeddings_model: bad.into(),
                ..MemoryConfig::default()
            };
            let keys: Vec<&str> = config.validate().iter().map(|p| p.key).collect();
            assert_eq!(keys, ["embeddings_model"], "{bad:?}");
        }
    }
}
