//! The nodes the agent graphs are made of (original §2.4), one concept per module. Every node
//! takes and returns an [`AgentContext`](super::context::AgentContext); the turn's shared state
//! comes from the [`TurnScope`] it was built with.

pub mod chat;
pub mod classify;
pub mod finish;
pub mod information;
pub mod input;
pub mod inventory;
pub mod mcp;
pub mod memory;
pub mod tool_use;

use std::future::Future;
use std::sync::Arc;

use super::scope::TurnScope;
use crate::graph::{BoxError, FnNode, node_fn};

/// Node names, as traces and sessions record them.
pub mod names {
    /// Appends the person's message.
    pub const INPUT: &str = "Input->History";
    /// Recalls long-term memory.
    pub const MEMORY: &str = "Memory recall";
    /// Chooses tool categories (graph agent).
    pub const CLASSIFY: &str = "select categories";
    /// Adds the core tools and the skill inventory.
    pub const INVENTORY: &str = "Skill Inventory";
    /// Adds tools of external MCP servers (graph agent).
    pub const MCP: &str = "MCP";
    /// Adds background context.
    pub const INFORMATION: &str = "appendActualInformation";
    /// Asks the model.
    pub const CHAT: &str = "LLM";
    /// Runs the tools the model asked for.
    pub const TOOLS: &str = "Tool use";
    /// Summarizes a long history, then returns the answer.
    pub const FINISH: &str = "Summarize or return";
    /// Asks the model for a summary.
    pub const SUMMARIZE: &str = "llmSummarize";
    /// Replaces the history by the summary.
    pub const SUMMARY_TO_HISTORY: &str = "summary->history";
    /// Takes the answer text.
    pub const ANSWER: &str = "response->string";
    /// Turns a failed request into a reply.
    pub const ERROR: &str = "Chat.Error";
    /// The turn ends with a question for the person.
    pub const ASKED: &str = "Ask user";
}

/// A node named `name` running `step(scope, input)`.
pub(crate) fn scoped<I, O, S, Fut>(
    scope: &Arc<TurnScope>,
    name: &str,
    step: S,
) -> FnNode<impl Fn(I) -> Fut + Send + Sync + use<I, O, S, Fut>>
where
    S: Fn(Arc<TurnScope>, I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, BoxError>> + Send + 'static,
{
    let scope = Arc::clone(scope);
    node_fn(name, move |input| step(Arc::clone(&scope), input))
}
