//! Where Souz keeps its state: the Souz home (`SOUZ_HOME`, default `~/.souz`) and the files in it.

use std::io;
use std::path::{Path, PathBuf};

use super::env::EnvLookup;

/// The Souz home folder and the well-known files inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SouzPaths {
    home: PathBuf,
    user_home: PathBuf,
}

impl SouzPaths {
    /// Paths rooted at `home`, made absolute against the current directory. The user's home
    /// (what `~` means to tools) defaults to the same folder; see [`SouzPaths::with_user_home`].
    pub fn new(home: impl Into<PathBuf>) -> Self {
        let home = absolute(home.into());
        Self {
            user_home: home.clone(),
            home,
        }
    }

    /// Sets the user's home folder (what `~` means in tool paths and config).
    pub fn with_user_home(mut self, user_home: impl Into<PathBuf>) -> Self {
        self.user_home = absolute(user_home.into());
        self
    }

    /// `SOUZ_HOME` if set, else `$HOME/.souz`; the user's home is `$HOME`.
    pub fn resolve(env: EnvLookup<'_>) -> Result<Self, String> {
        let user_home = env("HOME").filter(|value| !value.trim().is_empty());
        let souz_home = env("SOUZ_HOME").filter(|value| !value.trim().is_empty());
        match (souz_home, user_home) {
            (Some(home), Some(user_home)) => Ok(Self::new(home).with_user_home(user_home)),
            (Some(home), None) => Ok(Self::new(home)),
            (None, Some(user_home)) => {
                Ok(Self::new(Path::new(&user_home).join(".souz")).with_user_home(user_home))
            }
            (None, None) => Err(
                "neither SOUZ_HOME nor HOME is set; set SOUZ_HOME to a folder Souz may use"
                    .to_owned(),
            ),
        }
    }

    /// The user's home folder: what `~` means.
    pub fn user_home(&self) -> &Path {
        &self.user_home
    }

    /// The Souz home folder.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `config.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.home.join("config.toml")
    }

    /// The SQLite database.
    pub fn database(&self) -> PathBuf {
        self.home.join("souz.db")
    }

    /// The bearer token file (mode 0600).
    pub fn token(&self) -> PathBuf {
        self.home.join("token")
    }

    /// The folder of MCP client tokens kept for bridges (`souz mcp-stdio`), owner-only.
    pub fn client_tokens(&self) -> PathBuf {
        self.home.join("clients")
    }

    /// The token file of the client named `name` (mode 0600), written by `souz mcp-config`.
    pub fn client_token(&self, name: &str) -> PathBuf {
        self.client_tokens().join(format!("{name}.token"))
    }

    /// The data key that encrypts stored provider API keys (mode 0600, made on first use).
    pub fn provider_key_file(&self) -> PathBuf {
        self.home.join("provider-keys.key")
    }

    /// Folder of JSON log files.
    pub fn logs(&self) -> PathBuf {
        self.home.join("logs")
    }

    /// Written while a daemon runs: its pid and URL, for the CLI, the bridge and the app.
    pub fn daemon_file(&self) -> PathBuf {
        self.home.join("daemon.json")
    }

    /// Creates the home folder (owner-only) if it does not exist yet.
    pub fn ensure_home(&self) -> io::Result<()> {
        create_private_dir(&self.home)
    }
}

fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        path
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(&path))
            .unwrap_or(path)
    }
}

/// Creates `dir` and missing parents; a folder this call creates is made owner-only (0700).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn souz_home_wins_over_home() {
        let env = |name: &str| match name {
            "SOUZ_HOME" => Some("/tmp/souz-x".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        };
        let paths = SouzPaths::resolve(&env).unwrap();
        assert_eq!(paths.home(), Path::new("/tmp/souz-x"));
        assert_eq!(paths.user_home(), Path::new("/home/u"));
        let env = |name: &str| (name == "HOME").then(|| "/home/u".to_owned());
        let paths = SouzPaths::resolve(&env).unwrap();
        assert_eq!(paths.home(), Path::new("/home/u/.souz"));
        assert_eq!(paths.config_file(), Path::new("/home/u/.souz/config.toml"));
        assert!(SouzPaths::resolve(&|_| None).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn created_home_is_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let paths = SouzPaths::new(dir.path().join("a/b"));
        paths.ensure_home().unwrap();
        let mode = std::fs::metadata(paths.home())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
