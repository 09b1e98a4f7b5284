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
        /// The most tool calls one turn may make. The turn then stops and tells the person
        /// why; they can ask it to go on.
        pub max_tool_calls: u32 = 50,
        /// The longest one turn may run, in seconds (waiting for an approval counts). The
        /// turn then stops and tells the person why.
        pub max_turn_seconds: u64 = 900,
        /// How many times the same tool call (same arguments) may come back with the same
        /// result before the turn stops: trying again would not help.
        pub repeated_call_limit: u32 = 3,
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
        if !(1..=10_000).contains(&self.max_tool_calls) {
            problems.push(Invalid::new(
                "max_tool_calls",
                "must be between 1 and 10000",
            ));
        }
        if !(10..=86_400).contains(&self.max_turn_seconds) {
            problems.push(Invalid::new(
                "max_turn_seconds",
                "must be between 10 and 86400 seconds",
            ));
        }
        if !(2..=100).contains(&self.repeated_call_limit) {
            problems.push(Invalid::new(
                "repeated_call_limit",
                "must be between 2 and 100",
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
            max_tool_calls: 0,
            max_turn_seconds: 5,
            repeated_call_limit: 1,
        };
        let keys: Vec<&str> = config
            .validate()
            .iter()
            .map(|problem| problem.key)
            .collect();
        assert_eq!(
            keys,
            [
                "default_agent",
                "context_size",
                "max_tool_calls",
                "max_turn_seconds",
                "repeated_call_limit"
            ]
        );
    }
}
