//! The sandbox: what tools may touch on this machine.
//!
//! Owns workspace roots and protected paths (from `[sandbox]`), path resolution that cannot
//! escape the roots (`~`, relative paths, `..`, symlinks at every level, odd unicode), and —
//! in submodules — the command runner and the SSRF-safe web client.
//!
//! Invariants:
//! - A path a tool receives from the sandbox is absolute, has no `.`/`..` components, and its
//!   real location (every symlink resolved) is inside a root.
//! - The Souz home is always protected. Protected paths are reported, not silently allowed: the
//!   approval policy turns them into a question for the person.

use std::path::{Component, Path, PathBuf};

use crate::config::{SandboxConfig, SouzPaths};

/// Why the sandbox refused something. Messages are shown to the model and the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The path is empty, malformed, or uses characters that could disguise it.
    #[error("invalid path `{path}`: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The path (after resolving symlinks and `..`) is outside every workspace root.
    #[error("`{path}` is outside the folders Souz may use ({roots}); it was refused")]
    OutsideRoots {
        /// The path as given.
        path: String,
        /// The roots, for the message.
        roots: String,
    },
    /// The path does not exist.
    #[error("`{0}` does not exist")]
    NotFound(String),
    /// The filesystem refused an operation.
    #[error("{0}")]
    Io(String),
}

/// How a tool intends to use a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read it (it must exist).
    Read,
    /// Create or modify it (it may not exist yet; its nearest existing ancestor must be a
    /// folder inside a root).
    Write,
    /// Delete or move it away (it must exist).
    Delete,
}

/// A path the sandbox accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute, normalized, symlinks resolved as far as the path exists.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// Whether it is (inside) a protected path.
    pub protected: bool,
}

/// The sandbox of one daemon.
#[derive(Debug, Clone)]
pub struct Sandbox {
    user_home: PathBuf,
    roots: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    config: SandboxConfig,
}

impl Sandbox {
    /// Builds the sandbox from `[sandbox]` and the Souz paths.
    pub fn new(config: &SandboxConfig, paths: &SouzPaths) -> Result<Self, SandboxError> {
        let user_home = paths.user_home().to_path_buf();
        let user_home = user_home.canonicalize().unwrap_or(user_home);
        let expand = |raw: &str| expand_home(raw, &user_home);
        let mut roots = Vec::new();
        for raw in &config.roots {
            let root = expand(raw);
            // Roots must exist to be canonical; a missing root simply grants nothing.
            if let Ok(real) = root.canonicalize() {
                roots.push(real);
            }
        }
        let mut protected: Vec<PathBuf> = config
            .protected
            .iter()
            .map(|raw| {
                let path = normalize_lexically(&expand(raw));
                path.canonicalize().unwrap_or(path)
            })
            .collect();
        let souz_home = paths.home();
        protected.push(
            souz_home
                .canonicalize()
                .unwrap_or_else(|_| souz_home.to_path_buf()),
        );
        Ok(Self {
            user_home,
            roots,
            protected,
            config: config.clone(),
        })
    }

    /// The `[sandbox]` settings this sandbox was built from.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The workspace roots (canonical).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The user's home folder (what `~` means).
    pub fn user_home(&self) -> &Path {
        &self.user_home
    }

    /// Resolves a path given by a model or a person for `access`.
    pub fn resolve(&self, raw: &str, access: Access) -> Result<ResolvedPath, SandboxError> {
        let invalid = |reason: &str| SandboxError::InvalidPath {
            path: raw.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(invalid("it is empty"));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(invalid("it contains control characters"));
        }
        let expanded = expand_home(trimmed, &self.user_home);
        let absolute = if expanded.is_absolute() {
            expanded
        } else {
            self.user_home.join(expanded)
        };
        let lexical = normalize_lexically(&absolute);
        let (real, exists) = resolve_existing_prefix(&lexical)
            .map_err(|error| SandboxError::Io(format!("cannot resolve `{raw}`: {error}")))?;
        if !self.inside_roots(&real) {
            return Err(SandboxError::OutsideRoots {
                path: raw.to_owned(),
                roots: self.roots_display(),
            });
        }
        if !exists && matches!(access, Access::Read | Access::Delete) {
            return Err(SandboxError::NotFound(raw.to_owned()));
        }
        Ok(ResolvedPath {
            protected: self.is_protected(&real),
            path: real,
            exists,
        })
    }

    /// Whether `path` (absolute, resolved) is inside a root.
    pub fn inside_roots(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| path.starts_with(root))
    }

    /// Whether `path` (absolute, resolved) is a protected path or inside one.
    pub fn is_protected(&self, path: &Path) -> bool {
        self.protected
            .iter()
            .any(|protected| path.starts_with(protected))
    }

    /// Whether a listing or search may show `path` (resolved): inside a root, not protected.
    pub fn is_visible(&self, path: &Path) -> bool {
        self.inside_roots(path) && !self.is_protected(path)
    }

    /// `path` for people: `~/x/y` under the home folder, else absolute.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.user_home) {
            Ok(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }

    fn roots_display(&self) -> String {
        self.roots
            .iter()
            .map(|root| self.display(root))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Expands a leading `~` (or `~/`) to `home`.
pub fn expand_home(raw: &str, home: &Path) -> PathBuf {
    if raw == "~" {
        home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(raw)
    }
}

/// Removes `.` and resolves `..` without touching the filesystem (never above the root).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonicalizes the longest existing prefix of `path` and appends the rest. Returns whether
/// the whole path exists.
fn resolve_existing_prefix(path: &Path) -> std::io::Result<(PathBuf, bool)> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(real) => {
                let exists = rest.is_empty();
                let mut full = real;
                for part in rest.iter().rev() {
                    full.push(part);
                }
                return Ok((full, exists));
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
                    return Err(error);
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(error);
                }
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(dir: &Path) -> Sandbox {
        let home = dir.join("home");
        std::fs::create_dir_all(home.join("work")).unwrap();
        let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
        Sandbox::new(&SandboxConfig::default(), &paths).unwrap()
    }

    #[test]
    fn resolves_inside_and_refuses_outside() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = sandbox(dir.path());
        let home = dir.path().join("home").canonicalize().unwrap();
        let work = sandbox.resolve("~/work", Access::Read).unwrap();
        assert_eq!(work.path, home.join("work"));
        assert!(work.exists && !work.protected);
        let relative = sandbox.resolve("work/new.txt", Access::Write).unwrap();
        assert_eq!(relative.path, home.join("work/new.txt"));
        assert!(!relative.exists);
        assert!(matches!(
            sandbox.resolve("~/../outside", Access::Write),
            Err(SandboxError::OutsideRoots { .. })
        ));
        assert!(matches!(
            sandbox.resolve("/etc/passwd", Access::Read),
            Err(SandboxError::OutsideRoots { .. })
        ));
        assert!(matches!(
            sandbox.resolve("~/missing", Access::Read),
            Err(SandboxError::NotFound(_))
        ));
        assert!(
            sandbox
                .resolve("~/.ssh/id_rsa", Access::Write)
                .unwrap()
                .protected
        );
        assert!(
            sandbox
                .resolve("~/.souz/config.toml", Access::Write)
                .unwrap()
                .protected
        );
        assert_eq!(sandbox.display(&home.join("work")), "~/work");
    }
}
