//! Which of Souz's agents runs a turn: the graph agent or the skills agent, with the names
//! they are stored and configured under.

use serde::{Deserialize, Serialize};

/// Which agent runs a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// `GraphBasedAgent`: classified catalog tools plus five core tools.
    #[default]
    Graph,
    /// `SkillsGraphBasedAgent`: exactly the seven core tools; takes input while it runs.
    Skills,
}

impl AgentKind {
    /// The stored name (`graph`, `skills`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Graph => "graph",
            Self::Skills => "skills",
        }
    }

    /// Parses a stored name or the original's enum name (`GRAPH`, `SKILLS_GRAPH`), ignoring
    /// case; anything else is the default agent.
    pub fn parse(text: &str) -> Self {
        match text.trim().to_ascii_lowercase().as_str() {
            "skills" | "skills_graph" => Self::Skills,
            _ => Self::Graph,
        }
    }
}
