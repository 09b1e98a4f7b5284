//! [`TestHome`]: a temporary folder for one test's Souz home and user home. Its two layouts:
//! [`TestHome::paths`] (the Souz home in `.souz` below the user home, as on a real machine)
//! and [`TestHome::flat_paths`] (the folder is both). The folder lives as long as the value.

use std::path::Path;
use std::sync::Arc;

use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, SandboxConfig, SouzPaths};
use crate::sandbox::Sandbox;
use crate::store::Store;
use crate::tools::ToolContext;

/// A temporary folder removed when dropped.
pub struct TestHome {
    dir: tempfile::TempDir,
}

impl TestHome {
    /// A new empty folder.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary folder for the test home"),
        }
    }

    /// The folder itself (the user home of [`TestHome::paths`]).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The Souz home in `.souz`, the folder as the user home (`~`).
    pub fn paths(&self) -> SouzPaths {
        SouzPaths::new(self.path().join(".souz")).with_user_home(self.path())
    }

    /// The folder as both the Souz home and the user home.
    pub fn flat_paths(&self) -> SouzPaths {
        SouzPaths::new(self.path())
    }

    /// The database `souz.db` directly in the folder (outside any Souz home), for tests of
    /// what is built on the store alone.
    pub async fn store(&self) -> Store {
        Store::open(self.path().join("souz.db"))
            .await
            .expect("the test database")
    }

    /// A context for calling tools directly (as the CLI, not cancelled) whose sandbox has
    /// `config` on [`TestHome::paths`].
    pub fn tool_context(&self, config: &SandboxConfig) -> ToolContext {
        tool_context(Sandbox::new(config, &self.paths()).expect("the test sandbox"))
    }

    /// The configuration read back from the `config.toml` template written into the home of
    /// `paths`, as a first start leaves it (the home is created).
    pub fn template_config(paths: SouzPaths) -> Config {
        paths.ensure_home().expect("the Souz home");
        crate::config::write_template_if_missing(&paths.config_file())
            .expect("the config.toml template");
        Config::load_file(paths.clone(), &paths.config_file(), &|_| None)
            .expect("the config.toml template loads")
    }
}

/// A context for calling tools directly over `sandbox`: the CLI as the requester, a fresh
/// cancellation token.
pub fn tool_context(sandbox: Sandbox) -> ToolContext {
    ToolContext {
        sandbox: Arc::new(sandbox),
        cancel: CancellationToken::new(),
        requester: Requester::Cli,
        progress: crate::tools::ProgressSink::default(),
        language: crate::tools::Language::En,
        staged: None,
    }
}

impl Default for TestHome {
    fn default() -> Self {
        Self::new()
    }
}
