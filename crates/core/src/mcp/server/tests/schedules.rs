//! Schedules as MCP tools: `CreateSchedule`, `ListSchedules` and `DeleteSchedule` come from
//! the catalog, so MCP clients see the tools the agents use; creating and deleting are marked
//! as asking, listing is not; a client's `CreateSchedule` waits for the person's approval and
//! stores the schedule for the operator only once approved.

use std::time::Duration;

use souz_protocol::{ToolCallStatus, Verdict};

use super::*;
use crate::runtime::facade::{Audience, ChatUser};
use crate::tools::gate::CallRequest;

#[tokio::test]
async fn schedule_tools_are_listed_to_clients_and_a_create_waits_for_approval() {
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
    assert!(asks(find("CreateSchedule")), "creating a schedule asks");
    assert!(asks(find("DeleteSchedule")), "deleting a schedule asks");
    assert!(!asks(find("ListSchedules")), "listing is read-only");
    let schema = &find("CreateSchedule").input_schema;
    for field in ["name", "spec", "zone", "prompt", "skill", "envelope"] {
        assert!(
            schema["properties"].get(field).is_some(),
            "CreateSchedule takes `{field}`: {schema:?}"
        );
    }
    let agents = crate::agent::skills::enabled_tools(
        handle.gate(),
        &crate::agent::skills::ToolFilter::default(),
    );
    assert!(
        ["CreateSchedule", "ListSchedules", "DeleteSchedule"]
            .iter()
            .all(|name| agents.iter().any(|tool| tool.spec().name == *name)),
        "the agents have the same tools"
    );

    let mut call = handle
        .start_call(CallRequest {
            tool: "CreateSchedule".to_owned(),
            arguments: serde_json::json!({
                "name": "Inbox summary",
                "spec": "30 8 * * 1-5",
                "zone": "Europe/Berlin",
                "prompt": "Summarise my inbox folder",
            }),
            requester: client("claude-code"),
        })
        .await
        .unwrap();
    let mut approval = None;
    for _ in 0..400 {
        approval = call.state().approval_id;
        if approval.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let approval = approval.expect("the client's CreateSchedule never asked");
    // Waiting: nothing is stored yet.
    let state = call.state();
    assert_eq!(state.status, ToolCallStatus::WaitingApproval, "{state:?}");
    let local = ChatUser(crate::LOCAL_USER.to_owned());
    assert!(
        handle
            .list_schedules(&local)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let pending = handle.approval(&approval).await.unwrap();
    assert!(
        pending
            .summary
            .starts_with("Create schedule 'Inbox summary'"),
        "{}",
        pending.summary
    );
    handle
        .decide_approval(
            &approval,
            souz_protocol::DecisionRequest::once(Verdict::Approve, "test"),
            &Audience::Everyone,
        )
        .await
        .unwrap();
    let state = call.wait_for(Duration::from_secs(30)).await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    let items = handle.list_schedules(&local).await.unwrap().items;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].name, "Inbox summary");
    runtime.shutdown("test").await.unwrap();
}
