//! `souz mcp-config claude-code|claude-desktop`: prints exactly what to paste to connect an MCP
//! client to this Souz, with a client token of its own (never the operator token).
//!
//! Each run rotates the client's token (`claude-code`, `claude-desktop`): the old one of that
//! name is revoked, so the last configuration printed is the one that works.
//! - Claude Code gets a `claude mcp add-json` command whose entry holds no token: its
//!   `headersHelper` is `souz mcp-headers`, which prints the bearer header from
//!   `<SOUZ_HOME>/clients/claude-code.token` (0600) each time Claude Code connects, so the token
//!   is in no process argument, shell history or Claude Code file.
//! - Claude Desktop runs the bridge `souz mcp-stdio`, which reads its token from
//!   `<SOUZ_HOME>/clients/claude-desktop.token` (0600, in an owner-only folder). The token is
//!   therefore not in claude_desktop_config.json (often world-readable and copied around), not
//!   in the bridge's environment (inherited by whatever it starts) and not in its arguments
//!   (visible to every local user in the process list).

use std::process::ExitCode;

use anyhow::{Context, Result};
use souz_core::runtime::connect::{self, claude_code};
use souz_protocol::ClientScope;

use crate::clients_command::rotate;
use crate::output::say;
use crate::texts::{fill, tr};

/// The name of the client token the bridge uses by default.
pub const DESKTOP_CLIENT: &str = connect::DESKTOP_CLIENT;
/// The name of Claude Code's client token.
pub const CODE_CLIENT: &str = connect::CODE_CLIENT;

/// The clients Souz prints a configuration for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum McpClient {
    /// Claude Code: `claude mcp add-json ...` whose headers come from `souz mcp-headers`.
    ClaudeCode,
    /// Claude Desktop: the `mcpServers` block for claude_desktop_config.json (stdio bridge).
    ClaudeDesktop,
}

/// Makes the client's token and prints the configuration for `client`.
pub async fn run(client: McpClient) -> Result<ExitCode> {
    let daemon = crate::texts::connect().await?;
    let text = match client {
        McpClient::ClaudeCode => {
            let binary = this_binary()?;
            let paths = crate::client::paths()?;
            let created = rotate(&daemon, CODE_CLIENT, ClientScope::Mcp).await?;
            connect::write_client_token(&paths, CODE_CLIENT, &created.token)
                .with_context(|| cannot_write(&paths.client_token(CODE_CLIENT)))?;
            let home = souz_core::config::env::read_os(souz_core::config::env::Var::SouzHome)
                .map(std::path::PathBuf::from);
            let helper = claude_code::headers_helper(&binary.to_string_lossy(), home.as_deref());
            claude_code::add_json_command(&claude_code::code_server(daemon.base(), &helper))
        }
        McpClient::ClaudeDesktop => {
            let binary = this_binary()?;
            let paths = crate::client::paths()?;
            let created = rotate(&daemon, DESKTOP_CLIENT, ClientScope::Mcp).await?;
            connect::write_client_token(&paths, DESKTOP_CLIENT, &created.token)
                .with_context(|| cannot_write(&paths.client_token(DESKTOP_CLIENT)))?;
            let home = souz_core::config::env::read_os(souz_core::config::env::Var::SouzHome)
                .map(std::path::PathBuf::from);
            claude_desktop(&binary.to_string_lossy(), home.as_deref())
        }
    };
    say!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// `souz mcp-headers`: Claude Code's `headersHelper`. Prints `{"Authorization": "Bearer …"}`
/// with the token of `claude-code` from the Souz home; the token never is an argument.
pub fn headers() -> Result<ExitCode> {
    let paths = crate::client::paths()?;
    // Read as the bridge reads its own: a file that holds no valid token is refused.
    let token = crate::client::home(&paths)
        .client_token(CODE_CLIENT)
        .context(tr(
            "connect Claude Code again (`souz mcp-config claude-code`)",
            "подключите Claude Code заново (`souz mcp-config claude-code`)",
        ))?;
    let header = serde_json::json!({ "Authorization": format!("Bearer {token}") });
    say!("{header}");
    Ok(ExitCode::SUCCESS)
}

/// The canonical path of this `souz` binary.
fn this_binary() -> Result<std::path::PathBuf> {
    std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context(tr(
            "cannot find the path of this souz binary",
            "не удалось найти путь к этой программе souz",
        ))
}

/// "cannot write PATH", in the person's language.
pub fn cannot_write(path: &std::path::Path) -> String {
    fill(
        tr("cannot write {path}", "не удалось записать {path}"),
        &[("path", &path.display())],
    )
}

/// The claude_desktop_config.json block running `binary mcp-stdio` (with `SOUZ_HOME` when the
/// Souz home is not the default). No token: the bridge reads its own from the Souz home.
pub fn claude_desktop(binary: &str, home: Option<&std::path::Path>) -> String {
    connect::desktop_block(binary, home)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_prints_what_core_builds() {
        let value: serde_json::Value =
            serde_json::from_str(&claude_desktop("/x/souz", None)).unwrap();
        assert_eq!(value["mcpServers"]["souz"]["command"], "/x/souz");
    }
}
