//! `souz mcp-config claude-code|claude-desktop`: prints exactly what to paste to connect an MCP
//! client to this Souz, with a client token of its own (never the operator token).
//!
//! Each run rotates the client's token (`claude-code`, `claude-desktop`): the old one of that
//! name is revoked, so the last configuration printed is the one that works.
//! - Claude Code gets the token in the `claude mcp add` header (Claude Code keeps it in its
//!   own configuration; there is nowhere else to put it).
//! - Claude Desktop runs the bridge `souz mcp-stdio`, which reads its token from
//!   `<SOUZ_HOME>/clients/claude-desktop.token` (0600, in an owner-only folder). The token is
//!   therefore not in claude_desktop_config.json (often world-readable and copied around), not
//!   in the bridge's environment (inherited by whatever it starts) and not in its arguments
//!   (visible to every local user in the process list).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;

use crate::clients_command::rotate;
use crate::output::say;

/// The name of the client token the bridge uses by default.
pub const DESKTOP_CLIENT: &str = "claude-desktop";
/// The name of Claude Code's client token.
pub const CODE_CLIENT: &str = "claude-code";

/// The clients Souz prints a configuration for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum McpClient {
    /// Claude Code: `claude mcp add --transport http ...` with the bearer header.
    ClaudeCode,
    /// Claude Desktop: the `mcpServers` block for claude_desktop_config.json (stdio bridge).
    ClaudeDesktop,
}

/// Makes the client's token and prints the configuration for `client`.
pub async fn run(client: McpClient) -> Result<ExitCode> {
    let daemon = crate::client::connect().await?;
    let text = match client {
        McpClient::ClaudeCode => {
            let created = rotate(&daemon, CODE_CLIENT).await?;
            claude_code(daemon.base(), &created.token)
        }
        McpClient::ClaudeDesktop => {
            let binary = std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .context("cannot find the path of this souz binary")?;
            let paths = crate::client::paths()?;
            let created = rotate(&daemon, DESKTOP_CLIENT).await?;
            write_private(
                &paths.client_tokens(),
                &paths.client_token(DESKTOP_CLIENT),
                &created.token,
            )?;
            let home =
                souz_core::config::env::process_env_os("SOUZ_HOME").map(std::path::PathBuf::from);
            claude_desktop(&binary.to_string_lossy(), home.as_deref())
        }
    };
    say!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// Writes `token` to `file` (mode 0600) in `folder` (mode 0700), replacing what was there.
fn write_private(folder: &Path, file: &Path, token: &str) -> Result<()> {
    souz_core::config::paths::create_private_dir(folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let partial = file.with_extension("token.partial");
    let _ = std::fs::remove_file(&partial);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&partial).and_then(|mut out| {
        out.write_all(token.as_bytes())?;
        out.write_all(b"\n")?;
        out.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&partial, file))
        .with_context(|| format!("cannot write {}", file.display()))
}

/// The `claude mcp add` command for a daemon at `base` (`http://host:port`).
pub fn claude_code(base: &str, token: &str) -> String {
    format!(
        "claude mcp add --transport http souz {base}/mcp --header \"Authorization: Bearer {token}\""
    )
}

/// The claude_desktop_config.json block running `binary mcp-stdio` (with `SOUZ_HOME` when the
/// Souz home is not the default). No token: the bridge reads its own from the Souz home.
pub fn claude_desktop(binary: &str, home: Option<&std::path::Path>) -> String {
    let mut server = json!({
        "command": binary,
        "args": ["mcp-stdio"],
    });
    if let Some(home) = home {
        server["env"] = json!({ "SOUZ_HOME": home.to_string_lossy() });
    }
    let config = json!({ "mcpServers": { "souz": server } });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_command_carries_url_and_header() {
        assert_eq!(
            claude_code("http://127.0.0.1:8383", "abc"),
            "claude mcp add --transport http souz http://127.0.0.1:8383/mcp \
             --header \"Authorization: Bearer abc\""
        );
    }

    #[test]
    fn claude_desktop_block_is_json_with_the_binary() {
        let text = claude_desktop("/opt/souz/bin/souz", Some(std::path::Path::new("/h")));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let server = &value["mcpServers"]["souz"];
        assert_eq!(server["command"], "/opt/souz/bin/souz");
        assert_eq!(server["args"], json!(["mcp-stdio"]));
        assert_eq!(server["env"]["SOUZ_HOME"], "/h");
        let plain = claude_desktop("/x/souz", None);
        assert!(!plain.contains("env"));
    }

    #[cfg(unix)]
    #[test]
    fn token_files_are_owner_only_and_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("clients");
        let file = folder.join("claude-desktop.token");
        write_private(&folder, &file, "first").unwrap();
        write_private(&folder, &file, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "second\n");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&folder), 0o700);
    }
}
