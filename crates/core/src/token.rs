//! Credentials, separated by capability:
//! - the operator token ([`ApiToken`]): the person's credential (menu-bar app, CLI, web UI),
//!   valid on `/v1/**` and `/mcp`. Made at first start from 256 random bits, stored in
//!   `<SOUZ_HOME>/token` with mode 0600, and compared in constant time. It is never logged:
//!   `Debug` prints a fixed placeholder.
//! - MCP client tokens ([`clients`]): one per client, valid on `/mcp` only, stored hashed.
//!
//! [`proof`] lets a client check that a listener is this daemon before sending either;
//! [`ui_codes`] signs the web UI in without putting the token in an address or argument.

pub(crate) mod clients;
pub(crate) mod proof;
pub(crate) mod ui_codes;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::sandbox::beneath::daemon_file::DaemonFile;

/// The largest token file read (a token is 64 characters).
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// Shortest token accepted from the token file (128 bits of hex).
const MIN_TOKEN_CHARS: usize = 32;

/// Why the token could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read or written.
    #[error("token file {path}: {source}")]
    Io {
        /// The token file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file holds something that is not a usable token.
    #[error(
        "token file {path} does not hold a valid token (at least {MIN_TOKEN_CHARS} characters \
         of [A-Za-z0-9_-]); delete it and restart Souz to make a new one"
    )]
    Invalid {
        /// The token file.
        path: PathBuf,
    },
    /// The system random source failed.
    #[error("cannot generate a token: {0}")]
    Random(String),
}

/// What a request's bearer token turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// The operator token: everything.
    Operator,
    /// An MCP client's token: `/mcp` only, and the requester is this identity.
    Client(clients::ClientIdentity),
}

impl Credential {
    /// The id requesters carry: the client id, or `operator`.
    pub fn id(&self) -> &str {
        match self {
            Self::Operator => souz_protocol::OPERATOR_IDENTITY,
            Self::Client(identity) => &identity.id,
        }
    }

    /// The name requesters carry: the client's name, or `operator`.
    pub fn name(&self) -> &str {
        match self {
            Self::Operator => souz_protocol::OPERATOR_IDENTITY,
            Self::Client(identity) => &identity.name,
        }
    }
}

/// The API token. Cheap to clone; never printed by `Debug`.
#[derive(Clone)]
pub struct ApiToken {
    secret: String,
    digest: [u8; 32],
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken([redacted])")
    }
}

impl ApiToken {
    /// Builds a token from its text (tests and clients that already know it).
    pub fn from_secret(secret: impl Into<String>) -> Self {
        let secret = secret.into();
        let digest = Sha256::digest(secret.as_bytes()).into();
        Self { secret, digest }
    }

    /// Reads the token at `path`, creating it (mode 0600, exclusive create) if missing.
    pub fn load_or_create(path: &Path) -> Result<Self, TokenError> {
        match Self::load(path) {
            Ok(token) => Ok(token),
            Err(TokenError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                match Self::create(path) {
                    Ok(token) => Ok(token),
                    // Another process created it between our read and our create.
                    Err(TokenError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::AlreadyExists =>
                    {
                        Self::load(path)
                    }
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Reads an existing token file. Tightens its permissions to 0600 if they were looser.
    pub fn load(path: &Path) -> Result<Self, TokenError> {
        let io_error = |source| TokenError::Io {
            path: path.to_owned(),
            source,
        };
        let file = DaemonFile::in_trusted_folder(path)
            .and_then(|file| file.open())
            .map_err(|error| io_error(error.into_io()))?
            .ok_or_else(|| io_error(std::io::ErrorKind::NotFound.into()))?;
        let mut text = String::new();
        (&file)
            .take(MAX_TOKEN_FILE_BYTES)
            .read_to_string(&mut text)
            .map_err(io_error)?;
        let secret = text.trim();
        let valid = secret.len() >= MIN_TOKEN_CHARS
            && secret
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(TokenError::Invalid {
                path: path.to_owned(),
            });
        }
        tighten_permissions(&file, path);
        Ok(Self::from_secret(secret))
    }

    fn create(path: &Path) -> Result<Self, TokenError> {
        let io_error = |source| TokenError::Io {
            path: path.to_owned(),
            source,
        };
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|error| TokenError::Random(error.to_string()))?;
        let secret = hex::encode(bytes);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(io_error)?;
        file.write_all(secret.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.sync_all())
            .map_err(io_error)?;
        Ok(Self::from_secret(secret))
    }

    /// Whether `presented` is this token, compared in constant time (over SHA-256 digests, so
    /// the comparison does not leak the length either).
    pub fn matches(&self, presented: &str) -> bool {
        let presented: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        self.digest.ct_eq(&presented).into()
    }

    /// The token's SHA-256 (keys the identity proof).
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// The token text, for `souz token` and for clients that must send it.
    pub fn expose(&self) -> &str {
        &self.secret
    }
}

/// Makes the opened token `file` owner-only if it was not (through its handle, never by path).
fn tighten_permissions(file: &std::fs::File, path: &Path) {
    let Ok(stat) = rustix::fs::fstat(file) else {
        return;
    };
    if stat.st_mode & 0o077 != 0 {
        tracing::warn!(path = %path.display(), "token file was readable by others; setting mode 0600");
        if let Err(error) = rustix::fs::fchmod(file, rustix::fs::Mode::from_bits_truncate(0o600)) {
            tracing::warn!(%error, "could not restrict the token file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_owner_only_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let first = ApiToken::load_or_create(&path).unwrap();
        assert_eq!(first.expose().len(), 64, "256 bits as hex");
        let second = ApiToken::load_or_create(&path).unwrap();
        assert_eq!(first.expose(), second.expose());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let other = ApiToken::load_or_create(&dir.path().join("token2")).unwrap();
        assert_ne!(first.expose(), other.expose());
    }

    /// A link at the token file is neither read (a token-shaped secret elsewhere would become
    /// the operator token) nor made owner-only through.
    #[cfg(unix)]
    #[test]
    fn a_link_at_the_token_file_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "f".repeat(64)).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::os::unix::fs::symlink(&elsewhere, home.join("token")).unwrap();
        let error = ApiToken::load_or_create(&home.join("token")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        let mode = std::fs::metadata(&elsewhere).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644, "not tightened through the link");
    }

    #[test]
    fn matches_only_the_exact_token() {
        let token = ApiToken::from_secret("a".repeat(40));
        assert!(token.matches(&"a".repeat(40)));
        assert!(!token.matches(&"a".repeat(39)));
        assert!(!token.matches(&"a".repeat(41)));
        assert!(!token.matches(""));
        assert!(!token.matches(&format!("{}b", "a".repeat(39))));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let token = ApiToken::from_secret("s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t");
        assert!(!format!("{token:?}").contains("s3cr3t"));
    }

    #[test]
    fn invalid_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "short\n").unwrap();
        assert!(matches!(
            ApiToken::load_or_create(&path),
            Err(TokenError::Invalid { .. })
        ));
        std::fs::write(&path, format!("{}\n", "x y".repeat(20))).unwrap();
        assert!(matches!(
            ApiToken::load(&path),
            Err(TokenError::Invalid { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn loose_permissions_are_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "f".repeat(64)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        ApiToken::load(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
