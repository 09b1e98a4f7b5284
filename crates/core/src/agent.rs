//! Souz's own agents, built on [`crate::graph`] and [`crate::llm`], with every tool call going
//! through the approval gate.
//!
//! - [`turn`]: the entry point ([`Agents::run_turn`]), one turn per chat at a time.
//! - [`graphs`]: the graph agent and the skills agent (original §2.3); [`nodes`]: their nodes
//!   (§2.4); [`context`]: the state a turn carries.
//! - [`core_tools`]: `GetSkillByName`, `GetSkillsByCategory`, `GetSkillsNamesByCategory`,
//!   `GetKnowledge`, `SearchKnowledge`, `SearchMemory`, `RunSkillCommand`; [`skills`]: the
//!   catalog as tool-backed skills.
//! - [`steering`]: input sent while a skills-agent turn runs (§2.5); [`delivered`]: what Souz
//!   sent the person through another channel between turns, told to the next turn (§1.15).
//! - [`knowledge`]: large tool results stored and read back (§2.6).
//! - [`sessions`]: turns and graph steps persisted per conversation (§2.8); [`trace`]: a chat
//!   execution's turns and steps as people read them ("why did it do that").
//! - [`limits`]: what a turn may spend and how it notices it is stuck (repeated calls);
//!   [`ending`]: the outcome of a turn, including one its limits stopped.
//! - [`events`]: what a running turn reports; [`memory`], [`models`]: the seams to long-term
//!   memory and to language models.
//!
//! Invariants: a catalog tool only ever runs through the gate, with the chat as requester; the
//! skills agent can neither see nor run anything but its seven core tools (and `AskUser` in a
//! turn that can take an answer: chat turns, where it is how a question reaches the person —
//! the original had no producer of questions); a turn's events
//! arrive in order from the turn's own task; nothing the person sent while a turn ran is lost.

pub(crate) mod ask_user;
pub mod client_tools;
pub(crate) mod context;
pub(crate) mod core_tool_types;
pub(crate) mod core_tools;
pub(crate) mod delivered;
pub(crate) mod dispatch;
pub(crate) mod ending;
pub(crate) mod events;
pub(crate) mod gate_call;
pub(crate) mod graphs;
pub(crate) mod kind;
pub(crate) mod knowledge;
pub(crate) mod limits;
pub(crate) mod memory;
pub(crate) mod models;
pub(crate) mod nodes;
pub(crate) mod offered;
pub(crate) mod prompts;
pub(crate) mod scope;
pub(crate) mod sessions;
pub(crate) mod skills;
pub(crate) mod sources;
pub(crate) mod steering;
pub(crate) mod trace;
pub(crate) mod turn;

pub use context::{AgentContext, ChatOutcome, Reply, ReplyFailure};
pub use core_tool_types::{CoreTool, CoreToolGroup, CoreToolsOff};
pub use delivered::Delivered;
pub use ending::AgentOutcome;
pub use events::{AgentEvent, NoSink, TurnSink};
pub use gate_call::ParkedCall;
pub use kind::AgentKind;
pub use limits::TurnLimits;
pub use models::{ChatModel, ChatModels, FixedModel};
pub use sessions::{Sessions, TurnStatus};
pub use steering::{SteerError, Steering};
pub use turn::{AgentParts, Agents, Turn, TurnRequest};

use crate::llm::service::LlmServiceError;
use crate::store::StoreError;

/// Why a turn could not run.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A turn is already running in the chat.
    #[error("a turn is already running in chat {chat_id}; send input to it or cancel it")]
    Busy {
        /// The chat.
        chat_id: String,
    },
    /// The chat id is empty.
    #[error("the chat id must not be empty")]
    InvalidChat,
    /// The input is empty.
    #[error("the input must not be empty")]
    EmptyInput,
    /// The model could not be resolved (unknown name, no key).
    #[error(transparent)]
    Model(#[from] LlmServiceError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Souz itself is inconsistent (a bug); details are logged.
    #[error("internal error: {0}")]
    Internal(String),
}

#[cfg(test)]
pub(crate) mod tests;
