//! `[mcp]`: how the MCP server treats clients such as Claude Code and Claude Desktop, and the
//! external MCP servers Souz connects to (`[mcp.servers.<name>]`, see [`McpServerConfig`]).

pub(crate) mod import;
pub(crate) mod servers;

use std::collections::BTreeMap;

use super::section::{Invalid, config_section};

pub use import::import_servers;
pub use servers::McpServerConfig;

config_section! {
    /// The MCP server at `/mcp` (and the `souz mcp-stdio` bridge that forwards to it).
    #[section = "mcp"]
    pub struct McpConfig {
        /// Seconds a `tools/call` waits for your approval before it answers "waiting for
        /// approval <id>" (the approval stays pending; the model picks the result up with the
        /// `AwaitApproval` tool). Keep it under the client's own limit: Claude Desktop stops a
        /// call after 60 s.
        pub approval_wait_seconds: u64 = 50,
        /// Seconds between progress notifications sent while a call waits for approval (only
        /// to clients that asked for progress with a `progressToken`).
        pub progress_interval_seconds: u64 = 5,
        /// Minutes an MCP session may stay idle before it is closed; a client whose session
        /// was closed simply initializes again.
        pub session_idle_minutes: u64 = 1440,
        /// External MCP servers whose tools Souz's agents (and, with `expose_to_mcp_clients`,
        /// your MCP clients through Souz) may call, each call through the approval gate. A
        /// server runs as a program (`command`) or is reached over streamable HTTP (`url`):
        ///
        ///   [mcp.servers.files]
        ///   command = "npx"
        ///   args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
        ///
        ///   [mcp.servers.tracker]
        ///   url = "https://mcp.example.com/mcp"
        ///   bearer_token_env = "TRACKER_TOKEN"
        ///
        /// Their tools appear as `mcp__<server>__<tool>` and ask before every call unless a
        /// rule allows them (a rule's `tool` may be `mcp__files__*`).
        pub servers: BTreeMap<String, McpServerConfig> = BTreeMap::new(),
    }
}

impl McpConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if !(1..=3600).contains(&self.approval_wait_seconds) {
            problems.push(Invalid::new(
                "approval_wait_seconds",
                "must be between 1 and 3600",
            ));
        }
        if !(1..=60).contains(&self.progress_interval_seconds) {
            problems.push(Invalid::new(
                "progress_interval_seconds",
                "must be between 1 and 60",
            ));
        }
        if !(1..=10_080).contains(&self.session_idle_minutes) {
            problems.push(Invalid::new(
                "session_idle_minutes",
                "must be between 1 and 10080 (a week)",
            ));
        }
        for (name, server) in &self.servers {
            for message in server.check(name) {
                problems.push(Invalid::new("servers", message));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::section::Section;

    #[test]
    fn defaults_are_valid_and_bounds_are_enforced() {
        assert!(McpConfig::default().validate().is_empty());
        let config = McpConfig {
            approval_wait_seconds: 0,
            progress_interval_seconds: 61,
            session_idle_minutes: 0,
            servers: BTreeMap::new(),
        };
        let keys: Vec<&str> = config.validate().iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            [
                "approval_wait_seconds",
                "progress_interval_seconds",
                "session_idle_minutes"
            ]
        );
    }
}
