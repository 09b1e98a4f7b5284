//! Skills as the agents see them.
//!
//! Tool-backed skills are the gate's catalog tools that the approval policy does not refuse
//! outright: a tool every call of which would be denied (a tool-wide deny rule and nothing that
//! could allow a particular call) is *disabled* — it is left out of the inventory and
//! classification, and `GetSkillByName`/`RunSkillCommand` answer `skill_disabled` for it. Every
//! other call still goes through the gate, which asks or allows per call.
//!
//! File-backed skill bundles arrive in a later issue; [`SkillBundles`] is the seam they plug
//! into (today only their ids, for the inventory).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use souz_protocol::{Action, ToolCategory};

use crate::llm;
use crate::tools::gate::Gate;
use crate::tools::{DynTool, ToolSpec};

/// Whether the policy refuses every call of the tool named `name` with risk `risk`.
fn always_denied(gate: &Gate, spec: &ToolSpec) -> bool {
    let policy = gate.approvals().effective(spec.name, spec.risk, true);
    policy.action == Action::Deny && policy.conditional == 0
}

/// Catalog tools the agents may use, sorted by name.
pub fn enabled_tools(gate: &Gate) -> Vec<Arc<dyn DynTool>> {
    gate.catalog()
        .iter()
        .filter(|tool| !always_denied(gate, tool.spec()))
        .cloned()
        .collect()
}

/// What a skill id names in the catalog.
#[derive(Clone)]
pub enum Lookup {
    /// An enabled tool.
    Enabled(Arc<dyn DynTool>),
    /// A tool the policy always refuses.
    Disabled,
    /// Nothing.
    Missing,
}

/// Looks `name` up in the catalog.
pub fn lookup(gate: &Gate, name: &str) -> Lookup {
    match gate.catalog().get(name) {
        Some(tool) if always_denied(gate, tool.spec()) => Lookup::Disabled,
        Some(tool) => Lookup::Enabled(Arc::clone(tool)),
        None => Lookup::Missing,
    }
}

/// Enabled tools by category (categories without tools are absent), names sorted.
pub fn by_category(tools: &[Arc<dyn DynTool>]) -> BTreeMap<ToolCategory, Vec<&ToolSpec>> {
    let mut categories: BTreeMap<ToolCategory, Vec<&ToolSpec>> = BTreeMap::new();
    for tool in tools {
        let spec = tool.spec();
        categories.entry(spec.category).or_default().push(spec);
    }
    for specs in categories.values_mut() {
        specs.sort_by_key(|spec| spec.name);
    }
    categories
}

/// A catalog tool as the model sees it.
pub fn model_spec(spec: &ToolSpec) -> llm::ToolSpec {
    llm::ToolSpec {
        name: spec.name.to_owned(),
        description: spec.description.to_owned(),
        parameters: spec.input_schema.clone(),
    }
}

/// Every category name, in declaration order (from the wire enum's own schema, so a new
/// category appears here without edits).
pub fn category_names() -> Vec<String> {
    let schema = schemars::schema_for!(ToolCategory).to_value();
    let mut names: Vec<String> = schema
        .get("enum")
        .and_then(serde_json::Value::as_array)
        .map(|values| {
            values
                .iter()
                .filter_map(|value| value.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        // A schema with one subschema per variant (documented variants).
        if let Some(variants) = schema.get("oneOf").and_then(serde_json::Value::as_array) {
            names = variants
                .iter()
                .filter_map(|variant| {
                    variant
                        .get("const")
                        .or_else(|| variant.get("enum").and_then(|values| values.get(0)))
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned)
                })
                .collect();
        }
    }
    names
}

/// Parses a category name, ignoring case.
pub fn parse_category(name: &str) -> Option<ToolCategory> {
    serde_json::from_value(serde_json::Value::String(name.trim().to_ascii_uppercase())).ok()
}

/// File-backed skill bundles (a later issue brings the store).
pub trait SkillBundles: Send + Sync {
    /// Ids of the stored bundles of `user` (tool-backed ids are removed by the caller).
    fn inventory_ids<'a>(&'a self, user: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>>;
}

/// No file-backed skills.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSkillBundles;

impl SkillBundles for NoSkillBundles {
    fn inventory_ids<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}
