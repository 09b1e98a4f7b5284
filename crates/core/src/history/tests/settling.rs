//! A recorded call's change is settled as soon as its tool's work is over, however the call
//! ends — not left pending until the next start.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use souz_protocol::{Requester, Risk, ToolCallStatus, ToolCategory};

use super::super::undo::HistoryQuery;
use super::{Fixture, limits};
use crate::sandbox::Access;
use crate::tools::gate::CallRequest;
use crate::tools::{Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, erase};

/// How the test tool ends once it wrote its file.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Ending {
    /// Waits for cancellation, then returns `Cancelled`.
    StopWhenCancelled,
    /// Fails.
    Fail,
    /// Ignores cancellation: writes again well after the grace period, off the async runtime.
    WriteLate,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct WriterArgs {
    path: String,
    ending: Ending,
}

/// A file tool whose write is followed by one of [`Ending`].
struct Writer;

impl Tool for Writer {
    type Args = WriterArgs;
    type Prepared = std::path::PathBuf;
    fn name(&self) -> &'static str {
        "SlowWriter"
    }
    fn description(&self) -> &'static str {
        "Writes a file, then lingers."
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }
    fn risk(&self) -> Risk {
        Risk::Write
    }
    async fn plan(
        &self,
        args: &WriterArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<std::path::PathBuf>, ToolError> {
        let resolved = ctx.sandbox.resolve(&args.path, Access::Write)?;
        let path = resolved.path.clone();
        Ok(Plan::new(format!("Write {}", args.path))
            .path(&resolved, Access::Write)
            .with(path))
    }
    async fn run(
        &self,
        args: WriterArgs,
        path: std::path::PathBuf,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        std::fs::write(&path, "written\n").unwrap();
        match args.ending {
            Ending::StopWhenCancelled => {
                ctx.cancel.cancelled().await;
                Err(ToolError::Cancelled)
            }
            Ending::Fail => Err(ToolError::Failed("failed after its write".into())),
            Ending::WriteLate => {
                let late = tokio::task::spawn_blocking(move || {
                    std::thread::sleep(
                        crate::tools::gate::CANCEL_GRACE + Duration::from_millis(700),
                    );
                    std::fs::write(&path, "written late\n").unwrap();
                });
                let _ = late.await;
                Ok(ToolOutput::text("done"))
            }
        }
    }
}

async fn run(f: &Fixture, name: &str, ending: &str) -> ToolCallStatus {
    let mut handle = f
        .stack
        .gate
        .start_as(
            CallRequest {
                tool: "SlowWriter".into(),
                arguments: json!({"path": Fixture::arg(name), "ending": ending}),
                requester: Requester::Cli,
            },
            Some(erase(Writer)),
            crate::tools::gate::CallMode::Attended,
        )
        .await
        .unwrap();
    let path = f.path(name);
    for _ in 0..500 {
        if std::fs::read(&path).is_ok_and(|content| content == b"written\n") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.cancel();
    handle.finished().await.status
}

async fn pending(f: &Fixture) -> i64 {
    f.stack
        .store
        .read(|connection| {
            Ok::<_, crate::store::StoreError>(connection.query_row(
                "SELECT COUNT(*) FROM history_changes WHERE status = 'pending'",
                [],
                |row| row.get::<_, i64>(0),
            )?)
        })
        .await
        .unwrap()
}

async fn recorded(f: &Fixture) -> Vec<souz_protocol::history::HistoryChange> {
    f.history.list(HistoryQuery::default()).await.unwrap()
}

#[tokio::test]
async fn a_cancelled_or_failed_call_has_its_change_recorded_at_once() {
    let f = Fixture::new(limits(), false).await;
    let status = run(&f, "cancelled.txt", "stop_when_cancelled").await;
    assert_eq!(status, ToolCallStatus::Cancelled);
    assert_eq!(pending(&f).await, 0, "not left pending until a restart");
    let listed = recorded(&f).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].tool, "SlowWriter");
    let status = run(&f, "failed.txt", "fail").await;
    assert_eq!(status, ToolCallStatus::Failed);
    assert_eq!(pending(&f).await, 0);
    assert_eq!(recorded(&f).await.len(), 2);
    // Both can be undone: the files go, as they were not there before.
    let report = f
        .undo(
            souz_protocol::history::UndoSelection::Since {
                since: chrono::Utc::now() - chrono::Duration::minutes(1),
                client: None,
            },
            false,
        )
        .await;
    assert!(report.conflicts.is_empty(), "{report:?}");
    assert!(!f.path("cancelled.txt").exists());
    assert!(!f.path("failed.txt").exists());
}

#[tokio::test]
async fn a_tool_that_overstays_its_cancellation_has_its_late_write_recorded_when_it_ends() {
    let f = Fixture::new(limits(), false).await;
    let status = run(&f, "late.txt", "write_late").await;
    assert_eq!(
        status,
        ToolCallStatus::Cancelled,
        "the call ends at the grace"
    );
    let mut waited = Duration::ZERO;
    while pending(&f).await > 0 && waited < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    assert_eq!(pending(&f).await, 0, "settled once the tool ended");
    let listed = recorded(&f).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let after = listed[0].paths[0].after.clone().unwrap();
    assert_eq!(
        after.sha256,
        Some(super::super::blobs::hash_of(b"written late\n")),
        "the state the tool left, not the one at the cancellation"
    );
}
