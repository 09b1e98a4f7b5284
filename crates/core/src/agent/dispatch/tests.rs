//! A call through the gate from a turn reports the tool's progress as it comes.

use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};
use tokio::sync::Semaphore;

use super::*;
use crate::agent::gate_call::call_gate;
use crate::testing::{TestGate, TestHome};
use crate::tools::{
    CatalogBuilder, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, ToolProgress,
};

#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

/// Reports three steps, each after the previous one was seen by the turn.
struct Stepper {
    seen: Arc<Semaphore>,
}

impl Tool for Stepper {
    type Args = NoArgs;
    type Prepared = ();
    fn name(&self) -> &'static str {
        "Stepper"
    }
    fn description(&self) -> &'static str {
        "Reports progress."
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }
    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }
    async fn plan(&self, _: &NoArgs, _: &ToolContext) -> Result<Planned<()>, ToolError> {
        Ok(Plan::new("step three times").ready())
    }
    async fn run(&self, _: NoArgs, (): (), ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        for step in 1..=3 {
            ctx.progress.report(ToolProgress {
                progress: f64::from(step),
                total: Some(3.0),
                message: Some(format!("step {step}")),
            });
            let permit = self
                .seen
                .acquire()
                .await
                .map_err(|_| ToolError::Cancelled)?;
            permit.forget();
        }
        Ok(ToolOutput::text("stepped"))
    }
}

#[tokio::test]
async fn a_running_tools_progress_reaches_the_turn_in_order() {
    let home = TestHome::new();
    let config = TestHome::template_config(home.paths());
    let seen = Arc::new(Semaphore::new(0));
    let mut catalog = CatalogBuilder::default();
    catalog
        .add(Stepper {
            seen: Arc::clone(&seen),
        })
        .unwrap();
    let stack = TestGate::start(home, config, catalog.build()).await;
    let events: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let sink = {
        let events = Arc::clone(&events);
        move |event: AgentEvent| {
            if matches!(event, AgentEvent::ToolCallProgress { .. }) {
                seen.add_permits(1);
            }
            events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event);
        }
    };
    let result = call_gate(
        GateCall {
            gate: &stack.gate,
            chat_id: "chat-1",
            tool: "Stepper",
            tool_call_id: "t-1",
            sink: &sink,
            parking: None,
        },
        serde_json::json!({}),
    )
    .await
    .unwrap()
    .result;
    assert_eq!(result.text, "stepped");
    let reports: Vec<(f64, Option<f64>, Option<String>)> = events
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolCallProgress {
                tool_call_id,
                tool,
                progress,
                total,
                message,
            } if tool_call_id == "t-1" && tool == "Stepper" => {
                Some((*progress, *total, message.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        reports,
        (1..=3)
            .map(|step| (f64::from(step), Some(3.0), Some(format!("step {step}"))))
            .collect::<Vec<_>>()
    );
}
