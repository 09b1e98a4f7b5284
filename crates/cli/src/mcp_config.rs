//! `souz mcp-config claude-code|claude-desktop`: prints exactly what to paste to connect an MCP
//! client to this Souz (the daemon's URL and token come from the Souz home).

use crate::output::say;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;

use crate::client::Endpoint;

/// The clients Souz prints a configuration for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum McpClient {
    /// Claude Code: `claude mcp add --transport http ...` with the bearer header.
    ClaudeCode,
    /// Claude Desktop: the `mcpServers` block for claude_desktop_config.json (stdio bridge).
    ClaudeDesktop,
}

/// Prints the configuration for `client`.
pub fn run(client: McpClient) -> ExitCode {
    match render(client) {
        Ok(text) => {
            {
                say!("{text}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => crate::fail(&format!("{error:#}")),
    }
}

fn render(client: McpClient) -> Result<String> {
    match client {
        McpClient::ClaudeCode => {
            let endpoint = Endpoint::discover()?;
            Ok(claude_code(&endpoint.base, endpoint.token.expose()))
        }
        McpClient::ClaudeDesktop => {
            let binary = std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .context("cannot find the path of this souz binary")?;
            let home = std::env::var_os("SOUZ_HOME").map(std::path::PathBuf::from);
            Ok(claude_desktop(&binary.to_string_lossy(), home.as_deref()))
        }
    }
}

/// The `claude mcp add` command for a daemon at `base` (`http://host:port`).
pub fn claude_code(base: &str, token: &str) -> String {
    format!(
        "claude mcp add --transport http souz {base}/mcp --header \"Authorization: Bearer {token}\""
    )
}

/// The claude_desktop_config.json block running `binary mcp-stdio` (with `SOUZ_HOME` when the
/// Souz home is not the default).
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
}
