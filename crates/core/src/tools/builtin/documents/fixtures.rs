//! Test fixtures of the document tools: a temporary home with a catalog to call tools in, and
//! the real files of each format built in code (`souz_parse::documents::fixtures`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use souz_parse::documents::fixtures::*;
use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use crate::config::{SandboxConfig, SouzPaths};
use crate::sandbox::Sandbox;
use crate::tools::{
    Catalog, CatalogBuilder, CatalogError, PlannedCall, ToolContext, ToolError, ToolOutput,
};

/// A tool context whose home folder (and only root) is `home`.
pub(crate) fn context(home: &Path) -> ToolContext {
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(home);
    ToolContext {
        sandbox: Arc::new(Sandbox::new(&SandboxConfig::default(), &paths).unwrap()),
        cancel: CancellationToken::new(),
        requester: Requester::Cli,
        progress: crate::tools::ProgressSink::default(),
        language: crate::tools::Language::En,
        staged: None,
    }
}

/// A temporary home folder with a catalog of some tools, for calling them as a client would.
pub(crate) struct TestHome {
    _dir: tempfile::TempDir,
    /// The home folder (canonical).
    pub root: PathBuf,
    /// A context whose sandbox root is `root`.
    pub ctx: ToolContext,
    /// The tools under test.
    pub catalog: Catalog,
}

impl TestHome {
    /// A fresh home with the tools `register` adds.
    pub(crate) fn new(register: fn(&mut CatalogBuilder) -> Result<(), CatalogError>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ctx = context(&root);
        let mut builder = CatalogBuilder::default();
        register(&mut builder).unwrap();
        Self {
            _dir: dir,
            root,
            ctx,
            catalog: builder.build(),
        }
    }

    /// Writes a file under the home folder (parents created); returns its path.
    pub(crate) fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Plans a call.
    pub(crate) async fn plan(
        &self,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<PlannedCall, ToolError> {
        self.catalog
            .get(tool)
            .unwrap()
            .plan(arguments, &self.ctx)
            .await
    }

    /// Plans and runs a call.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        self.plan(tool, arguments)
            .await?
            .run(self.ctx.clone())
            .await
    }
}
