//! `tools/list`: the gate's catalog as MCP tools, filtered and marked by the policy for the
//! client asking.
//!
//! The MCP form of each tool (schemas, annotations) is built once; per listing only the policy
//! is consulted: a tool the policy denies for this client is left out, one it asks about gets
//! `_meta["anthropic/requiresUserInteraction"] = true` and no output schema: its answer may be
//! the "waiting for approval" notice, a normal result without structured content, which clients
//! would reject against a declared schema. Allowed tools keep their output schema.
//! `AwaitApproval`, the server's own tool, is always listed. The external MCP servers' tools
//! (those of servers with `expose_to_mcp_clients`) follow the catalog's, read at each listing.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::Value;
use souz_protocol::{Action, Requester};

use super::calls;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::ToolSpec;

/// The `_meta` key Anthropic's clients read to know a tool will ask the person.
pub(crate) const REQUIRES_USER_INTERACTION: &str = "anthropic/requiresUserInteraction";

/// A catalog tool in its MCP form.
struct Entry {
    spec: ToolSpec,
    tool: Tool,
}

/// The catalog in MCP form, built once per gateway.
pub(crate) struct Listing {
    entries: Vec<Entry>,
    await_approval: Tool,
}

impl Listing {
    /// MCP forms of every tool of the catalog (`specs`).
    pub(crate) fn new(specs: Vec<ToolSpec>) -> Self {
        let entries = specs
            .into_iter()
            .map(|spec| Entry {
                tool: mcp_tool(&spec),
                spec,
            })
            .collect();
        Self {
            entries,
            await_approval: calls::await_approval_tool(),
        }
    }

    /// The tools `requester` may call, as `tools/list` shows them (sorted by name, with
    /// `AwaitApproval` last).
    pub(crate) fn tools(&self, handle: &RuntimeHandle, requester: &Requester) -> Vec<Tool> {
        let external: Vec<Entry> = handle
            .exposed_external_tools()
            .into_iter()
            .map(|spec| Entry {
                tool: mcp_tool(&spec),
                spec,
            })
            .collect();
        let mut tools: Vec<Tool> = self
            .entries
            .iter()
            .chain(&external)
            .filter_map(|entry| {
                let action = match handle
                    .tool_policy_for(entry.spec.name, entry.spec.risk, requester)
                    .action
                {
                    // Its calls ask whatever the rule for its risk says.
                    Action::Allow if entry.spec.always_asks => Action::Ask,
                    action => action,
                };
                match action {
                    Action::Deny => None,
                    Action::Allow => Some(entry.tool.clone()),
                    Action::Ask => {
                        let mut meta = MetaObject::new();
                        meta.0
                            .insert(REQUIRES_USER_INTERACTION.to_owned(), Value::Bool(true));
                        let mut tool = entry.tool.clone().with_meta(meta);
                        tool.output_schema = None;
                        Some(tool)
                    }
                }
            })
            .collect();
        tools.push(self.await_approval.clone());
        tools
    }

    /// What decides whether the list changed: each listed tool, its definition (description
    /// and input schema) and whether it asks.
    pub(crate) fn signature(
        &self,
        handle: &RuntimeHandle,
        requester: &Requester,
    ) -> Vec<(String, bool, String)> {
        self.tools(handle, requester)
            .into_iter()
            .map(|tool| {
                let asks = tool
                    .meta
                    .as_ref()
                    .is_some_and(|meta| meta.0.contains_key(REQUIRES_USER_INTERACTION));
                // An external server may change a tool's description or schema under the
                // same name: that is a new list too.
                let definition = format!(
                    "{}\n{}",
                    tool.description.as_deref().unwrap_or_default(),
                    serde_json::Value::Object((*tool.input_schema).clone())
                );
                (tool.name.into_owned(), asks, definition)
            })
            .collect()
    }

    /// One tool's MCP form, whatever the policy says (for rmcp's header validation).
    pub(crate) fn tool(&self, name: &str) -> Option<Tool> {
        if name == calls::AWAIT_APPROVAL {
            return Some(self.await_approval.clone());
        }
        self.entries
            .iter()
            .find(|entry| entry.spec.name == name)
            .map(|entry| entry.tool.clone())
    }

    /// One exposed external tool's MCP form (they come and go while the daemon runs).
    pub(crate) fn external_tool(handle: &RuntimeHandle, name: &str) -> Option<Tool> {
        handle
            .exposed_external_tools()
            .iter()
            .find(|spec| spec.name == name)
            .map(mcp_tool)
    }
}

/// A catalog tool's MCP form: schemas, a title, and the annotations.
pub(crate) fn mcp_tool(spec: &ToolSpec) -> Tool {
    let annotations = ToolAnnotations::with_title(title(spec.name))
        .read_only(spec.annotations.read_only_hint)
        .destructive(spec.annotations.destructive_hint)
        .idempotent(spec.annotations.idempotent_hint)
        .open_world(spec.annotations.open_world_hint);
    let mut tool = Tool::new(spec.name, spec.description, object(&spec.input_schema))
        .with_title(title(spec.name))
        .with_annotations(annotations);
    // MCP requires an output schema to describe an object; a tool whose structured output is
    // something else keeps it as text only.
    if let Some(schema) = spec
        .output_schema
        .as_ref()
        .filter(|schema| schema.get("type").and_then(Value::as_str) == Some("object"))
    {
        tool = tool.with_raw_output_schema(object(schema));
    }
    tool
}

/// `EditFile` → "Edit file".
pub(crate) fn title(name: &str) -> String {
    let mut words = String::with_capacity(name.len() + 4);
    for (index, character) in name.chars().enumerate() {
        if index > 0 && character.is_uppercase() {
            words.push(' ');
            words.extend(character.to_lowercase());
        } else {
            words.push(character);
        }
    }
    words
}

fn object(schema: &Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map.clone()),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), Value::String("object".to_owned()));
            Arc::new(map)
        }
    }
}
