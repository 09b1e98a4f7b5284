//! External MCP servers for the adapters: where each configured server stands, a test that
//! connects to one and lists its tools, and the external tools MCP clients may see at `/mcp`.

use souz_protocol::{ErrorCode, McpServerList, McpServerTest};

use super::ServiceError;
use crate::runtime::RuntimeHandle;
use crate::tools::ToolSpec;

impl RuntimeHandle {
    /// Every configured external MCP server and where it stands, by name.
    pub fn mcp_servers(&self) -> McpServerList {
        McpServerList {
            servers: self.mcp_clients().status(self.config()),
        }
    }

    /// Connects to the server `name` (if it is not) and lists its tools again.
    pub async fn test_mcp_server(&self, name: &str) -> Result<McpServerTest, ServiceError> {
        let Some(outcome) = self.mcp_clients().test(name).await else {
            return Err(ServiceError::NotFound {
                code: ErrorCode::NotFound,
                message: format!("No enabled MCP server is named `{name}`."),
            });
        };
        Ok(match outcome {
            Ok(tools) => McpServerTest {
                name: name.to_owned(),
                ok: true,
                tools,
                error: None,
            },
            Err(error) => McpServerTest {
                name: name.to_owned(),
                ok: false,
                tools: 0,
                error: Some(error),
            },
        })
    }

    /// The external servers' tools offered to MCP clients (servers with
    /// `expose_to_mcp_clients`), sorted by name; they change while the daemon runs, and
    /// [`RuntimeHandle::policy_changes`] moves when they do.
    pub fn exposed_external_tools(&self) -> Vec<ToolSpec> {
        self.gate()
            .external_tools()
            .values()
            .filter(|entry| entry.exposed)
            .map(|entry| entry.tool.spec().clone())
            .collect()
    }
}
