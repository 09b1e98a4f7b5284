//! The official MCP conformance suite's fixtures (cargo feature `conformance`, for tests only;
//! a release build with it does not compile): the test tools, resources, prompts and
//! completion the suite's scenarios call, served through the MCP server's extension point
//! ([`McpExtension`]) next to the real catalog.
//!
//! With them the whole active suite runs against Souz's own stack — perimeter, front door,
//! rmcp sessions, this handler — so logging, progress, sampling, elicitation, resources,
//! prompts and completion are proven end to end. The fixtures are protocol exercises, not
//! tools: they touch nothing and do not pass the approval gate.

#![allow(
    deprecated,
    reason = "the suite exercises logging and sampling, which rmcp marks deprecated (SEP-2577)"
)]

use rmcp::model::{
    CallToolResult, CompleteRequestParams, CompleteResult, CreateMessageRequestParams,
    ElicitRequestParams, ElicitationSchema, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResult, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use futures::future::BoxFuture;
use rmcp::model::{JsonObject, ServerCapabilities};
use souz_core::mcp::extension::{McpExtension, WantsLog};

/// The fixtures, as the MCP server's extension.
#[derive(Debug, Clone, Copy)]
pub struct Fixtures;

impl McpExtension for Fixtures {
    fn add_capabilities(&self, capabilities: &mut ServerCapabilities) {
        capabilities.resources = serde_json::from_value(json!({"subscribe": true})).ok();
        capabilities.prompts = Some(Default::default());
        capabilities.completions = Some(Default::default());
    }

    fn tools(&self) -> Vec<Tool> {
        tools()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<&'a JsonObject>,
        context: &'a RequestContext<RoleServer>,
        wants_log: WantsLog<'a>,
    ) -> BoxFuture<'a, Option<Result<CallToolResult, McpError>>> {
        Box::pin(call(wants_log, name, arguments, context))
    }

    fn resources(&self) -> Result<ListResourcesResult, McpError> {
        resources()
    }

    fn resource_templates(&self) -> Result<ListResourceTemplatesResult, McpError> {
        resource_templates()
    }

    fn read(&self, request: &ReadResourceRequestParams) -> Result<ReadResourceResult, McpError> {
        read(request)
    }

    fn prompts(&self) -> Result<ListPromptsResult, McpError> {
        prompts()
    }

    fn prompt(&self, request: &GetPromptRequestParams) -> Result<GetPromptResult, McpError> {
        prompt(request)
    }

    fn complete(&self, request: &CompleteRequestParams) -> Result<CompleteResult, McpError> {
        complete(request)
    }
}

/// A 1×1 transparent PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A tiny WAV file (header and two silent samples).
const WAV: &str = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAAAAA";

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value)
        .map_err(|error| McpError::internal_error(format!("fixture: {error}"), None))
}

fn tool(name: &'static str, description: &'static str) -> Tool {
    let mut schema = rmcp::model::JsonObject::new();
    schema.insert("type".to_owned(), json!("object"));
    schema.insert("properties".to_owned(), json!({}));
    Tool::new(name, description, std::sync::Arc::new(schema))
}

/// The suite's test tools.
fn tools() -> Vec<Tool> {
    vec![
        tool("test_simple_text", "Returns a simple text."),
        tool("test_image_content", "Returns an image."),
        tool("test_audio_content", "Returns audio."),
        tool("test_embedded_resource", "Returns an embedded resource."),
        tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
        ),
        tool("test_tool_with_logging", "Sends three log messages."),
        tool("test_error_handling", "Always fails."),
        tool("test_tool_with_progress", "Reports progress three times."),
        tool("test_sampling", "Asks the client's model."),
        tool("test_elicitation", "Asks the user for information."),
        tool(
            "test_elicitation_sep1034_defaults",
            "Asks the user with default values.",
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Asks the user with enum schemas.",
        ),
    ]
}

fn result(content: Value, is_error: bool) -> Result<CallToolResult, McpError> {
    typed(json!({ "content": content, "isError": is_error }))
}

fn text_result(text: &str) -> Result<CallToolResult, McpError> {
    result(json!([{ "type": "text", "text": text }]), false)
}

fn embedded() -> Value {
    json!({
        "type": "resource",
        "resource": {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        },
    })
}

/// Runs a test tool; `None` when `name` is not one.
async fn call(
    wants_log: WantsLog<'_>,
    name: &str,
    arguments: Option<&JsonObject>,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResult, McpError>> {
    let argument = |key: &str| {
        arguments
            .and_then(|arguments| arguments.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let peer = &context.peer;
    let outcome = match name {
        "test_simple_text" => text_result("This is a simple text response for testing."),
        "test_image_content" => result(
            json!([{ "type": "image", "data": PNG, "mimeType": "image/png" }]),
            false,
        ),
        "test_audio_content" => result(
            json!([{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }]),
            false,
        ),
        "test_embedded_resource" => result(json!([embedded()]), false),
        "test_multiple_content_types" => result(
            json!([
                { "type": "text", "text": "Multiple content types test:" },
                { "type": "image", "data": PNG, "mimeType": "image/png" },
                embedded(),
            ]),
            false,
        ),
        "test_tool_with_logging" => log_steps(wants_log, peer).await,
        "test_error_handling" => result(
            json!([{ "type": "text", "text": "This tool intentionally returns an error for testing" }]),
            true,
        ),
        "test_tool_with_progress" => {
            if let Some(token) = context.meta.get_progress_token() {
                for step in [0.0, 50.0, 100.0] {
                    let progress = ProgressNotificationParam::new(token.clone(), step)
                        .with_total(100.0)
                        .with_message(format!("{step}% done"));
                    let _ = peer.notify_progress(progress).await;
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            }
            text_result("Progress tool completed")
        }
        "test_sampling" => sample(peer, &argument("prompt")).await,
        "test_elicitation" => {
            let message = argument("message");
            elicit(peer, &message, contact_schema()).await
        }
        "test_elicitation_sep1034_defaults" => {
            elicit(
                peer,
                "Please review and update the form fields with defaults",
                defaults_schema(),
            )
            .await
        }
        "test_elicitation_sep1330_enums" => {
            elicit(
                peer,
                "Please select options from the enum fields",
                enums_schema(),
            )
            .await
        }
        _ => return None,
    };
    Some(outcome)
}

/// The form `test_elicitation` asks for.
fn contact_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" },
        },
        "required": ["username", "email"],
    })
}

/// The form with default values (SEP-1034).
fn defaults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true },
        },
    })
}

/// The form with every kind of enum field (SEP-1330).
fn enums_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" },
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
            },
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" },
                    ],
                },
            },
        },
    })
}

/// Asks the client's model (sampling) and returns its answer.
async fn sample(peer: &rmcp::Peer<RoleServer>, prompt: &str) -> Result<CallToolResult, McpError> {
    let request = typed::<CreateMessageRequestParams>(json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
        "maxTokens": 100,
    }));
    match request {
        Ok(request) => match peer.create_message(request).await {
            Ok(answer) => text_result(&format!(
                "LLM response: {}",
                serde_json::to_value(&answer.message.content).unwrap_or_default()
            )),
            Err(error) => result(
                json!([{ "type": "text", "text": format!("Sampling failed: {error}") }]),
                true,
            ),
        },
        Err(error) => Err(error),
    }
}

/// Sends three log messages (when the client wants them), then answers.
async fn log_steps(
    wants_log: WantsLog<'_>,
    peer: &rmcp::Peer<RoleServer>,
) -> Result<CallToolResult, McpError> {
    for step in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        if wants_log(LoggingLevel::Info) {
            let message = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(step))
                .with_logger("conformance");
            let _ = peer.notify_logging_message(message).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    text_result("Tool with logging executed successfully")
}

async fn elicit(
    peer: &rmcp::Peer<RoleServer>,
    message: &str,
    schema: Value,
) -> Result<CallToolResult, McpError> {
    let schema: ElicitationSchema = typed(schema)?;
    let request = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema: schema,
    };
    match peer.create_elicitation(request).await {
        Ok(answer) => text_result(&format!(
            "User response: {}",
            serde_json::to_value(&answer).unwrap_or_default()
        )),
        Err(error) => result(
            json!([{ "type": "text", "text": format!("Elicitation failed: {error}") }]),
            true,
        ),
    }
}

/// `resources/list`.
fn resources() -> Result<ListResourcesResult, McpError> {
    typed(json!({
        "resources": [
            { "uri": "test://static-text", "name": "Static text", "mimeType": "text/plain" },
            { "uri": "test://static-binary", "name": "Static binary", "mimeType": "image/png" },
            { "uri": "test://watched-resource", "name": "Watched resource", "mimeType": "text/plain" },
        ],
    }))
}

/// `resources/templates/list`.
fn resource_templates() -> Result<ListResourceTemplatesResult, McpError> {
    typed(json!({
        "resourceTemplates": [{
            "uriTemplate": "test://template/{id}/data",
            "name": "Template data",
            "mimeType": "application/json",
        }],
    }))
}

/// `resources/read`.
fn read(request: &ReadResourceRequestParams) -> Result<ReadResourceResult, McpError> {
    let uri = request.uri.as_str();
    let contents = match uri {
        "test://static-text" | "test://watched-resource" => json!([{
            "uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource.",
        }]),
        "test://static-binary" => json!([{ "uri": uri, "mimeType": "image/png", "blob": PNG }]),
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
        {
            Some(id) => json!([{
                "uri": uri,
                "mimeType": "application/json",
                "text": json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string(),
            }]),
            None => {
                return Err(McpError::resource_not_found(
                    format!("no resource {uri}"),
                    None,
                ));
            }
        },
    };
    typed(json!({ "contents": contents }))
}

/// `prompts/list`.
fn prompts() -> Result<ListPromptsResult, McpError> {
    typed(json!({
        "prompts": [
            { "name": "test_simple_prompt", "description": "A simple prompt without arguments" },
            {
                "name": "test_prompt_with_arguments",
                "description": "A prompt with arguments",
                "arguments": [
                    { "name": "arg1", "description": "First argument", "required": true },
                    { "name": "arg2", "description": "Second argument", "required": true },
                ],
            },
            {
                "name": "test_prompt_with_embedded_resource",
                "description": "A prompt with an embedded resource",
                "arguments": [{ "name": "resourceUri", "description": "URI of the resource", "required": true }],
            },
            { "name": "test_prompt_with_image", "description": "A prompt with an image" },
        ],
    }))
}

/// `prompts/get`.
fn prompt(request: &GetPromptRequestParams) -> Result<GetPromptResult, McpError> {
    let argument = |key: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let messages = match request.name.as_str() {
        "test_simple_prompt" => json!([{
            "role": "user", "content": { "type": "text", "text": "This is a simple prompt for testing." },
        }]),
        "test_prompt_with_arguments" => json!([{
            "role": "user",
            "content": {
                "type": "text",
                "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", argument("arg1"), argument("arg2")),
            },
        }]),
        "test_prompt_with_embedded_resource" => json!([
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": { "uri": argument("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing." },
                },
            },
            { "role": "user", "content": { "type": "text", "text": "Please process the embedded resource above." } },
        ]),
        "test_prompt_with_image" => json!([
            { "role": "user", "content": { "type": "image", "data": PNG, "mimeType": "image/png" } },
            { "role": "user", "content": { "type": "text", "text": "Please analyze the image above." } },
        ]),
        other => {
            return Err(McpError::invalid_params(
                format!("no prompt named {other}"),
                None,
            ));
        }
    };
    typed(json!({ "messages": messages }))
}

/// `completion/complete`.
fn complete(_request: &CompleteRequestParams) -> Result<CompleteResult, McpError> {
    typed(
        json!({ "completion": { "values": ["testValue1", "testValue2"], "total": 2, "hasMore": false } }),
    )
}
