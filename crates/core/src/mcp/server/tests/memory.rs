//! Memory as MCP tools: listed for clients (writes marked as asking), hidden from the agents;
//! `remember` and `forget` ask (approve: stored / deleted; deny: nothing changes);
//! `search_memory` asks once per client (approved "always for this client", it no longer asks
//! that client; another client is still asked) and finds a fact.

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
            souz_protocol::DecisionRequest::once(verdict, "test"),
            &Audience::Everyone,
        )
        .await
        .unwrap();
    call.wait_for(Duration::from_secs(30)).await
}

async fn wait_for_approval(call: &mut CallHandle) -> String {
    for _ in 0..400 {
        if let Some(approval) = call.state().approval_id {
            return approval;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the call never asked")
}

/// A client's `search_memory` asks; approved "always for this client", that client's next
/// search does not ask, and another client's still does.
async fn search_asks_once_per_client(handle: &RuntimeHandle, fact_id: &str) {
    let query = serde_json::json!({"query": "when is the deploy window"});
    let mut search = start(handle, "search_memory", query.clone()).await;
    let approval = wait_for_approval(&mut search).await;
    let pending = handle.approval(&approval).await.unwrap();
    assert_eq!(pending.suggested.scope, ScopeKind::Requester);
    let always = souz_protocol::DecisionRequest {
        scope: ScopeKind::Requester,
        ..souz_protocol::DecisionRequest::once(Verdict::Approve, "test")
    };
    handle
        .decide_approval(&approval, always, &Audience::Everyone)
        .await
        .unwrap();
    let state = search.wait_for(Duration::from_secs(30)).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    let text = state.result.unwrap().text;
    assert!(text.contains("untrusted"), "{text}");
    assert!(text.contains(fact_id), "{text}");
    // No embedding model in a test runtime: the client is told the search used words only.
    assert!(text.starts_with("Matched by words only"), "{text}");
    let mut again = start(handle, "search_memory", query.clone()).await;
    let state = again.wait_for(Duration::from_secs(30)).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    assert!(state.approval_id.is_none(), "asked once for this client");
    let other = handle
        .start_call(CallRequest {
            tool: "search_memory".to_owned(),
            arguments: query,
            requester: client("other-client"),
        })
        .await
        .unwrap();
    let mut other = other;
    wait_for_approval(&mut other).await;
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
    assert!(
        asks(find("search_memory")),
        "a client's search asks until the person decides for that client"
    );
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

    let mut approved = start(&handle, "remember", remember.clone()).await;
    let state = decide(&handle, &mut approved, Verdict::Approve).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    let stored = facts(&handle).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].title, "Deploy window");
    assert_eq!(stored[0].created_by, "mcp:claude-code");
    let said = state.result.unwrap().text;
    assert_eq!(said, format!("Remembered {}: Deploy window", stored[0].id));
    // The same fact again is confirmed, and the client is told so.
    let mut again = start(&handle, "remember", remember).await;
    let state = decide(&handle, &mut again, Verdict::Approve).await;
    let said = state.result.unwrap().text;
    assert_eq!(
        said,
        format!(
            "Already remembered {}: Deploy window (confirmed)",
            stored[0].id
        )
    );
    assert_eq!(facts(&handle).await.len(), 1, "no copy was stored");
    let evidence = handle.memory_evidence(&stored[0].id).await.unwrap();
    assert_eq!(evidence.items.len(), 2, "the second writing is evidence");
    assert_eq!(evidence.items[0].client.as_deref(), Some("claude-code"));

    search_asks_once_per_client(&handle, &stored[0].id).await;

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

async fn new_fact(handle: &RuntimeHandle, title: &str, body: &str, scope: Option<&str>) -> String {
    handle
        .create_memory_fact(
            souz_protocol::NewMemoryFact {
                body: body.into(),
                title: Some(title.into()),
                kind: Some(souz_protocol::MemoryKind::Preference),
                scope: scope.map(str::to_owned),
                canonical_key: Some("user.preference.tea".into()).filter(|_| scope.is_none()),
                pinned: false,
                importance: None,
            },
            crate::runtime::facade::MemoryOrigin::MANUAL,
        )
        .await
        .unwrap()
        .0
        .id
}

/// Memory facts as resources follow `search_memory`'s policy: an allowed client lists and
/// reads the active global facts (not session facts, not retired ones); a client the policy
/// denies, or would ask (every client nobody decided about), sees none and its reads are
/// refused; a follower hears about changes.
#[tokio::test]
async fn memory_facts_are_resources_readable_under_the_search_policy() {
    let runtime = TestRuntime::builder()
        .flat_home()
        .with_config(|config| {
            config.approvals.rules.extend([
                rule(Action::Allow, "search_memory", "mcp:claude-code"),
                rule(Action::Deny, "search_memory", "mcp:blocked"),
                rule(Action::Ask, "search_memory", "mcp:asker"),
            ]);
        })
        .start()
        .await;
    let handle = runtime.handle();
    let tea = new_fact(&handle, "Tea", "The person drinks green tea", None).await;
    let session = new_fact(
        &handle,
        "Chat note",
        "Draft is in notes.md",
        Some("session:c1"),
    )
    .await;
    let retired = {
        let id = handle
            .create_memory_fact(
                souz_protocol::NewMemoryFact {
                    body: "Old editor was vim".into(),
                    title: Some("Editor".into()),
                    kind: None,
                    scope: None,
                    canonical_key: None,
                    pinned: false,
                    importance: None,
                },
                crate::runtime::facade::MemoryOrigin::MANUAL,
            )
            .await
            .unwrap()
            .0
            .id;
        handle.retire_memory_fact(&id).await.unwrap();
        id
    };

    let code = client("claude-code");
    let listed = resources::list(&handle, &code, None).await.unwrap();
    let uris: Vec<&str> = listed.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, vec![format!("souz://memory/facts/{tea}")]);
    let resource = &listed.resources[0];
    assert_eq!(resource.name, "Tea");
    assert_eq!(resource.mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(
        resource.description.as_deref(),
        Some("preference memory, global scope")
    );
    let read = resources::read(&handle, &code, &resource.uri)
        .await
        .unwrap();
    let text = serde_json::to_value(&read.contents[0]).unwrap();
    assert_eq!(text["mimeType"], "text/markdown");
    let text = text["text"].as_str().unwrap();
    for part in [
        "# Tea",
        "The person drinks green tea",
        "- Kind: preference",
        "- Scope: global",
        "- Canonical key: user.preference.tea",
        "- Updated: ",
        "Untrusted",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    for hidden in [&session, &retired] {
        let uri = format!("souz://memory/facts/{hidden}");
        let error = resources::read(&handle, &code, &uri).await.unwrap_err();
        assert_eq!(
            error.code,
            rmcp::model::ErrorCode::RESOURCE_NOT_FOUND,
            "{uri}"
        );
    }
    for bad in [
        "souz://memory/facts/",
        "souz://memory/facts/a/b",
        "souz://memory/x",
    ] {
        assert!(resources::read(&handle, &code, bad).await.is_err(), "{bad}");
    }

    for refused in ["blocked", "asker", "undecided"] {
        let requester = client(refused);
        let listed = resources::list(&handle, &requester, None).await.unwrap();
        assert!(listed.resources.is_empty(), "{refused} lists nothing");
        let error = resources::read(&handle, &requester, &resource.uri)
            .await
            .unwrap_err();
        assert_ne!(error.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
        if refused != "blocked" {
            assert!(error.message.contains("search_memory"), "{}", error.message);
        }
    }

    runtime.shutdown("test").await.unwrap();
}

/// A reader of memory resources hears when a fact it could list goes away.
#[tokio::test]
async fn memory_resource_changes_are_announced() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let runtime = TestRuntime::builder()
        .flat_home()
        .with_config(|config| {
            let allowed = rule(Action::Allow, "search_memory", "mcp:claude-code");
            config.approvals.rules.push(allowed);
        })
        .start()
        .await;
    let handle = runtime.handle();
    let tea = new_fact(&handle, "Tea", "The person drinks green tea", None).await;
    let code = client("claude-code");
    // A change of the facts is announced to a reader.
    let told = Arc::new(AtomicUsize::new(0));
    let wake = Arc::new(tokio::sync::Notify::new());
    let stop = tokio_util::sync::CancellationToken::new();
    // Subscribed here: nothing done after this point is missed.
    let reader = client("claude-code");
    let followed = resources::start(&handle, &reader);
    let follower = {
        let (handle, told, wake, stop) = (handle.clone(), told.clone(), wake.clone(), stop.clone());
        crate::tasks::spawn_in_test(async move {
            let notify = || async {
                told.fetch_add(1, Ordering::SeqCst);
                wake.notify_one();
                true
            };
            resources::follow_from(&handle, &reader, followed, stop.cancelled(), notify).await;
        })
    };
    // A session follows the facts' own counter: a tool call's events do not step it (they
    // would wake every open session twice a call), a change of the facts steps it once.
    let mut counter = handle.memory_changes();
    let before = *counter.borrow_and_update();
    let mut call = start(
        &handle,
        "Calculator",
        serde_json::json!({"expression": "1 + 1"}),
    )
    .await;
    assert_eq!(
        call.finished().await.status,
        ToolCallStatus::Succeeded,
        "the calculator answers"
    );
    assert!(
        handle.last_event_seq().await.unwrap() > 0,
        "the call's events are stored"
    );
    assert!(
        !counter.has_changed().unwrap(),
        "a tool call is no change of the facts"
    );
    handle.delete_memory_fact(&tea).await.unwrap();
    assert!(
        counter.has_changed().unwrap(),
        "the deletion steps the counter"
    );
    assert_eq!(
        *counter.borrow_and_update(),
        before + 1,
        "one step for one change"
    );
    tokio::time::timeout(Duration::from_secs(10), wake.notified())
        .await
        .expect("the deletion is announced");
    assert!(told.load(Ordering::SeqCst) >= 1);
    assert!(
        resources::list(&handle, &code, None)
            .await
            .unwrap()
            .resources
            .is_empty()
    );
    stop.cancel();
    follower.await.unwrap();
    runtime.shutdown("test").await.unwrap();
}
