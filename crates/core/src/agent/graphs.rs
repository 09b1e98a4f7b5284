//! The two agents as graphs (original §2.3).
//!
//! `GraphBasedAgent` ("Agent"): Input->History → Memory recall → select categories → Skill
//! Inventory (five core tools) → MCP → appendActualInformation → LLM; then `Failed` → Chat.Error
//! → exit, tool calls → Tool use → LLM, otherwise Summarize or return → exit. After Tool use,
//! a question or a parked call goes to Ask user → exit, and a limit of the turn reached (see
//! [`limits`](super::limits)) to Turn limit → exit.
//!
//! `SkillsGraphBasedAgent` ("Skills Agent"): Input->History → Memory recall → Skill Inventory →
//! appendActualInformation → steerable LLM, with the same routing. It has no classification and
//! no MCP node, and its turn starts restricted to exactly the seven core tools, advertised and
//! executable.
//!
//! Both use the model retry policy of the original: two attempts, model errors only.

use std::sync::Arc;

use super::AgentKind;
use super::context::{AgentContext, ChatOutcome, Reply};
use super::core_tools::CoreTool;
use super::ending::stopped_reply;
use super::nodes::chat::{chat, steerable_chat};
use super::nodes::classify::classify;
use super::nodes::finish::{error_reply, finish_graph, llm_retry_policy};
use super::nodes::information::append_information;
use super::nodes::input::input_to_history;
use super::nodes::inventory::inventory;
use super::nodes::mcp::add_mcp_tools;
use super::nodes::recall::recall;
use super::nodes::tool_use::use_tools;
use super::nodes::{names, scoped};
use super::scope::TurnScope;
use crate::graph::{BoxError, Graph, GraphBuildError, GraphBuilder, NodeHandle};

/// A built agent: a turn's context in, its reply out.
pub(crate) type AgentGraph = Graph<AgentContext<String>, AgentContext<Reply>>;

/// Name of the graph agent's graph.
pub(crate) const GRAPH_AGENT: &str = "Agent";
/// Name of the skills agent's graph.
pub(crate) const SKILLS_AGENT: &str = "Skills Agent";
/// The reply of a turn that parked on an approval.
pub(crate) const PARKED_REPLY: &str = "Waiting for your approval to go on.";

/// The Turn limit node: the reply of a turn its watch stopped.
async fn stopped_node(
    scope: Arc<TurnScope>,
    context: AgentContext<String>,
) -> Result<AgentContext<Reply>, BoxError> {
    let stop = scope
        .watch
        .stopped()
        .ok_or("the turn limit node ran without a stop")?;
    let language = context.settings.language;
    Ok(stopped_reply(&stop, language, context))
}

/// Builds the graph of `kind` for one turn.
pub(crate) fn build(
    kind: AgentKind,
    scope: &Arc<TurnScope>,
) -> Result<AgentGraph, GraphBuildError> {
    let name = match kind {
        AgentKind::Graph => GRAPH_AGENT,
        AgentKind::Skills => SKILLS_AGENT,
    };
    let mut builder = GraphBuilder::<AgentContext<String>, AgentContext<Reply>>::new(name)
        .retry_policy(llm_retry_policy());
    let input = builder.add(scoped(scope, names::INPUT, |_, context| async move {
        input_to_history(context)
    }));
    let memory = builder.add(scoped(scope, names::MEMORY, recall));
    builder.edge(builder.start(), input);
    builder.edge(input, memory);
    let chat_node: NodeHandle<AgentContext<String>, AgentContext<ChatOutcome>> = match kind {
        AgentKind::Graph => {
            let classify = builder.add(scoped(scope, names::CLASSIFY, classify));
            let inventory = builder.add(scoped(scope, names::INVENTORY, |scope, context| {
                inventory(scope, context, &CoreTool::GRAPH_AGENT)
            }));
            let mcp = builder.add(scoped(scope, names::MCP, add_mcp_tools));
            let information = builder.add(scoped(scope, names::INFORMATION, append_information));
            let chat = builder.add(scoped(scope, names::CHAT, chat));
            builder.edge(memory, classify);
            builder.edge(classify, inventory);
            builder.edge(inventory, mcp);
            builder.edge(mcp, information);
            builder.edge(information, chat);
            chat
        }
        AgentKind::Skills => {
            let inventory = builder.add(scoped(scope, names::INVENTORY, |scope, context| {
                inventory(scope, context, &CoreTool::ALL)
            }));
            let information = builder.add(scoped(scope, names::INFORMATION, append_information));
            let chat = builder.add(scoped(scope, names::CHAT, steerable_chat));
            builder.edge(memory, inventory);
            builder.edge(inventory, information);
            builder.edge(information, chat);
            chat
        }
    };
    let tools = builder.add(scoped(scope, names::TOOLS, use_tools));
    let finish = builder.add(finish_graph(scope)?);
    let error = builder.add(scoped(scope, names::ERROR, |_, context| async move {
        Ok(error_reply(context))
    }));
    let asked = builder.add(scoped(
        scope,
        names::ASKED,
        |scope, context: AgentContext<String>| async move {
            let question = scope
                .question
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let text = match &question {
                Some(question) => question.title.clone(),
                // Parked on an approval: the run goes on once the person decides.
                None => PARKED_REPLY.to_owned(),
            };
            Ok(context.with(Reply {
                text,
                failure: None,
                question,
            }))
        },
    ));
    let stopped = builder.add(scoped(scope, names::STOPPED, stopped_node));
    let (tools_target, finish_target, error_target) =
        (tools.target(), finish.target(), error.target());
    builder.route(chat_node, move |context: &AgentContext<ChatOutcome>| {
        Some(match &context.input {
            ChatOutcome::Failed(_) => error_target,
            outcome if outcome.wants_tools() => tools_target,
            ChatOutcome::Answer(_) => finish_target,
        })
    });
    // Asking the person, or parking on an approval, ends the turn, and so does a limit of the
    // turn; otherwise the model reads the tool results.
    let (asked_target, chat_target) = (asked.target(), chat_node.target());
    let stopped_target = stopped.target();
    let asking = Arc::clone(scope);
    builder.route(tools, move |_| {
        Some(if asking.asked() || asking.is_parked() {
            asked_target
        } else if asking.watch.stopped().is_some() {
            stopped_target
        } else {
            chat_target
        })
    });
    builder.edge(stopped, builder.exit());
    builder.edge(asked, builder.exit());
    builder.edge(finish, builder.exit());
    builder.edge(error, builder.exit());
    builder.build()
}
