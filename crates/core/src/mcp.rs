//! MCP, the Model Context Protocol: [`server`] offers Souz's tools to MCP clients (Claude Code
//! over streamable HTTP at `/mcp`, Claude Desktop through the `souz mcp-stdio` bridge). A
//! `client` module (external MCP servers' tools for Souz's own agents) will sit beside it.
//! [`extension`] is the seam through which a binary adds MCP methods to the server (the
//! conformance suite's fixtures in `souz-cli`); it sits below `runtime`, which carries it.
//!
//! Both sides use rmcp; nothing here bypasses the approval gate: every tool call an MCP client
//! makes is a [`crate::tools::gate::Gate`] call with the client as the requester.

pub(crate) mod client;
pub use client::conformance::run_conformance_client;
pub mod extension;
pub(crate) mod server;
