//! MCP node (graph agent): tools of external MCP servers join the turn, advertised and
//! executable alike. They run through the approval gate like every other tool, so a source
//! only names tools the gate can run (the MCP client registers its proxies with the gate).
//! A source that fails adds nothing; the turn goes on.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::agent::context::{AgentContext, ToolBinding};
use crate::agent::scope::TurnScope;
use crate::agent::skills::{always_denied, model_spec};
pub(crate) use crate::agent::sources::McpTools;
use crate::graph::BoxError;
use crate::llm::ToolDeclaration;
use crate::tools::gate::Gate;

/// The external tools the gate knows now (the MCP client registers them as `mcp__<server>__<tool>`),
/// less those the policy always refuses.
#[derive(Clone)]
pub(crate) struct GateMcpTools {
    pub(crate) gate: Gate,
}

impl McpTools for GateMcpTools {
    fn tools<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<ToolDeclaration>, String>> {
        Box::pin(async move {
            Ok(self
                .gate
                .external_tools()
                .values()
                .filter(|entry| entry.agents)
                .map(|entry| entry.tool.spec())
                .filter(|spec| !always_denied(&self.gate, spec))
                .map(model_spec)
                .collect())
        })
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
