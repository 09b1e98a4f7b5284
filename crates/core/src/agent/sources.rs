//! What a turn draws on from outside the agent, as the traits the host implements: background
//! facts for the prompt ([`ContextSource`]) and the external MCP tools the gate can run
//! ([`McpTools`]). The turn's scope holds them; the nodes that use them implement the defaults.

use futures::future::BoxFuture;

use crate::llm::ToolDeclaration;

/// One background fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextItem {
    /// What kind of fact ("General fact", "Default browser").
    pub kind: String,
    /// The fact.
    pub text: String,
}

/// Supplies background facts for a message.
pub trait ContextSource: Send + Sync {
    /// Facts worth knowing while answering `input`.
    fn items<'a>(&'a self, input: &'a str) -> BoxFuture<'a, Vec<ContextItem>>;
}

/// Where external tools come from.
pub trait McpTools: Send + Sync {
    /// The tools to offer in this chat (each runnable through the gate by its name).
    fn tools<'a>(&'a self, chat_id: &'a str)
    -> BoxFuture<'a, Result<Vec<ToolDeclaration>, String>>;
}
