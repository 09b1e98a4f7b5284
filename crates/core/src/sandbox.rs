//! The sandbox: what tools may touch on this machine.
//!
//! Owns workspace roots and protected paths (from `[sandbox]`), path resolution that cannot
//! escape the roots (`paths`: `~`, relative paths, `..`, symlinks at every level, odd unicode),
//! the command runner (`command`, with its scrubbed environment in `environment` and the
//! processes below a command in `process_tree`), OS confinement of commands (`confinement`:
//! Landlock and seccomp on Linux, Seatbelt on macOS), the daemon's own process protection
//! (`daemon_process`), per-user folders in trusted-proxy mode (`users`), and the SSRF-safe web
//! client (`net`). Using a resolved path goes through [`beneath`], which opens it relative to
//! its root's directory handle and refuses every symbolic link on the way, so a swap between
//! the check and the use fails instead of escaping.
//!
//! Invariants:
//! - A path a tool receives from the sandbox is absolute, has no `.`/`..` components, and its
//!   real location (every symlink resolved) is inside a root.
//! - File tools use that path only through [`beneath`]: relative to the root's handle, with no
//!   symlink followed at any level, so what they touch is what was checked.
//! - The Souz home is always protected. Protected paths are reported, not silently allowed: the
//!   approval policy turns them into a question for the person. Matching them ignores Unicode
//!   normalization, and letter case where the filesystem does.
//! - Commands run with an environment built from an allowlist, their own private temporary
//!   folder, in their own process group, and never outlive their call. Where nothing can
//!   confine them they do not run, unless `[sandbox] allow_unconfined_commands`.
//! - Network tools reach loopback, private, link-local and other non-public addresses only for
//!   hosts the configuration allows, checked for IP literals, after DNS, and on every redirect.

pub(crate) mod beneath;
pub(crate) mod command;
pub mod confinement;
pub(crate) mod daemon_process;
pub(crate) mod egress;
pub(crate) mod environment;
pub(crate) mod net;
pub(crate) mod paths;
pub(crate) mod process_tree;
pub(crate) mod repositories;
mod scoped;
pub(crate) mod users;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::config::{SandboxConfig, SouzPaths};

pub use beneath::daemon_file::{DaemonFile, DaemonFileError, DaemonFolder, Staged, WriteOptions};
pub use command::{CapturedOutput, CommandError, CommandOutcome, CommandProgram, CommandRequest};
pub use confinement::Confinement;
pub use net::{WebClient, WebError};
pub use paths::{expand_home, normalize_lexically};

use paths::{FoldedPath, WalkError};

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
    /// Whether it is (inside) a protected path, or was reached through one.
    pub protected: bool,
}

/// A protected path in its two comparable forms.
#[derive(Debug, Clone)]
struct ProtectedPath {
    path: PathBuf,
    folded: FoldedPath,
    /// From `[sandbox] protected_readable`: commands may read it (never write it).
    commands_may_read: bool,
}

/// The sandbox of one daemon.
#[derive(Debug, Clone)]
pub struct Sandbox {
    user_home: PathBuf,
    roots: Vec<PathBuf>,
    protected: Vec<ProtectedPath>,
    case_insensitive: bool,
    config: SandboxConfig,
    /// The daemon's environment, already reduced to what commands may inherit.
    inherited_environment: Vec<(OsString, OsString)>,
    confinement: Confinement,
    /// Built on first use: most sandboxes never fetch anything.
    web: Arc<OnceLock<Result<WebClient, WebError>>>,
    /// Where deleted items go instead of the user's Trash (tests and embedders).
    trash_folder: Option<PathBuf>,
    /// The port of the loopback egress proxy a confined command may connect to (TCP), if
    /// any (see `egress`; set by [`Sandbox::with_egress_port`]).
    egress_port: Option<u16>,
}

impl Sandbox {
    /// Builds the sandbox from `[sandbox]` and the Souz paths. Commands inherit a scrubbed copy
    /// of this process's environment; OS confinement of commands needs a helper binary (see
    /// [`Sandbox::with_confinement_helper`]) on Linux.
    pub fn new(config: &SandboxConfig, paths: &SouzPaths) -> Result<Self, SandboxError> {
        let user_home = paths.user_home().to_path_buf();
        let user_home = user_home.canonicalize().unwrap_or(user_home);
        let case_insensitive = paths::CASE_INSENSITIVE_FILESYSTEM;
        let mut roots = Vec::new();
        for raw in &config.roots {
            let root = expand_home(raw, &user_home);
            // Roots must exist to be canonical; a missing root simply grants nothing.
            if let Ok(real) = root.canonicalize()
                && !roots.contains(&real)
            {
                roots.push(real);
            }
        }
        let mut protected = Vec::new();
        let mut protect = |path: PathBuf, commands_may_read: bool| {
            let folded = FoldedPath::new(&path, case_insensitive);
            if !protected
                .iter()
                .any(|known: &ProtectedPath| known.folded == folded)
            {
                protected.push(ProtectedPath {
                    path,
                    folded,
                    commands_may_read,
                });
            }
        };
        // Unreadable entries first: a path in both lists stays unreadable.
        let configured = config
            .protected
            .iter()
            .map(|raw| (expand_home(raw, &user_home), false))
            .chain(std::iter::once((paths.home().to_path_buf(), false)))
            .chain(
                config
                    .protected_readable
                    .iter()
                    .map(|raw| (expand_home(raw, &user_home), true)),
            );
        for (path, commands_may_read) in configured {
            let lexical = normalize_lexically(&path);
            // Both where the path is written and where it really leads are protected: writing
            // `~/.bashrc` that links into a dotfiles folder still changes the shell's profile.
            if let Ok((real, _)) = paths::resolve_real(&lexical) {
                protect(real, commands_may_read);
            }
            protect(lexical, commands_may_read);
        }
        Ok(Self {
            user_home,
            roots,
            protected,
            case_insensitive,
            config: config.clone(),
            inherited_environment: environment::inheritable(
                crate::config::env::process_environment_os(),
            ),
            confinement: Confinement::detect(None),
            web: Arc::new(OnceLock::new()),
            trash_folder: None,
            egress_port: None,
        })
    }

    /// Names the binary that implements the hidden `__sandbox-exec` subcommand (the daemon's
    /// own executable), which confines commands with Landlock on Linux.
    pub fn with_confinement_helper(mut self, helper: impl Into<PathBuf>) -> Self {
        self.confinement = Confinement::detect(Some(helper.into()));
        self
    }

    /// Uses `confinement` as it is, without probing the machine (tests force one; embedders
    /// may run commands through their own launcher).
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement;
        self
    }

    /// Uses `environment` instead of this process's environment as what commands may inherit
    /// (it is scrubbed the same way). For tests and embedders.
    pub fn with_inherited_environment(
        mut self,
        environment: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Self {
        self.inherited_environment = environment::inheritable(environment);
        self
    }

    /// What programs the daemon starts may inherit of its environment (scrubbed: see
    /// `environment`).
    pub(crate) fn inherited_environment(&self) -> &[(OsString, OsString)] {
        &self.inherited_environment
    }

    /// Uses `client` for network tools (e.g. one with a test DNS resolver).
    pub fn with_web_client(mut self, client: WebClient) -> Self {
        let cell = OnceLock::new();
        let _ = cell.set(Ok(client));
        self.web = Arc::new(cell);
        self
    }

    /// Moves deleted items to the Trash folder `folder` (with `files` and `info` inside)
    /// instead of the user's own Trash. For tests and embedders.
    pub fn with_trash_folder(mut self, folder: impl Into<PathBuf>) -> Self {
        self.trash_folder = Some(folder.into());
        self
    }

    /// The Trash folder set with [`Sandbox::with_trash_folder`], if any.
    pub fn trash_folder(&self) -> Option<&Path> {
        self.trash_folder.as_deref()
    }

    /// Overrides how protected paths compare letter case (the platform decides by default).
    pub fn with_case_insensitive_protection(mut self, case_insensitive: bool) -> Self {
        self.case_insensitive = case_insensitive;
        for protected in &mut self.protected {
            protected.folded = FoldedPath::new(&protected.path, case_insensitive);
        }
        self
    }

    /// How commands are confined, as `/health` reports it.
    pub fn confinement_status(&self) -> souz_protocol::SandboxStatus {
        let mut status = self.confinement.status(&self.config);
        match daemon_process::is_protected() {
            Some(true) => status.detail.push_str(
                "; the daemon is not dumpable (other processes cannot read its memory or \
                 environment)",
            ),
            Some(false) => status.detail.push_str(
                "; the daemon is dumpable (processes of this user can read its memory and \
                 environment)",
            ),
            None => {}
        }
        status
    }

    /// The `[sandbox]` settings this sandbox was built from.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The workspace roots (canonical).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The protected paths (as written and as resolved).
    pub fn protected_paths(&self) -> impl Iterator<Item = &Path> {
        self.protected
            .iter()
            .map(|protected| protected.path.as_path())
    }

    /// The user's home folder (what `~` means).
    pub fn user_home(&self) -> &Path {
        &self.user_home
    }

    /// How commands are confined on this machine.
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    /// The SSRF-safe HTTP client every network tool must use.
    pub fn web(&self) -> Result<&WebClient, WebError> {
        self.web
            .get_or_init(|| WebClient::new(&self.config.network_allow_hosts))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Resolves a path given by a model or a person for `access`.
    pub fn resolve(&self, raw: &str, access: Access) -> Result<ResolvedPath, SandboxError> {
        let invalid = |reason: String| SandboxError::InvalidPath {
            path: raw.to_owned(),
            reason,
        };
        let absolute =
            paths::absolute_input(raw, &self.user_home).map_err(|error| invalid(error.0))?;
        let (real, exists) = paths::resolve_real(&absolute).map_err(|error| match error {
            WalkError::Loop => invalid(format!(
                "too many levels of symbolic links (more than {}); is there a loop?",
                paths::MAX_SYMLINK_HOPS
            )),
            WalkError::NotAFolder(path) => {
                invalid(format!("`{}` is a file, not a folder", self.display(&path)))
            }
            WalkError::Io(path, error) => SandboxError::Io(format!(
                "cannot resolve `{raw}` at `{}`: {error}",
                self.display(&path)
            )),
        })?;
        if !self.inside_roots(&real) {
            return Err(SandboxError::OutsideRoots {
                path: raw.to_owned(),
                roots: self.roots_display(),
            });
        }
        if !exists && matches!(access, Access::Read | Access::Delete) {
            return Err(SandboxError::NotFound(raw.to_owned()));
        }
        if access == Access::Delete && self.roots.contains(&real) {
            return Err(invalid(format!(
                "`{}` is a workspace root; it cannot be deleted or moved",
                self.display(&real)
            )));
        }
        Ok(ResolvedPath {
            protected: self.is_protected(&real) || self.is_protected(&absolute),
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
        let folded = FoldedPath::new(path, self.case_insensitive);
        self.protected
            .iter()
            .any(|protected| folded.starts_with(&protected.folded))
            || repositories::names_repository_code(path, self.case_insensitive)
    }

    /// This sandbox with `paths` protected too, in the tier commands may read (a command's
    /// view of the roots: see `repositories`).
    pub(crate) fn protecting_also(&self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut sandbox = self.clone();
        for path in paths {
            let folded = FoldedPath::new(&path, self.case_insensitive);
            if !sandbox.protected.iter().any(|known| known.folded == folded) {
                sandbox.protected.push(ProtectedPath {
                    path,
                    folded,
                    commands_may_read: true,
                });
            }
        }
        sandbox
    }

    /// Whether some protected path lies strictly inside `folder`.
    pub(crate) fn holds_protected(&self, folder: &Path) -> bool {
        let folded = FoldedPath::new(folder, self.case_insensitive);
        self.protected
            .iter()
            .any(|protected| protected.folded.strictly_inside(&folded))
    }

    /// Whether commands may not read `path` (resolved): it is inside a protected path that
    /// is not in `[sandbox] protected_readable`.
    pub(crate) fn is_read_protected(&self, path: &Path) -> bool {
        let folded = FoldedPath::new(path, self.case_insensitive);
        self.protected
            .iter()
            .any(|protected| !protected.commands_may_read && folded.starts_with(&protected.folded))
    }

    /// Whether some path commands may not read lies strictly inside `folder`.
    pub(crate) fn holds_read_protected(&self, folder: &Path) -> bool {
        let folded = FoldedPath::new(folder, self.case_insensitive);
        self.protected.iter().any(|protected| {
            !protected.commands_may_read && protected.folded.strictly_inside(&folded)
        })
    }

    /// The protected paths commands may not read (as written and as resolved).
    pub fn read_protected_paths(&self) -> impl Iterator<Item = &Path> {
        self.protected
            .iter()
            .filter(|protected| !protected.commands_may_read)
            .map(|protected| protected.path.as_path())
    }

    /// Whether a listing or search may show `path` (resolved): inside a root, not protected.
    /// An entry that is itself a symbolic link is judged by its target too, so a walker that
    /// lists links without following them cannot show a link into `~/.ssh` or out of the roots.
    pub fn is_visible(&self, path: &Path) -> bool {
        if !self.inside_roots(path) || self.is_protected(path) {
            return false;
        }
        let is_link = std::fs::symlink_metadata(path)
            .map(|metadata| metadata.file_type().is_symlink())
            .unwrap_or(false);
        if !is_link {
            return true;
        }
        match paths::resolve_real(path) {
            Ok((real, _)) => self.inside_roots(&real) && !self.is_protected(&real),
            Err(_) => false,
        }
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

#[cfg(test)]
mod tests;
