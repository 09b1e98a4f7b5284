//! Skills as the agents see them.
//!
//! Tool-backed skills are the gate's catalog tools that the approval policy does not refuse
//! outright: a tool every call of which would be denied (a tool-wide deny rule and nothing that
//! could allow a particular call) is *disabled* — it is left out of the inventory and
//! classification, and `GetSkillByName`/`RunSkillCommand` answer `skill_disabled` for it. Every
//! other call still goes through the gate, which asks or allows per call.
//!
//! A turn may further narrow the catalog with a [`ToolFilter`] (a chat execution's
//! `enabledTools` snapshot, original §1.7): tools outside it are neither listed nor run, and
//! are answered `skill_disabled` like policy-disabled ones.
//!
//! File-backed skills come through [`SkillBundles`] (the registry of [`crate::skills`]): their
//! ids for the inventory, their instructions on demand (`GetSkillByName`); a disabled or
//! rejected one answers `skill_disabled` / `skill_validation_rejected`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use souz_protocol::{Action, ToolCategory, ToolResult};

use crate::agent::gate_call::{GateCall, call_gate_with};
use crate::llm;
use crate::skills::command_tool::{SkillCommandParts, SkillCommandTool};
use crate::skills::registry::{Listed, Loaded, Registry, Source};
use crate::skills::rules::{Finding, Severity};
use crate::tools::gate::Gate;
use crate::tools::{DynTool, ToolSpec};

/// Whether the policy refuses every call of the tool named `name` with risk `risk`.
pub(crate) fn always_denied(gate: &Gate, spec: &ToolSpec) -> bool {
    let policy = gate.approvals().effective(spec.name, spec.risk, true);
    policy.action == Action::Deny && policy.conditional == 0
}

/// Which catalog tools a turn may use: all of them, or only the named ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ToolFilter(Option<Arc<BTreeSet<String>>>);

impl ToolFilter {
    /// Every catalog tool.
    pub(crate) const fn all() -> Self {
        Self(None)
    }

    /// Only the tools named in `names` (names the catalog does not know select nothing).
    pub(crate) fn only(names: impl IntoIterator<Item = String>) -> Self {
        Self(Some(Arc::new(names.into_iter().collect())))
    }

    /// Whether the tool named `name` may be used.
    pub(crate) fn allows(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|names| names.contains(name))
    }
}

/// Catalog tools the agents may use in a turn limited by `filter`, then the external MCP
/// servers' tools (which the filter, a choice among catalog tools, does not limit), each
/// group sorted by name.
pub(crate) fn enabled_tools(gate: &Gate, filter: &ToolFilter) -> Vec<Arc<dyn DynTool>> {
    let external = gate.external_tools();
    gate.catalog()
        .iter()
        .filter(|tool| filter.allows(tool.spec().name))
        .chain(
            external
                .values()
                .filter(|entry| entry.agents)
                .map(|entry| &entry.tool),
        )
        .filter(|tool| !always_denied(gate, tool.spec()))
        .cloned()
        .collect()
}

/// What a skill id names in the catalog.
#[derive(Clone)]
pub(crate) enum Lookup {
    /// An enabled tool.
    Enabled(Arc<dyn DynTool>),
    /// A tool the policy always refuses.
    Disabled,
    /// Nothing.
    Missing,
}

/// Looks `name` up in the catalog, for a turn limited by `filter`.
pub(crate) fn lookup(gate: &Gate, filter: &ToolFilter, name: &str) -> Lookup {
    if let Some(entry) = gate.external_tools().get(name).filter(|entry| entry.agents) {
        return if always_denied(gate, entry.tool.spec()) {
            Lookup::Disabled
        } else {
            Lookup::Enabled(Arc::clone(&entry.tool))
        };
    }
    match gate.catalog().get(name) {
        Some(tool) if !filter.allows(tool.spec().name) || always_denied(gate, tool.spec()) => {
            Lookup::Disabled
        }
        Some(tool) => Lookup::Enabled(Arc::clone(tool)),
        None => Lookup::Missing,
    }
}

/// Enabled tools by category (categories without tools are absent), names sorted.
pub(crate) fn by_category(tools: &[Arc<dyn DynTool>]) -> BTreeMap<ToolCategory, Vec<&ToolSpec>> {
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
pub(crate) fn model_spec(spec: &ToolSpec) -> llm::ToolDeclaration {
    llm::ToolDeclaration {
        name: spec.name.to_owned(),
        description: spec.description.to_owned(),
        parameters: spec.input_schema.clone(),
    }
}

/// Every category name, in declaration order (from the wire enum's own schema, so a new
/// category appears here without edits).
pub(crate) fn category_names() -> Vec<String> {
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
pub(crate) fn parse_category(name: &str) -> Option<ToolCategory> {
    serde_json::from_value(serde_json::Value::String(name.trim().to_ascii_uppercase())).ok()
}

/// A file-backed skill as `GetSkillByName` answers it (the original's stored-bundle shape).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BundleSkill {
    /// Its id.
    pub skill_id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The Markdown body of its `SKILL.md`: the instructions.
    pub skill_markdown_body: String,
    /// Its other files.
    pub supporting_files: Vec<String>,
}

/// What a skill id names among the file-backed skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BundleLookup {
    /// An enabled, approved skill.
    Found(BundleSkill),
    /// A disabled one.
    Disabled,
    /// One validation rejected (the reason).
    Rejected(String),
    /// None.
    Missing,
}

/// A usable file-backed skill as the inventory lists it: its id and description (data from
/// the skill's author, shown escaped; never its instructions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryEntry {
    /// Its id.
    pub id: String,
    /// Its description (may be empty).
    pub description: String,
}

/// File-backed skill bundles.
pub trait SkillBundles: Send + Sync {
    /// Ids of the usable bundles of `user` (tool-backed ids are removed by the caller).
    fn inventory_ids<'a>(&'a self, user: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>>;

    /// The usable bundles of `user` with their descriptions, highest precedence first (the
    /// inventory drops from the end when over its budget). By default: the ids, without
    /// descriptions.
    fn inventory<'a>(
        &'a self,
        user: &'a str,
    ) -> BoxFuture<'a, Result<Vec<InventoryEntry>, String>> {
        Box::pin(async move {
            let ids = self.inventory_ids(user).await?;
            Ok(ids
                .into_iter()
                .map(|id| InventoryEntry {
                    id,
                    description: String::new(),
                })
                .collect())
        })
    }

    /// The bundle `id` of `user`, in full.
    #[allow(
        private_interfaces,
        reason = "the answer is crate-internal; implementors are too"
    )]
    fn lookup<'a>(
        &'a self,
        user: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<BundleLookup, String>> {
        let _ = (user, id);
        Box::pin(async { Ok(BundleLookup::Missing) })
    }

    /// Runs one command of the approved bundle `id` through the gate (one call of the
    /// bundle's own tool, see [`crate::skills::command_tool`]), confined by its manifest
    /// (`None` when there is no such usable bundle).
    #[allow(
        private_interfaces,
        reason = "the arguments are crate-internal; implementors are too"
    )]
    fn run_command<'a>(
        &'a self,
        run: BundleRun<'a>,
    ) -> BoxFuture<'a, Option<Result<ToolResult, String>>> {
        let _ = run;
        Box::pin(async { None })
    }

    /// The gate's tool named `tool` (`skill:<id>@<hash>`), made again for a call approved
    /// after it parked: `None` when no usable bundle has that id, an error when the bundle
    /// changed since (its hash, so its name, differs: the person approved another bundle).
    fn command_tool<'a>(
        &'a self,
        tool: &'a str,
        gate: &'a Gate,
    ) -> BoxFuture<'a, Option<Result<Arc<dyn DynTool>, String>>> {
        let _ = (tool, gate);
        Box::pin(async { None })
    }
}

/// One `RunSkillCommand` of a file-backed skill.
pub(crate) struct BundleRun<'a> {
    /// The skill.
    pub id: &'a str,
    /// What to run (a [`crate::skills::run::SkillCommandArgs`] object).
    pub arguments: serde_json::Value,
    /// The gate call it becomes (its `tool` is replaced by the bundle's tool).
    pub call: GateCall<'a>,
}

/// No file-backed skills.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoSkillBundles;

impl SkillBundles for NoSkillBundles {
    fn inventory_ids<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// The registry's skills (one registry per daemon; `user` is not used: skills are the
/// operator's, as the original's local sandbox). Only enabled skills that load and pass
/// validation are listed.
impl SkillBundles for Registry {
    fn inventory_ids<'a>(&'a self, user: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
        Box::pin(async move {
            let entries = self.inventory(user).await?;
            let mut ids: Vec<String> = entries.into_iter().map(|entry| entry.id).collect();
            ids.sort();
            Ok(ids)
        })
    }

    /// Installed skills first, then a project's, `~/.agents`', `~/.claude`'s; by id within one.
    fn inventory<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<InventoryEntry>, String>> {
        Box::pin(async move {
            let mut listed = self.list().await.map_err(|error| error.to_string())?;
            listed.sort_by(|a, b| (a.source, &a.id).cmp(&(b.source, &b.id)));
            let mut entries = Vec::new();
            for skill in listed {
                if !skill.enabled || skill.error.is_some() {
                    continue;
                }
                // Validation is cached by hash: only a new or changed bundle is checked again.
                if let Ok(BundleLookup::Found(found)) = self.lookup_listed(skill).await {
                    entries.push(InventoryEntry {
                        id: found.skill_id,
                        description: found.description,
                    });
                }
            }
            Ok(entries)
        })
    }

    #[allow(
        private_interfaces,
        reason = "the answer is crate-internal; implementors are too"
    )]
    fn lookup<'a>(
        &'a self,
        _: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<BundleLookup, String>> {
        Box::pin(async move {
            match self.find(id).await.map_err(|error| error.to_string())? {
                Some(skill) => self.lookup_listed(skill).await,
                None => Ok(BundleLookup::Missing),
            }
        })
    }

    #[allow(
        private_interfaces,
        reason = "the arguments are crate-internal; implementors are too"
    )]
    fn run_command<'a>(
        &'a self,
        run: BundleRun<'a>,
    ) -> BoxFuture<'a, Option<Result<ToolResult, String>>> {
        Box::pin(async move {
            let skill = self.find(run.id).await.ok()??;
            // Running a skill's scripts needs the operator's consent, given by installing it
            // into the Souz home: an import (a project's `.agents/skills`, say, from a cloned
            // repository) only offers its instructions.
            if skill.source != Source::Installed {
                return Some(Err(format!(
                    "the skill '{}' is imported from {:?}, not installed; its scripts run only \
                     once the operator installs it (souz skills install)",
                    skill.id, skill.source
                )));
            }
            let tool = match self.bundle_tool(skill, run.call.gate).await? {
                Ok(tool) => Arc::new(tool),
                Err(problems) => return Some(Err(problems)),
            };
            let call = GateCall {
                tool: tool.spec().name,
                ..run.call
            };
            let result = call_gate_with(call, run.arguments, Some(tool)).await;
            Some(
                result
                    .map(|gated| gated.result)
                    .map_err(|error| error.to_string()),
            )
        })
    }

    fn command_tool<'a>(
        &'a self,
        tool: &'a str,
        gate: &'a Gate,
    ) -> BoxFuture<'a, Option<Result<Arc<dyn DynTool>, String>>> {
        Box::pin(async move {
            let (id, _) = tool.strip_prefix("skill:")?.rsplit_once('@')?;
            let skill = self.find(id).await.ok()??;
            if skill.source != Source::Installed {
                return None;
            }
            let made = match self.bundle_tool(skill, gate).await? {
                Ok(made) => made,
                Err(problems) => return Some(Err(problems)),
            };
            if made.spec().name != tool {
                return Some(Err(format!(
                    "the skill '{id}' changed since the call was approved (now {}), so the \
                     approved call did not run",
                    made.spec().name
                )));
            }
            Some(Ok(Arc::new(made) as Arc<dyn DynTool>))
        })
    }
}

impl Registry {
    /// The listed skill `skill` loaded once with its validation findings, if it is enabled,
    /// loads and passes validation; otherwise why not (disabled, or rejected with the reasons).
    pub(crate) async fn usable(
        &self,
        skill: Listed,
    ) -> Result<Result<(Loaded, Vec<Finding>), BundleLookup>, String> {
        if !skill.enabled {
            return Ok(Err(BundleLookup::Disabled));
        }
        let loaded = match Registry::open(skill) {
            Ok(loaded) => loaded,
            Err(error) => return Ok(Err(BundleLookup::Rejected(error.to_string()))),
        };
        let id = loaded.listed.id.as_str();
        let folder = (loaded.listed.source != Source::Installed).then_some(id);
        let verdict = self
            .verdict(id, &loaded.bundle, folder)
            .await
            .map_err(|error| error.to_string())?;
        if !verdict.approved {
            let reasons: Vec<String> = verdict
                .findings
                .into_iter()
                .filter(|finding| finding.severity == Severity::Error)
                .map(|finding| finding.message)
                .collect();
            return Ok(Err(BundleLookup::Rejected(reasons.join("; "))));
        }
        Ok(Ok((loaded, verdict.findings)))
    }

    /// The gate's tool for the commands of `skill`'s bundle as it is now: `None` unless the
    /// agents could find it (enabled, loading, approved by validation), else the tool or why
    /// its manifest does not parse.
    async fn bundle_tool(
        &self,
        skill: Listed,
        gate: &Gate,
    ) -> Option<Result<SkillCommandTool, String>> {
        let Ok(Ok((loaded, findings))) = self.usable(skill).await else {
            return None;
        };
        Some(
            SkillCommandTool::new(SkillCommandParts {
                id: loaded.listed.id.clone(),
                bundle: loaded.bundle,
                findings,
                approvals: gate.approvals().clone(),
            })
            .map_err(|problems| problems.join("; ")),
        )
    }

    /// The listed skill `skill` for the agents: disabled, rejected (why) or its instructions.
    async fn lookup_listed(&self, skill: Listed) -> Result<BundleLookup, String> {
        let loaded = match self.usable(skill).await? {
            Ok((loaded, _)) => loaded,
            Err(unusable) => return Ok(unusable),
        };
        let id = loaded.listed.id.clone();
        let front = loaded.markdown.frontmatter;
        Ok(BundleLookup::Found(BundleSkill {
            skill_id: id,
            name: front.name,
            description: front.description,
            skill_markdown_body: loaded.markdown.body,
            supporting_files: loaded.bundle.supporting_files(),
        }))
    }
}
