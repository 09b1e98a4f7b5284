//! Tools: the typed [`Tool`] trait, the [`Catalog`] of tools (duplicate names rejected), and the
//! type-erased form the approval gate dispatches.
//!
//! A call has two phases. `plan` validates the arguments and describes exactly what the call
//! will touch (paths, command, URLs), with a one-line summary and, for file changes, a diff —
//! all before anyone is asked. `run` does it, only after the gate allowed the plan, and gets the
//! plan's prepared data (e.g. the content hash an edit was approved against, so it can refuse
//! if the file changed since).
//!
//! A tool that runs and fails returns [`ToolError`]; the gate turns it into an error *result*
//! for the model (`is_error: true`). Tools never panic on bad input; a panic is caught by the
//! gate and reported as an error result too.

pub(crate) mod builtin;
pub(crate) mod calls;
pub(crate) mod external;
pub mod gate;
pub(crate) mod progress;
pub(crate) mod words;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
pub(crate) use souz_protocol::language::Language;
use souz_protocol::{Requester, Risk, ToolAnnotations, ToolCategory, ToolResult};
use tokio_util::sync::CancellationToken;
pub(crate) use words::localized;

use crate::approvals::CallTarget;
use crate::sandbox::{Access, Sandbox, SandboxError};
pub use progress::{ProgressSink, ToolProgress};

/// Everything a tool may use while it plans and runs.
#[derive(Clone)]
pub struct ToolContext {
    /// Paths, commands and network access go through the sandbox.
    pub sandbox: Arc<Sandbox>,
    /// Cancelled when the caller gives up; long-running tools must watch it.
    pub cancel: CancellationToken,
    /// Who asked for the call.
    pub requester: Requester,
    /// Where a running tool reports its progress (nowhere unless the gate runs it).
    pub progress: ProgressSink,
    /// The language of the plan's summary (the person's interface language).
    pub language: Language,
    /// For a write about to be staged for review on top of earlier staged changes: what those
    /// changes leave the paths they write holding, which the file tools plan against instead
    /// of the disk (see [`builtin::files::staged`]). `None` for every other call.
    pub(crate) staged: Option<Arc<builtin::files::staged::StagedFiles>>,
}

/// What a call will do, computed before approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// One line for people: "Edit ~/notes/todo.md (replace 1 occurrence)".
    pub summary: String,
    /// What it touches.
    pub targets: Vec<CallTarget>,
    /// For file changes: the unified diff of what will change.
    pub diff: Option<String>,
}

impl Plan {
    /// A plan with a summary and no targets yet.
    pub fn new(summary: impl Into<String>) -> Self {
        Self {
            summary: summary.into(),
            targets: Vec::new(),
            diff: None,
        }
    }

    /// Adds a path target (use the sandbox's resolved path).
    pub fn path(mut self, resolved: &crate::sandbox::ResolvedPath, access: Access) -> Self {
        self.targets.push(CallTarget::Path {
            path: resolved.path.clone(),
            access,
            protected: resolved.protected,
        });
        self
    }

    /// Adds any target.
    pub fn target(mut self, target: CallTarget) -> Self {
        self.targets.push(target);
        self
    }

    /// Sets the diff.
    pub fn diff(mut self, diff: impl Into<String>) -> Self {
        self.diff = Some(diff.into());
        self
    }
}

/// A plan plus the data `run` needs from planning.
#[derive(Debug)]
pub struct Planned<P> {
    /// What the call will do.
    pub plan: Plan,
    /// Tool-specific data handed to `run`.
    pub prepared: P,
}

impl Plan {
    /// Wraps this plan with no prepared data.
    pub fn ready(self) -> Planned<()> {
        Planned {
            plan: self,
            prepared: (),
        }
    }

    /// Wraps this plan with prepared data for `run`.
    pub fn with<P>(self, prepared: P) -> Planned<P> {
        Planned {
            plan: self,
            prepared,
        }
    }
}

/// What a tool returns when it succeeds.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Text for the model.
    pub text: String,
    /// Structured form, when the tool has one (also rendered as `text`).
    pub structured: Option<Value>,
}

impl ToolOutput {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            structured: None,
        }
    }

    /// A JSON value; the text is its compact rendering.
    pub fn json(value: impl serde::Serialize) -> Self {
        let structured = serde_json::to_value(value).unwrap_or(Value::Null);
        Self {
            text: structured.to_string(),
            structured: Some(structured),
        }
    }
}

/// Why a call did not produce a result. Every variant except `Cancelled` and `Internal` is the
/// model's or the person's business and becomes an error result with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The sandbox refused a path, command or URL.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// What was approved no longer matches reality (e.g. the file changed since).
    #[error("{0}")]
    Conflict(String),
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Souz itself failed (database, runtime); details are logged.
    #[error("internal error: {0}")]
    Internal(String),
}

/// A tool with typed arguments.
pub trait Tool: Send + Sync + 'static {
    /// The arguments; their JSON schema is what models and MCP clients see.
    type Args: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// Data `plan` hands to `run` (use `()` when there is none).
    type Prepared: Send + Sync + 'static;

    /// Unique name (`EditFile`).
    fn name(&self) -> &'static str;
    /// What it does, for the model.
    fn description(&self) -> &'static str;
    /// Its category.
    fn category(&self) -> ToolCategory;
    /// Its risk class (the policy's default per class applies).
    fn risk(&self) -> Risk;
    /// MCP annotations; derived from the risk unless the tool knows better.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::for_risk(self.risk())
    }
    /// JSON schema of `structured` output, when the tool always returns structured output.
    fn output_schema(&self) -> Option<Value> {
        None
    }
    /// Whether every call asks the person whatever the policy says (its plan names an
    /// untrusted target); tool listings then say it asks even where its risk's rule allows.
    fn always_asks(&self) -> bool {
        false
    }
    /// Validates the call and describes what it will do. Must not change anything.
    fn plan(
        &self,
        args: &Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<Planned<Self::Prepared>, ToolError>> + Send;
    /// Does it. Called only after the gate allowed the plan.
    fn run(
        &self,
        args: Self::Args,
        prepared: Self::Prepared,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// The description of a tool as catalogs, MCP and models see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name.
    pub name: &'static str,
    /// Description for the model.
    pub description: &'static str,
    /// Category.
    pub category: ToolCategory,
    /// Risk class.
    pub risk: Risk,
    /// MCP annotations.
    pub annotations: ToolAnnotations,
    /// JSON schema of the arguments (an object schema, subschemas inlined).
    pub input_schema: Value,
    /// JSON schema of structured output, if any.
    pub output_schema: Option<Value>,
    /// Whether every call asks the person, whatever the policy's rule for its risk says
    /// ([`Tool::always_asks`]); listings say it asks.
    pub always_asks: bool,
}

/// A planned call, ready to run once allowed.
pub struct PlannedCall {
    /// What it will do.
    pub plan: Plan,
    runner:
        Box<dyn FnOnce(ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send>,
}

impl std::fmt::Debug for PlannedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedCall")
            .field("plan", &self.plan)
            .finish()
    }
}

impl PlannedCall {
    /// A planned call that `runner` carries out (for tools that are not typed [`Tool`]s, such
    /// as the proxies of external MCP servers' tools).
    pub(crate) fn new(
        plan: Plan,
        runner: impl FnOnce(ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + 'static,
    ) -> Self {
        Self {
            plan,
            runner: Box::new(runner),
        }
    }

    /// Runs the call.
    pub fn run(self, ctx: ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (self.runner)(ctx)
    }
}

/// A tool with its types erased, as the catalog holds it.
pub trait DynTool: Send + Sync {
    /// Its description.
    fn spec(&self) -> &ToolSpec;
    /// Parses `arguments` (an object, or a JSON string holding one) and plans the call.
    fn plan<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<PlannedCall, ToolError>>;
}

struct Erased<T: Tool> {
    tool: Arc<T>,
    spec: ToolSpec,
}

impl<T: Tool> DynTool for Erased<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn plan<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<PlannedCall, ToolError>> {
        Box::pin(async move {
            let args: T::Args = parse_arguments(arguments)?;
            let planned = self.tool.plan(&args, ctx).await?;
            let tool = Arc::clone(&self.tool);
            let prepared = planned.prepared;
            Ok(PlannedCall {
                plan: planned.plan,
                runner: Box::new(move |ctx: ToolContext| {
                    Box::pin(async move { tool.run(args, prepared, &ctx).await })
                }),
            })
        })
    }
}

/// Parses tool arguments sent as an object, a JSON string holding one, or nothing (`null`).
pub fn parse_arguments<A: DeserializeOwned>(arguments: Value) -> Result<A, ToolError> {
    let arguments = match arguments {
        Value::String(text) if text.trim().is_empty() => Value::Object(Default::default()),
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|error| ToolError::InvalidArguments(format!("not a JSON object: {error}")))?,
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    serde_json::from_value(arguments)
        .map_err(|error| ToolError::InvalidArguments(error.to_string()))
}

/// The JSON schema models see for `A`: an object schema with subschemas inlined.
pub fn input_schema<A: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().root_schema_for::<A>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("title");
        object
            .entry("type")
            .or_insert_with(|| Value::String("object".into()));
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    value
}

/// Why a catalog could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// Two tools share a name.
    #[error("two tools are named `{0}`")]
    Duplicate(String),
}

/// The set of tools, by name. Immutable once built; cheap to clone.
#[derive(Clone, Default)]
pub struct Catalog {
    tools: Arc<BTreeMap<&'static str, Arc<dyn DynTool>>>,
}

/// `tool` with its types erased (the catalog's form; also for tools registered beside it).
pub(crate) fn erase<T: Tool>(tool: T) -> Arc<dyn DynTool> {
    let spec = ToolSpec {
        name: tool.name(),
        description: tool.description(),
        category: tool.category(),
        risk: tool.risk(),
        annotations: tool.annotations(),
        input_schema: input_schema::<T::Args>(),
        output_schema: tool.output_schema(),
        always_asks: tool.always_asks(),
    };
    Arc::new(Erased {
        tool: Arc::new(tool),
        spec,
    })
}

/// Builds a [`Catalog`].
#[derive(Default)]
pub struct CatalogBuilder {
    tools: BTreeMap<&'static str, Arc<dyn DynTool>>,
}

impl CatalogBuilder {
    /// Adds a tool; a second tool with the same name is an error.
    pub fn add<T: Tool>(&mut self, tool: T) -> Result<&mut Self, CatalogError> {
        self.add_dyn(erase(tool))
    }

    /// Adds an already erased tool (e.g. one proxied from an MCP server).
    pub fn add_dyn(&mut self, tool: Arc<dyn DynTool>) -> Result<&mut Self, CatalogError> {
        let name = tool.spec().name;
        if self.tools.contains_key(name) {
            return Err(CatalogError::Duplicate(name.to_owned()));
        }
        self.tools.insert(name, tool);
        Ok(self)
    }

    /// The finished catalog.
    pub fn build(self) -> Catalog {
        Catalog {
            tools: Arc::new(self.tools),
        }
    }
}

impl Catalog {
    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(name)
    }

    /// Every tool, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn DynTool>> {
        self.tools.values()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// Turns a tool's outcome into the result the caller sees.
pub fn into_result(outcome: Result<ToolOutput, ToolError>) -> ToolResult {
    match outcome {
        Ok(output) => ToolResult {
            text: output.text,
            structured: output.structured,
            is_error: false,
        },
        Err(error) => ToolResult {
            text: error.to_string(),
            structured: None,
            is_error: true,
        },
    }
}

/// Specs name their tools with `&'static str`: names and descriptions made at run time (external
/// MCP tools, skill bundles) are kept once for the life of the process (a changed one adds its
/// new text, nothing more).
pub(crate) fn intern(text: &str) -> &'static str {
    static TEXTS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<&'static str>>> =
        std::sync::OnceLock::new();
    let mut texts = TEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(existing) = texts.get(text) {
        return existing;
    }
    let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
    texts.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests;
