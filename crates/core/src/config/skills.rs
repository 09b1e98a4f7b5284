//! `[skills]`: how file-backed skills are validated before they are installed.

use super::section::{Invalid, config_section};

config_section! {
    /// File-backed skills: whether a chat model reviews every new bundle after the rules.
    #[section = "skills"]
    pub struct SkillsConfig {
        /// Have a chat model review every new or changed bundle after the static rules (the
        /// original's LLM validator): its JSON verdict can reject the bundle, never approve
        /// one the rules reject. Off: the rules alone decide.
        pub review: bool = false,
        /// The model that reviews, as `[llm]` names models (empty: the default chat model).
        pub review_model: String = String::new(),
        /// The lowest confidence an approval by the reviewer may have (0 to 1).
        pub review_min_confidence: f64 = 0.66,
    }
}

impl SkillsConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if !(0.0..=1.0).contains(&self.review_min_confidence) {
            problems.push(Invalid::new(
                "review_min_confidence",
                "must be between 0 and 1",
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
    fn defaults_are_valid_and_a_bad_confidence_is_named() {
        assert!(SkillsConfig::default().validate().is_empty());
        let config = SkillsConfig {
            review_min_confidence: 1.5,
            ..SkillsConfig::default()
        };
        let problems = config.validate();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(format!("{problems:?}").contains("review_min_confidence"));
    }
}
