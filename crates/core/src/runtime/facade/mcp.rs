//! External MCP servers for the adapters: where each configured server stands, a test that
//! connects to one and lists its tools, and the external tools MCP clients may see at `/mcp`.

use serde_json::Value;
use souz_protocol::config::ConfigSaved;
use souz_protocol::{ErrorCode, McpServerList, McpServerPut, McpServerTest};

use super::ServiceError;
use crate::config::McpServerConfig;
use crate::runtime::RuntimeHandle;
use crate::tools::ToolSpec;

impl RuntimeHandle {
    /// Every external MCP server of `config.toml` (as the file says now) and where it stands,
    /// by name.
    pub async fn mcp_servers(&self) -> McpServerList {
        let current = self.config_editor().current_config().await;
        McpServerList {
            servers: self.mcp_clients().status(&current, self.config()),
        }
    }

    /// Adds or replaces `[mcp.servers.<name>]` with `put.settings` (keys left at their
    /// default are not written). Applies at the next start.
    pub async fn put_mcp_server(
        &self,
        name: &str,
        put: McpServerPut,
    ) -> Result<ConfigSaved, ServiceError> {
        let defaults = match serde_json::to_value(McpServerConfig::default()) {
            Ok(Value::Object(defaults)) => defaults,
            _ => serde_json::Map::new(),
        };
        let settings = put
            .settings
            .into_iter()
            .filter(|(key, value)| defaults.get(key) != Some(value))
            .collect();
        Ok(self
            .config_editor()
            .put_mcp_server(name, settings, put.base_revision)
            .await?)
    }

    /// Removes `[mcp.servers.<name>]`. Applies at the next start.
    pub async fn remove_mcp_server(&self, name: &str) -> Result<ConfigSaved, ServiceError> {
        Ok(self.config_editor().remove_mcp_server(name).await?)
    }

    /// Turns `[mcp.servers.<name>]` on or off. Applies at the next start.
    pub async fn set_mcp_server_enabled(
        &self,
        name: &str,
        enabled: bool,
    ) -> Result<ConfigSaved, ServiceError> {
        Ok(self
            .config_editor()
            .set_mcp_server_enabled(name, enabled)
            .await?)
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
