//! What a chat's agent really offers the model: the catalog tools the chat's settings enable,
//! the external MCP servers' tools, and the agent's own tools (memory, Knowledge, skills, and
//! `AskUser` in chat turns), which stay on whatever the catalog choice (`GET
//! /v1/chats/{chatId}/tools`).
//!
//! Invariant: it is computed by the same functions a turn uses to install its tools
//! ([`enabled_tools`], the agent's core tool list), so what it says is what the next turn gets.

use souz_protocol::chat::ChatTools;

use super::AgentKind;
use super::ask_user::ASK_USER;
use super::core_tool_types::CoreTool;
use super::skills::{ToolFilter, enabled_tools};
use crate::tools::gate::Gate;

/// The tools a chat turn of `kind` limited to the catalog tools `enabled` offers.
pub(crate) fn offered_tools(gate: &Gate, kind: AgentKind, enabled: Vec<String>) -> ChatTools {
    let external = gate.external_tools();
    let (mut catalog, mut from_servers) = (Vec::new(), Vec::new());
    for tool in enabled_tools(gate, &ToolFilter::only(enabled)) {
        let name = tool.spec().name.to_owned();
        if external.contains_key(&name) {
            from_servers.push(name);
        } else {
            catalog.push(name);
        }
    }
    let own: &[CoreTool] = match kind {
        AgentKind::Graph => &CoreTool::GRAPH_AGENT,
        AgentKind::Skills => &CoreTool::ALL,
    };
    let mut core: Vec<String> = own.iter().map(|tool| tool.name().to_owned()).collect();
    // Chat turns can take an answer, so the model may ask the person.
    core.push(ASK_USER.to_owned());
    for names in [&mut catalog, &mut from_servers, &mut core] {
        names.sort();
    }
    ChatTools {
        agent: kind.as_str().to_owned(),
        catalog,
        external: from_servers,
        core,
    }
}
