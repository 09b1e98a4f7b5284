//! The MCP server's extension point: features Souz itself does not serve (tools beside the
//! catalog's, resources, prompts, completion), added by the embedding binary through
//! [`crate::runtime::RuntimeOptions::mcp_extension`]. Only the MCP conformance suite's fixtures
//! use it (`souz-cli`'s `conformance` feature, tests only); a normal build has none, and then
//! every method answers exactly as without the extension point.
//!
//! Invariant: an extension's tools do not pass the approval gate, so an extension must never
//! hold real tools; it is for protocol exercises only.

// MCP logging is deprecated by SEP-2577 (2026-07-28) but is what 2025-era clients speak.
#![allow(deprecated)]

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolResult, CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, LoggingLevel,
    ReadResourceRequestParams, ReadResourceResult, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

/// Whether the session's client asked for log messages at a level (`logging/setLevel`).
pub type WantsLog<'a> = &'a (dyn Fn(LoggingLevel) -> bool + Send + Sync);

/// Extra MCP features served next to Souz's own tools.
pub trait McpExtension: Send + Sync + 'static {
    /// Adds what the extension serves to the server's capabilities.
    fn add_capabilities(&self, capabilities: &mut ServerCapabilities);
    /// Tools listed after the catalog's.
    fn tools(&self) -> Vec<Tool>;
    /// Runs one of the extension's tools; `None` when `name` is not one.
    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<&'a JsonObject>,
        context: &'a RequestContext<RoleServer>,
        wants_log: WantsLog<'a>,
    ) -> BoxFuture<'a, Option<Result<CallToolResult, McpError>>>;
    /// `resources/list`.
    fn resources(&self) -> Result<ListResourcesResult, McpError>;
    /// `resources/templates/list`.
    fn resource_templates(&self) -> Result<ListResourceTemplatesResult, McpError>;
    /// `resources/read`.
    fn read(&self, request: &ReadResourceRequestParams) -> Result<ReadResourceResult, McpError>;
    /// `prompts/list`.
    fn prompts(&self) -> Result<ListPromptsResult, McpError>;
    /// `prompts/get`.
    fn prompt(&self, request: &GetPromptRequestParams) -> Result<GetPromptResult, McpError>;
    /// `completion/complete`.
    fn complete(&self, request: &CompleteRequestParams) -> Result<CompleteResult, McpError>;
}
