//! The state an agent carries from node to node during one turn.
//!
//! Invariants:
//! - What the model is *shown* (`advertised`) and what may *run* (`executable`) are separate:
//!   classification narrows only the first; the skills agent restricts both to the same seven
//!   core tools. A call to a name missing from `executable` never runs, whatever the model says.
//! - Messages Souz injects (recalled memory, background context) are recognised by their exact
//!   envelope and replaced every turn; the current user message is never treated as one.

use std::collections::BTreeMap;

use serde::Serialize;
use souz_protocol::ToolCategory;
use souz_protocol::chat::events::TurnEndReason;

use super::core_tool_types::CoreTool;
use crate::llm::{ChatResponse, ImagePart, LlmError, Message, ToolDeclaration, Usage};

/// Model settings for a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    /// The provider's model name, as sent in requests.
    pub model: String,
    /// Sampling temperature (`None`: the provider's default).
    pub temperature: Option<f32>,
    /// The model's context window in tokens; the history is summarized at 80 % of it.
    pub context_size: u32,
    /// The person's interface language: what the turn's own replies (a failed request) are
    /// written in.
    pub language: souz_protocol::language::Language,
}

/// How a tool the model may call is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolBinding {
    /// Through the approval gate, by name (catalog tools, and MCP tools registered with it).
    Gate,
    /// One of the agent's own core tools.
    Core(CoreTool),
    /// `AskUser`: ends the turn with a question for the person (chat turns only).
    AskUser,
    /// A tool of the device that submitted the turn (`client_tools`), through the gate.
    Client,
}

/// The state of a turn, with the current node's input `I`.
#[derive(Debug, Clone)]
pub struct AgentContext<I> {
    /// The current node's input.
    pub input: I,
    /// What the person asked this turn.
    pub user_input: String,
    /// The chat the turn belongs to.
    pub chat_id: String,
    /// Model settings.
    pub settings: AgentSettings,
    /// The system prompt before any per-turn additions (the inventory block).
    pub system_prompt: String,
    /// The conversation, oldest first.
    pub history: Vec<Message>,
    /// Tools shown to the model.
    pub advertised: Vec<ToolDeclaration>,
    /// Tools that may run, by name.
    pub executable: BTreeMap<String, ToolBinding>,
    /// Categories classification chose (graph agent), for traces.
    pub categories: Option<Vec<ToolCategory>>,
    /// Tokens used by every model call of the turn so far.
    pub usage: Usage,
    /// Tokens of the last chat request, when the provider reported them.
    pub last_chat_usage: Option<Usage>,
    /// Images the person attached to this turn's message, until the input node puts them in
    /// the history with it.
    pub images: Vec<ImagePart>,
}

impl<I> AgentContext<I> {
    /// The same state with another input.
    pub fn with<J>(self, input: J) -> AgentContext<J> {
        AgentContext {
            input,
            user_input: self.user_input,
            chat_id: self.chat_id,
            settings: self.settings,
            system_prompt: self.system_prompt,
            history: self.history,
            advertised: self.advertised,
            executable: self.executable,
            categories: self.categories,
            usage: self.usage,
            last_chat_usage: self.last_chat_usage,
            images: self.images,
        }
    }

    /// Adds a tool to both lists (replacing an advertised spec of the same name).
    pub fn install(&mut self, spec: ToolDeclaration, binding: ToolBinding) {
        self.advertised.retain(|known| known.name != spec.name);
        self.executable.insert(spec.name.clone(), binding);
        self.advertised.push(spec);
    }
}

/// What one model request produced.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatOutcome {
    /// An answer (text, tool calls, or both).
    Answer(ChatResponse),
    /// The request failed; the error node turns this into a reply.
    Failed(LlmError),
}

impl ChatOutcome {
    /// Whether the model asked for tools.
    pub fn wants_tools(&self) -> bool {
        matches!(self, Self::Answer(response) if !response.tool_calls.is_empty())
    }
}

/// The turn's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reply {
    /// Text for the person.
    pub text: String,
    /// Set when the text explains a failure instead of answering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<ReplyFailure>,
    /// Set when the turn ended by asking the person a question (`AskUser`); the answer comes
    /// as the next turn's input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<AskedQuestion>,
}

impl Reply {
    /// Why the turn that produced this reply ended.
    pub fn end_reason(&self) -> TurnEndReason {
        self.failure
            .as_ref()
            .map_or(TurnEndReason::Answered, |failure| failure.code)
    }
}

/// A question the agent asked the person with `AskUser`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AskedQuestion {
    /// The question.
    pub title: String,
    /// The choices, as `(id, label)`; empty for a free-text question.
    pub choices: Vec<(String, String)>,
    /// Whether several choices may be picked.
    pub multiple: bool,
    /// Whether a free-text answer is accepted.
    pub free_text: bool,
}

/// Why a turn ended with an explanation instead of an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplyFailure {
    /// Why the turn ended this way (its stable code is what is serialized).
    pub code: TurnEndReason,
    /// The underlying error.
    pub detail: String,
}

const MEMORY_OPEN: &str = "<souz_memory_context>\n";
const MEMORY_CLOSE: &str = "\n</souz_memory_context>";

/// Opening of the background-context message (the original's wording, kept byte for byte).
pub(crate) const CONTEXT_PREFIX: &str = "<context>\nBackground information. Use ONLY if strictly relevant to the user query. If irrelevant (e.g. chitchat), IGNORE completely. Do NOT reference this data in output.\n---\n";
/// Closing of the background-context message.
pub(crate) const CONTEXT_SUFFIX: &str = "</context>";

/// The user message carrying recalled memory.
pub(crate) fn memory_message(block: &str) -> Message {
    Message::user(format!("{MEMORY_OPEN}{block}{MEMORY_CLOSE}"))
}

/// Whether `message` is a recalled-memory message Souz injected.
pub(crate) fn is_injected_memory(message: &Message) -> bool {
    matches!(message, Message::User { content, .. }
        if content.starts_with(MEMORY_OPEN) && content.ends_with(MEMORY_CLOSE))
}

/// Whether `message` is a background-context message Souz injected.
pub(crate) fn is_injected_context(message: &Message) -> bool {
    matches!(message, Message::User { content, .. }
        if content.starts_with(CONTEXT_PREFIX) && content.ends_with(CONTEXT_SUFFIX))
}

/// Index of the last user message that Souz did not inject (the person's current message).
pub(crate) fn current_user_index(history: &[Message]) -> Option<usize> {
    history.iter().rposition(|message| {
        matches!(message, Message::User { .. })
            && !is_injected_memory(message)
            && !is_injected_context(message)
    })
}

/// What one attached image counts for in [`message_chars`].
const IMAGE_CHARS: usize = 6_000;

/// The text the model is charged for, in UTF-16 units (the original's measure).
pub(crate) fn message_chars(message: &Message) -> usize {
    let units = |text: &str| text.encode_utf16().count();
    match message {
        Message::System { content } => units(content),
        // An image is charged as a fixed share of the window (providers bill a ~1 MP image at
        // roughly 1,000-1,600 tokens; the original's measure is characters, ~4 per token).
        Message::User { content, images } => units(content) + images.len() * IMAGE_CHARS,
        Message::Assistant {
            content,
            tool_calls,
        } => {
            units(content)
                + tool_calls
                    .iter()
                    .map(|call| units(&call.name) + units(&call.arguments))
                    .sum::<usize>()
        }
        Message::Tool { content, .. } => units(content),
    }
}
