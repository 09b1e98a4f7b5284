//! The files of a Souz home that a client reads: `daemon.json` (where a running daemon
//! listens), the operator token (`token`) and the bridges' client tokens
//! (`clients/<name>.token`).
//!
//! Invariants: reading never sends anything anywhere; a token file that does not hold a token
//! (shorter than 32 characters, or with characters outside `A-Za-z0-9-_`) is refused here, so a
//! garbled file never becomes a header. Which folder is the Souz home (environment, config) is
//! the caller's business: this crate reads no environment variables.

use std::path::{Path, PathBuf};

use souz_protocol::DaemonInfo;

use crate::ClientError;

/// The shortest token accepted (the daemon makes 43-character ones).
const MIN_TOKEN_CHARS: usize = 32;

/// A Souz home folder, as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    dir: PathBuf,
}

/// Where a daemon listens and the operator token, read from a Souz home (nothing verified yet).
#[derive(Clone)]
pub struct Discovered {
    /// `http://host:port`.
    pub base: String,
    /// The operator token.
    pub token: String,
}

impl std::fmt::Debug for Discovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovered")
            .field("base", &self.base)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl Home {
    /// The Souz home at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `daemon.json`: the running daemon's pid and URL.
    pub fn daemon_file(&self) -> PathBuf {
        self.dir.join("daemon.json")
    }

    /// The operator token file.
    pub fn token_file(&self) -> PathBuf {
        self.dir.join("token")
    }

    /// The token file of the MCP client named `name` (written by `souz mcp-config`).
    pub fn client_token_file(&self, name: &str) -> PathBuf {
        self.dir.join("clients").join(format!("{name}.token"))
    }

    /// `daemon.json`, when there is a readable, valid one.
    pub fn daemon_info(&self) -> Option<DaemonInfo> {
        let bytes = std::fs::read(self.daemon_file()).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The operator token.
    pub fn operator_token(&self) -> Result<String, ClientError> {
        read_token(&self.token_file())
    }

    /// The token of the MCP client named `name`.
    pub fn client_token(&self, name: &str) -> Result<String, ClientError> {
        read_token(&self.client_token_file(name))
    }

    /// Where the daemon listens (`daemon.json`, else `fallback()`, the configured address)
    /// and the operator token. Sends nothing: see [`crate::DaemonClient::connect`].
    pub fn discover(&self, fallback: impl FnOnce() -> String) -> Result<Discovered, ClientError> {
        let base = self.base(fallback);
        let token = self.operator_token()?;
        Ok(Discovered { base, token })
    }

    /// Where the daemon listens: `daemon.json`, else `fallback()` (the configured address).
    pub fn base(&self, fallback: impl FnOnce() -> String) -> String {
        self.daemon_info()
            .map_or_else(fallback, |info| info.url)
            .trim_end_matches('/')
            .to_owned()
    }
}

/// Reads the token in `path`, refusing a file that does not hold one.
pub fn read_token(path: &Path) -> Result<String, ClientError> {
    let refused = |reason: String| ClientError::Token {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|error| refused(error.to_string()))?;
    let token = text.trim();
    let valid = token.len() >= MIN_TOKEN_CHARS
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(refused(format!(
            "it does not hold a valid token (at least {MIN_TOKEN_CHARS} characters of \
             A-Z a-z 0-9 - _)"
        )));
    }
    Ok(token.to_owned())
}
