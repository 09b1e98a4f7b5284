//! The agents' own tools ([`super::core_tools`]) as names and results, with no behaviour: the
//! lower modules (the history's view of tool calls, Knowledge) tell a core tool's call by its
//! name and shape its answer without depending on the tools themselves.

/// One of the core tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CoreTool {
    /// Full description and schema of one skill.
    GetSkillByName,
    /// Full descriptions of every skill of a category.
    GetSkillsByCategory,
    /// Skill ids of a category.
    GetSkillsNamesByCategory,
    /// Everything kept of a Knowledge entry.
    GetKnowledge,
    /// Regex search in a Knowledge entry.
    SearchKnowledge,
    /// Search long-term memory.
    SearchMemory,
    /// Run a skill.
    RunSkillCommand,
}

impl CoreTool {
    /// The seven tools of the skills agent, which sees nothing else.
    pub const ALL: [CoreTool; 7] = [
        Self::GetSkillByName,
        Self::GetSkillsByCategory,
        Self::GetSkillsNamesByCategory,
        Self::GetKnowledge,
        Self::SearchKnowledge,
        Self::SearchMemory,
        Self::RunSkillCommand,
    ];

    /// The core tools the graph agent adds to its catalog tools.
    pub const GRAPH_AGENT: [CoreTool; 5] = [
        Self::GetSkillByName,
        Self::GetKnowledge,
        Self::SearchKnowledge,
        Self::SearchMemory,
        Self::RunSkillCommand,
    ];

    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::GetSkillByName => "GetSkillByName",
            Self::GetSkillsByCategory => "GetSkillsByCategory",
            Self::GetSkillsNamesByCategory => "GetSkillsNamesByCategory",
            Self::GetKnowledge => "GetKnowledge",
            Self::SearchKnowledge => "SearchKnowledge",
            Self::SearchMemory => "SearchMemory",
            Self::RunSkillCommand => "RunSkillCommand",
        }
    }

    /// The core tool named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// Whether its results always stay in the conversation (never offloaded to Knowledge):
    /// discovery results are what the model needs to act, and offloading a Knowledge read
    /// would only produce another reference.
    pub fn always_inline(self) -> bool {
        !matches!(self, Self::SearchMemory | Self::RunSkillCommand)
    }
}

/// What a core tool answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CoreOutput {
    /// The result text (JSON).
    pub content: String,
    /// Whether it reports a problem.
    pub is_error: bool,
}

impl CoreOutput {
    /// A successful result.
    pub(crate) fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    /// `{"error":{"code","message"}}`.
    pub(crate) fn error(code: &str, message: impl Into<String>) -> Self {
        let body = serde_json::json!({"error": {"code": code, "message": message.into()}});
        Self {
            content: body.to_string(),
            is_error: true,
        }
    }
}
