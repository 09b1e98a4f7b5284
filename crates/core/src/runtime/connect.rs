//! Connecting Claude: the Claude Code command, Souz's entry in Claude Desktop's
//! `claude_desktop_config.json`, and the owner-only token file the stdio bridge reads. Shared by
//! `souz mcp-config` (prints) and `/v1/connect` (the Connect Claude page, which writes).
//!
//! Invariants:
//! - Adding Souz to `claude_desktop_config.json` changes only `mcpServers.souz`: every other
//!   server and every other key is kept as it was. A file that is not a JSON object (or whose
//!   `mcpServers` is not an object) is refused, never overwritten.
//! - The previous file is copied to `claude_desktop_config.json.bak` before the new one is
//!   renamed into place (a write is atomic: temp file + rename); the new file keeps the old
//!   one's mode (a new file is owner-only).
//! - No token is written to that file: the bridge reads its own from
//!   `<SOUZ_HOME>/clients/claude-desktop.token` (0600, in an owner-only folder).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub mod claude_code;

/// The name of Claude Code's client token.
pub const CODE_CLIENT: &str = "claude-code";
/// The name of the client token the bridge uses by default.
pub const DESKTOP_CLIENT: &str = "claude-desktop";
/// The name Souz has among an MCP client's servers.
const SERVER_NAME: &str = "souz";

/// Why Claude Desktop's configuration was not changed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The file is not something Souz may edit; nothing was written.
    #[error("{path} is not a JSON object with an `mcpServers` object ({detail}); fix it by hand")]
    Unreadable {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// The file changed since the change was shown; nothing was written.
    #[error("{0} changed since the change was shown; look at it again")]
    Changed(String),
    /// The path of the `souz` binary is unknown (the bridge cannot be started).
    #[error("the path of the souz binary is unknown, so Claude Desktop could not start the bridge")]
    NoBinary,
    /// Reading or writing failed.
    #[error("{0}")]
    Io(String),
}

/// The `claude mcp add` command for a daemon at `base` (`http://host:port`) with the token in
/// a header: the last resort for a Claude Code without `headersHelper` (the token lands in the
/// command's arguments and the shell's history; see [`claude_code`] for the way that does not).
pub fn claude_code_command(base: &str, token: &str) -> String {
    format!(
        "claude mcp add --transport http souz {base}/mcp --header \"Authorization: Bearer {token}\""
    )
}

/// Souz's server entry for Claude Desktop: `binary mcp-stdio`, with `SOUZ_HOME` when the Souz
/// home is not the default one.
pub fn desktop_server(binary: &str, home: Option<&Path>) -> Value {
    let mut server = json!({
        "command": binary,
        "args": ["mcp-stdio"],
    });
    if let Some(home) = home {
        server["env"] = json!({ "SOUZ_HOME": home.to_string_lossy() });
    }
    server
}

/// The `mcpServers` block to paste into claude_desktop_config.json.
pub fn desktop_block(binary: &str, home: Option<&Path>) -> String {
    let config = json!({ "mcpServers": { SERVER_NAME: desktop_server(binary, home) } });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

/// Where Claude Desktop keeps its configuration for the person whose home is `user_home`.
pub fn desktop_config_path(user_home: &Path) -> PathBuf {
    let folder = if cfg!(target_os = "macos") {
        user_home.join("Library/Application Support/Claude")
    } else if cfg!(windows) {
        user_home.join("AppData/Roaming/Claude")
    } else {
        user_home.join(".config/Claude")
    };
    folder.join("claude_desktop_config.json")
}

/// The file's text with `mcpServers.souz` set to `server`, everything else kept. `current` is
/// `None` (or blank) when there is no file yet.
pub(crate) fn with_server(
    path: &Path,
    current: Option<&str>,
    server: Value,
) -> Result<String, ConnectError> {
    let unreadable = |detail: String| ConnectError::Unreadable {
        path: path.display().to_string(),
        detail,
    };
    let mut root: Map<String, Value> = match current.map(str::trim) {
        None | Some("") => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(root)) => root,
            Ok(_) => return Err(unreadable("the top level is not an object".to_owned())),
            Err(error) => return Err(unreadable(error.to_string())),
        },
    };
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(unreadable("`mcpServers` is not an object".to_owned()));
    };
    servers.insert(SERVER_NAME.to_owned(), server);
    let mut text = serde_json::to_string_pretty(&Value::Object(root))
        .map_err(|error| ConnectError::Io(error.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// Whether the file's text already has Souz among its servers.
pub(crate) fn has_server(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|root| root.get("mcpServers")?.get(SERVER_NAME).cloned())
        .is_some()
}

/// A unified diff from `before` to `after`, labelled with the file name.
pub(crate) fn diff(path: &Path, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    let name = path.display().to_string();
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .header(&name, &name)
        .to_string()
}

/// Reads `path`; `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, ConnectError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(ConnectError::Io(format!(
            "cannot read {}: {error}",
            path.display()
        ))),
    }
}

/// Writes `text` to `path` atomically, first copying the file there to `<path>.bak`; returns
/// the backup's path when there was a file.
pub(crate) fn write_with_backup(path: &Path, text: &str) -> Result<Option<PathBuf>, ConnectError> {
    let io = |what: &str, error: std::io::Error| {
        ConnectError::Io(format!("cannot {what} {}: {error}", path.display()))
    };
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|error| io("create the folder of", error))?;
    }
    let backup = if path.exists() {
        let backup = path.with_extension("json.bak");
        std::fs::copy(path, &backup).map_err(|error| io("back up", error))?;
        Some(backup)
    } else {
        None
    };
    let partial = path.with_extension(format!("json.{}.partial", std::process::id()));
    // The new file keeps the old one's mode (Claude Code's `~/.claude.json` may be owner-only).
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let mode = std::fs::metadata(path).map_or(0o600, |old| old.permissions().mode() & 0o777);
        options.mode(mode);
    }
    let written = options.open(&partial).and_then(|mut out| {
        out.write_all(text.as_bytes())?;
        out.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|error| {
            let _ = std::fs::remove_file(&partial);
            io("write", error)
        })?;
    Ok(backup)
}

/// Writes `token` to `file` (mode 0600) in `folder` (mode 0700), replacing what was there.
pub fn write_private(folder: &Path, file: &Path, token: &str) -> std::io::Result<()> {
    crate::config::paths::create_private_dir(folder)?;
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
    written.and_then(|()| std::fs::rename(&partial, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_command_carries_url_and_header() {
        assert_eq!(
            claude_code_command("http://127.0.0.1:8383", "abc"),
            "claude mcp add --transport http souz http://127.0.0.1:8383/mcp \
             --header \"Authorization: Bearer abc\""
        );
    }

    #[test]
    fn desktop_block_is_json_with_the_binary() {
        let text = desktop_block("/opt/souz/bin/souz", Some(Path::new("/h")));
        let value: Value = serde_json::from_str(&text).unwrap();
        let server = &value["mcpServers"]["souz"];
        assert_eq!(server["command"], "/opt/souz/bin/souz");
        assert_eq!(server["args"], json!(["mcp-stdio"]));
        assert_eq!(server["env"]["SOUZ_HOME"], "/h");
        assert!(!desktop_block("/x/souz", None).contains("env"));
    }

    #[test]
    fn adding_souz_keeps_every_other_server_and_key() {
        let path = Path::new("/c/claude_desktop_config.json");
        let current = r#"{"globalShortcut": "Ctrl+Space",
            "mcpServers": {"files": {"command": "npx", "args": ["server-filesystem", "/tmp"]},
                           "souz": {"command": "/old/souz", "args": ["mcp-stdio"]}}}"#;
        let text = with_server(path, Some(current), desktop_server("/new/souz", None)).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["globalShortcut"], "Ctrl+Space");
        assert_eq!(value["mcpServers"]["files"]["args"][1], "/tmp");
        assert_eq!(value["mcpServers"]["souz"]["command"], "/new/souz");
        assert!(has_server(&text));
        let fresh = with_server(path, None, desktop_server("/s", None)).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&fresh).unwrap()["mcpServers"]["souz"]["command"],
            "/s"
        );
        assert!(!has_server(r#"{"mcpServers": {}}"#));
    }

    #[test]
    fn a_file_souz_cannot_edit_is_refused() {
        let path = Path::new("/c/claude_desktop_config.json");
        for bad in ["[1, 2]", "{not json", r#"{"mcpServers": []}"#] {
            assert!(
                matches!(
                    with_server(path, Some(bad), desktop_server("/s", None)),
                    Err(ConnectError::Unreadable { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn writing_keeps_a_backup_and_the_diff_shows_the_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Claude/claude_desktop_config.json");
        assert_eq!(write_with_backup(&path, "{}\n").unwrap(), None);
        let after = with_server(&path, Some("{}\n"), desktop_server("/s", None)).unwrap();
        let change = diff(&path, "{}\n", &after);
        assert!(change.contains("+  \"mcpServers\""), "{change}");
        let backup = write_with_backup(&path, &after).unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(backup).unwrap(), "{}\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), after);
        assert_eq!(diff(&path, &after, &after), "");
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
