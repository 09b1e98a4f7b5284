//! MCP node (graph agent): tools of external MCP servers join the turn, advertised and
//! executable alike. They run through the approval gate like every other tool, so a source
//! only names tools the gate can run (the MCP client registers its proxies with the gate).
//! A source that fails adds nothing; the turn goes on.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::agent::context::{AgentContext, ToolBinding};
use crate::agent::scope::TurnScope;
use crate::graph::BoxError;
use crate::llm::ToolSpec;

/// Where external tools come from.
pub trait McpTools: Send + Sync {
    /// The tools to offer in this chat (each runnable through the gate by its name).
    fn tools<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<Vec<ToolSpec>, String>>;
}

/// No external tools (the MCP client arrives in a later issue).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoMcpTools;

impl McpTools for NoMcpTools {
    fn tools<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<ToolSpec>, String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// Adds the MCP tools to the turn.
pub(crate) async fn add_mcp_tools(
    scope: Arc<TurnScope>,
    mut context: AgentContext<String>,
) -> Result<AgentContext<String>, BoxError> {
    match scope.services.mcp.tools(&scope.chat_id).await {
        Ok(tools) => {
            for spec in tools {
                context.install(spec, ToolBinding::Gate);
            }
        }
        Err(error) => tracing::warn!(%error, "MCP tools are unavailable for this turn"),
    }
    Ok(context)
}
