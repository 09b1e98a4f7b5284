//! `[mcp.servers.<name>]`: one external MCP server, run as a program over stdio or reached
//! over streamable HTTP.
//!
//! Invariants: a server has exactly one transport (`command` or `url`); a secret is never
//! written inline (a bearer token comes from an environment variable named by
//! `bearer_token_env` or from the encrypted key store under `bearer_token_key`, OAuth tokens
//! only from the key store, and an `Authorization` header is refused); names are what the tool
//! names are made of, so they are plain (`[A-Za-z0-9_-]`, no `__`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One external MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    /// The program to run (stdio transport). Exclusive with `url`.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for the program (its environment is otherwise scrubbed like a command's).
    pub env: BTreeMap<String, String>,
    /// Names of the daemon's own variables passed through to the program as they are.
    pub env_vars: Vec<String>,
    /// The program's working folder (default: the Souz home).
    pub cwd: String,
    /// The server's streamable HTTP endpoint. Exclusive with `command`.
    pub url: String,
    /// Extra HTTP headers (never credentials: use `bearer_token_env`).
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for `url`.
    pub bearer_token_env: String,
    /// The name of a bearer token for `url` kept in the encrypted key store (set with
    /// `souz mcp token set <server>`). Exclusive with `bearer_token_env`.
    pub bearer_token_key: String,
    /// A client id registered with the server's authorization server for OAuth (empty:
    /// dynamic client registration).
    pub oauth_client_id: String,
    /// Scopes asked for at OAuth login (empty: what the server's challenge or metadata asks).
    pub oauth_scopes: Vec<String>,
    /// Whether `url` may be on this machine or a private network (refused by default, like
    /// every web request of Souz's tools).
    pub allow_private_network: bool,
    /// Whether Souz connects to it at all.
    pub enabled: bool,
    /// Seconds to start (or connect) and list the tools before giving up.
    pub startup_timeout_seconds: u64,
    /// Seconds one tool call may run before it is cancelled.
    pub tool_timeout_seconds: u64,
    /// Only these tools (by the server's names); empty: every tool.
    pub enabled_tools: Vec<String>,
    /// Never these tools (by the server's names).
    pub disabled_tools: Vec<String>,
    /// Whether its tools are also offered to MCP clients at Souz's `/mcp`.
    pub expose_to_mcp_clients: bool,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            env_vars: Vec::new(),
            cwd: String::new(),
            url: String::new(),
            headers: BTreeMap::new(),
            bearer_token_env: String::new(),
            bearer_token_key: String::new(),
            oauth_client_id: String::new(),
            oauth_scopes: Vec::new(),
            allow_private_network: false,
            enabled: true,
            startup_timeout_seconds: 30,
            tool_timeout_seconds: 120,
            enabled_tools: Vec::new(),
            disabled_tools: Vec::new(),
            expose_to_mcp_clients: true,
        }
    }
}

impl McpServerConfig {
    /// Whether the server is run as a program (stdio); otherwise it is reached at `url`.
    pub fn is_stdio(&self) -> bool {
        !self.command.trim().is_empty()
    }

    /// Whether a tool the server lists (by its own name) is used.
    pub fn uses_tool(&self, tool: &str) -> bool {
        (self.enabled_tools.is_empty() || self.enabled_tools.iter().any(|name| name == tool))
            && !self.disabled_tools.iter().any(|name| name == tool)
    }

    /// What is wrong with the server named `name`, each message naming it.
    pub(crate) fn check(&self, name: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let mut problem = |message: String| problems.push(format!("server `{name}`: {message}"));
        if !is_server_name(name) {
            problem("a server name may use only letters, digits, `_` and `-` (no `__`)".into());
        }
        let has_url = !self.url.trim().is_empty();
        match (self.is_stdio(), has_url) {
            (true, true) => problem("set either `command` or `url`, not both".into()),
            (false, false) => {
                problem("set `command` (a program) or `url` (streamable HTTP)".into())
            }
            _ => {}
        }
        if has_url {
            let url = self.url.trim();
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                problem(format!("`url` must be an http(s) URL, not `{url}`"));
            }
        }
        if self
            .headers
            .keys()
            .any(|header| header.eq_ignore_ascii_case("authorization"))
        {
            problem(
                "an `Authorization` header would keep a secret in the file: name the variable \
                 holding the token in `bearer_token_env`"
                    .into(),
            );
        }
        if !self.bearer_token_env.is_empty() && !is_variable_name(&self.bearer_token_env) {
            problem("`bearer_token_env` must name an environment variable".into());
        }
        if !self.bearer_token_key.is_empty() {
            if !self.bearer_token_env.is_empty() {
                problem("set either `bearer_token_env` or `bearer_token_key`, not both".into());
            }
            if !is_secret_name(&self.bearer_token_key) {
                problem("`bearer_token_key` may use only letters, digits, `_`, `-` and `.`".into());
            }
        }
        if self.is_stdio()
            && (!self.bearer_token_key.is_empty()
                || !self.oauth_client_id.is_empty()
                || !self.oauth_scopes.is_empty())
        {
            problem("tokens and OAuth apply to `url` servers only".into());
        }
        if let Some(bad) = self
            .env
            .keys()
            .chain(&self.env_vars)
            .find(|name| !is_variable_name(name))
        {
            problem(format!("`{bad}` is not an environment variable name"));
        }
        if !(1..=600).contains(&self.startup_timeout_seconds) {
            problem("`startup_timeout_seconds` must be between 1 and 600".into());
        }
        if !(1..=3600).contains(&self.tool_timeout_seconds) {
            problem("`tool_timeout_seconds` must be between 1 and 3600".into());
        }
        problems
    }
}

/// Whether `name` can name a server: what its tools' names (`mcp__<name>__<tool>`) are made of,
/// so letters, digits, `_` and `-`, without `__`.
pub(crate) fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A name for a secret in the key store: plain, short.
fn is_secret_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl McpServerConfig {
    /// The key-store name of this server's bearer token, if it uses one.
    pub fn bearer_token_secret(&self) -> Option<String> {
        (!self.bearer_token_key.is_empty()).then(|| format!("mcp-token:{}", self.bearer_token_key))
    }
}

fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio() -> McpServerConfig {
        McpServerConfig {
            command: "npx".into(),
            ..McpServerConfig::default()
        }
    }

    #[test]
    fn a_plain_server_is_valid() {
        assert!(stdio().check("files").is_empty());
        let http = McpServerConfig {
            url: "https://mcp.example.com/mcp".into(),
            bearer_token_env: "TRACKER_TOKEN".into(),
            ..McpServerConfig::default()
        };
        assert!(http.check("tracker").is_empty());
    }

    #[test]
    fn each_problem_is_reported_with_the_server_name() {
        let server = McpServerConfig {
            url: "ftp://x".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer x".into())]),
            tool_timeout_seconds: 0,
            env_vars: vec!["NOT VALID".into()],
            ..stdio()
        };
        let problems = server.check("bad__name");
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(
            problems
                .iter()
                .all(|p| p.starts_with("server `bad__name`: "))
        );
        assert!(McpServerConfig::default().check("x")[0].contains("set `command`"));
    }

    #[test]
    fn a_key_store_token_is_named_plainly_and_alone() {
        let http = McpServerConfig {
            url: "https://mcp.example.com/mcp".into(),
            bearer_token_key: "tracker".into(),
            ..McpServerConfig::default()
        };
        assert!(http.check("tracker").is_empty());
        assert_eq!(
            http.bearer_token_secret().as_deref(),
            Some("mcp-token:tracker")
        );
        let both = McpServerConfig {
            bearer_token_env: "TOKEN".into(),
            bearer_token_key: "a b".into(),
            ..http.clone()
        };
        let problems = both.check("tracker");
        assert_eq!(problems.len(), 2, "{problems:?}");
        let stdio_token = McpServerConfig {
            bearer_token_key: "x".into(),
            ..stdio()
        };
        assert!(stdio_token.check("files")[0].contains("`url` servers only"));
    }

    #[test]
    fn tool_filters_apply_by_the_servers_names() {
        let server = McpServerConfig {
            enabled_tools: vec!["echo".into(), "add".into()],
            disabled_tools: vec!["add".into()],
            ..stdio()
        };
        assert!(server.uses_tool("echo"));
        assert!(!server.uses_tool("add"));
        assert!(!server.uses_tool("other"));
        assert!(stdio().uses_tool("anything"));
    }
}
