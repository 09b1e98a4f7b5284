//! Running one tool call the model made: find how it may run, run it (through the approval
//! gate, or as a core tool), report it, and turn the result into a tool message.
//!
//! Invariants:
//! - Only names in the turn's `executable` map run; anything else is answered with an error
//!   result and touches nothing.
//! - Catalog tools always go through the gate with `Requester::Chat{chat_id}`; a denied or
//!   failed call is a tool result the model reads, not an error of the turn.
//! - Dropping the future (the turn was cancelled) drops the gate's call handle, which withdraws
//!   a pending approval.
//! - Results longer than the Knowledge threshold are offloaded before they enter the history
//!   (unless the chat turned the Knowledge tools off, which could not read them back).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::client_tools::{ClientOutcome, GatedClientCall};
use super::context::ToolBinding;
use super::core_tool_types::CoreToolGroup;
use super::core_tools::CoreCall;
use super::events::AgentEvent;
use super::gate_call::{GateCall, call_gate_with};
use super::knowledge;
use super::scope::TurnScope;
use crate::llm::{Message, ToolCall};
use crate::redact;

/// Runs one call of the model and returns the tool message for the history.
pub(crate) async fn execute(
    scope: &TurnScope,
    executable: &BTreeMap<String, ToolBinding>,
    call: &ToolCall,
) -> Message {
    let started = Instant::now();
    let sink = scope.sink.as_ref();
    sink.send(AgentEvent::ToolCallStarted {
        tool_call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments: call.arguments.clone(),
    });
    // A gate result's preview is the audit's (its structured value when it has one); its call
    // id is the gate's, which the history names the call's file changes by.
    let mut gate_preview = None;
    let mut gate_call_id = None;
    let (content, is_error) = match (executable.get(&call.name), call.arguments_json()) {
        (None, _) => (
            format!(
                "There is no tool named `{}` here; use only the tools you were given.",
                call.name
            ),
            true,
        ),
        (Some(_), Err(error)) => (
            format!(
                "The arguments are not valid JSON ({error}); send one JSON object that \
                 matches the tool's schema."
            ),
            true,
        ),
        (Some(binding @ (ToolBinding::Gate | ToolBinding::Client)), Ok(arguments)) => {
            let client = matches!(binding, ToolBinding::Client);
            let (content, is_error, preview, call_id) = gated(scope, call, arguments, client).await;
            gate_preview = preview;
            gate_call_id = call_id;
            (content, is_error)
        }
        (Some(ToolBinding::AskUser), Ok(arguments)) => match super::ask_user::question(arguments) {
            Ok(question) => {
                *scope
                    .question
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(question);
                (super::ask_user::ASKED.to_owned(), false)
            }
            Err(message) => (format!("AskUser: {message}"), true),
        },
        (Some(ToolBinding::Core(tool)), Ok(arguments)) => {
            let services = &scope.services;
            let core = CoreCall {
                chat_id: &scope.chat_id,
                owner: &scope.owner,
                tool_call_id: &call.id,
                gate: &services.gate,
                tools: &scope.tools,
                knowledge: &services.knowledge,
                memory: services.memory.as_ref(),
                sink,
                bundles: services.bundles.as_ref(),
                parking: scope.parking.as_ref(),
                language: scope.language,
            };
            let output = tool.run(&core, arguments).await;
            (output.content, output.is_error)
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    sink.send(if is_error {
        AgentEvent::ToolCallFailed {
            tool_call_id: call.id.clone(),
            tool: call.name.clone(),
            error: redact::error_preview(&content),
            duration_ms,
            call_id: gate_call_id,
        }
    } else {
        AgentEvent::ToolCallFinished {
            tool_call_id: call.id.clone(),
            tool: call.name.clone(),
            duration_ms,
            result_preview: gate_preview.unwrap_or_else(|| redact::preview_text(&content)),
            call_id: gate_call_id,
        }
    });
    // With the Knowledge tools off, a reference could never be read: the result stays whole.
    let content = if scope.core_off.is_off(CoreToolGroup::Knowledge) {
        content
    } else {
        knowledge::offload(
            &scope.services.knowledge,
            &scope.chat_id,
            &call.name,
            content,
        )
        .await
    };
    Message::Tool {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
    }
}

/// Runs a catalog tool, or with `client` a tool of the turn's device, through the gate.
async fn gated(
    scope: &TurnScope,
    call: &ToolCall,
    arguments: Value,
    client: bool,
) -> (String, bool, Option<Value>, Option<String>) {
    if client {
        to_device(scope, call, arguments).await
    } else {
        through_gate(scope, call, arguments).await
    }
}

/// Runs a tool of the turn's device through the gate (the device is the call's target): its
/// text, whether it is an error, its preview, and the gate's id for it.
async fn to_device(
    scope: &TurnScope,
    call: &ToolCall,
    arguments: Value,
) -> (String, bool, Option<Value>, Option<String>) {
    let Some((tools, tool)) = scope
        .client_tools
        .as_ref()
        .and_then(|tools| tools.find(&call.name).map(|tool| (tools, tool)))
    else {
        let refused = ClientOutcome::refused(
            "client_context_missing",
            "No device that can run this tool is connected to this turn.",
        );
        return (refused.for_model().to_string(), true, None, None);
    };
    let supplied: Arc<dyn crate::tools::DynTool> =
        Arc::new(GatedClientCall::new(tools, tool, &call.id));
    through_gate_with(scope, call, arguments, Some(supplied)).await
}

/// Runs a catalog tool through the gate: its text, whether it is an error, its preview, and
/// the gate's id for it.
async fn through_gate(
    scope: &TurnScope,
    call: &ToolCall,
    arguments: Value,
) -> (String, bool, Option<Value>, Option<String>) {
    through_gate_with(scope, call, arguments, None).await
}

/// [`through_gate`] with `supplied`, a tool made for this call, instead of one found by name.
async fn through_gate_with(
    scope: &TurnScope,
    call: &ToolCall,
    arguments: Value,
    supplied: Option<Arc<dyn crate::tools::DynTool>>,
) -> (String, bool, Option<Value>, Option<String>) {
    let gate_call = GateCall {
        gate: &scope.services.gate,
        chat_id: &scope.chat_id,
        tool: &call.name,
        tool_call_id: &call.id,
        sink: scope.sink.as_ref(),
        parking: scope.parking.as_ref(),
    };
    match call_gate_with(gate_call, arguments, supplied).await {
        Ok(gated) => {
            let preview = redact::result_preview(&gated.result);
            let result = gated.result;
            (
                result.text,
                result.is_error,
                Some(preview),
                Some(gated.call_id),
            )
        }
        Err(error) => {
            tracing::error!(%error, tool = %call.name, "could not start a tool call");
            (
                "Souz could not start this call because of an internal error.".to_owned(),
                true,
                None,
                None,
            )
        }
    }
}

#[cfg(test)]
mod tests;
