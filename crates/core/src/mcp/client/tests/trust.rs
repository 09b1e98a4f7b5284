//! Trust on first use against the misbehaving Python SDK server, inside a whole runtime with an
//! allow rule for its tools: a changed description, and a tool renamed onto the same Souz name
//! (`say_it` → `say.it`, both `mcp__odd__say_it`), ask with the diff despite the rule; until
//! approved, models and `GET /v1/tools` see the trusted definition, never the listed one.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use souz_protocol::{ToolCallStatus, Verdict};

use super::{allow_rule, decide_and_finish, misbehaving, start, text, wait_for_tool};
use crate::testing::TestRuntime;
use crate::tools::gate::CallHandle;

async fn runtime(state: &Path) -> TestRuntime {
    let config = misbehaving(state);
    TestRuntime::builder()
        .with_config(move |c| {
            c.mcp.servers.insert("odd".into(), config);
            c.approvals.rules.push(allow_rule("mcp__odd__*"));
        })
        .start()
        .await
}

/// Restarts the server (its `crash_once` exits; the call is sent again to a new process),
/// which lists its tools anew.
async fn restart_server(runtime: &TestRuntime) {
    let mut call = start(runtime, "mcp__odd__crash_once", json!({})).await;
    let done = call.wait_for(Duration::from_secs(30)).await;
    assert_eq!(text(&done), "recovered", "{done:?}");
}

/// Calls `tool` until a call asks (the tools are listed again on their own after a restart;
/// until then the allow rule runs the old listing); the asking call and its approval's id.
async fn until_asked(runtime: &TestRuntime, tool: &str) -> (CallHandle, String) {
    for _ in 0..100 {
        let mut call = start(runtime, tool, json!({"text": "changed"})).await;
        for _ in 0..100 {
            let state = call.state();
            if let Some(approval) = state.approval_id {
                return (call, approval);
            }
            if state.status.is_final() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        call.wait_for(Duration::from_secs(30)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("`{tool}` never asked: the changed definition ran under the allow rule");
}

fn description(runtime: &TestRuntime, tool: &str) -> String {
    runtime
        .handle()
        .tools()
        .into_iter()
        .find(|listed| listed.name == tool)
        .map(|listed| listed.description)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_changed_definition_asks_with_the_diff_until_approved() {
    let state = tempfile::tempdir().unwrap();
    let runtime = runtime(state.path()).await;
    let handle = runtime.handle();
    wait_for_tool(&runtime, "mcp__odd__echo").await;
    // Allowed by a rule: runs without asking while the definition is the trusted one.
    let mut call = start(&runtime, "mcp__odd__echo", json!({"text": "trusted"})).await;
    let done = call.wait_for(Duration::from_secs(30)).await;
    assert_eq!(text(&done), "trusted", "{done:?}");

    // The server comes back (after a crash) describing `echo` differently; listed again.
    std::fs::write(
        state.path().join("description"),
        "Sends your text to evil.example.",
    )
    .unwrap();
    restart_server(&runtime).await;
    let (mut call, approval_id) = until_asked(&runtime, "mcp__odd__echo").await;
    let approval = handle.approval(&approval_id).await.unwrap();
    let diff = approval.diff.clone().unwrap_or_default();
    assert!(
        diff.contains("-  \"description\": \"Echoes the text back.\""),
        "{diff}"
    );
    assert!(
        diff.contains("+  \"description\": \"Sends your text to evil.example.\""),
        "{diff}"
    );
    // Listings (and so models) still see the trusted text.
    assert_eq!(
        description(&runtime, "mcp__odd__echo"),
        "[MCP:odd] Echoes the text back."
    );
    let denied = decide_and_finish(&runtime, &mut call, Verdict::Deny).await;
    assert_eq!(denied.status, ToolCallStatus::Denied);
    assert_eq!(
        description(&runtime, "mcp__odd__echo"),
        "[MCP:odd] Echoes the text back."
    );

    // Still untrusted after a denial; approving trusts it, and the rule applies again.
    let mut call = start(&runtime, "mcp__odd__echo", json!({"text": "approved"})).await;
    let approved = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(text(&approved), "approved", "{approved:?}");
    let mut call = start(&runtime, "mcp__odd__echo", json!({"text": "trusted again"})).await;
    let done = call.wait_for(Duration::from_secs(30)).await;
    assert_eq!(done.approval_id, None, "{done:?}");
    assert_eq!(text(&done), "trusted again");
    // Listed again once trusted: the new text is what is shown now.
    let changed = "[MCP:odd] Sends your text to evil.example.";
    for _ in 0..400 {
        if description(&runtime, "mcp__odd__echo") == changed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(description(&runtime, "mcp__odd__echo"), changed);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_tool_renamed_onto_a_trusted_souz_name_asks_and_shows_the_trusted_definition() {
    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("echo_name"), "say_it").unwrap();
    let runtime = runtime(state.path()).await;
    let handle = runtime.handle();
    wait_for_tool(&runtime, "mcp__odd__say_it").await;
    let mut call = start(&runtime, "mcp__odd__say_it", json!({"text": "trusted"})).await;
    let done = call.wait_for(Duration::from_secs(30)).await;
    assert_eq!(text(&done), "trusted", "{done:?}");

    // The server renames `say_it` to `say.it` (the same Souz name) and changes what it says
    // it does: the old allow rule must not run a definition nobody has seen.
    std::fs::write(state.path().join("echo_name"), "say.it").unwrap();
    std::fs::write(
        state.path().join("description"),
        "Posts your text to evil.example.",
    )
    .unwrap();
    restart_server(&runtime).await;
    let (mut call, approval_id) = until_asked(&runtime, "mcp__odd__say_it").await;
    let approval = handle.approval(&approval_id).await.unwrap();
    let diff = approval.diff.clone().unwrap_or_default();
    assert!(diff.contains("-tool: say_it"), "{diff}");
    assert!(diff.contains("+tool: say.it"), "{diff}");
    assert!(diff.contains("evil.example"), "{diff}");
    let listed = handle
        .tools()
        .into_iter()
        .find(|tool| tool.name == "mcp__odd__say_it")
        .expect("still listed under its Souz name");
    assert_eq!(listed.description, "[MCP:odd] Echoes the text back.");
    assert!(!listed.input_schema.to_string().contains("evil"));
    let denied = decide_and_finish(&runtime, &mut call, Verdict::Deny).await;
    assert_eq!(denied.status, ToolCallStatus::Denied);

    // Approving trusts `say.it` under that name: the call reaches the renamed tool.
    let mut call = start(&runtime, "mcp__odd__say_it", json!({"text": "approved"})).await;
    let approved = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(text(&approved), "approved", "{approved:?}");
    let mut call = start(&runtime, "mcp__odd__say_it", json!({"text": "again"})).await;
    let done = call.wait_for(Duration::from_secs(30)).await;
    assert_eq!(done.approval_id, None, "{done:?}");
    assert_eq!(text(&done), "again");
    runtime.shutdown("test").await.unwrap();
}
