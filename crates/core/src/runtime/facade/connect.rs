//! Connect Claude for the adapters: Souz's entry in Claude Code's and Claude Desktop's
//! configurations (shown as a diff first, then written with a backup; the token goes to an
//! owner-only file of the Souz home, never into theirs), the Claude Code commands as a
//! fallback, and which MCP clients used Souz recently and what they may do.

use std::path::PathBuf;

use souz_protocol::{
    Action, ClaudeCodeCommand, ClientMemoryAccess, ClientScope, ConnectStatus, ConnectedClient,
    DesktopConfigApplied, DesktopConfigChange, Effect, ErrorCode, Requester,
};

use super::ServiceError;
use crate::approvals::audit;
use crate::memory::mcp_tools::SEARCH_TOOL;
use crate::runtime::RuntimeHandle;
use crate::runtime::config_editor;
use crate::runtime::connect::{self, CODE_CLIENT, ConnectError, DESKTOP_CLIENT, claude_code};
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
        // A file Souz cannot read (a link, too large, not JSON) counts as not configured here;
        // adding Souz to it says why. One such file must not hide the rest of the page.
        let configured = has_souz(self.desktop_config_file()).await;
        let code_configured = has_souz(self.code_config_file()).await;
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
                let memory = self
                    .memory_read_policy(&client_requester(&client.id, &client.name))
                    .action;
                ConnectedClient {
                    memory,
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
            code_config_path: self.code_config().display().to_string(),
            code_configured,
            clients,
        })
    }

    /// The Claude Code commands for a daemon reached at `base`, with a new `claude-code` token
    /// (the previous one is revoked) written where `souz mcp-headers` reads it.
    pub async fn claude_code_command(&self, base: &str) -> Result<ClaudeCodeCommand, ServiceError> {
        let server = self.code_server(base);
        let token = self.rotate_client(CODE_CLIENT).await?;
        self.write_client_token(CODE_CLIENT, token.clone()).await?;
        Ok(ClaudeCodeCommand {
            command: claude_code::add_json_command(&server),
            header_command: connect::claude_code_command(base, &token),
        })
    }

    /// The change adding Souz (reached at `base`) to Claude Code's user configuration would
    /// make; nothing is written. The entry holds no token.
    pub async fn claude_code_config_change(
        &self,
        base: &str,
    ) -> Result<DesktopConfigChange, ServiceError> {
        config_change(self.code_config_file()?, self.code_server(base)).await
    }

    /// Adds Souz to Claude Code's user configuration if the file is still at `revision` (what
    /// was shown): writes Claude Code's token file, backs the file up, writes the new one.
    pub async fn apply_claude_code_config(
        &self,
        base: &str,
        revision: String,
    ) -> Result<DesktopConfigApplied, ServiceError> {
        let file = self.code_config_file()?;
        let applied = self
            .apply_config(file, self.code_server(base), revision, CODE_CLIENT)
            .await?;
        tracing::info!(path = %applied.path, "added Souz to Claude Code");
        Ok(applied)
    }

    /// The change adding Souz to Claude Desktop's configuration would make; nothing is written.
    pub async fn desktop_config_change(&self) -> Result<DesktopConfigChange, ServiceError> {
        config_change(self.desktop_config_file()?, self.desktop_server()?).await
    }

    /// Adds Souz to Claude Desktop's configuration if the file is still at `revision` (what
    /// was shown): writes the bridge's token file, backs the file up, writes the new one.
    pub async fn apply_desktop_config(
        &self,
        revision: String,
    ) -> Result<DesktopConfigApplied, ServiceError> {
        let file = self.desktop_config_file()?;
        let applied = self
            .apply_config(file, self.desktop_server()?, revision, DESKTOP_CLIENT)
            .await?;
        tracing::info!(path = %applied.path, "added Souz to Claude Desktop");
        Ok(applied)
    }

    /// Adds `server` to a client's configuration `file` if it is still at `revision`: checks
    /// first, then rotates `client`'s token and writes its token file, then backs the
    /// configuration up and writes the new one.
    async fn apply_config(
        &self,
        file: DaemonFile,
        server: serde_json::Value,
        revision: String,
        client: &'static str,
    ) -> Result<DesktopConfigApplied, ServiceError> {
        let path = file.path();
        let check = file.clone();
        let expected = revision.clone();
        let entry = server.clone();
        blocking(move || changed_text(&check, &expected, entry)).await?;
        let token = self.rotate_client(client).await?;
        self.write_client_token(client, token).await?;
        // Read, checked and written again in one step: the client itself (Claude Code writes
        // `~/.claude.json` all the time) may have changed the file while the token rotated.
        let backup = blocking(move || {
            let after = changed_text(&file, &revision, server)?;
            connect::write_with_backup(&file, &after)
        })
        .await?;
        Ok(DesktopConfigApplied {
            path: path.display().to_string(),
            backup: backup.map(|backup| backup.display().to_string()),
        })
    }

    /// Souz's server entry for Claude Desktop (the bridge is this installation's `souz`).
    fn desktop_server(&self) -> Result<serde_json::Value, ConnectError> {
        let binary = self.souz_binary().ok_or(ConnectError::NoBinary)?;
        Ok(connect::desktop_server(
            &binary.to_string_lossy(),
            self.custom_home().as_deref(),
        ))
    }

    /// Sets whether the client `id` may search and read the operator's memory (a grant for
    /// that client, or none: ask); answers what applies now.
    pub async fn set_client_memory_access(
        &self,
        id: &str,
        access: Action,
    ) -> Result<ClientMemoryAccess, ServiceError> {
        let client = self
            .clients()
            .list()
            .await?
            .into_iter()
            .find(|client| client.id == id)
            .ok_or_else(|| {
                ServiceError::not_found(ErrorCode::NotFound, "No such active client.")
            })?;
        let requester = client_requester(&client.id, &client.name);
        let effect = match access {
            Action::Allow => Some(Effect::Allow),
            Action::Deny => Some(Effect::Deny),
            Action::Ask => None,
        };
        self.approvals()
            .set_client_grant(SEARCH_TOOL, requester.clone(), effect)
            .await?;
        tracing::info!(client = %client.name, ?access, "memory access set");
        Ok(ClientMemoryAccess {
            access: self.memory_read_policy(&requester).action,
        })
    }

    /// Claude Code's user configuration file for this person.
    fn code_config(&self) -> PathBuf {
        claude_code::code_config_path(self.config().paths.user_home())
    }

    /// The same file, reached beneath the person's home without following a link.
    fn code_config_file(&self) -> Result<DaemonFile, ConnectError> {
        let home = self.config().paths.user_home();
        Ok(DaemonFile::new(home, claude_code::code_config_path(home))?)
    }

    /// Souz's server entry for Claude Code reached at `base`: its headers come from this
    /// installation's `souz mcp-headers` (the `souz` on the person's `PATH` when the runtime
    /// was started without knowing its binary, as in tests).
    fn code_server(&self, base: &str) -> serde_json::Value {
        let binary = self
            .souz_binary()
            .map_or_else(|| "souz".into(), |binary| binary.to_string_lossy());
        let helper = claude_code::headers_helper(&binary, self.custom_home().as_deref());
        claude_code::code_server(base, &helper)
    }

    /// The Souz home when it is not the default `~/.souz` (clients must be told where it is).
    fn custom_home(&self) -> Option<PathBuf> {
        let paths = &self.config().paths;
        let default_home = paths.user_home().join(".souz");
        (paths.home() != default_home).then(|| paths.home().to_path_buf())
    }

    /// Writes the token of the client `name` to its owner-only file in the Souz home.
    async fn write_client_token(
        &self,
        name: &'static str,
        token: String,
    ) -> Result<(), ConnectError> {
        let paths = self.config().paths.clone();
        blocking(move || {
            connect::write_client_token(&paths, name, &token).map_err(|error| {
                ConnectError::Io(format!("cannot write the {name} token: {error}"))
            })
        })
        .await
    }

    /// Revokes the active tokens named `name` and makes a new one; returns it.
    async fn rotate_client(&self, name: &str) -> Result<String, ServiceError> {
        for old in self.clients().list().await? {
            if old.name.eq_ignore_ascii_case(name) {
                self.clients().revoke(&old.id).await?;
            }
        }
        Ok(self.clients().create(name, ClientScope::Mcp).await?.token)
    }
}

/// Whether the configuration `file` lists Souz (false when it cannot be read).
async fn has_souz(file: Result<DaemonFile, ConnectError>) -> bool {
    let Ok(file) = file else {
        return false;
    };
    blocking(move || connect::read_optional(&file))
        .await
        .ok()
        .flatten()
        .is_some_and(|text| connect::has_server(&text))
}

/// The text of `file` with `server` added, if the file is still at `revision`.
fn changed_text(
    file: &DaemonFile,
    revision: &str,
    server: serde_json::Value,
) -> Result<String, ConnectError> {
    let current = connect::read_optional(file)?;
    if config_editor::revision(current.as_deref().unwrap_or_default()) != revision {
        return Err(ConnectError::Changed(file.path().display().to_string()));
    }
    connect::with_server(&file.path(), current.as_deref(), server)
}

/// The change adding `server` to a client's configuration `file` would make.
async fn config_change(
    file: DaemonFile,
    server: serde_json::Value,
) -> Result<DesktopConfigChange, ServiceError> {
    Ok(blocking(move || {
        let path = file.path();
        let current = connect::read_optional(&file)?;
        let before = current.clone().unwrap_or_default();
        let after = connect::with_server(&path, current.as_deref(), server)?;
        Ok(DesktopConfigChange {
            path: path.display().to_string(),
            exists: current.is_some(),
            revision: config_editor::revision(&before),
            diff: connect::diff(&path, &before, &after),
        })
    })
    .await?)
}

/// The requester a client token makes on `/mcp` (what grants and rules bind to).
fn client_requester(id: &str, name: &str) -> Requester {
    Requester::Mcp {
        client_name: name.to_owned(),
        client_version: String::new(),
        session_id: String::new(),
        token_id: id.to_owned(),
        token_name: name.to_owned(),
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
