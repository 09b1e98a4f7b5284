//! `souz mcp servers`: the external MCP servers of `[mcp.servers]` (through the daemon).

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::output::{print_json, say, truncate};

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// External MCP servers: list (default), test.
    Servers {
        #[command(subcommand)]
        command: Option<ServersCommand>,
    },
    /// Print the servers of Claude Desktop's claude_desktop_config.json, Claude Code's
    /// .mcp.json or an `{"mcpServers": …}` file as [mcp.servers.<name>] sections to add to
    /// config.toml (checked like it; secrets in headers are left out, never copied).
    Import {
        /// The JSON file.
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum ServersCommand {
    /// Every configured server: transport, whether it is connected, its tools in use.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Connect to a server (if it is not) and list its tools; exit 1 if it fails.
    Test {
        /// The server's name in config.toml.
        name: String,
    },
}

pub async fn run(command: McpCommand) -> Result<std::process::ExitCode> {
    let command = match command {
        McpCommand::Import { file } => {
            let json = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            return match souz_core::config::import_servers(&json) {
                Ok(text) => {
                    say!("{}", text.trim_end());
                    Ok(std::process::ExitCode::SUCCESS)
                }
                Err(problems) => anyhow::bail!("{}: {problems}", file.display()),
            };
        }
        McpCommand::Servers { command } => command,
    };
    let client = crate::client::connect().await?;
    match command.unwrap_or(ServersCommand::List { json: false }) {
        ServersCommand::List { json } => {
            let list = client.mcp_servers().await?;
            if json {
                print_json(&list)?;
                return Ok(std::process::ExitCode::SUCCESS);
            }
            if list.servers.is_empty() {
                say!("No MCP servers are configured ([mcp.servers.<name>] in config.toml).");
            }
            for server in &list.servers {
                let state = match (server.enabled, server.connected) {
                    (false, _) => "disabled",
                    (true, true) => "connected",
                    (true, false) => "not connected",
                };
                say!(
                    "{:<20} {:<6} {:<14} {} tool(s){}{}",
                    server.name,
                    server.transport,
                    state,
                    server.tools,
                    if server.expose_to_mcp_clients {
                        ""
                    } else {
                        ", not exposed at /mcp"
                    },
                    server
                        .error
                        .as_deref()
                        .map(|error| format!(": {}", truncate(error, 80)))
                        .unwrap_or_default()
                );
            }
            Ok(std::process::ExitCode::SUCCESS)
        }
        ServersCommand::Test { name } => {
            let test = client.test_mcp_server(&name).await?;
            if test.ok {
                say!("{}: ok, {} tool(s)", test.name, test.tools);
                Ok(std::process::ExitCode::SUCCESS)
            } else {
                say!("{}: failed: {}", test.name, test.error.unwrap_or_default());
                Ok(std::process::ExitCode::FAILURE)
            }
        }
    }
}
