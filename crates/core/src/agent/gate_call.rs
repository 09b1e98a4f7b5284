//! One call through the approval gate on behalf of a chat turn: the request as the chat's,
//! its progress and approval wait reported to the turn's sink, and its result.
//!
//! Invariants:
//! - The requester is always `Requester::Chat{chat_id}`: approvals apply exactly as for a
//!   direct call.
//! - Dropping the future drops the gate's call handle, which withdraws a pending approval.

use serde_json::Value;
use souz_protocol::{Requester, ToolCallStatus, ToolResult};

use super::events::{AgentEvent, TurnSink};
use crate::redact;
use crate::store::StoreError;
use crate::tools::gate::{CallHandle, CallRequest, CallState, Gate};

/// A call through the gate from a chat turn: which tool, for which chat and model tool call,
/// and where its approval events go.
#[derive(Clone, Copy)]
pub(crate) struct GateCall<'a> {
    pub gate: &'a Gate,
    pub chat_id: &'a str,
    pub tool: &'a str,
    pub tool_call_id: &'a str,
    pub sink: &'a dyn TurnSink,
}

/// Runs `call.tool` through the gate for `call.chat_id`, reporting an approval wait and its
/// outcome to `call.sink`.
pub(crate) async fn call_gate(
    call: GateCall<'_>,
    arguments: Value,
) -> Result<ToolResult, StoreError> {
    call_gate_with(call, arguments, None).await
}

/// [`call_gate`] with `supplied`, a tool made for this call (named `call.tool`), instead of
/// one found by name.
pub(crate) async fn call_gate_with(
    call: GateCall<'_>,
    arguments: Value,
    supplied: Option<std::sync::Arc<dyn crate::tools::DynTool>>,
) -> Result<ToolResult, StoreError> {
    let GateCall {
        gate,
        chat_id,
        tool,
        tool_call_id,
        sink,
    } = call;
    let request = CallRequest {
        tool: tool.to_owned(),
        arguments,
        requester: Requester::Chat {
            chat_id: chat_id.to_owned(),
        },
    };
    let mut handle = match supplied {
        Some(supplied) => gate.start_with(request, supplied).await?,
        None => gate.start(request).await?,
    };
    let state = follow_call(&mut handle, gate, tool, tool_call_id, sink).await;
    Ok(state.result.unwrap_or_else(|| ToolResult {
        text: "The call ended without a result.".to_owned(),
        structured: None,
        is_error: true,
    }))
}

/// Waits for the call to end, reporting on the way each progress report it makes and, if it
/// waits for a person, the approval asked and how it ended.
async fn follow_call(
    handle: &mut CallHandle,
    gate: &Gate,
    tool: &str,
    tool_call_id: &str,
    sink: &dyn TurnSink,
) -> CallState {
    let mut seen = None;
    loop {
        let state = handle.progressed(seen.as_ref()).await;
        if state.status.is_final() {
            return state;
        }
        if state.status == ToolCallStatus::WaitingApproval {
            if let Some(approval_id) = state.approval_id {
                report_approval(
                    handle,
                    gate,
                    ApprovalWait {
                        approval_id,
                        tool,
                        tool_call_id,
                        summary: state.summary.unwrap_or_default(),
                        sink,
                    },
                )
                .await;
            } else {
                handle.past_approval().await;
            }
            continue;
        }
        if let Some(report) = &state.progress {
            sink.send(AgentEvent::ToolCallProgress {
                tool_call_id: tool_call_id.to_owned(),
                tool: tool.to_owned(),
                progress: report.progress,
                total: report.total,
                message: report.message.as_deref().map(redact::error_preview),
            });
        }
        seen = state.progress;
    }
}

/// An approval a call waits for, as the turn reports it.
struct ApprovalWait<'a> {
    approval_id: String,
    tool: &'a str,
    tool_call_id: &'a str,
    summary: String,
    sink: &'a dyn TurnSink,
}

/// Reports the approval asked, waits until it is decided, then reports how it ended.
async fn report_approval(handle: &mut CallHandle, gate: &Gate, wait: ApprovalWait<'_>) {
    let ApprovalWait {
        approval_id,
        tool,
        tool_call_id,
        summary,
        sink,
    } = wait;
    sink.send(AgentEvent::ApprovalRequested {
        tool_call_id: tool_call_id.to_owned(),
        call_id: handle.call_id.clone(),
        approval_id: approval_id.clone(),
        tool: tool.to_owned(),
        summary,
    });
    handle.past_approval().await;
    // The approval's outcome is stored before the call moves on: read it from there.
    match gate.approvals().get(&approval_id).await {
        Ok(approval) => sink.send(AgentEvent::ApprovalResolved {
            tool_call_id: tool_call_id.to_owned(),
            call_id: handle.call_id.clone(),
            approval_id,
            tool: tool.to_owned(),
            status: approval.status,
            decision: approval.decision,
            expiry_reason: approval.expiry_reason,
        }),
        Err(error) => {
            tracing::warn!(%error, %approval_id, "could not read how an approval ended");
        }
    }
}
