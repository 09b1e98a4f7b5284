//! Connecting Claude: the Claude Code command, Souz's entry in Claude Desktop's
//! `claude_desktop_config.json`, and the owner-only token file the stdio bridge reads. Shared by
//! `souz mcp-config` (prints) and `/v1/connect` (the Connect Claude page, which writes).
//!
//! Invariants:
//! - Adding Souz to `claude_desktop_config.json` changes only `mcpServers.souz`: every other
//!   server and every other key is kept as it was. A file that is not a JSON object (or whose
//!   `mcpServers` is not an object) is refused, never overwritten.
//! - The previous file is copied to `claude_desktop_config.json.bak` before the new one is
//!   renamed into place (a write is atomic: temp file + rename); a replaced file keeps its
//!   permission bits.
//! - Every read and write goes beneath the person's home handle ([`DaemonFile`]): a symbolic
//!   link at the file, at its `.bak`, or at a folder on the way (`~/.config/Claude`) is refused,
//!   never followed, so an approved command that planted one cannot make Souz overwrite or copy
//!   a file elsewhere.
//! - No token is written to that file: the bridge reads its own from
//!   `<SOUZ_HOME>/clients/claude-desktop.token` (0600, in an owner-only folder).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::config::SouzPaths;
use crate::sandbox::{DaemonFile, DaemonFileError, WriteOptions};

pub mod claude_code;
mod json_edit;

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
    /// A link or something other than a regular file is where Souz would read or write;
    /// nothing was read or written there.
    #[error("{0}")]
    Refused(String),
    /// Reading or writing failed.
    #[error("{0}")]
    Io(String),
}

impl From<DaemonFileError> for ConnectError {
    fn from(error: DaemonFileError) -> Self {
        if error.is_refusal() {
            Self::Refused(error.to_string())
        } else {
            Self::Io(error.to_string())
        }
    }
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
    servers.insert(SERVER_NAME.to_owned(), server.clone());
    let expected = Value::Object(root);
    // The file's own text with only the entry changed, when the edit reads back as exactly
    // the intended value; otherwise the whole file rewritten (keys sorted).
    let edited = current
        .filter(|text| !text.trim().is_empty())
        .and_then(|text| json_edit::set_member(text, &["mcpServers", SERVER_NAME], &server))
        .filter(|text| serde_json::from_str::<Value>(text).is_ok_and(|value| value == expected));
    if let Some(text) = edited {
        return Ok(text);
    }
    let mut text = serde_json::to_string_pretty(&expected)
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
    let diff = similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .header(&name, &name)
        .to_string();
    // Lines Souz did not write (context and removed lines) go through the secret scan: they
    // may hold another server's key next to Souz's entry.
    let mut shown = String::with_capacity(diff.len());
    for (index, line) in diff.split_inclusive('\n').enumerate() {
        let ours = index < 2 || line.starts_with('+') || line.starts_with("@@");
        if ours {
            shown.push_str(line);
        } else {
            shown.push_str(&crate::redact::redact_text(&mask_secret_member(line)));
        }
    }
    shown
}

/// A diff line holding one `"key": "value"` member whose key names a secret (`apiKey`,
/// `OPENAI_API_KEY`, `GITHUB_TOKEN`, ...) with the value replaced; other lines as they are.
fn mask_secret_member(line: &str) -> std::borrow::Cow<'_, str> {
    let masked = (|| {
        let (key, rest) = line
            .get(1..)?
            .trim_start()
            .strip_prefix('"')?
            .split_once('"')?;
        let value = rest.trim_start().strip_prefix(':')?.trim_start();
        let folded: String = key
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let secret = crate::redact::is_sensitive_key(key)
            || ["key", "token", "secret", "password", "credentials"]
                .iter()
                .any(|end| folded.ends_with(end));
        if !secret || !value.starts_with('"') {
            return None;
        }
        let start = line.len() - value.len();
        let end = start + 1 + value[1..].rfind('"')?;
        Some(format!(
            "{}\"{}\"{}",
            &line[..start],
            crate::redact::REDACTED,
            &line[end + 1..]
        ))
    })();
    masked.map_or(std::borrow::Cow::Borrowed(line), std::borrow::Cow::Owned)
}

/// The largest client configuration Souz reads (Claude Code's `~/.claude.json` also holds its
/// per-project history and grows to several megabytes).
const MAX_CONFIG_BYTES: u64 = 64 << 20;

/// Claude Desktop's configuration file, reached beneath the person's home `user_home`: no
/// folder on the way and not the file itself may be a symbolic link.
pub fn desktop_config_file(user_home: &Path) -> Result<DaemonFile, ConnectError> {
    Ok(DaemonFile::new(user_home, desktop_config_path(user_home))?)
}

/// Reads `file`; `None` when it does not exist. A link there is refused, never followed.
pub(crate) fn read_optional(file: &DaemonFile) -> Result<Option<String>, ConnectError> {
    Ok(file.read_text(MAX_CONFIG_BYTES)?)
}

/// Writes `text` to `file` atomically, first copying the file there to `<name>.bak`; returns
/// the backup's path when there was a file. Links at the file, at the backup or on the way are
/// refused; the temporary file has a fresh name created with `O_EXCL`.
pub(crate) fn write_with_backup(
    file: &DaemonFile,
    text: &str,
) -> Result<Option<PathBuf>, ConnectError> {
    Ok(file.write(text.as_bytes(), WriteOptions::shared().with_backup(".bak"))?)
}

/// Writes `token` to the client token file of `client` (mode 0600, in the owner-only
/// `clients` folder of the Souz home), replacing what was there, through no link.
pub fn write_client_token(paths: &SouzPaths, client: &str, token: &str) -> std::io::Result<()> {
    let file = DaemonFile::new(paths.home(), paths.client_token(client))?;
    file.write(format!("{token}\n").as_bytes(), WriteOptions::private())?;
    Ok(())
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
        let file = desktop_config_file(dir.path()).unwrap();
        let path = file.path();
        assert_eq!(write_with_backup(&file, "{}\n").unwrap(), None);
        let after = with_server(&path, Some("{}\n"), desktop_server("/s", None)).unwrap();
        let change = diff(&path, "{}\n", &after);
        assert!(change.contains("+  \"mcpServers\""), "{change}");
        let backup = write_with_backup(&file, &after).unwrap().unwrap();
        assert_eq!(backup, path.with_extension("json.bak"));
        assert_eq!(std::fs::read_to_string(backup).unwrap(), "{}\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), after);
        assert_eq!(
            read_optional(&file).unwrap().as_deref(),
            Some(after.as_str())
        );
        assert_eq!(diff(&path, &after, &after), "");
    }

    #[cfg(unix)]
    #[test]
    fn token_files_are_owner_only_and_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let paths = SouzPaths::new(dir.path());
        write_client_token(&paths, DESKTOP_CLIENT, "first").unwrap();
        write_client_token(&paths, DESKTOP_CLIENT, "second").unwrap();
        let file = paths.client_token(DESKTOP_CLIENT);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "second\n");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&paths.client_tokens()), 0o700);
    }
}

/// Links an approved command could plant where Connect Claude reads and writes (issue 39):
/// none is followed, nothing outside is read, copied or written.
#[cfg(test)]
#[cfg(unix)]
mod link_tests {
    use std::os::unix::fs::symlink;

    use super::*;

    const CANARY: &str = "# ~/.bashrc\nalias ls='ls --color'\n";

    struct Planted {
        _dir: tempfile::TempDir,
        home: PathBuf,
        canary: PathBuf,
    }

    /// A home with `~/.config` and a canary file outside it (the `~/.bashrc` or
    /// `~/.docker/config.json` of the issue).
    fn planted() -> Planted {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        std::fs::create_dir_all(desktop_config_path(&home).parent().unwrap()).unwrap();
        let canary = base.join("canary");
        std::fs::write(&canary, CANARY).unwrap();
        Planted {
            _dir: dir,
            home,
            canary,
        }
    }

    fn assert_refused<T: std::fmt::Debug>(result: Result<T, ConnectError>, what: &str) {
        match result {
            Err(ConnectError::Refused(message)) => {
                assert!(message.contains("symbolic link"), "{what}: {message}");
            }
            other => panic!("{what}: expected a refusal, got {other:?}"),
        }
    }

    fn text() -> String {
        with_server(Path::new("c"), None, desktop_server("/s", None)).unwrap()
    }

    #[test]
    fn a_link_at_the_backup_does_not_overwrite_its_target() {
        let planted = planted();
        let file = desktop_config_file(&planted.home).unwrap();
        std::fs::write(file.path(), "{}\n").unwrap();
        symlink(&planted.canary, file.path().with_extension("json.bak")).unwrap();
        assert_refused(write_with_backup(&file, &text()), "write");
        assert_eq!(std::fs::read_to_string(&planted.canary).unwrap(), CANARY);
        assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "{}\n");
    }

    #[test]
    fn a_link_at_the_file_is_neither_read_nor_copied_nor_written() {
        let planted = planted();
        let file = desktop_config_file(&planted.home).unwrap();
        symlink(&planted.canary, file.path()).unwrap();
        assert_refused(read_optional(&file), "read");
        assert_refused(write_with_backup(&file, &text()), "write");
        assert_eq!(std::fs::read_to_string(&planted.canary).unwrap(), CANARY);
        let backup = file.path().with_extension("json.bak");
        assert!(!backup.exists(), "nothing was copied out of the link");
    }

    #[test]
    fn a_linked_claude_folder_is_not_entered() {
        let planted = planted();
        let folder = desktop_config_path(&planted.home)
            .parent()
            .unwrap()
            .to_owned();
        let outside = planted.canary.parent().unwrap().join("elsewhere");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("claude_desktop_config.json"), "{}\n").unwrap();
        std::fs::remove_dir(&folder).unwrap();
        symlink(&outside, &folder).unwrap();
        let file = desktop_config_file(&planted.home).unwrap();
        assert_refused(read_optional(&file), "read");
        assert_refused(write_with_backup(&file, &text()), "write");
        let mut inside: Vec<_> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        inside.sort();
        assert_eq!(inside, ["claude_desktop_config.json"]);
        let config = outside.join("claude_desktop_config.json");
        assert_eq!(std::fs::read_to_string(config).unwrap(), "{}\n");
    }

    #[test]
    fn links_at_the_old_temporary_names_are_never_written_through() {
        let planted = planted();
        let file = desktop_config_file(&planted.home).unwrap();
        let partial = format!("json.{}.partial", std::process::id());
        symlink(&planted.canary, file.path().with_extension(partial)).unwrap();
        write_with_backup(&file, &text()).unwrap();
        assert_eq!(std::fs::read_to_string(&planted.canary).unwrap(), CANARY);
        assert!(has_server(&std::fs::read_to_string(file.path()).unwrap()));
    }

    #[test]
    fn a_linked_clients_folder_gets_no_token() {
        let planted = planted();
        let souz = planted.home.join(".souz");
        std::fs::create_dir(&souz).unwrap();
        let outside = planted.canary.parent().unwrap().join("tokens");
        std::fs::create_dir(&outside).unwrap();
        symlink(&outside, souz.join("clients")).unwrap();
        let paths = SouzPaths::new(&souz);
        assert!(write_client_token(&paths, DESKTOP_CLIENT, "secret").is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }
}
