//! Memory as MCP tools: listed for clients (writes marked as asking), hidden from the agents;
//! `remember` and `forget` ask (approve: stored / deleted; deny: nothing changes);
//! `search_memory` runs under the read-only policy and finds a fact.

use std::time::Duration;

use souz_protocol::{ScopeKind, ToolCallStatus, Verdict};

use super::*;
use crate::runtime::facade::Audience;
use crate::tools::gate::{CallHandle, CallRequest};

async fn start(handle: &RuntimeHandle, tool: &str, arguments: serde_json::Value) -> CallHandle {
    handle
        .start_call(CallRequest {
            tool: tool.to_owned(),
            arguments,
            requester: client("claude-code"),
        })
        .await
        .unwrap()
}

async fn decide(handle: &RuntimeHandle, call: &mut CallHandle, verdict: Verdict) -> CallState {
    let mut approval = None;
    for _ in 0..400 {
        approval = call.state().approval_id;
        if approval.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let approval = approval.expect("the call never asked");
    let pending = handle.approval(&approval).await.unwrap();
    assert!(
        pending.summary.contains("Remember") || pending.summary.contains("Forget"),
        "{}",
        pending.summary
    );
    handle
        .decide_approval(
            &approval,
            souz_protocol::DecisionRequest {
                decision: verdict,
                scope: ScopeKind::Once,
                minutes: None,
                argument_match: None,
                via: Some("test".into()),
            },
            &Audience::Everyone,
        )
        .await
        .unwrap();
    call.wait_for(Duration::from_secs(30)).await
}

async fn facts(handle: &RuntimeHandle) -> Vec<souz_protocol::MemoryFact> {
    handle
        .list_memory(souz_protocol::MemoryQuery::default())
        .await
        .unwrap()
        .items
}

#[tokio::test]
async fn memory_writes_from_mcp_clients_ask_and_searches_follow_the_policy() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let listing = Listing::new(handle.tool_specs());
    let listed = listing.tools(&handle, &client("claude-code"));
    let find = |name: &str| {
        listed
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
    };
    assert!(asks(find("remember")), "remember asks by default");
    assert!(asks(find("forget")), "forget asks by default");
    assert!(!asks(find("search_memory")), "a search is read-only");
    let agents = crate::agent::skills::enabled_tools(
        handle.gate(),
        &crate::agent::skills::ToolFilter::default(),
    );
    assert!(
        agents
            .iter()
            .all(|tool| !["remember", "forget", "search_memory"].contains(&tool.spec().name)),
        "the agents do not see the MCP memory tools"
    );

    let remember =
        serde_json::json!({"text": "The deploy window is Tuesday 10:00", "title": "Deploy window"});
    let mut denied = start(&handle, "remember", remember.clone()).await;
    let state = decide(&handle, &mut denied, Verdict::Deny).await;
    assert_eq!(state.status, ToolCallStatus::Denied, "{state:?}");
    assert!(
        facts(&handle).await.is_empty(),
        "a denied remember stores nothing"
    );

    let mut approved = start(&handle, "remember", remember).await;
    let state = decide(&handle, &mut approved, Verdict::Approve).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    let stored = facts(&handle).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].title, "Deploy window");
    assert_eq!(stored[0].created_by, "mcp:claude-code");
    let evidence = handle.memory_evidence(&stored[0].id).await.unwrap();
    assert_eq!(evidence.items[0].client.as_deref(), Some("claude-code"));

    let mut search = start(
        &handle,
        "search_memory",
        serde_json::json!({"query": "when is the deploy window"}),
    )
    .await;
    let state = search.wait_for(Duration::from_secs(30)).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    assert!(state.approval_id.is_none(), "a search does not ask");
    let text = state.result.unwrap().text;
    assert!(text.contains("untrusted"), "{text}");
    assert!(text.contains(&stored[0].id), "{text}");

    let forget = serde_json::json!({"fact_id": stored[0].id});
    let mut denied = start(&handle, "forget", forget.clone()).await;
    let state = decide(&handle, &mut denied, Verdict::Deny).await;
    assert_eq!(state.status, ToolCallStatus::Denied);
    assert_eq!(
        facts(&handle).await.len(),
        1,
        "a denied forget deletes nothing"
    );
    let mut approved = start(&handle, "forget", forget).await;
    let state = decide(&handle, &mut approved, Verdict::Approve).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    assert!(facts(&handle).await.is_empty());
    runtime.shutdown("test").await.unwrap();
}
