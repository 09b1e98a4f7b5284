//! Progress a running tool reports (an external MCP server's `notifications/progress`), passed
//! to whoever follows the call: the gate puts the latest report on the call's state, where the
//! agents (a live `tool.call.progress` chat event) and the MCP server at `/mcp` (the client's
//! own `notifications/progress`) see it.
//!
//! Invariants: reporting never blocks and never fails the call; a sink that goes nowhere (a
//! call outside the gate, a test) drops reports.

use std::sync::Arc;

/// One progress report.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    /// How far along (increases with each report of one call).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A message for people, when the tool gave one.
    pub message: Option<String>,
}

/// Where a tool sends its progress. Cheap to clone; the default drops every report.
#[derive(Clone, Default)]
pub struct ProgressSink {
    report: Option<Arc<dyn Fn(ToolProgress) + Send + Sync>>,
}

impl ProgressSink {
    /// A sink that calls `report` for each report.
    pub fn new(report: impl Fn(ToolProgress) + Send + Sync + 'static) -> Self {
        Self {
            report: Some(Arc::new(report)),
        }
    }

    /// Reports `progress` (dropped when nobody listens).
    pub fn report(&self, progress: ToolProgress) {
        if let Some(report) = &self.report {
            report(progress);
        }
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressSink")
            .field("listening", &self.report.is_some())
            .finish()
    }
}
