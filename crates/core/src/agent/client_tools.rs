//! Client tools as the agent sees them: tools that run on the device that submitted the turn
//! (original §1.9, "Client tools"), offered to the model next to its other tools and called
//! through the approval gate like every tool, with the device as the call's target.
//!
//! The agent knows only this boundary: which client tools the turn may offer
//! ([`ClientTools::offered`], chosen by the chat layer from the device's capabilities) and a
//! [`ClientToolHost`] that carries a call to the device and waits for its result (the chat layer
//! stores the call, announces it to the device and hands back what the device answered).
//!
//! Invariants:
//! - A client tool is offered only when the turn has a host for it; a call of one the turn was
//!   not offered is refused like any unknown tool (`dispatch`).
//! - What the model reads is JSON: the device's raw result when it succeeded, else
//!   `{"status": …, "error": {code, message}}` (timed out, failed, cancelled, refused).
//! - The call runs inside the gate's run: a turn cancelled while it waits cancels the gate's
//!   call, whose cancellation the host sees (and records) before the gate's grace runs out.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use souz_protocol::{Risk, ToolAnnotations, ToolCategory};

use crate::approvals::CallTarget;
use crate::tools::{
    DynTool, Plan, PlannedCall, ToolContext, ToolError, ToolOutput, ToolSpec, intern,
};

/// One client tool: its name for the model, its id for the device, what it takes, how long the
/// device has to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientToolSpec {
    /// The name the model calls it by (a spec name: `user-ask`).
    pub name: String,
    /// The id devices know it by (`user.ask`), named by `tool.call.started`.
    pub skill_id: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its arguments.
    pub parameters: Value,
    /// How long the device has to answer.
    pub deadline: Duration,
    /// Its category.
    pub category: ToolCategory,
    /// Its risk class for the approval policy.
    pub risk: Risk,
}

/// A call to carry to the device.
#[derive(Debug, Clone)]
pub struct ClientCall {
    /// The model's call id (the device answers with it as `toolCallId`).
    pub tool_call_id: String,
    /// The tool.
    pub tool: ClientToolSpec,
    /// Its arguments (an object).
    pub arguments: Value,
}

/// How a client tool call ended, as the model reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientOutcome {
    /// The device ran it: its raw result.
    Succeeded(Value),
    /// It did not succeed: `status` (`timed_out`, `failed`, `cancelled`) and the error object.
    NotSucceeded {
        /// `timed_out`, `failed` or `cancelled`.
        status: String,
        /// `{code, message, details?}`.
        error: Value,
    },
}

impl ClientOutcome {
    /// A refusal before the device was asked (`client_tool_busy`, `client_context_missing`).
    pub fn refused(code: &str, message: &str) -> Self {
        Self::NotSucceeded {
            status: "failed".to_owned(),
            error: json!({"code": code, "message": message}),
        }
    }

    /// The JSON the model reads.
    pub fn for_model(&self) -> Value {
        match self {
            Self::Succeeded(result) => result.clone(),
            Self::NotSucceeded { status, error } => json!({"status": status, "error": error}),
        }
    }
}

/// Carries client tool calls of one turn to its device.
pub trait ClientToolHost: Send + Sync {
    /// The device that the turn's calls go to (the gate's target).
    fn device_id(&self) -> &str;

    /// Carries `call` to the device and waits for its result, its deadline, or `cancel`
    /// (`None` then: the call was cancelled and recorded so).
    fn call(
        &self,
        call: ClientCall,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Option<ClientOutcome>>;
}

/// The client tools a turn offers and the host that runs them.
#[derive(Clone)]
pub struct ClientTools {
    /// The tools offered to the model.
    pub offered: Vec<ClientToolSpec>,
    /// Where their calls go.
    pub host: Arc<dyn ClientToolHost>,
}

impl std::fmt::Debug for ClientTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTools")
            .field("offered", &self.offered)
            .field("device_id", &self.host.device_id())
            .finish()
    }
}

impl ClientTools {
    /// The offered tool the model calls `name`.
    pub(crate) fn find(&self, name: &str) -> Option<&ClientToolSpec> {
        self.offered.iter().find(|tool| tool.name == name)
    }
}

/// The declaration the model sees.
pub(crate) fn declaration(spec: &ClientToolSpec) -> crate::llm::ToolDeclaration {
    crate::llm::ToolDeclaration {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec.parameters.clone(),
    }
}

/// One client tool call as a tool the gate plans, decides and runs.
pub(crate) struct GatedClientCall {
    spec: ToolSpec,
    tool: ClientToolSpec,
    tool_call_id: String,
    host: Arc<dyn ClientToolHost>,
}

impl GatedClientCall {
    pub(crate) fn new(tools: &ClientTools, tool: &ClientToolSpec, tool_call_id: &str) -> Self {
        Self {
            spec: ToolSpec {
                name: intern(&tool.name),
                description: intern(&tool.description),
                category: tool.category,
                risk: tool.risk,
                annotations: ToolAnnotations::for_risk(tool.risk),
                input_schema: tool.parameters.clone(),
                output_schema: None,
                always_asks: false,
            },
            tool: tool.clone(),
            tool_call_id: tool_call_id.to_owned(),
            host: Arc::clone(&tools.host),
        }
    }
}

impl DynTool for GatedClientCall {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn plan<'a>(
        &'a self,
        arguments: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<PlannedCall, ToolError>> {
        Box::pin(async move {
            let arguments = match arguments {
                Value::String(text) => serde_json::from_str(&text)
                    .map_err(|error| ToolError::InvalidArguments(error.to_string()))?,
                other => other,
            };
            if !arguments.is_object() {
                return Err(ToolError::InvalidArguments(
                    "the arguments must be a JSON object".to_owned(),
                ));
            }
            let device_id = self.host.device_id().to_owned();
            let plan = Plan::new(format!(
                "Run `{}` on the device `{device_id}`",
                self.tool.skill_id
            ))
            .target(CallTarget::Device {
                device_id: device_id.clone(),
            });
            let call = ClientCall {
                tool_call_id: self.tool_call_id.clone(),
                tool: self.tool.clone(),
                arguments,
            };
            let host = Arc::clone(&self.host);
            Ok(PlannedCall::new(plan, move |ctx: ToolContext| {
                Box::pin(async move {
                    match host.call(call, ctx.cancel.clone()).await {
                        Some(outcome) => {
                            let value = outcome.for_model();
                            let text = value.to_string();
                            match outcome {
                                ClientOutcome::Succeeded(_) => Ok(ToolOutput {
                                    text,
                                    structured: Some(value),
                                }),
                                ClientOutcome::NotSucceeded { .. } => Err(ToolError::Failed(text)),
                            }
                        }
                        None => Err(ToolError::Cancelled),
                    }
                })
            }))
        })
    }
}
