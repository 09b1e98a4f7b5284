//! A hostile stdio server (`tests/clients/python/flooding_server.py`, raw JSON-RPC) answers a
//! call with one 256 MiB line. rmcp's stdio transport holds no line past 16 MiB
//! (`DEFAULT_MAX_LINE_LENGTH`; it drops the line and keeps reading): the call ends by its
//! timeout, the session keeps serving, and the daemon's memory stays bounded.

use std::time::Duration;

use serde_json::json;
use souz_protocol::{ToolCallStatus, Verdict};

use super::{clients, decide_and_finish, installed, runtime_with, start, text, wait_for_tool};
use crate::config::McpServerConfig;

/// Peak resident memory the test process may reach (a 256 MiB line held whole would pass it).
const PEAK_LIMIT_KIB: u64 = 200 * 1024;

/// The peak resident memory so far, in KiB (0 where `/proc` does not say).
fn peak_memory_kib() -> u64 {
    crate::testing::peak_memory_kib().unwrap_or(0)
}

#[tokio::test]
async fn a_line_past_the_message_bound_ends_the_call_and_the_session_still_serves() {
    let server = McpServerConfig {
        command: "python3".to_owned(),
        args: vec![installed(clients().join("python/flooding_server.py"))],
        tool_timeout_seconds: 5,
        ..McpServerConfig::default()
    };
    let runtime = runtime_with(vec![("flood", server)]).await;
    wait_for_tool(&runtime, "mcp__flood__flood").await;

    let mut call = start(&runtime, "mcp__flood__flood", json!({})).await;
    let flooded = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(flooded.status, ToolCallStatus::Failed, "{flooded:?}");
    assert!(
        text(&flooded).contains("did not answer within 5 s"),
        "{flooded:?}"
    );

    // The flood may still be draining: give the echo the time a loaded machine needs.
    let mut call = start(&runtime, "mcp__flood__echo", json!({"text": "still here"})).await;
    let echoed = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(text(&echoed), "still here", "{echoed:?}");

    let peak = peak_memory_kib();
    assert!(peak < PEAK_LIMIT_KIB, "peak memory {peak} KiB");
    tokio::time::timeout(Duration::from_secs(30), runtime.shutdown("test"))
        .await
        .expect("shutdown in time")
        .unwrap();
}
