//! What a chat's agent really offers the model: the catalog tools the chat's settings enable,
//! the external MCP servers' tools, and the agent's own tools (memory, Knowledge, skills, and
//! `AskUser` in chat turns), which the catalog choice does not limit but the chat's
//! `disabledCoreTools` does (`GET /v1/chats/{chatId}/tools`).
//!
//! Invariant: it is computed by the same functions a turn uses to install its tools
//! ([`enabled_tools`], the agent's core tool list, [`CoreToolsOff::keep`]), so what it says is
//! what the next turn gets.

use souz_protocol::chat::{ChatTools, CoreToolGroupState};

use super::AgentKind;
use super::ask_user::ASK_USER;
use super::core_tool_types::{CoreTool, CoreToolGroup, CoreToolsOff};
use super::skills::{ToolFilter, enabled_tools};
use crate::tools::gate::Gate;

/// The tools a chat turn of `kind` limited to the catalog tools `enabled`, without the core
/// tools of the groups in `core_off`, offers.
pub(crate) fn offered_tools(
    gate: &Gate,
    kind: AgentKind,
    enabled: Vec<String>,
    core_off: &CoreToolsOff,
) -> ChatTools {
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
    let core_groups: Vec<CoreToolGroupState> = CoreToolGroup::ALL
        .into_iter()
        .map(|group| {
            let mut tools: Vec<String> = match group {
                // Chat turns can take an answer, so the model may ask the person.
                CoreToolGroup::AskUser => vec![ASK_USER.to_owned()],
                _ => own
                    .iter()
                    .filter(|tool| tool.group() == group)
                    .map(|tool| tool.name().to_owned())
                    .collect(),
            };
            tools.sort();
            CoreToolGroupState {
                group: group.name().to_owned(),
                tools,
                enabled: !core_off.is_off(group),
            }
        })
        .collect();
    let mut core: Vec<String> = core_off
        .keep(own)
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    if !core_off.is_off(CoreToolGroup::AskUser) {
        core.push(ASK_USER.to_owned());
    }
    for names in [&mut catalog, &mut from_servers, &mut core] {
        names.sort();
    }
    ChatTools {
        agent: kind.as_str().to_owned(),
        catalog,
        external: from_servers,
        core,
        core_groups,
    }
}
