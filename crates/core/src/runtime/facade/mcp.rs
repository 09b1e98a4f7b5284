//! External MCP servers for the adapters: where each configured server stands, a test that
//! connects to one and lists its tools, its credentials (a stored bearer token, an OAuth
//! login and its redirect), and the external tools MCP clients may see at `/mcp`.

use serde_json::Value;
use souz_protocol::config::ConfigSaved;
use souz_protocol::{
    ErrorCode, McpLogin, McpOAuthCallback, McpServerList, McpServerPut, McpServerTest,
};

use super::ServiceError;
use crate::config::McpServerConfig;
use crate::llm::keys::{ApiKey, MAX_KEY_CHARS};
use crate::runtime::RuntimeHandle;
use crate::tools::ToolSpec;

impl RuntimeHandle {
    /// Every external MCP server of `config.toml` (as the file says now) and where it stands,
    /// by name.
    pub async fn mcp_servers(&self) -> McpServerList {
        let current = self.config_editor().current_config().await;
        McpServerList {
            servers: self.mcp_clients().status(&current),
        }
    }

    /// Adds or replaces `[mcp.servers.<name>]` with `put.settings` (keys left at their
    /// default are not written). Applies at once: the server is (re)started.
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
            .put_mcp_server(name, settings, put.revision)
            .await?)
    }

    /// Removes `[mcp.servers.<name>]`. Applies at once: the server is stopped and its tools
    /// are gone.
    pub async fn remove_mcp_server(&self, name: &str) -> Result<ConfigSaved, ServiceError> {
        Ok(self.config_editor().remove_mcp_server(name).await?)
    }

    /// Turns `[mcp.servers.<name>]` on or off. Applies at once.
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

    /// Stores the bearer token of the server `name` (under its `bearer_token_key`, encrypted)
    /// and connects it again.
    pub async fn set_mcp_token(&self, name: &str, token: &str) -> Result<(), ServiceError> {
        let token = token.trim();
        if token.is_empty()
            || token.chars().count() > MAX_KEY_CHARS
            || token.contains(char::is_control)
        {
            return Err(ServiceError::Invalid(format!(
                "A token is 1 to {MAX_KEY_CHARS} characters, without spaces around it or control \
                 characters."
            )));
        }
        let config = self.config().clone();
        Ok(self
            .mcp_clients()
            .set_token(&config, name, Some(ApiKey::new(token)))
            .await?)
    }

    /// Deletes the stored bearer token of the server `name`.
    pub async fn delete_mcp_token(&self, name: &str) -> Result<(), ServiceError> {
        let config = self.config().clone();
        Ok(self.mcp_clients().set_token(&config, name, None).await?)
    }

    /// Starts an OAuth login for the server `name`: the page the person opens.
    pub async fn start_mcp_login(&self, name: &str) -> Result<McpLogin, ServiceError> {
        match self.mcp_clients().login(name).await {
            None => Err(ServiceError::NotFound {
                code: ErrorCode::NotFound,
                message: format!("No enabled MCP server is named `{name}`."),
            }),
            Some(Err(error)) => Err(ServiceError::conflict(ErrorCode::Conflict, error)),
            Some(Ok(authorization_url)) => Ok(McpLogin {
                name: name.to_owned(),
                authorization_url,
            }),
        }
    }

    /// Completes an OAuth login from the authorization server's redirect; the server's name.
    pub async fn finish_mcp_login(
        &self,
        callback: &McpOAuthCallback,
    ) -> Result<String, ServiceError> {
        if let Some(error) = &callback.error {
            // Still use the flow up, so a refused login cannot be replayed.
            if let Some(state) = &callback.state {
                self.mcp_clients().abandon_login(state);
            }
            return Err(ServiceError::Invalid(format!(
                "The sign-in was refused: {error}{}",
                callback
                    .error_description
                    .as_deref()
                    .map(|text| format!(" ({text})"))
                    .unwrap_or_default()
            )));
        }
        let (Some(code), Some(state)) = (&callback.code, &callback.state) else {
            return Err(ServiceError::Invalid(
                "The redirect has no `code` and `state`.".to_owned(),
            ));
        };
        Ok(self
            .mcp_clients()
            .complete_login(state, code, callback.iss.as_deref())
            .await?)
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
