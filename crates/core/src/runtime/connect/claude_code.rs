//! Claude Code's side of Connect: Souz's entry in Claude Code's user configuration
//! (`~/.claude.json`, `mcpServers.souz`, written by the Connect page after showing the diff)
//! and the copy-paste `claude mcp add-json` command, its fallback.
//!
//! Invariants: neither the entry nor the command holds a token, so none lands in a process
//! argument, a shell history or Claude Code's configuration file. Claude Code gets its bearer
//! header from `headersHelper`, a command it runs that prints it: `souz mcp-headers`, which
//! reads `<SOUZ_HOME>/clients/claude-code.token` (0600, in an owner-only folder).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The command Claude Code runs to get the headers (`'<binary>' mcp-headers`, with `SOUZ_HOME`
/// when the Souz home is not the default one), every word quoted for the shell.
pub fn headers_helper(binary: &str, home: Option<&Path>) -> String {
    let command = format!("{} mcp-headers", shell_quote(binary));
    match home {
        Some(home) => format!(
            "SOUZ_HOME={} {command}",
            shell_quote(&home.to_string_lossy())
        ),
        None => command,
    }
}

/// Souz's server entry for Claude Code: the daemon's `/mcp` at `base` (`http://host:port`),
/// with its headers from `helper`.
pub fn code_server(base: &str, helper: &str) -> Value {
    json!({
        "type": "http",
        "url": format!("{base}/mcp"),
        "headersHelper": helper,
    })
}

/// The fallback: `claude mcp add-json --scope user souz '<entry>'` (no token in it).
pub fn add_json_command(server: &Value) -> String {
    format!(
        "claude mcp add-json --scope user souz {}",
        shell_quote(&server.to_string())
    )
}

/// Claude Code's user configuration for the person whose home is `user_home`.
pub fn code_config_path(user_home: &Path) -> PathBuf {
    user_home.join(".claude.json")
}

/// `text` as one shell word (single quotes; a `'` inside becomes `'\''`).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::connect::with_server;

    #[test]
    fn the_entry_and_the_command_hold_no_token_and_quote_every_word() {
        let helper = headers_helper("/opt/it's/souz", Some(Path::new("/h o/.souz")));
        assert_eq!(
            helper,
            "SOUZ_HOME='/h o/.souz' '/opt/it'\\''s/souz' mcp-headers"
        );
        assert_eq!(headers_helper("/s", None), "'/s' mcp-headers");
        let server = code_server("http://127.0.0.1:8383", &headers_helper("/s", None));
        assert_eq!(server["url"], "http://127.0.0.1:8383/mcp");
        assert_eq!(server["type"], "http");
        assert!(server.get("headers").is_none());
        let command = add_json_command(&server);
        assert_eq!(
            command,
            "claude mcp add-json --scope user souz \
             '{\"headersHelper\":\"'\\''/s'\\'' mcp-headers\",\"type\":\"http\",\
             \"url\":\"http://127.0.0.1:8383/mcp\"}'"
        );
    }

    #[test]
    fn adding_souz_keeps_claude_codes_other_settings() {
        let path = Path::new("/u/.claude.json");
        let current = r#"{"numStartups": 12, "projects": {"/w": {"allowedTools": []}},
            "mcpServers": {"github": {"type": "http", "url": "https://x/mcp"}}}"#;
        let text = with_server(
            path,
            Some(current),
            code_server("http://h", "'/s' mcp-headers"),
        )
        .unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["numStartups"], 12);
        assert_eq!(value["mcpServers"]["github"]["url"], "https://x/mcp");
        assert_eq!(
            value["mcpServers"]["souz"]["headersHelper"],
            "'/s' mcp-headers"
        );
    }
}
