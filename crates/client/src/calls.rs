//! The typed calls the daemon's users make, one method per route, with the request and
//! response types of `souz-protocol`. Paths and bodies are exactly the gateway's.

use souz_protocol::chat::{OptionAnswer, OptionAnswerResponse, QuestionList, TurnList};
use souz_protocol::config::{ConfigProblem, PauseState, SetPause};
use souz_protocol::{
    ApprovalList, ClientList, ClientScope, CreatedClient, DecisionRequest, DecisionResponse,
    GrantList, Health, InstalledSkill, NewClient, SkillDetail, SkillGitSource, SkillList,
    SkillPath, SkillSummary, SkillValidation, ToolCall, ToolCallRequest, ToolList, UiCode,
};

use crate::{ClientError, DaemonClient};

impl DaemonClient {
    /// `GET /health`.
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.get("/health").await
    }

    /// Whether the daemon is in recovery mode (`config.toml` does not validate, so only the
    /// settings editor runs): the file's problems then, `None` when it runs normally.
    pub async fn recovery_problems(&self) -> Result<Option<Vec<ConfigProblem>>, ClientError> {
        /// `GET /health` read for its status only (its other fields differ in recovery).
        #[derive(serde::Deserialize)]
        struct Status {
            status: String,
            #[serde(default)]
            problems: Vec<ConfigProblem>,
        }
        let health: Status = self.get("/health").await?;
        Ok((health.status == "recovery").then_some(health.problems))
    }

    /// Pending approvals, newest first (at most `limit`).
    pub async fn pending_approvals(&self, limit: u32) -> Result<ApprovalList, ClientError> {
        self.get(&format!("/v1/approvals?status=pending&limit={limit}"))
            .await
    }

    /// Approvals in any state, newest first (at most `limit`).
    pub async fn approvals(&self, limit: u32) -> Result<ApprovalList, ClientError> {
        self.get(&format!("/v1/approvals?limit={limit}")).await
    }

    /// Decides the approval `approval_id`.
    pub async fn decide(
        &self,
        approval_id: &str,
        request: &DecisionRequest,
    ) -> Result<DecisionResponse, ClientError> {
        self.post(&format!("/v1/approvals/{approval_id}/decision"), request)
            .await
    }

    /// Active grants.
    pub async fn grants(&self) -> Result<GrantList, ClientError> {
        self.get("/v1/grants").await
    }

    /// Revokes the grant `grant_id`.
    pub async fn revoke_grant(&self, grant_id: &str) -> Result<(), ClientError> {
        self.delete(&format!("/v1/grants/{grant_id}")).await
    }

    /// Questions the agents wait on, oldest first (at most 500).
    pub async fn questions(&self) -> Result<QuestionList, ClientError> {
        self.get("/v1/options?limit=500").await
    }

    /// Answers the question `option_id`.
    pub async fn answer(
        &self,
        option_id: &str,
        answer: &OptionAnswer,
    ) -> Result<OptionAnswerResponse, ClientError> {
        self.post(&format!("/v1/options/{option_id}/answer"), answer)
            .await
    }

    /// Running agent turns.
    pub async fn turns(&self) -> Result<TurnList, ClientError> {
        self.get("/v1/turns").await
    }

    /// The pause state.
    pub async fn pause_state(&self) -> Result<PauseState, ClientError> {
        self.get("/v1/pause").await
    }

    /// Pauses or resumes; `via` names where the person did it (`tray`, `cli`).
    pub async fn set_paused(&self, paused: bool, via: &str) -> Result<PauseState, ClientError> {
        let body = SetPause {
            paused,
            via: Some(via.to_owned()),
        };
        self.put("/v1/pause", &body).await
    }

    /// The tool catalog.
    pub async fn tools(&self) -> Result<ToolList, ClientError> {
        self.get("/v1/tools").await
    }

    /// Calls a tool through the gate; the status is `200` when it finished and `202` while it
    /// waits for an approval.
    pub async fn call_tool(
        &self,
        request: &ToolCallRequest,
    ) -> Result<(u16, ToolCall), ClientError> {
        self.post_with_status("/v1/tool-calls", request).await
    }

    /// The external MCP servers and where each stands.
    pub async fn mcp_servers(&self) -> Result<souz_protocol::McpServerList, ClientError> {
        self.get("/v1/mcp/servers").await
    }

    /// Connects to the external MCP server `name` (if it is not) and lists its tools.
    pub async fn test_mcp_server(
        &self,
        name: &str,
    ) -> Result<souz_protocol::McpServerTest, ClientError> {
        let path = format!("/v1/mcp/servers/{}/test", encode_segment(name));
        self.post(&path, &serde_json::json!({})).await
    }

    /// Adds or replaces `[mcp.servers.<name>]` in config.toml (the daemon applies it at once).
    pub async fn put_mcp_server(
        &self,
        name: &str,
        request: &souz_protocol::McpServerPut,
    ) -> Result<souz_protocol::config::ConfigSaved, ClientError> {
        let path = format!("/v1/mcp/servers/{}", encode_segment(name));
        self.put(&path, request).await
    }

    /// Removes `[mcp.servers.<name>]` from config.toml (the daemon stops it at once).
    pub async fn remove_mcp_server(&self, name: &str) -> Result<(), ClientError> {
        let path = format!("/v1/mcp/servers/{}", encode_segment(name));
        self.delete(&path).await
    }

    /// Turns `[mcp.servers.<name>]` on or off (the daemon applies it at once).
    pub async fn set_mcp_server_enabled(
        &self,
        name: &str,
        enabled: bool,
    ) -> Result<souz_protocol::config::ConfigSaved, ClientError> {
        let path = format!("/v1/mcp/servers/{}/enabled", encode_segment(name));
        self.put(&path, &souz_protocol::McpServerEnabled { enabled })
            .await
    }

    /// Stores the bearer token of the external MCP server `name` (encrypted, in the daemon).
    pub async fn set_mcp_token(&self, name: &str, token: &str) -> Result<(), ClientError> {
        let path = format!("/v1/mcp/servers/{}/token", encode_segment(name));
        let body = souz_protocol::McpToken {
            token: token.to_owned(),
        };
        self.put_empty(&path, &body).await
    }

    /// Deletes the stored bearer token of the external MCP server `name`.
    pub async fn delete_mcp_token(&self, name: &str) -> Result<(), ClientError> {
        let path = format!("/v1/mcp/servers/{}/token", encode_segment(name));
        self.delete(&path).await
    }

    /// Starts an OAuth login for the external MCP server `name`: the page to open.
    pub async fn mcp_login(&self, name: &str) -> Result<souz_protocol::McpLogin, ClientError> {
        let path = format!("/v1/mcp/servers/{}/login", encode_segment(name));
        self.post(&path, &serde_json::json!({})).await
    }

    /// The caller's configured provider keys (hints only), sorted by provider.
    pub async fn provider_keys(&self) -> Result<souz_protocol::ProviderKeyList, ClientError> {
        self.get("/v1/me/provider-keys").await
    }

    /// Stores (or replaces) the caller's key for `provider`; the answer has its hint only.
    pub async fn set_provider_key(
        &self,
        provider: &str,
        api_key: &str,
    ) -> Result<souz_protocol::ProviderKeyResponse, ClientError> {
        let path = format!("/v1/me/provider-keys/{}", encode_segment(provider));
        let body = souz_protocol::PutProviderKey {
            api_key: api_key.to_owned(),
        };
        self.put(&path, &body).await
    }

    /// Checks the caller's key for `provider` with a one-token request through the provider.
    pub async fn test_provider_key(
        &self,
        provider: &str,
    ) -> Result<souz_protocol::ProviderKeyTest, ClientError> {
        let path = format!("/v1/me/provider-keys/{}/test", encode_segment(provider));
        self.post(&path, &serde_json::json!({})).await
    }

    /// Deletes the caller's stored key for `provider` (idempotent).
    pub async fn delete_provider_key(&self, provider: &str) -> Result<(), ClientError> {
        let path = format!("/v1/me/provider-keys/{}", encode_segment(provider));
        self.delete(&path).await
    }

    /// Starts signing the caller in to `provider`'s account (`codex`): the code to enter and
    /// where.
    pub async fn start_provider_login(
        &self,
        provider: &str,
    ) -> Result<souz_protocol::ProviderLogin, ClientError> {
        let path = format!("/v1/me/provider-logins/{}", encode_segment(provider));
        self.post(&path, &serde_json::json!({})).await
    }

    /// Where the caller's sign-in to `provider` stands.
    pub async fn provider_login(
        &self,
        provider: &str,
    ) -> Result<souz_protocol::ProviderLogin, ClientError> {
        let path = format!("/v1/me/provider-logins/{}", encode_segment(provider));
        self.get(&path).await
    }

    /// Signs the caller out of `provider` (idempotent).
    pub async fn sign_out_provider(&self, provider: &str) -> Result<(), ClientError> {
        let path = format!("/v1/me/provider-logins/{}", encode_segment(provider));
        self.delete(&path).await
    }

    /// The daemon's configured service keys (`brave`; hints only).
    pub async fn service_keys(&self) -> Result<souz_protocol::ServiceKeyList, ClientError> {
        self.get("/v1/settings/service-keys").await
    }

    /// Stores (or replaces) the service key `name`; the answer has its hint only.
    pub async fn set_service_key(
        &self,
        name: &str,
        api_key: &str,
    ) -> Result<souz_protocol::ServiceKeyInfo, ClientError> {
        let path = format!("/v1/settings/service-keys/{}", encode_segment(name));
        let body = souz_protocol::PutProviderKey {
            api_key: api_key.to_owned(),
        };
        self.put(&path, &body).await
    }

    /// Checks the service key `name` with one real request to the service.
    pub async fn test_service_key(
        &self,
        name: &str,
    ) -> Result<souz_protocol::ServiceKeyTest, ClientError> {
        let path = format!("/v1/settings/service-keys/{}/test", encode_segment(name));
        self.post(&path, &serde_json::json!({})).await
    }

    /// Deletes the stored service key `name` (idempotent).
    pub async fn delete_service_key(&self, name: &str) -> Result<(), ClientError> {
        let path = format!("/v1/settings/service-keys/{}", encode_segment(name));
        self.delete(&path).await
    }

    /// The MCP client tokens.
    pub async fn clients(&self) -> Result<ClientList, ClientError> {
        self.get("/v1/clients").await
    }

    /// Makes a client token named `name` that reaches `scope`.
    pub async fn create_client(
        &self,
        name: &str,
        scope: ClientScope,
    ) -> Result<CreatedClient, ClientError> {
        let body = NewClient {
            name: name.to_owned(),
            scope,
        };
        self.post("/v1/clients", &body).await
    }

    /// Revokes the MCP client token `client_id`.
    pub async fn revoke_client(&self, client_id: &str) -> Result<(), ClientError> {
        self.delete(&format!("/v1/clients/{client_id}")).await
    }

    /// Every skill by precedence.
    pub async fn skills(&self) -> Result<SkillList, ClientError> {
        self.get("/v1/skills").await
    }

    /// One skill in full.
    pub async fn skill(&self, id: &str) -> Result<SkillDetail, ClientError> {
        self.get(&format!("/v1/skills/{id}")).await
    }

    /// Installs the skill folder or `.zip` at `path` (absolute, on the daemon's machine).
    pub async fn install_skill(&self, path: &str) -> Result<InstalledSkill, ClientError> {
        let body = SkillPath {
            path: path.to_owned(),
        };
        self.post("/v1/skills", &body).await
    }

    /// Installs the skill in a git repository reached over HTTP(S) (`source.url`, with an
    /// optional ref and folder); the daemon fetches it.
    pub async fn install_skill_git(
        &self,
        source: &SkillGitSource,
    ) -> Result<InstalledSkill, ClientError> {
        self.post("/v1/skills/git", source).await
    }

    /// Validates the skill folder or `.zip` at `path` without installing it.
    pub async fn validate_skill(&self, path: &str) -> Result<SkillValidation, ClientError> {
        let body = SkillPath {
            path: path.to_owned(),
        };
        self.post("/v1/skills/validate", &body).await
    }

    /// Enables or disables the installed skill `id`.
    pub async fn set_skill_enabled(
        &self,
        id: &str,
        enabled: bool,
    ) -> Result<SkillSummary, ClientError> {
        let action = if enabled { "enable" } else { "disable" };
        self.post(&format!("/v1/skills/{id}/{action}"), &serde_json::json!({}))
            .await
    }

    /// Removes the installed skill `id`.
    pub async fn remove_skill(&self, id: &str) -> Result<(), ClientError> {
        self.delete(&format!("/v1/skills/{id}")).await
    }

    /// A one-time sign-in code for the web UI.
    pub async fn ui_code(&self) -> Result<UiCode, ClientError> {
        self.post("/v1/ui-codes", &serde_json::json!({})).await
    }

    /// The web UI's address with a one-time sign-in code (valid once, for about a minute), so
    /// the token never appears in a browser's process arguments.
    pub async fn ui_code_url(&self) -> Result<String, ClientError> {
        let code = self.ui_code().await?;
        Ok(format!("{}/app/#code={}", self.base(), code.code))
    }
}

/// A path segment (or query-string value) with everything but unreserved characters
/// percent-encoded.
pub(crate) fn encode_segment(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}
