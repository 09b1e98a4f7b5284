//! `GetSkillByName`, `GetSkillsByCategory`, `GetSkillsNamesByCategory`, `RunSkillCommand`.
//!
//! Tool-backed skills are the gate's enabled catalog tools ([`crate::agent::skills`]). Lookups
//! report problems per skill (`invalid_skill_id`, `skill_disabled`, `skill_not_found`) and per
//! category (`invalid_category`, `category_not_found`); `RunSkillCommand` runs the tool through
//! the gate with the chat as requester and returns the gate's result as its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use souz_protocol::ToolCategory;

use super::{CoreCall, CoreOutput};

use crate::agent::gate_call::{GateCall, call_gate};
use crate::agent::skills::{
    BundleLookup, BundleRun, BundleSkill, Lookup, by_category, enabled_tools, lookup,
    parse_category,
};
use crate::skills::run::SkillCommandArgs;
use crate::tools::{ToolError, ToolSpec, parse_arguments};

/// Arguments of `GetSkillByName`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SkillIdArgs {
    /// Exact skill id to inspect.
    pub skill_id: String,
}

/// Arguments of the category tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct CategoryArgs {
    /// Skill category name.
    pub category: String,
}

/// Arguments of `RunSkillCommand`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RunSkillArgs {
    /// Exact skill id returned by a skill discovery tool.
    pub skill_id: String,
    /// Arguments matching the input schema a skill discovery tool returned.
    #[serde(default)]
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub arguments: Option<Value>,
}

/// A lookup problem, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DiscoveryError {
    /// The skill it is about, if any.
    pub skill_id: Option<String>,
    /// Stable code.
    pub code: &'static str,
    /// For the model.
    pub message: String,
}

impl DiscoveryError {
    fn new(skill_id: Option<&str>, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            skill_id: skill_id.map(str::to_owned),
            code,
            message: message.into(),
        }
    }
}

/// A tool-backed skill in full.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SkillDetail {
    /// Its id (the tool's name).
    pub skill_id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments.
    pub input_schema: Value,
    /// JSON schema of its structured result, if it has one.
    pub return_schema: Option<Value>,
    /// Example calls (none yet).
    pub few_shot_examples: Vec<Value>,
}

impl SkillDetail {
    fn of(spec: &ToolSpec) -> Self {
        Self {
            skill_id: spec.name.to_owned(),
            name: spec.name.to_owned(),
            description: spec.description.to_owned(),
            input_schema: spec.input_schema.clone(),
            return_schema: spec.output_schema.clone(),
            few_shot_examples: Vec::new(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SkillLookup {
    skill: Option<FoundSkill>,
    error: Option<DiscoveryError>,
}

/// What `GetSkillByName` found: a tool or a file-backed skill (the original's two shapes).
#[derive(Serialize)]
#[serde(untagged)]
enum FoundSkill {
    Tool(SkillDetail),
    Bundle(BundleSkill),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CategoryNames {
    category: Option<String>,
    skill_names: Vec<String>,
    error: Option<DiscoveryError>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CategorySkills {
    category: Option<String>,
    skills: Vec<SkillDetail>,
    errors: Vec<DiscoveryError>,
}

fn json(value: &impl Serialize, is_error: bool) -> CoreOutput {
    match serde_json::to_string(value) {
        Ok(content) => CoreOutput { content, is_error },
        Err(problem) => CoreOutput::error("skills_unavailable", problem.to_string()),
    }
}

fn argument_problem(error: ToolError) -> String {
    match error {
        ToolError::InvalidArguments(message) => message,
        other => other.to_string(),
    }
}

/// Looks up one tool-backed skill.
pub(crate) fn find_skill(
    call: &CoreCall<'_>,
    requested: &str,
) -> Result<SkillDetail, DiscoveryError> {
    let skill_id = requested.trim();
    if skill_id.is_empty() {
        return Err(DiscoveryError::new(
            Some(skill_id),
            "invalid_skill_id",
            "Skill ID must not be blank.",
        ));
    }
    match lookup(call.gate, call.tools, skill_id) {
        Lookup::Enabled(tool) => Ok(SkillDetail::of(tool.spec())),
        Lookup::Disabled => Err(DiscoveryError::new(
            Some(skill_id),
            "skill_disabled",
            format!("Tool-backed Skill is disabled: {skill_id}"),
        )),
        Lookup::Missing => Err(DiscoveryError::new(
            Some(skill_id),
            "skill_not_found",
            format!("Skill is unavailable: {skill_id}"),
        )),
    }
}

/// Looks `requested` up among the tools, then (when no tool has that id) the file-backed skills.
async fn find_any_skill(
    call: &CoreCall<'_>,
    requested: &str,
) -> Result<FoundSkill, DiscoveryError> {
    let error = match find_skill(call, requested) {
        Ok(skill) => return Ok(FoundSkill::Tool(skill)),
        Err(error) if error.code == "skill_not_found" => error,
        Err(error) => return Err(error),
    };
    let skill_id = requested.trim();
    match call.bundles.lookup(call.owner, skill_id).await {
        Ok(BundleLookup::Found(skill)) => Ok(FoundSkill::Bundle(skill)),
        Ok(BundleLookup::Missing) => Err(error),
        Ok(BundleLookup::Disabled) => Err(DiscoveryError::new(
            Some(skill_id),
            "skill_disabled",
            format!("Skill is disabled: {skill_id}"),
        )),
        Ok(BundleLookup::Rejected(reason)) => Err(DiscoveryError::new(
            Some(skill_id),
            "skill_validation_rejected",
            format!("Skill {skill_id} was rejected by validation: {reason}"),
        )),
        Err(reason) => Err(DiscoveryError::new(
            Some(skill_id),
            "skill_unavailable",
            format!("Skill {skill_id} is unavailable: {reason}"),
        )),
    }
}

/// `GetSkillByName`.
pub(crate) async fn get_skill_by_name(call: &CoreCall<'_>, arguments: Value) -> CoreOutput {
    let found = match parse_arguments::<SkillIdArgs>(arguments) {
        Ok(args) => find_any_skill(call, &args.skill_id).await,
        Err(problem) => Err(DiscoveryError::new(
            None,
            "invalid_skill_id",
            argument_problem(problem),
        )),
    };
    match found {
        Ok(skill) => json(
            &SkillLookup {
                skill: Some(skill),
                error: None,
            },
            false,
        ),
        Err(error) => json(
            &SkillLookup {
                skill: None,
                error: Some(error),
            },
            true,
        ),
    }
}

/// The category named in `arguments` and the sorted ids of its enabled skills.
fn category_skill_names(
    call: &CoreCall<'_>,
    arguments: Value,
) -> Result<(ToolCategory, Vec<String>), DiscoveryError> {
    let args = parse_arguments::<CategoryArgs>(arguments).map_err(|problem| {
        DiscoveryError::new(None, "invalid_category", argument_problem(problem))
    })?;
    let requested = args.category.trim();
    if requested.is_empty() {
        return Err(DiscoveryError::new(
            None,
            "invalid_category",
            "Category name must not be blank.",
        ));
    }
    let Some(category) = parse_category(requested) else {
        return Err(DiscoveryError::new(
            None,
            "category_not_found",
            format!("Unknown Skill category: {requested}"),
        ));
    };
    let tools = enabled_tools(call.gate, call.tools);
    let names = by_category(&tools)
        .remove(&category)
        .unwrap_or_default()
        .into_iter()
        .map(|spec| spec.name.to_owned())
        .collect();
    Ok((category, names))
}

/// `GetSkillsNamesByCategory`.
pub(crate) fn get_skill_names_by_category(call: &CoreCall<'_>, arguments: Value) -> CoreOutput {
    match category_skill_names(call, arguments) {
        Ok((category, skill_names)) => json(
            &CategoryNames {
                category: Some(category.as_str().to_owned()),
                skill_names,
                error: None,
            },
            false,
        ),
        Err(error) => json(
            &CategoryNames {
                category: None,
                skill_names: Vec::new(),
                error: Some(error),
            },
            true,
        ),
    }
}

/// `GetSkillsByCategory`.
pub(crate) fn get_skills_by_category(call: &CoreCall<'_>, arguments: Value) -> CoreOutput {
    match category_skill_names(call, arguments) {
        Ok((category, names)) => {
            let mut skills = Vec::new();
            let mut errors = Vec::new();
            for name in names {
                match find_skill(call, &name) {
                    Ok(skill) => skills.push(skill),
                    Err(error) => errors.push(error),
                }
            }
            json(
                &CategorySkills {
                    category: Some(category.as_str().to_owned()),
                    skills,
                    errors,
                },
                false,
            )
        }
        Err(error) => json(
            &CategorySkills {
                category: None,
                skills: Vec::new(),
                errors: vec![error],
            },
            true,
        ),
    }
}

/// Runs one command of the file-backed skill `skill_id` through the gate, confined by its
/// manifest (the first command of a bundle asks for consent to it).
async fn run_bundle(call: &CoreCall<'_>, skill_id: &str, arguments: Option<Value>) -> CoreOutput {
    let arguments = arguments.unwrap_or_else(|| Value::Object(Default::default()));
    if let Err(problem) = serde_json::from_value::<SkillCommandArgs>(arguments.clone()) {
        return CoreOutput::error("skill_invocation_failed", problem.to_string());
    }
    let run = BundleRun {
        id: skill_id,
        arguments,
        call: GateCall {
            gate: call.gate,
            chat_id: call.chat_id,
            tool: skill_id,
            tool_call_id: call.tool_call_id,
            sink: call.sink,
            parking: call.parking,
        },
    };
    match call.bundles.run_command(run).await {
        // It ran: the command's own result (a failing exit code is an error).
        Some(Ok(result)) if !result.is_error && result.structured.is_some() => {
            let exit_code = result
                .structured
                .as_ref()
                .and_then(|structured| structured.get("exitCode"))
                .and_then(Value::as_i64);
            CoreOutput {
                content: result.text,
                is_error: exit_code != Some(0),
            }
        }
        // Refused, denied, invalid or failed before it ran: the gate says why.
        Some(Ok(result)) => CoreOutput::error(
            "skill_invocation_failed",
            format!("Skill {skill_id} did not run: {}", result.text),
        ),
        Some(Err(problem)) => CoreOutput::error(
            "skill_invocation_failed",
            format!("Skill {skill_id} did not run: {problem}"),
        ),
        None => CoreOutput::error(
            "skill_not_found",
            format!("Skill is unavailable: {skill_id}"),
        ),
    }
}

/// `RunSkillCommand`: runs a tool-backed skill through the gate, or a file-backed skill's
/// command confined by its manifest.
pub(crate) async fn run_skill_command(call: &CoreCall<'_>, arguments: Value) -> CoreOutput {
    let args = match parse_arguments::<RunSkillArgs>(arguments) {
        Ok(args) => args,
        Err(problem) => {
            return CoreOutput::error("skill_invocation_failed", argument_problem(problem));
        }
    };
    let skill_id = args.skill_id.trim();
    if skill_id.is_empty() {
        return CoreOutput::error("invalid_skill_id", "Skill ID must not be blank.");
    }
    match lookup(call.gate, call.tools, skill_id) {
        Lookup::Enabled(tool) => {
            let arguments = args
                .arguments
                .unwrap_or_else(|| Value::Object(Default::default()));
            let gate_call = GateCall {
                gate: call.gate,
                chat_id: call.chat_id,
                tool: tool.spec().name,
                tool_call_id: call.tool_call_id,
                sink: call.sink,
                parking: call.parking,
            };
            match call_gate(gate_call, arguments)
                .await
                .map(|gated| gated.result)
            {
                Ok(result) => CoreOutput {
                    content: result.text,
                    is_error: result.is_error,
                },
                Err(problem) => CoreOutput::error(
                    "skill_invocation_failed",
                    format!("Souz could not start the skill: {problem}"),
                ),
            }
        }
        Lookup::Disabled => CoreOutput::error(
            "skill_disabled",
            format!("Tool-backed Skill is disabled: {skill_id}"),
        ),
        Lookup::Missing => match call.bundles.lookup(call.owner, skill_id).await {
            Ok(BundleLookup::Found(_)) => run_bundle(call, skill_id, args.arguments).await,
            Ok(BundleLookup::Disabled) => {
                CoreOutput::error("skill_disabled", format!("Skill is disabled: {skill_id}"))
            }
            Ok(BundleLookup::Rejected(reason)) => CoreOutput::error(
                "skill_validation_rejected",
                format!("Skill {skill_id} was rejected by validation: {reason}"),
            ),
            Ok(BundleLookup::Missing) | Err(_) => CoreOutput::error(
                "skill_not_found",
                format!("Skill is unavailable: {skill_id}"),
            ),
        },
    }
}
