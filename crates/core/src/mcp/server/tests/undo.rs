//! `UndoChanges` through a real MCP client (rmcp's streamable HTTP client against the served
//! gateway, with a client token): it is listed as asking; an undo over a file changed since
//! Souz wrote it asks, then comes back as an error result with the three versions and the
//! diffs, undoing nothing; only a second call with `force` — asked again, its approval saying
//! it restores anyway — restores.

use std::net::SocketAddr;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use souz_protocol::{Approval, ApprovalStatus, DecisionRequest, Verdict};

use super::*;
use crate::gateway::Gateway;
use crate::runtime::facade::Audience;

/// The gateway serving `handle` on a free loopback port.
async fn serve(handle: RuntimeHandle) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let mut server = handle.config().server.clone();
    server.port = 0;
    let gateway = Gateway::bind(&server).await.unwrap();
    let address = gateway.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    drop(crate::tasks::spawn_in_test(gateway.serve(
        handle,
        async move {
            let _ = stopped.await;
            "test".to_owned()
        },
    )));
    (address, stop)
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|content| content.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn arguments(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The pending approval of `tool`, once it is asked.
async fn asked(handle: &RuntimeHandle, tool: &str) -> Approval {
    for _ in 0..400 {
        let pending = handle
            .list_approvals(&Audience::Everyone, Some(ApprovalStatus::Pending), 20)
            .await
            .unwrap();
        if let Some(approval) = pending.into_iter().find(|approval| approval.tool == tool) {
            return approval;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{tool} never asked");
}

/// Calls `tool` through `client`, approves its approval, and returns the approval and result.
async fn call_approved(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    handle: &RuntimeHandle,
    tool: &'static str,
    args: serde_json::Value,
) -> (Approval, CallToolResult) {
    let peer = client.peer().clone();
    let call = crate::tasks::spawn_in_test(async move {
        peer.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments(args)))
            .await
    });
    let approval = asked(handle, tool).await;
    handle
        .decide_approval(
            &approval.id,
            DecisionRequest::once(Verdict::Approve, "test"),
            &Audience::Everyone,
        )
        .await
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    (approval, result)
}

#[tokio::test]
async fn an_mcp_client_undoes_through_the_gate_and_forces_only_when_asked_again() {
    let runtime = TestRuntime::builder()
        .with_config(|config| {
            config.approvals.write = Action::Allow;
        })
        .start()
        .await;
    let handle = runtime.handle();
    let folder = runtime.home().path().join("w");
    std::fs::create_dir_all(&folder).unwrap();
    let notes = folder.join("notes.txt");
    let (address, stop) = serve(handle.clone()).await;
    let token = handle
        .create_client("claude-code", souz_protocol::ClientScope::Mcp)
        .await
        .unwrap()
        .token;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{address}/mcp"))
            .auth_header(token),
    );
    let client = ().serve(transport).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let undo_tool = tools
        .iter()
        .find(|tool| tool.name == "UndoChanges")
        .expect("UndoChanges is listed");
    assert!(asks(undo_tool), "UndoChanges asks");

    // The client's own changes: a file created, then edited (writes are allowed here).
    for (tool, args) in [
        ("NewFile", json!({"path": "~/w/notes.txt", "text": "one\n"})),
        (
            "EditFile",
            json!({"path": "~/w/notes.txt", "oldString": "one", "newString": "two"}),
        ),
    ] {
        let result = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments(args)))
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{}", text_of(&result));
    }
    // Someone changes the file after Souz.
    std::fs::write(&notes, "three\n").unwrap();

    let selection = json!({"sinceMinutes": 10, "client": "claude-code"});
    let (approval, result) =
        call_approved(&client, &handle, "UndoChanges", selection.clone()).await;
    assert!(
        approval.summary.contains("Undo 2 change(s) by claude-code"),
        "the approval says what is undone: {}",
        approval.summary
    );
    assert!(
        approval.summary.contains("changed since Souz wrote them"),
        "{}",
        approval.summary
    );
    let details = approval.diff.clone().unwrap_or_default();
    assert!(details.contains("remove ~/w/notes.txt"), "{details}");
    let text = text_of(&result);
    assert_eq!(result.is_error, Some(true), "{text}");
    assert!(text.starts_with("Nothing was undone"), "{text}");
    for part in [
        "Souz wrote: a file of",
        "there now: a file of",
        "-two",
        "+three",
        "force: true",
    ] {
        assert!(text.contains(part), "`{part}` in {text}");
    }
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "three\n",
        "untouched"
    );

    // Forcing is a call of its own, asked again, and its approval says it overwrites.
    let mut forced = selection;
    forced["force"] = json!(true);
    let (approval, result) = call_approved(&client, &handle, "UndoChanges", forced).await;
    assert!(
        approval.summary.contains("RESTORE ANYWAY"),
        "{}",
        approval.summary
    );
    let text = text_of(&result);
    assert_ne!(result.is_error, Some(true), "{text}");
    assert!(text.starts_with("Undid 2 change(s)"), "{text}");
    assert!(!notes.exists(), "the file the client created is gone again");

    drop(client);
    let _ = stop.send(());
    runtime.shutdown("test").await.unwrap();
}

/// `UndoChanges` asks on every call (its plan names an untrusted target), so a client is told
/// it asks even where the policy's rule for its risk (`delete`) allows.
#[tokio::test]
async fn undo_is_listed_as_asking_even_where_its_risk_is_allowed() {
    let runtime = TestRuntime::builder()
        .with_config(|config| {
            config.approvals.delete = Action::Allow;
        })
        .start()
        .await;
    let handle = runtime.handle();
    let listing = super::super::listing::Listing::new(handle.tool_specs());
    let tools = listing.tools(&handle, &client("claude-code"));
    let by_name = |name: &str| tools.iter().find(|tool| tool.name == name).unwrap();
    assert!(asks(by_name("UndoChanges")), "UndoChanges asks");
    assert!(
        !asks(by_name("DeleteFile")),
        "the rule allows the risk: other delete tools run without asking"
    );
}
