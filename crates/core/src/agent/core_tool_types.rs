//! The agents' own tools ([`super::core_tools`]) as names and results, with no behaviour: the
//! lower modules (the history's view of tool calls, Knowledge) tell a core tool's call by its
//! name and shape its answer without depending on the tools themselves.
//!
//! A chat turns core tools off by [`CoreToolGroup`], the way a person thinks of them (memory,
//! Knowledge, skills, questions), not one tool at a time: the tools of a group only work
//! together (`SearchKnowledge` reads the entries `GetKnowledge` reads; a skill found with
//! `GetSkillByName` runs with `RunSkillCommand`), so half a group on would offer a tool the
//! model cannot use.

use std::collections::BTreeSet;

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

    /// The group a chat turns it off with.
    pub fn group(self) -> CoreToolGroup {
        match self {
            Self::SearchMemory => CoreToolGroup::Memory,
            Self::GetKnowledge | Self::SearchKnowledge => CoreToolGroup::Knowledge,
            Self::GetSkillByName
            | Self::GetSkillsByCategory
            | Self::GetSkillsNamesByCategory
            | Self::RunSkillCommand => CoreToolGroup::Skills,
        }
    }

    /// Whether its results always stay in the conversation (never offloaded to Knowledge):
    /// discovery results are what the model needs to act, and offloading a Knowledge read
    /// would only produce another reference.
    pub fn always_inline(self) -> bool {
        !matches!(self, Self::SearchMemory | Self::RunSkillCommand)
    }
}

/// The core tools a chat can turn off together (chat setting `disabledCoreTools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CoreToolGroup {
    /// `SearchMemory`: the model searching long-term memory.
    Memory,
    /// `GetKnowledge`, `SearchKnowledge`: reading back large tool results. Off, such results
    /// stay whole in the conversation instead of becoming a reference nothing could read.
    Knowledge,
    /// `GetSkillByName`, `GetSkillsByCategory`, `GetSkillsNamesByCategory`,
    /// `RunSkillCommand`, and the skill inventory in the system prompt. The skills agent reaches
    /// catalog tools only through them, so off there it keeps memory and Knowledge only.
    Skills,
    /// `AskUser`: the model asking the person a question (which ends the turn).
    AskUser,
}

impl CoreToolGroup {
    /// Every group, in the order people see them.
    pub const ALL: [CoreToolGroup; 4] =
        [Self::Memory, Self::Knowledge, Self::Skills, Self::AskUser];

    /// The group's name in settings and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Knowledge => "knowledge",
            Self::Skills => "skills",
            Self::AskUser => "askUser",
        }
    }

    /// The group named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|group| group.name() == name)
    }
}

/// The core tool groups a turn leaves out (empty: every core tool of its agent is on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreToolsOff(BTreeSet<CoreToolGroup>);

impl CoreToolsOff {
    /// The groups stored under `names`; names that are no group are skipped (settings are
    /// validated when saved, so that is a group a later version dropped).
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a String>) -> Self {
        Self(
            names
                .into_iter()
                .filter_map(|name| CoreToolGroup::parse(name))
                .collect(),
        )
    }

    /// Whether `group` is off.
    pub fn is_off(&self, group: CoreToolGroup) -> bool {
        self.0.contains(&group)
    }

    /// `tools` without the ones whose group is off.
    pub fn keep(&self, tools: &[CoreTool]) -> Vec<CoreTool> {
        tools
            .iter()
            .copied()
            .filter(|tool| !self.is_off(tool.group()))
            .collect()
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
