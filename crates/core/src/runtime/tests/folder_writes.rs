//! "Fewer prompts, same safety": a scripted session of 50 file creations and edits in one
//! folder by one MCP client, with a person who accepts each approval's suggested scope as
//! offered, asks exactly once; deleting, writing outside the folder and another client still
//! ask.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use souz_protocol::{ApprovalStatus, DecisionRequest, ToolCallStatus, ToolGroup, Verdict};
use tokio_util::sync::CancellationToken;

use super::claude;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::Audience;
use crate::testing::TestRuntime;
use crate::tools::gate::CallRequest;

/// A person at the approvals page: approves every pending approval with the scope it
/// suggests, exactly as offered, and counts them.
fn person(handle: RuntimeHandle, asked: Arc<AtomicUsize>, stop: CancellationToken) {
    crate::tasks::spawn_in_test(async move {
        while !stop.is_cancelled() {
            let pending = handle
                .list_approvals(&Audience::Everyone, Some(ApprovalStatus::Pending), 50)
                .await
                .unwrap_or_default();
            for approval in pending {
                let offer = approval.suggested;
                let request = DecisionRequest {
                    decision: Verdict::Approve,
                    scope: offer.scope,
                    minutes: offer.minutes,
                    argument_match: Some(offer.argument_match),
                    tool_group: offer.tool_group,
                    via: Some("ui".into()),
                };
                if handle
                    .decide_approval(&approval.id, request, &Audience::Everyone)
                    .await
                    .is_ok()
                {
                    asked.fetch_add(1, Ordering::SeqCst);
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
}

async fn start(
    handle: &RuntimeHandle,
    tool: &str,
    arguments: serde_json::Value,
    requester: souz_protocol::Requester,
) -> crate::tools::gate::CallHandle {
    handle
        .start_call(CallRequest {
            tool: tool.to_owned(),
            arguments,
            requester,
        })
        .await
        .unwrap()
}

async fn run(
    handle: &RuntimeHandle,
    tool: &str,
    arguments: serde_json::Value,
    requester: souz_protocol::Requester,
) -> ToolCallStatus {
    let mut call = start(handle, tool, arguments, requester).await;
    call.wait_for(Duration::from_secs(30)).await.status
}

/// Starts a call and waits until it asks (or ends); returns whether it asked.
async fn asks(
    handle: &RuntimeHandle,
    tool: &str,
    arguments: serde_json::Value,
    requester: souz_protocol::Requester,
) -> bool {
    let mut call = start(handle, tool, arguments, requester).await;
    let state = call.settled().await;
    // Dropping the handle withdraws the approval: nothing runs.
    state.status == ToolCallStatus::WaitingApproval
}

#[tokio::test]
async fn fifty_edits_in_one_folder_by_one_client_ask_once() {
    // The Souz home in `~/.souz`, so the project is not inside a protected folder.
    let runtime = TestRuntime::builder().start().await;
    let handle = runtime.handle();
    let project = runtime.home().path().join("proj");
    std::fs::create_dir_all(&project).unwrap();

    let asked = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    person(handle.clone(), Arc::clone(&asked), stop.clone());
    for i in 0..25 {
        let status = run(
            &handle,
            "NewFile",
            json!({"path": format!("proj/f{i}.txt"), "text": format!("draft {i}\n")}),
            claude(),
        )
        .await;
        assert_eq!(status, ToolCallStatus::Succeeded, "NewFile {i}");
    }
    for i in 0..25 {
        let status = run(
            &handle,
            "EditFile",
            json!({"path": format!("proj/f{i}.txt"), "oldString": "draft", "newString": "final"}),
            claude(),
        )
        .await;
        assert_eq!(status, ToolCallStatus::Succeeded, "EditFile {i}");
    }
    stop.cancel();
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the session asked once");
    for i in 0..25 {
        assert_eq!(
            std::fs::read_to_string(project.join(format!("f{i}.txt"))).unwrap(),
            format!("final {i}\n")
        );
    }
    let grants = handle.grants().await.unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].tool, ToolGroup::FileWrites.marker());
    assert_eq!(
        grants[0].argument_match.path_prefix.as_deref(),
        Some("~/proj")
    );

    // Same safety: each of these still asks (and, withdrawn, changes nothing).
    let other = souz_protocol::Requester::Mcp {
        client_name: "Claude Code".into(),
        client_version: "2.0".into(),
        session_id: "s2".into(),
        token_id: "c-other".into(),
        token_name: "other".into(),
    };
    for (tool, arguments, requester) in [
        ("DeleteFile", json!({"path": "proj/f0.txt"}), claude()),
        (
            "MoveFile",
            json!({"sourcePath": "proj/f1.txt", "destinationPath": "proj/moved.txt"}),
            claude(),
        ),
        (
            "NewFile",
            json!({"path": "elsewhere.txt", "text": "x"}),
            claude(),
        ),
        (
            "NewFile",
            json!({"path": "proj/other.txt", "text": "x"}),
            other,
        ),
    ] {
        assert!(
            asks(&handle, tool, arguments.clone(), requester).await,
            "{tool} {arguments}"
        );
    }
    assert!(project.join("f0.txt").exists() && project.join("f1.txt").exists());
    assert!(!project.join("moved.txt").exists() && !project.join("other.txt").exists());
    runtime.shutdown("test").await.unwrap();
}
