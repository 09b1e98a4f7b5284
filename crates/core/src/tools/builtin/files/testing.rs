//! Test fixtures for the file tools: a temporary "home" (the only workspace root) with a
//! [`ToolContext`] whose sandbox is rooted there, a sibling folder outside the roots, and small
//! helpers to make real files, folders and symlinks and to plan and run a tool.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use crate::config::{SandboxConfig, SouzPaths};
use crate::sandbox::Sandbox;
use crate::tools::{Planned, Tool, ToolContext, ToolError, ToolOutput};

/// A temporary home folder with a sandbox rooted at it.
pub(crate) struct TestHome {
    _dir: tempfile::TempDir,
    /// The home folder (canonical): `~`, and the only root.
    pub home: PathBuf,
    /// A folder next to the home, outside every root.
    pub outside: PathBuf,
    /// A context for tool calls.
    pub ctx: ToolContext,
}

impl TestHome {
    /// A home with the default `[sandbox]` settings (so `~/.ssh` etc. are protected).
    pub(super) fn new() -> Self {
        Self::with_config(SandboxConfig::default())
    }

    /// A home where `protected` (paths like `~/x`) are protected in addition to the defaults.
    pub(super) fn with_protected(protected: &[&str]) -> Self {
        let mut config = SandboxConfig::default();
        config
            .protected
            .extend(protected.iter().map(|path| (*path).to_owned()));
        Self::with_config(config)
    }

    /// A home with these `[sandbox]` settings.
    pub(super) fn with_config(config: SandboxConfig) -> Self {
        Self::with_setup(config, |_| {})
    }

    /// A home with these `[sandbox]` settings, where `setup` fills the home folder before the
    /// sandbox is built (roots must exist by then).
    pub(super) fn with_setup(config: SandboxConfig, setup: impl FnOnce(&Path)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        let outside = base.join("outside");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        setup(&home);
        let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
        let sandbox = Sandbox::new(&config, &paths).unwrap();
        Self {
            _dir: dir,
            home,
            outside,
            ctx: ToolContext {
                sandbox: Arc::new(sandbox),
                cancel: CancellationToken::new(),
                requester: Requester::Cli,
                progress: crate::tools::ProgressSink::default(),
                language: crate::tools::Language::En,
                staged: None,
            },
        }
    }

    /// `~/relative` as an absolute path.
    pub(super) fn path(&self, relative: &str) -> PathBuf {
        self.home.join(relative)
    }

    /// A path outside the roots.
    pub(super) fn outside(&self, relative: &str) -> PathBuf {
        self.outside.join(relative)
    }

    /// Writes `~/relative` (creating folders).
    pub(super) fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        write_file(&self.path(relative), content.as_ref())
    }

    /// Writes a file outside the roots.
    pub(super) fn write_outside(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        write_file(&self.outside(relative), content.as_ref())
    }

    /// Makes folder `~/relative`.
    pub(super) fn folder(&self, relative: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// Makes a symlink at `~/relative` pointing to `target`.
    pub(super) fn symlink(&self, target: &Path, relative: &str) -> PathBuf {
        let link = self.path(relative);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(target, &link).unwrap();
        link
    }

    /// Reads `~/relative` as text.
    pub(super) fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    /// Whether `~/relative` exists (a dangling symlink counts).
    pub(super) fn exists(&self, relative: &str) -> bool {
        std::fs::symlink_metadata(self.path(relative)).is_ok()
    }
}

fn write_file(path: &Path, content: &[u8]) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    path.to_path_buf()
}

/// Parses `arguments` as the tool's arguments (as the catalog would).
pub(crate) fn args<T: Tool>(_tool: &T, arguments: serde_json::Value) -> T::Args {
    crate::tools::parse_arguments(arguments).unwrap()
}

/// Plans a call.
pub(crate) async fn plan<T: Tool>(
    tool: &T,
    home: &TestHome,
    arguments: serde_json::Value,
) -> Result<Planned<T::Prepared>, ToolError> {
    let arguments = args(tool, arguments);
    tool.plan(&arguments, &home.ctx).await
}

/// Plans and runs a call (as an approved call would).
pub(crate) async fn call<T: Tool>(
    tool: &T,
    home: &TestHome,
    arguments: serde_json::Value,
) -> Result<ToolOutput, ToolError> {
    let parsed = args(tool, arguments.clone());
    let planned = tool.plan(&parsed, &home.ctx).await?;
    tool.run(args(tool, arguments), planned.prepared, &home.ctx)
        .await
}

/// Runs a planned call.
pub(crate) async fn run<T: Tool>(
    tool: &T,
    home: &TestHome,
    arguments: serde_json::Value,
    planned: Planned<T::Prepared>,
) -> Result<ToolOutput, ToolError> {
    tool.run(args(tool, arguments), planned.prepared, &home.ctx)
        .await
}
