//! What the runtime wires, tested through it: the tasks it runs for lower layers (the grant
//! expiry of `approvals`) and one agent turn through the whole runtime (`agent_turn`).

mod agent_turn;
mod background_tasks;
mod folder_writes;
mod key_redaction;
mod memory_capture;
mod parked_runs;
mod planted_links;
mod skill_inventory;
mod stopped_runs;
mod web_tools;

use std::time::Duration;

use souz_protocol::{Action, ArgumentMatch, Effect, Grant, Requester, Risk};

use crate::store::codec::now;
use crate::testing::TestRuntime;

fn claude() -> Requester {
    Requester::Mcp {
        client_name: "Claude Code".into(),
        client_version: "2.0".into(),
        session_id: "s1".into(),
        token_id: "c-claude".into(),
        token_name: "claude-code".into(),
    }
}

/// A time-limited grant that reaches its end is dropped and announced on `changes()` by the
/// task the runtime runs (it wakes at the expiry; nothing polls), so MCP clients hear that
/// their tool list changed.
#[tokio::test]
async fn an_expiring_grant_is_announced_when_its_time_is_up() {
    let runtime = TestRuntime::builder()
        .flat_home()
        .from_template()
        .start()
        .await;
    let handle = runtime.handle();
    let approvals = handle.approvals();
    let requester = claude();
    let asks = || {
        approvals
            .effective_for("EditFile", Risk::Write, true, &requester)
            .action
    };
    assert_eq!(asks(), Action::Ask);

    let created_at = now();
    let grant = Grant {
        id: uuid::Uuid::now_v7().to_string(),
        label: "Allow Claude Code to use EditFile briefly".into(),
        effect: Effect::Allow,
        tool: "EditFile".into(),
        requester: Some(requester.clone()),
        argument_match: ArgumentMatch::default(),
        created_at,
        expires_at: Some(created_at + chrono::Duration::milliseconds(300)),
        approval_id: None,
    };
    let stored = grant.clone();
    handle
        .store()
        .write(move |transaction| crate::approvals::grants::insert(transaction, &stored))
        .await
        .unwrap();
    approvals.reload_grants().await.unwrap();
    assert_eq!(asks(), Action::Allow, "the grant applies while it lasts");

    let mut changes = approvals.changes();
    changes.mark_unchanged();
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("the expiry is announced")
        .unwrap();
    assert!(now() >= created_at + chrono::Duration::milliseconds(300));
    assert_eq!(asks(), Action::Ask);
    assert_eq!(approvals.next_grant_expiry(), None, "the grant was dropped");
    runtime.shutdown("test").await.unwrap();
}
