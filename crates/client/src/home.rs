//! The files of a Souz home that a client reads: `daemon.json` (where a running daemon
//! listens), the operator token (`token`) and the bridges' client tokens
//! (`clients/<name>.token`).
//!
//! Invariants: reading never sends anything anywhere; a token file that does not hold a token
//! (shorter than 32 characters, or with characters outside `A-Za-z0-9-_`) is refused here, so a
//! garbled file never becomes a header. Which folder is the Souz home (environment, config) is
//! the caller's business: this crate reads no environment variables.
//!
//! The files are opened like the daemon opens its own (this crate cannot use souz-core's
//! beneath-a-handle API): with `O_NOFOLLOW | O_NONBLOCK`, only when they are regular files, and
//! at most [`MAX_HOME_FILE_BYTES`]; a link at a file is refused, a link at the `clients` folder
//! too (checked before the open: the Souz home is out of confined commands' reach, so the check
//! and the open do not race with them).

use std::path::{Path, PathBuf};

use souz_protocol::DaemonInfo;

use crate::ClientError;

/// The shortest token accepted (the daemon makes 43-character ones).
const MIN_TOKEN_CHARS: usize = 32;

/// The largest `daemon.json` or token file read.
const MAX_HOME_FILE_BYTES: u64 = 64 << 10;

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
        let bytes = read_home_file(&self.daemon_file()).ok()?;
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
    let bytes = read_home_file(path).map_err(|error| refused(error.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|error| refused(error.to_string()))?;
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

/// The content of the regular file `path` (at most [`MAX_HOME_FILE_BYTES`]), not followed when
/// it is a link; a `clients` folder on the way that is a link is refused too.
fn read_home_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let linked = |what: &Path| {
        Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "{} is a symbolic link; Souz does not read through links",
                what.display()
            ),
        )
    };
    if let Some(parent) = path.parent()
        && parent.file_name().is_some_and(|name| name == "clients")
        && std::fs::symlink_metadata(parent)?.file_type().is_symlink()
    {
        return Err(linked(parent));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file = options.open(path).map_err(|error| {
        if error.raw_os_error() == Some(libc::ELOOP) {
            linked(path)
        } else {
            error
        }
    })?;
    if !file.metadata()?.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_HOME_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_HOME_FILE_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!(
                "{} is larger than {MAX_HOME_FILE_BYTES} bytes",
                path.display()
            ),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
