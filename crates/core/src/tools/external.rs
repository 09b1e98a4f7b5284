//! Tools of external MCP servers, as the gate knows them: registered and replaced at run time
//! by the MCP client (`mcp::client`), one server's set at a time, beside the fixed catalog.
//!
//! Invariants: a name belongs to one server (a server's new set replaces exactly its old one);
//! readers get a consistent snapshot (the whole map is swapped, never edited in place).

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use super::DynTool;

/// One external tool.
#[derive(Clone)]
pub(crate) struct ExternalTool {
    /// The proxy the gate plans and runs (its spec's name is `mcp__<server>__<tool>`).
    pub tool: Arc<dyn DynTool>,
    /// The server it belongs to (`[mcp.servers.<name>]`).
    pub server: String,
    /// Whether MCP clients at Souz's `/mcp` see it.
    pub exposed: bool,
    /// Whether Souz's own agents see it (memory's MCP tools are for MCP clients only: the
    /// agents have `SearchMemory` and capture).
    pub agents: bool,
}

/// The registered external tools, by name.
#[derive(Default)]
pub(crate) struct ExternalTools {
    tools: RwLock<Arc<BTreeMap<String, ExternalTool>>>,
}

impl ExternalTools {
    /// Every tool now.
    pub(crate) fn snapshot(&self) -> Arc<BTreeMap<String, ExternalTool>> {
        Arc::clone(&self.tools.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// One tool.
    pub(crate) fn get(&self, name: &str) -> Option<ExternalTool> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// Replaces `server`'s tools with `tools`; `true` when the names, descriptions, schemas or
    /// exposure changed.
    pub(crate) fn replace_server(&self, server: &str, tools: Vec<ExternalTool>) -> bool {
        let mut current = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let mut next: BTreeMap<String, ExternalTool> = current
            .iter()
            .filter(|(_, entry)| entry.server != server)
            .map(|(name, entry)| (name.clone(), entry.clone()))
            .collect();
        for tool in tools {
            next.insert(tool.tool.spec().name.to_owned(), tool);
        }
        let changed = next.len() != current.len()
            || next.iter().zip(current.iter()).any(|((a, x), (b, y))| {
                a != b
                    || x.exposed != y.exposed
                    || x.agents != y.agents
                    || x.tool.spec() != y.tool.spec()
            });
        *current = Arc::new(next);
        changed
    }
}
