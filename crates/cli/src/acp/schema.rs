//! The Agent Client Protocol's messages that `souz acp` exchanges, as serde types (ACP v1, as
//! the reference schema defines them: camelCase fields, `sessionUpdate` / `type` / `outcome`
//! tags, snake_case enum values): `initialize`, `session/new`, `session/prompt` and its stop
//! reasons, `session/update` (`agent_message_chunk`, `tool_call`, `tool_call_update`),
//! `session/request_permission` and its outcomes, `session/cancel`.
//!
//! Invariants: only what Souz uses is modelled; fields an editor sends that are not modelled
//! are ignored (never an error), and content blocks of kinds Souz does not read decode as
//! [`ContentBlock::Other`]; optional fields left unset are not written.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The stable protocol version Souz speaks, whatever newer one the editor offers.
pub const PROTOCOL_VERSION: u16 = 1;

/// Method names.
pub const INITIALIZE: &str = "initialize";
pub const SESSION_NEW: &str = "session/new";
pub const SESSION_PROMPT: &str = "session/prompt";
pub const SESSION_CANCEL: &str = "session/cancel";
pub const SESSION_UPDATE: &str = "session/update";
pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";

/// A program's name and version (`clientInfo`, `agentInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub version: String,
}

/// `initialize`'s parameters (the client's capabilities are not read: Souz asks nothing of
/// the editor's file system or terminals).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// An integer in v1; some editors still send a date string: either is accepted.
    pub protocol_version: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
}

/// What prompts may carry beyond text and resource links (nothing, for Souz).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    pub image: bool,
    pub audio: bool,
    pub embedded_context: bool,
}

/// The agent's capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    pub load_session: bool,
    pub prompt_capabilities: PromptCapabilities,
}

/// `initialize`'s result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    pub protocol_version: u16,
    pub agent_capabilities: AgentCapabilities,
    pub auth_methods: Vec<Value>,
    pub agent_info: Implementation,
}

/// `session/new`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    pub cwd: PathBuf,
    /// MCP servers the editor offers: Souz's agents use the daemon's own, so they are not read.
    #[serde(default)]
    pub mcp_servers: Vec<Value>,
}

/// `session/new`'s result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    pub session_id: String,
}

/// Text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextContent {
    pub text: String,
}

/// A link to a resource the agent can fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLink {
    pub name: String,
    pub uri: String,
}

/// A content block (`type`-tagged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text(TextContent),
    ResourceLink(ResourceLink),
    /// A kind Souz does not read (images, audio, embedded resources).
    #[serde(other)]
    Other,
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent { text: text.into() })
    }
}

/// `session/prompt`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
}

/// Why a prompt turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

/// `session/prompt`'s result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    pub stop_reason: StopReason,
}

/// `session/cancel`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    pub session_id: String,
}

/// A tool call's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

/// The kind of tool, for the editor's icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

/// Content a tool call produced (`type`-tagged; Souz sends plain content only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    Content { content: ContentBlock },
}

/// A new tool call (`tool_call`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub title: String,
    /// The tool's programmatic name (optional in the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub kind: ToolKind,
    pub status: ToolCallStatus,
}

/// The fields a `tool_call_update` changes; unset ones stay as they were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdateFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// An update to a tool call (`tool_call_update`, and the call a permission request is about).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub tool_call_id: String,
    #[serde(flatten)]
    pub fields: ToolCallUpdateFields,
}

/// A streamed piece of content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentChunk {
    pub content: ContentBlock,
}

/// A `session/update` (`sessionUpdate`-tagged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    AgentMessageChunk(ContentChunk),
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCallUpdate),
}

/// `session/update`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    pub session_id: String,
    pub update: SessionUpdate,
}

/// How a permission option answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

/// A choice offered with a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: PermissionOptionKind,
}

/// `session/request_permission`'s parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    pub session_id: String,
    pub tool_call: ToolCallUpdate,
    pub options: Vec<PermissionOption>,
}

/// The editor's answer to a permission request (`outcome`-tagged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RequestPermissionOutcome {
    /// The prompt turn was cancelled before the person chose.
    Cancelled,
    /// The person chose `option_id`.
    #[serde(rename_all = "camelCase")]
    Selected { option_id: String },
}

/// `session/request_permission`'s result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestPermissionResponse {
    pub outcome: RequestPermissionOutcome,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn updates_and_requests_use_the_schema_names() {
        let update = SessionNotification {
            session_id: "s1".to_owned(),
            update: SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                tool_call_id: "t1".to_owned(),
                fields: ToolCallUpdateFields {
                    status: Some(ToolCallStatus::InProgress),
                    raw_output: Some(json!("ok")),
                    ..ToolCallUpdateFields::default()
                },
            }),
        };
        assert_eq!(
            serde_json::to_value(&update).unwrap(),
            json!({"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update",
                "toolCallId": "t1", "status": "in_progress", "rawOutput": "ok"}})
        );
        let chunk = SessionUpdate::AgentMessageChunk(ContentChunk {
            content: ContentBlock::text("Hi"),
        });
        assert_eq!(
            serde_json::to_value(&chunk).unwrap(),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}})
        );
        let call = SessionUpdate::ToolCall(ToolCall {
            tool_call_id: "t1".to_owned(),
            title: "Create a.txt".to_owned(),
            name: None,
            kind: ToolKind::Edit,
            status: ToolCallStatus::Pending,
        });
        assert_eq!(
            serde_json::to_value(&call).unwrap(),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Create a.txt",
                "kind": "edit", "status": "pending"})
        );
        let stop = PromptResponse {
            stop_reason: StopReason::MaxTurnRequests,
        };
        assert_eq!(
            serde_json::to_value(&stop).unwrap(),
            json!({"stopReason": "max_turn_requests"})
        );
    }

    #[test]
    fn editor_messages_decode_leniently() {
        let prompt: PromptRequest = serde_json::from_value(json!({
            "sessionId": "s1", "_meta": {"x": 1},
            "prompt": [{"type": "text", "text": "Hi", "annotations": null},
                       {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                       {"type": "resource_link", "name": "a.rs", "uri": "file:///a.rs"}]
        }))
        .unwrap();
        assert_eq!(
            prompt.prompt,
            [
                ContentBlock::text("Hi"),
                ContentBlock::Other,
                ContentBlock::ResourceLink(ResourceLink {
                    name: "a.rs".to_owned(),
                    uri: "file:///a.rs".to_owned()
                })
            ]
        );
        let legacy: InitializeRequest =
            serde_json::from_value(json!({"protocolVersion": "2024-11-05"})).unwrap();
        assert_eq!(legacy.client_info, None);
        let selected: RequestPermissionResponse = serde_json::from_value(
            json!({"outcome": {"outcome": "selected", "optionId": "reject"}}),
        )
        .unwrap();
        assert_eq!(
            selected.outcome,
            RequestPermissionOutcome::Selected {
                option_id: "reject".to_owned()
            }
        );
        let cancelled: RequestPermissionResponse =
            serde_json::from_value(json!({"outcome": {"outcome": "cancelled"}})).unwrap();
        assert_eq!(cancelled.outcome, RequestPermissionOutcome::Cancelled);
    }
}
