//! One call through the approval gate on behalf of a chat turn: the request as the chat's,
//! its progress and approval wait reported to the turn's sink, and its result.
//!
//! Invariants:
//! - The requester is always `Requester::Chat{chat_id}`: approvals apply exactly as for a
//!   direct call.
//! - Dropping the future drops the gate's call handle, which withdraws a pending approval.

use std::sync::Arc;

use serde_json::Value;
use souz_protocol::{Approval, Requester, ToolCallStatus, ToolResult};

use super::events::{AgentEvent, TurnSink};
use crate::redact;
use crate::store::StoreError;
use crate::tools::DynTool;
use crate::tools::gate::{CallHandle, CallMode, CallRequest, CallState, Gate};

/// An unattended turn's parking: the run it is, and the call it parked on (the turn ends at
/// the first: the calls after it do not run).
#[derive(Debug)]
pub(crate) struct Parking {
    /// The run, named on every approval it parks on, and its envelope.
    pub run: crate::tools::gate::Unattended,
    parked: std::sync::Mutex<Option<ParkedCall>>,
}

/// A call that parked: its approval, and the model's id for the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedCall {
    /// The pending approval it parked on.
    pub approval_id: String,
    /// The model's tool call id.
    pub tool_call_id: String,
}

impl Parking {
    /// Parking for `run`, with nothing parked yet.
    pub(crate) fn new(run: crate::tools::gate::Unattended) -> Self {
        Self {
            run,
            parked: std::sync::Mutex::new(None),
        }
    }

    /// Notes that a call parked (the first one stays: the turn ends there).
    pub(crate) fn park(&self, call: ParkedCall) {
        self.parked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(call);
    }

    /// The call it parked on, if one did.
    pub(crate) fn parked(&self) -> Option<ParkedCall> {
        self.parked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// A call through the gate from a chat turn: which tool, for which chat and model tool call,
/// and where its approval events go.
#[derive(Clone, Copy)]
pub(crate) struct GateCall<'a> {
    pub gate: &'a Gate,
    pub chat_id: &'a str,
    pub tool: &'a str,
    pub tool_call_id: &'a str,
    pub sink: &'a dyn TurnSink,
    /// An unattended turn's parking: a call that needs a person parks instead of waiting.
    pub parking: Option<&'a Parking>,
}

/// A call's end through the gate: its result, and the gate's id for it (which the history
/// names its file changes by, and the chat's `tool.call.*` events carry).
#[derive(Debug)]
pub(crate) struct Gated {
    pub result: ToolResult,
    pub call_id: String,
}

/// Runs `call.tool` through the gate for `call.chat_id`, reporting an approval wait and its
/// outcome to `call.sink`.
pub(crate) async fn call_gate(call: GateCall<'_>, arguments: Value) -> Result<Gated, StoreError> {
    call_gate_with(call, arguments, None).await
}

/// [`call_gate`] with `supplied`, a tool made for this call (named `call.tool`), instead of
/// one found by name.
pub(crate) async fn call_gate_with(
    call: GateCall<'_>,
    arguments: Value,
    supplied: Option<std::sync::Arc<dyn crate::tools::DynTool>>,
) -> Result<Gated, StoreError> {
    let GateCall {
        gate,
        chat_id,
        tool,
        tool_call_id,
        sink,
        parking,
    } = call;
    let request = CallRequest {
        tool: tool.to_owned(),
        arguments,
        requester: Requester::Chat {
            chat_id: chat_id.to_owned(),
        },
    };
    let mode = parking.map_or(CallMode::Attended, |parking| {
        CallMode::Unattended(Box::new(parking.run.clone()))
    });
    let mut handle = gate.start_as(request, supplied, mode).await?;
    let state = follow_call(&mut handle, gate, tool, tool_call_id, sink).await;
    if state.status == ToolCallStatus::Parked
        && let (Some(parking), Some(approval_id)) = (parking, state.approval_id.clone())
    {
        parking.park(ParkedCall {
            approval_id,
            tool_call_id: tool_call_id.to_owned(),
        });
    }
    let result = state.result.unwrap_or_else(|| ToolResult {
        text: "The call ended without a result.".to_owned(),
        structured: None,
        is_error: true,
    });
    Ok(Gated {
        result,
        call_id: handle.call_id.clone(),
    })
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
    let mut asked = false;
    loop {
        let state = handle.progressed(seen.as_ref()).await;
        if state.status.is_final() {
            // A parked call may end before its wait was seen (the states are coalesced): the
            // approval it parked on is reported all the same.
            if state.status == ToolCallStatus::Parked
                && !asked
                && let Some(approval_id) = state.approval_id.clone()
            {
                sink.send(AgentEvent::ApprovalRequested {
                    tool_call_id: tool_call_id.to_owned(),
                    call_id: handle.call_id.clone(),
                    approval_id,
                    tool: tool.to_owned(),
                    summary: state.summary.clone().unwrap_or_default(),
                });
            }
            return state;
        }
        if state.status == ToolCallStatus::WaitingApproval {
            if let Some(approval_id) = state.approval_id {
                asked = true;
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
        // Parked: it is decided later, when the run resumes.
        Ok(approval) if approval.status == souz_protocol::ApprovalStatus::Pending => {}
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

/// The approval a parked call waited for, or the text the resumed turn goes on from when it
/// cannot be read.
pub(crate) async fn approved_call(gate: &Gate, approval_id: &str) -> Result<Approval, String> {
    gate.approvals().get(approval_id).await.map_err(|error| {
        tracing::warn!(%error, %approval_id, "could not read an approved parked call");
        format!(
            "Souz could not read the approval this run waited for ({approval_id}), so the call \
             did not run. Tell the person."
        )
    })
}

/// Runs the call a person approved while it was parked (the approval's tool and arguments, as
/// the chat's: the gate refuses it for any other requester, or when what it would do changed),
/// reporting it like any call. `supplied` is the tool when it is no catalog tool (a skill
/// bundle's command, made again by the caller: see `SkillBundles::command_tool`), or why it
/// could not be made. Returns the text the resumed turn goes on from.
pub(crate) async fn run_approved(
    gate: &Gate,
    chat_id: &str,
    approval: Approval,
    supplied: Option<Result<Arc<dyn DynTool>, String>>,
    sink: &dyn TurnSink,
) -> String {
    let approval_id = approval.id.as_str();
    let tool_call_id = format!("approved-{approval_id}");
    sink.send(AgentEvent::ToolCallStarted {
        tool_call_id: tool_call_id.clone(),
        tool: approval.tool.clone(),
        arguments: crate::approvals::preview::arguments(&approval.arguments).to_string(),
    });
    let started = std::time::Instant::now();
    let request = CallRequest {
        tool: approval.tool.clone(),
        arguments: approval.arguments,
        requester: Requester::Chat {
            chat_id: chat_id.to_owned(),
        },
    };
    let mode = CallMode::Approved {
        approval_id: approval_id.to_owned(),
    };
    let supplied = match supplied {
        Some(Ok(tool)) => Some(tool),
        Some(Err(why)) => {
            let tool = &approval.tool;
            sink.send(AgentEvent::ToolCallFailed {
                tool_call_id,
                tool: tool.clone(),
                error: redact::error_preview(&why),
                duration_ms: 0,
                call_id: None,
            });
            return format!(
                "The person approved the call to `{tool}` this run waited for, but it did not \
                 run: {why}\nGo on with the task from here."
            );
        }
        None => None,
    };
    let (result, call_id) = match gate.start_as(request, supplied, mode).await {
        Ok(mut handle) => (handle.finished().await.result, Some(handle.call_id.clone())),
        Err(error) => {
            tracing::error!(%error, "could not start an approved parked call");
            (None, None)
        }
    };
    let result = result.unwrap_or_else(|| ToolResult {
        text: "The call ended without a result.".to_owned(),
        structured: None,
        is_error: true,
    });
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let tool = approval.tool;
    if result.is_error {
        sink.send(AgentEvent::ToolCallFailed {
            tool_call_id,
            tool: tool.clone(),
            error: redact::error_preview(&result.text),
            duration_ms,
            call_id,
        });
        format!(
            "The person approved the call to `{tool}` this run waited for, but it did not \
             succeed: {}\nGo on with the task from here.",
            result.text
        )
    } else {
        sink.send(AgentEvent::ToolCallFinished {
            tool_call_id,
            tool: tool.clone(),
            duration_ms,
            result_preview: redact::result_preview(&result),
            call_id,
        });
        format!(
            "The person approved the call to `{tool}` this run waited for, and it ran. Its \
             result:\n{}\nGo on with the task from here.",
            result.text
        )
    }
}
