//! Tool calls for the adapters: the catalog, starting a call through the gate, following and
//! cancelling it, and handing its result over once (`AwaitApproval`). Every call takes the
//! gate's one path (plan → policy → ask → run → record); nothing here runs a tool directly.

use souz_protocol::{ToolCall, ToolInfo};
use tokio::sync::watch;

use super::ServiceError;
use crate::runtime::RuntimeHandle;
use crate::tools::ToolSpec;
use crate::tools::gate::{CallHandle, CallRequest, CallState};

impl RuntimeHandle {
    /// The tool catalog with schemas and effective policy, sorted by name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.gate().tools()
    }

    /// The specs of every catalog tool (for adapters that describe tools their own way).
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        self.gate()
            .catalog()
            .iter()
            .map(|tool| tool.spec().clone())
            .collect()
    }

    /// Starts a call through the gate. Dropping the handle cancels the call (withdrawing its
    /// pending approval) unless it is detached.
    pub async fn start_call(&self, request: CallRequest) -> Result<CallHandle, ServiceError> {
        Ok(self.gate().start(request).await?)
    }

    /// Stores a call that is still running and has no row yet, before an answer names it as
    /// accepted (see `Gate::keep`).
    pub async fn keep_call(
        &self,
        call_id: &str,
        arguments: serde_json::Value,
    ) -> Result<(), ServiceError> {
        Ok(self.gate().keep(call_id, arguments).await?)
    }

    /// A call's stored row, or `None` when there is no such call.
    pub async fn tool_call(&self, call_id: &str) -> Result<Option<ToolCall>, ServiceError> {
        Ok(self.gate().get(call_id).await?)
    }

    /// Where a call that is not over stands, as it changes; `None` once it is over.
    pub fn watch_call(&self, call_id: &str) -> Option<watch::Receiver<CallState>> {
        self.gate().watch(call_id)
    }

    /// Keeps in `call_ids` the calls that are not over.
    pub fn retain_running_calls(&self, call_ids: &mut Vec<String>) {
        self.gate().retain_running(call_ids);
    }

    /// Cancels a call that is not over; `false` when there is none.
    pub fn cancel_call(&self, call_id: &str) -> bool {
        self.gate().cancel(call_id)
    }

    /// Marks a call's result handed over; `false` when it already was.
    pub async fn mark_delivered(&self, call_id: &str) -> Result<bool, ServiceError> {
        Ok(self.gate().mark_delivered(call_id).await?)
    }
}
