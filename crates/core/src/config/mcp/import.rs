//! `souz mcp import`: the MCP servers of Claude Desktop's `claude_desktop_config.json`, Claude
//! Code's `.mcp.json` or the original's `MCP_SERVERS_JSON` (all `{"mcpServers": {name: …}}`)
//! as `[mcp.servers.<name>]` sections of `config.toml`.
//!
//! Invariants: nothing secret is written inline: an `Authorization` header is dropped and the
//! section says which variable to name in `bearer_token_env`; every section is checked like
//! the rest of the configuration before it is offered.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::McpServerConfig;

/// One server as those files write it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Imported {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImportFile {
    mcp_servers: BTreeMap<String, Imported>,
}

/// The servers of an import file as `config.toml` text, with notes on what was left out.
pub fn import_servers(json: &str) -> Result<String, String> {
    let file: ImportFile = serde_json::from_str(json)
        .map_err(|error| format!("not an MCP servers file ({{\"mcpServers\": …}}): {error}"))?;
    let mut out = String::new();
    for (original, server) in file.mcp_servers {
        let name: String = original
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
            .replace("__", "_");
        let mut notes = Vec::new();
        let mut headers = server.headers;
        if headers
            .keys()
            .any(|header| header.eq_ignore_ascii_case("authorization"))
        {
            headers.retain(|header, _| !header.eq_ignore_ascii_case("authorization"));
            notes.push(
                "its Authorization header was left out: put the token in an environment \
                 variable and name it in bearer_token_env",
            );
        }
        let config = McpServerConfig {
            command: server.command.unwrap_or_default(),
            args: server.args,
            env: server.env,
            cwd: server.cwd.unwrap_or_default(),
            url: server.url.unwrap_or_default(),
            headers,
            enabled: !server.disabled,
            ..McpServerConfig::default()
        };
        let problems = config.check(&name);
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        out.push_str(&section(&name, &config, &notes)?);
    }
    Ok(out)
}

fn section(name: &str, config: &McpServerConfig, notes: &[&str]) -> Result<String, String> {
    let mut table = toml_edit::DocumentMut::new();
    let mut values = toml_edit::Table::new();
    let mut set = |key: &str, value: toml_edit::Value| {
        values.insert(key, toml_edit::Item::Value(value));
    };
    if config.is_stdio() {
        set("command", config.command.as_str().into());
        if !config.args.is_empty() {
            set("args", render(&config.args)?);
        }
        if !config.env.is_empty() {
            set("env", render(&config.env)?);
        }
        if !config.cwd.is_empty() {
            set("cwd", config.cwd.as_str().into());
        }
    } else {
        set("url", config.url.as_str().into());
        if !config.headers.is_empty() {
            set("headers", render(&config.headers)?);
        }
    }
    if !config.enabled {
        set("enabled", false.into());
    }
    let mut servers = toml_edit::Table::new();
    servers.set_implicit(true);
    servers.insert(name, toml_edit::Item::Table(values));
    let mut mcp = toml_edit::Table::new();
    mcp.set_implicit(true);
    mcp.insert("servers", toml_edit::Item::Table(servers));
    table.insert("mcp", toml_edit::Item::Table(mcp));
    let mut text: String = notes
        .iter()
        .map(|note| format!("# {name}: {note}\n"))
        .collect();
    text.push_str(&table.to_string());
    text.push('\n');
    Ok(text)
}

fn render<T: serde::Serialize>(value: &T) -> Result<toml_edit::Value, String> {
    value
        .serialize(toml_edit::ser::ValueSerializer::new())
        .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Config, SouzPaths};

    #[test]
    fn claude_files_become_checked_sections_without_inline_secrets() {
        let json = r#"{"mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
            "tracker": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer secret", "X-Team": "a"}}
        }}"#;
        let text = import_servers(json).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("bearer_token_env"), "{text}");
        let config = Config::parse(
            SouzPaths::new("/tmp/souz-import"),
            Path::new("config.toml"),
            &text,
            &|_| None,
        )
        .unwrap();
        let servers = &config.mcp.servers;
        assert_eq!(servers["filesystem"].args[0], "-y");
        assert_eq!(servers["filesystem"].env["DEBUG"], "1");
        assert_eq!(servers["tracker"].url, "https://mcp.example.com/mcp");
        assert_eq!(servers["tracker"].headers.len(), 1);
    }

    #[test]
    fn a_file_of_another_shape_or_a_bad_server_is_refused() {
        assert!(import_servers("{\"servers\": {}}").is_err());
        let both = r#"{"mcpServers": {"x": {"command": "a", "url": "https://b"}}}"#;
        assert!(import_servers(both).unwrap_err().contains("not both"));
    }
}
