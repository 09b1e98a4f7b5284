//! An external server's tool as the gate sees it: named `mcp__<server>__<tool>`, risk class
//! `exec` whatever the server's annotations say (they are hints only: by default every
//! external tool asks), planned without touching the server and run through the server's
//! session; its result (text, structured content, images, resources) mapped to a tool output.
//!
//! Names: characters outside `[A-Za-z0-9_-]` become `_`, names are cut to
//! [`MAX_NAME_LENGTH`], and a name already taken gets `_2`, `_3`, …. Several remote names can
//! thus reach one Souz name: trust is kept by the Souz name (`trust`), and while a tool is
//! untrusted its spec (what models, `GET /v1/tools` and `/mcp` see) is the trusted
//! definition's, never the listed one.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;
use souz_protocol::{Risk, ToolAnnotations, ToolCategory};

use super::Server;
use super::trust::Definition;
use crate::approvals::CallTarget;
use crate::tools::{
    DynTool, Plan, PlannedCall, ToolContext, ToolError, ToolOutput, ToolSpec, intern, localized,
};

/// Longest tool name (what model providers accept).
pub(crate) const MAX_NAME_LENGTH: usize = 64;

/// A proxied tool.
pub(crate) struct ProxyTool {
    pub(crate) spec: ToolSpec,
    pub(crate) server: Arc<Server>,
    /// The tool's name on its server.
    pub(crate) remote: String,
    /// Its definition as listed.
    pub(crate) definition: Definition,
    /// While the listed definition is not the trusted one: the diff from the trusted one.
    pub(crate) untrusted: Arc<Mutex<Option<String>>>,
}

impl DynTool for ProxyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn plan<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<PlannedCall, ToolError>> {
        Box::pin(async move {
            let arguments = object_arguments(arguments)?;
            let mut plan = Plan::new(localized!(
                ctx.language,
                "Call `{}` on the MCP server `{}`",
                "Вызвать `{}` на MCP-сервере `{}`",
                self.remote,
                self.server.name
            ));
            let untrusted = self
                .untrusted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let accept = untrusted.is_some();
            if let Some(diff) = untrusted {
                plan = plan
                    .target(CallTarget::Untrusted {
                        reason: format!(
                            "the MCP server `{}` changed the definition of `{}` (or which of \
                             its tools that name reaches) since you trusted it; approving \
                             trusts the new one",
                            self.server.name, self.spec.name
                        ),
                    })
                    .diff(diff);
            }
            let server = Arc::clone(&self.server);
            let remote = self.remote.clone();
            let definition = self.definition.clone();
            let marker = Arc::clone(&self.untrusted);
            let name = self.spec.name;
            Ok(PlannedCall::new(plan, move |ctx: ToolContext| {
                Box::pin(async move {
                    if accept {
                        server.trust(name, &remote, &definition).await?;
                        *marker.lock().unwrap_or_else(PoisonError::into_inner) = None;
                    }
                    server
                        .call(
                            &remote,
                            arguments,
                            &super::Run {
                                cancel: &ctx.cancel,
                                progress: &ctx.progress,
                            },
                        )
                        .await
                })
            }))
        })
    }
}

/// Arguments as a JSON object (an object, a JSON string holding one, or nothing).
fn object_arguments(arguments: Value) -> Result<JsonObject, ToolError> {
    let arguments = match arguments {
        Value::Null => return Ok(JsonObject::new()),
        Value::String(text) if text.trim().is_empty() => return Ok(JsonObject::new()),
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|error| ToolError::InvalidArguments(format!("not a JSON object: {error}")))?,
        other => other,
    };
    match arguments {
        Value::Object(object) => Ok(object),
        other => Err(ToolError::InvalidArguments(format!(
            "arguments must be a JSON object, not {other}"
        ))),
    }
}

/// `mcp__<server>__<tool>`, sanitised and cut, before deduplication: remote names with the
/// same base compete for one Souz name.
pub(crate) fn base_name(server: &str, tool: &str) -> String {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut base = format!("mcp__{}__{}", clean(server), clean(tool));
    base.truncate(MAX_NAME_LENGTH);
    base
}

/// `mcp__<server>__<tool>`, sanitised, unique among `taken` (which it joins).
pub(crate) fn tool_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let base = base_name(server, tool);
    let mut name = base.clone();
    let mut counter = 2;
    while taken.contains(&name) {
        let suffix = format!("_{counter}");
        let mut shorter = base.clone();
        shorter.truncate(MAX_NAME_LENGTH - suffix.len());
        name = format!("{shorter}{suffix}");
        counter += 1;
    }
    taken.insert(name.clone());
    name
}

/// The spec of a server's tool: its description prefixed with the server, risk `exec`.
pub(crate) fn spec(server: &str, name: &str, tool: &rmcp::model::Tool) -> ToolSpec {
    spec_of(
        server,
        name,
        tool.description.as_deref().unwrap_or_default(),
        Value::Object((*tool.input_schema).clone()),
        tool.output_schema
            .as_ref()
            .map(|schema| Value::Object((**schema).clone())),
    )
}

/// The spec shown while a tool's listed definition is not trusted: the trusted definition's
/// (`trusted`, the JSON `trust` keeps), never the listed text; a record that does not read
/// shows a neutral description and an open object schema.
pub(crate) fn trusted_spec(server: &str, name: &str, trusted: &str) -> ToolSpec {
    let value: Value = serde_json::from_str(trusted).unwrap_or(Value::Null);
    let description = value
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("(its definition changed; calling it shows the change)");
    let input_schema = value
        .get("inputSchema")
        .filter(|schema| schema.is_object())
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object"}));
    let output_schema = value
        .get("outputSchema")
        .filter(|schema| schema.is_object())
        .cloned();
    spec_of(server, name, description, input_schema, output_schema)
}

fn spec_of(
    server: &str,
    name: &str,
    description: &str,
    mut input_schema: Value,
    output_schema: Option<Value>,
) -> ToolSpec {
    if let Some(object) = input_schema.as_object_mut() {
        object
            .entry("type")
            .or_insert_with(|| Value::String("object".into()));
    }
    ToolSpec {
        name: intern(name),
        description: intern(&format!("[MCP:{server}] {description}")),
        category: ToolCategory::Commands,
        risk: Risk::Exec,
        annotations: ToolAnnotations::for_risk(Risk::Exec),
        input_schema,
        output_schema,
        always_asks: false,
    }
}

/// A server's answer as the caller sees it: `isError` answers are failures (with their text).
pub(crate) fn output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts = Vec::new();
    for block in &result.content {
        let Ok(value) = serde_json::to_value(block) else {
            continue;
        };
        parts.push(content_text(&value));
    }
    let structured = result.structured_content.clone();
    let mut text = parts.join("\n");
    if text.is_empty()
        && let Some(structured) = &structured
    {
        text = structured.to_string();
    }
    if result.is_error.unwrap_or(false) {
        return Err(ToolError::Failed(if text.is_empty() {
            "the tool reported an error".to_owned()
        } else {
            text
        }));
    }
    Ok(ToolOutput { text, structured })
}

/// One content block as text: text as it is, an image or audio as a note of its type and size,
/// an embedded resource's text under its URI, anything else as JSON.
fn content_text(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_owned(),
        kind @ ("image" | "audio") => format!(
            "[{kind} {}, {} bytes base64]",
            field("mimeType"),
            field("data").len()
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!(
                    "[resource {uri}, {} bytes base64]",
                    resource
                        .get("blob")
                        .and_then(Value::as_str)
                        .map_or(0, str::len)
                ),
            }
        }
        "resource_link" => format!("[resource link {}]", field("uri")),
        _ => block.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_cut_and_deduplicated() {
        let mut taken = HashSet::new();
        assert_eq!(tool_name("files", "read", &mut taken), "mcp__files__read");
        assert_eq!(tool_name("files", "read", &mut taken), "mcp__files__read_2");
        assert_eq!(tool_name("files", "re.ad", &mut taken), "mcp__files__re_ad");
        assert_eq!(
            tool_name("files", "re ad", &mut taken),
            "mcp__files__re_ad_2"
        );
        let long = tool_name("files", &"x".repeat(100), &mut taken);
        assert_eq!(long.len(), MAX_NAME_LENGTH);
        let again = tool_name("files", &"x".repeat(100), &mut taken);
        assert!(again.ends_with("_2") && again.len() == MAX_NAME_LENGTH);
    }

    #[test]
    fn results_map_text_images_resources_and_errors() {
        let result: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}}
            ],
            "structuredContent": {"n": 1}
        }))
        .unwrap();
        let output = output(result).unwrap();
        assert_eq!(
            output.text,
            "hello\n[image image/png, 4 bytes base64]\n[resource file:///a.txt]\ninside"
        );
        assert_eq!(output.structured, Some(serde_json::json!({"n": 1})));

        let failed: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "no such file"}], "isError": true
        }))
        .unwrap();
        assert_eq!(
            super::output(failed),
            Err(ToolError::Failed("no such file".into()))
        );
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert!(object_arguments(Value::Null).unwrap().is_empty());
        assert_eq!(object_arguments("{\"a\":1}".into()).unwrap()["a"], 1);
        assert!(matches!(
            object_arguments(serde_json::json!([1])),
            Err(ToolError::InvalidArguments(_))
        ));
    }
}
