//! `[agent]`: Souz's own agents.

use super::section::{Invalid, config_section};

/// Agent names `default_agent` accepts.
pub(crate) const AGENT_NAMES: &[&str] = &["graph", "skills"];

config_section! {
    /// Souz's own agents: which one a chat uses by default, and the context window to plan for.
    #[section = "agent"]
    pub struct AgentConfig {
        /// The agent a chat uses unless it asks for another: "graph" (shows the tools each
        /// message needs, plus the skill tools) or "skills" (discovers and runs tools as
        /// skills, and takes new messages while it works).
        pub default_agent: String = "graph".to_owned(),
        /// The model's context window in tokens, for requests that do not give one. The
        /// conversation is summarized when it reaches 80 % of it.
        pub context_size: u32 = 16000,
    }
}

impl AgentConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if !AGENT_NAMES.contains(&self.default_agent.as_str()) {
            problems.push(Invalid::new(
                "default_agent",
                format!("must be one of {}", AGENT_NAMES.join(", ")),
            ));
        }
        if !(1000..=10_000_000).contains(&self.context_size) {
            problems.push(Invalid::new(
                "context_size",
                "must be between 1000 and 10000000 tokens",
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
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(AgentConfig::default().validate().is_empty());
        let config = AgentConfig {
            default_agent: "clever".into(),
            context_size: 10,
        };
        let keys: Vec<&str> = config
            .validate()
            .iter()
            .map(|problem| problem.key)
            .collect();
        assert_eq!(keys, ["default_agent", "context_size"]);
    }
}
