//! The nodes the agent graphs are made of (original §2.4), one concept per module. Every node
//! takes and returns an [`AgentContext`](super::context::AgentContext); the turn's shared state
//! comes from the [`TurnScope`] it was built with.

pub(crate) mod chat;
pub(crate) mod classify;
pub(crate) mod finish;
pub(crate) mod information;
pub(crate) mod input;
pub(crate) mod inventory;
pub(crate) mod mcp;
pub(crate) mod recall;
pub(crate) mod tool_use;

use std::future::Future;
use std::sync::Arc;

use super::scope::TurnScope;
use crate::graph::{BoxError, FnNode, node_fn};

/// Node names, as traces and sessions record them.
pub(crate) mod names {
    /// Appends the person's message.
    pub(crate) const INPUT: &str = "Input->History";
    /// Recalls long-term memory.
    pub(crate) const MEMORY: &str = "Memory recall";
    /// Chooses tool categories (graph agent).
    pub(crate) const CLASSIFY: &str = "select categories";
    /// Adds the core tools and the skill inventory.
    pub(crate) const INVENTORY: &str = "Skill Inventory";
    /// Adds tools of external MCP servers (graph agent).
    pub(crate) const MCP: &str = "MCP";
    /// Adds background context.
    pub(crate) const INFORMATION: &str = "appendActualInformation";
    /// Asks the model.
    pub(crate) const CHAT: &str = "LLM";
    /// Runs the tools the model asked for.
    pub(crate) const TOOLS: &str = "Tool use";
    /// Summarizes a long history, then returns the answer.
    pub(crate) const FINISH: &str = "Summarize or return";
    /// Asks the model for a summary.
    pub(crate) const SUMMARIZE: &str = "llmSummarize";
    /// Replaces the history by the summary.
    pub(crate) const SUMMARY_TO_HISTORY: &str = "summary->history";
    /// Takes the answer text.
    pub(crate) const ANSWER: &str = "response->string";
    /// Turns a failed request into a reply.
    pub(crate) const ERROR: &str = "Chat.Error";
    /// The turn ends with a question for the person.
    pub(crate) const ASKED: &str = "Ask user";
    /// The turn reached one of its limits and ends with the reason.
    pub(crate) const STOPPED: &str = "Turn limit";
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
