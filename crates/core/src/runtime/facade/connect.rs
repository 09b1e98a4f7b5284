//! Connect Claude for the adapters: the Claude Code command (with a fresh token of its own),
//! Souz's entry in Claude Desktop's configuration (shown as a diff first, then written with a
//! backup), and which MCP clients used Souz recently and what they may do.

use std::path::PathBuf;

use souz_protocol::{
    ClaudeCodeCommand, ConnectStatus, ConnectedClient, DesktopConfigApplied, DesktopConfigChange,
    ErrorCode, Requester,
};

use super::ServiceError;
use crate::approvals::audit;
use crate::runtime::RuntimeHandle;
use crate::runtime::config_editor;
use crate::runtime::connect::{self, CODE_CLIENT, ConnectError, DESKTOP_CLIENT};
use crate::sandbox::DaemonFile;

/// How far back "recently" reaches.
const RECENT_DAYS: i64 = 30;

impl From<ConnectError> for ServiceError {
    fn from(error: ConnectError) -> Self {
        match error {
            ConnectError::Unreadable { .. }
            | ConnectError::NoBinary
            | ConnectError::Changed(_)
            | ConnectError::Refused(_) => Self::conflict(ErrorCode::Conflict, error.to_string()),
            ConnectError::Io(detail) => Self::Internal(detail),
        }
    }
}

impl RuntimeHandle {
    /// Claude Desktop's configuration file for this person.
    fn desktop_config(&self) -> PathBuf {
        connect::desktop_config_path(self.config().paths.user_home())
    }

    /// The same file, reached beneath the person's home without following links.
    fn desktop_config_file(&self) -> Result<DaemonFile, ConnectError> {
        connect::desktop_config_file(self.config().paths.user_home())
    }

    /// Where Claude Desktop is configured, and the client tokens with their recent calls
    /// and grants.
    pub async fn connect_status(&self) -> Result<ConnectStatus, ServiceError> {
        let file = self.desktop_config_file()?;
        let configured = blocking(move || connect::read_optional(&file))
            .await?
            .is_some_and(|text| connect::has_server(&text));
        let since = chrono::Utc::now() - chrono::Duration::days(RECENT_DAYS);
        let recent = self
            .store()
            .read(move |connection| audit::recent_mcp_calls(connection, since))
            .await?;
        let grants = self.approvals().grants().await?;
        let clients = self
            .clients()
            .list()
            .await?
            .into_iter()
            .map(|client| {
                let activity = recent.iter().find(|(token, _, _)| *token == client.id);
                let may = grants
                    .iter()
                    .filter_map(|grant| match &grant.requester {
                        Some(Requester::Mcp { token_id, .. }) if *token_id == client.id => {
                            Some(grant.label.clone())
                        }
                        _ => None,
                    })
                    .collect();
                ConnectedClient {
                    last_call_at: activity.map(|(_, at, _)| *at),
                    calls: activity.map_or(0, |(_, _, count)| *count),
                    grants: may,
                    id: client.id,
                    name: client.name,
                    created_at: client.created_at,
                }
            })
            .collect();
        Ok(ConnectStatus {
            desktop_config_path: self.desktop_config().display().to_string(),
            desktop_configured: configured,
            clients,
        })
    }

    /// The `claude mcp add` command for a daemon reached at `base`, with a new `claude-code`
    /// token (the previous one is revoked).
    pub async fn claude_code_command(&self, base: &str) -> Result<ClaudeCodeCommand, ServiceError> {
        let token = self.rotate_client(CODE_CLIENT).await?;
        Ok(ClaudeCodeCommand {
            command: connect::claude_code_command(base, &token),
        })
    }

    /// The change adding Souz to Claude Desktop's configuration would make; nothing is written.
    pub async fn desktop_config_change(&self) -> Result<DesktopConfigChange, ServiceError> {
        let server = self.desktop_server()?;
        let file = self.desktop_config_file()?;
        let change = blocking(move || {
            let path = file.path();
            let current = connect::read_optional(&file)?;
            let before = current.clone().unwrap_or_default();
            let after = connect::with_server(&path, current.as_deref(), server)?;
            Ok(DesktopConfigChange {
                path: path.display().to_string(),
                exists: current.is_some(),
                revision: config_editor::revision(&before),
                diff: connect::diff(&path, &before, &after),
                after,
            })
        })
        .await?;
        Ok(change)
    }

    /// Adds Souz to Claude Desktop's configuration if the file is still at `revision` (what
    /// was shown): writes the bridge's token file, backs the file up, writes the new one.
    pub async fn apply_desktop_config(
        &self,
        revision: String,
    ) -> Result<DesktopConfigApplied, ServiceError> {
        let server = self.desktop_server()?;
        let file = self.desktop_config_file()?;
        let check = file.clone();
        let after = blocking(move || {
            let current = connect::read_optional(&check)?;
            if config_editor::revision(current.as_deref().unwrap_or_default()) != revision {
                return Err(ConnectError::Changed(check.path().display().to_string()));
            }
            connect::with_server(&check.path(), current.as_deref(), server)
        })
        .await?;
        let token = self.rotate_client(DESKTOP_CLIENT).await?;
        let paths = self.config().paths.clone();
        let backup = blocking(move || {
            connect::write_client_token(&paths, DESKTOP_CLIENT, &token).map_err(|error| {
                ConnectError::Io(format!("cannot write the bridge's token: {error}"))
            })?;
            connect::write_with_backup(&file, &after)
        })
        .await?;
        tracing::info!(path = %self.desktop_config().display(), "added Souz to Claude Desktop");
        Ok(DesktopConfigApplied {
            path: self.desktop_config().display().to_string(),
            backup: backup.map(|backup| backup.display().to_string()),
        })
    }

    /// Souz's server entry for Claude Desktop (the bridge is this installation's `souz`).
    fn desktop_server(&self) -> Result<serde_json::Value, ConnectError> {
        let binary = self.souz_binary().ok_or(ConnectError::NoBinary)?;
        let paths = &self.config().paths;
        let default_home = paths.user_home().join(".souz");
        let home = (paths.home() != default_home).then(|| paths.home().to_path_buf());
        Ok(connect::desktop_server(
            &binary.to_string_lossy(),
            home.as_deref(),
        ))
    }

    /// Revokes the active tokens named `name` and makes a new one; returns it.
    async fn rotate_client(&self, name: &str) -> Result<String, ServiceError> {
        for old in self.clients().list().await? {
            if old.name.eq_ignore_ascii_case(name) {
                self.clients().revoke(&old.id).await?;
            }
        }
        Ok(self.clients().create(name).await?.token)
    }
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ConnectError> + Send + 'static,
) -> Result<T, ConnectError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ConnectError::Io(error.to_string()))?
}
