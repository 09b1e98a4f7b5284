//! Direct answers to `tools/call` ([`super::super::fast_path::direct`]): what they answer, what they
//! leave to rmcp, and that a client going away still withdraws what it asked for.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, Implementation, LoggingLevel, RequestId};
use serde_json::{Value, json};
use souz_protocol::{ApprovalStatus, DecisionRequest, ExpiryReason, Verdict};

use super::super::Settings;
use super::super::fast_path::direct::{Answer, Direct, Route};
use super::super::sessions::SessionBook;
use crate::approvals::Audience;
use crate::runtime::RuntimeHandle;
use crate::testing::TestRuntime;
use crate::token::Credential;
use crate::token::clients::ClientIdentity;

const SESSION: &str = "session-1";

fn settings(session_idle: Duration) -> Settings {
    Settings {
        approval_wait: Duration::from_secs(30),
        progress_interval: Duration::from_secs(30),
        session_idle,
    }
}

/// A `tools/call` as rmcp hands it to the session: parsed, with the HTTP request's parts (and
/// the credential the perimeter put there) in its extensions.
fn call(id: u64, tool: &str, arguments: Value, meta: Option<Value>) -> ClientJsonRpcMessage {
    let mut params = json!({ "name": tool, "arguments": arguments });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    let mut message: ClientJsonRpcMessage =
        serde_json::from_value(body).unwrap_or_else(|error| panic!("a tools/call: {error}"));
    let (mut parts, ()) = http::Request::builder()
        .header("mcp-session-id", SESSION)
        .body(())
        .unwrap_or_else(|error| panic!("a request: {error}"))
        .into_parts();
    parts.extensions.insert(Credential::Client(ClientIdentity {
        id: "id-tester".into(),
        name: "tester".into(),
        scope: souz_protocol::ClientScope::Mcp,
    }));
    if let ClientJsonRpcMessage::Request(request) = &mut message {
        request.request.extensions_mut().insert(parts);
    }
    message
}

fn calculator(id: u64) -> ClientJsonRpcMessage {
    call(id, "Calculator", json!({ "expression": "2 + 3 * 4" }), None)
}

fn new_file(id: u64, meta: Option<Value>) -> ClientJsonRpcMessage {
    call(
        id,
        "NewFile",
        json!({ "path": "~/direct.txt", "text": "x" }),
        meta,
    )
}

/// A book with one session whose client introduced itself.
fn book(handle: &RuntimeHandle) -> Arc<SessionBook> {
    let book = Arc::new(SessionBook::new(handle.clone()));
    book.opened(SESSION);
    book.introduced(SESSION, Implementation::new("tester", "1.0"));
    book
}

fn answered(direct: &Direct, book: &Arc<SessionBook>, message: ClientJsonRpcMessage) -> Answer {
    match direct.route(book, SESSION, message) {
        Route::Direct(answer) => answer,
        Route::Rmcp(message) => panic!("left to rmcp: {message:?}"),
    }
}

/// The messages of an answer, as JSON.
async fn messages(answer: Answer) -> Vec<Value> {
    let events: Vec<_> = answer.collect().await;
    events
        .into_iter()
        .map(|event| {
            assert!(event.event_id.is_none(), "direct answers cannot be resumed");
            serde_json::to_value(event.message.as_deref()).unwrap_or_default()
        })
        .collect()
}

fn result_text(message: &Value) -> String {
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn pending(handle: &RuntimeHandle) -> souz_protocol::Approval {
    for _ in 0..500 {
        let pending = handle
            .list_approvals(&Audience::Everyone, Some(ApprovalStatus::Pending), 10)
            .await
            .unwrap_or_default();
        if let Some(approval) = pending.into_iter().next() {
            return approval;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no approval was asked for");
}

/// The person decides once.
async fn decide(handle: &RuntimeHandle, approval_id: &str, decision: Verdict) {
    let request = DecisionRequest::once(decision, "api");
    handle
        .decide_approval(approval_id, request, &Audience::Everyone)
        .await
        .unwrap_or_else(|error| panic!("decide: {error}"));
}

async fn withdrawn(handle: &RuntimeHandle, approval_id: &str) {
    for _ in 0..500 {
        let approval = handle
            .approval(approval_id)
            .await
            .unwrap_or_else(|error| panic!("the approval: {error}"));
        if approval.status != ApprovalStatus::Pending {
            assert_eq!(approval.status, ApprovalStatus::Expired);
            assert_eq!(approval.expiry_reason, Some(ExpiryReason::Withdrawn));
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("approval {approval_id} is still pending");
}

#[tokio::test]
async fn a_call_is_answered_directly_as_the_client_and_in_its_session() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let book = book(&handle);
    let direct = Direct::new(handle.clone(), settings(Duration::from_secs(600)));

    // Primed (as `Sessions` sends it): its one message read before the response goes out.
    let primed = answered(&direct, &book, calculator(7))
        .primed(Duration::from_secs(10))
        .await;
    let answer = messages(primed).await;
    assert_eq!(answer.len(), 1, "{answer:?}");
    assert_eq!(answer[0]["id"], json!(7));
    assert_eq!(answer[0]["result"]["isError"], json!(false), "{answer:?}");
    assert!(result_text(&answer[0]).contains("14"), "{answer:?}");

    // A call that asks names the client and the session to the person.
    let waiting =
        crate::tasks::spawn_in_test(messages(answered(&direct, &book, new_file(8, None))));
    let approval = pending(&handle).await;
    let souz_protocol::Requester::Mcp {
        client_name,
        session_id,
        token_name,
        ..
    } = &approval.requester
    else {
        panic!("requester {:?}", approval.requester);
    };
    assert_eq!(
        (
            client_name.as_str(),
            session_id.as_str(),
            token_name.as_str()
        ),
        ("tester", SESSION, "tester")
    );
    decide(&handle, &approval.id, Verdict::Deny).await;
    let answer = waiting.await.unwrap_or_default();
    assert_eq!(answer.len(), 1, "{answer:?}");
    assert_eq!(answer[0]["result"]["isError"], json!(true), "{answer:?}");
    assert!(result_text(&answer[0]).contains("denied"), "{answer:?}");
}

#[tokio::test]
async fn what_is_left_to_rmcp() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let book = book(&handle);
    let idle = Duration::from_secs(2);
    let direct = Direct::new(handle.clone(), settings(idle));
    let left = |message: ClientJsonRpcMessage, session: &str| {
        matches!(direct.route(&book, session, message), Route::Rmcp(_))
    };

    let list: ClientJsonRpcMessage = serde_json::from_value(
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} }),
    )
    .unwrap_or_else(|error| panic!("tools/list: {error}"));
    assert!(left(list, SESSION), "only tools/call is answered directly");
    assert!(
        left(calculator(2), "another"),
        "a session the book does not know"
    );
    book.opened("restored");
    assert!(
        left(calculator(3), "restored"),
        "a session whose client never introduced itself here"
    );

    // One direct call per request id at a time.
    let first = answered(&direct, &book, new_file(4, None));
    assert!(left(new_file(4, None), SESSION), "request id 4 is taken");
    drop(first);
    let again = answered(&direct, &book, calculator(4));
    assert_eq!(messages(again).await.len(), 1);

    // rmcp closes a session it has not seen for the idle time: past half of it, a call goes
    // its way, and seeing the session again opens the direct path.
    tokio::time::sleep(idle / 2 + Duration::from_millis(100)).await;
    assert!(
        left(calculator(5), SESSION),
        "rmcp has not seen the session lately"
    );
    book.routed(SESSION);
    assert!(!left(calculator(6), SESSION));
}

#[tokio::test]
async fn a_client_that_goes_away_withdraws_a_direct_call() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let book = book(&handle);
    let direct = Direct::new(handle.clone(), settings(Duration::from_secs(600)));
    let request_id = RequestId::Number(11);

    // `notifications/cancelled` for the request.
    let waiting =
        crate::tasks::spawn_in_test(messages(answered(&direct, &book, new_file(11, None))));
    let approval = pending(&handle).await;
    assert!(book.cancel_direct(SESSION, &request_id));
    let answer = waiting.await.unwrap_or_default();
    assert!(result_text(&answer[0]).contains("cancelled"), "{answer:?}");
    withdrawn(&handle, &approval.id).await;
    assert!(
        !book.cancel_direct(SESSION, &request_id),
        "the request is over: a late cancel goes to rmcp"
    );

    // The response dropped (the connection closed).
    let answer = answered(&direct, &book, new_file(12, None));
    let polled = crate::tasks::spawn_in_test(messages(answer));
    let approval = pending(&handle).await;
    polled.abort();
    withdrawn(&handle, &approval.id).await;

    // The session ended.
    let waiting =
        crate::tasks::spawn_in_test(messages(answered(&direct, &book, new_file(13, None))));
    let approval = pending(&handle).await;
    book.end(SESSION);
    let answer = waiting.await.unwrap_or_default();
    assert!(result_text(&answer[0]).contains("cancelled"), "{answer:?}");
    withdrawn(&handle, &approval.id).await;
}

#[tokio::test]
async fn progress_and_log_notices_come_ahead_of_the_result() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let book = book(&handle);
    book.set_log_level(SESSION, LoggingLevel::Info);
    let direct = Direct::new(handle.clone(), settings(Duration::from_secs(600)));

    let meta = json!({ "progressToken": "tok" });
    let mut answer = answered(&direct, &book, new_file(21, Some(meta)));
    let mut notices = Vec::new();
    while notices.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), answer.next())
            .await
            .unwrap_or_else(|_| panic!("no notice after {notices:?}"))
            .unwrap_or_else(|| panic!("the answer ended after {notices:?}"));
        notices.push(serde_json::to_value(event.message.as_deref()).unwrap_or_default());
    }
    let approval = pending(&handle).await;
    let methods: Vec<&str> = notices
        .iter()
        .map(|notice| notice["method"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        methods,
        ["notifications/message", "notifications/progress"],
        "{notices:?}"
    );
    assert_eq!(
        notices[0]["params"]["data"]["approval_id"],
        json!(approval.id)
    );
    assert_eq!(notices[1]["params"]["progressToken"], json!("tok"));
    assert!(
        notices[1]["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("Waiting for approval in Souz")),
        "{notices:?}"
    );
    decide(&handle, &approval.id, Verdict::Approve).await;
    let rest = messages(answer).await;
    let last = rest.last().cloned().unwrap_or_default();
    assert_eq!(last["id"], json!(21), "{rest:?}");
    assert_eq!(last["result"]["isError"], json!(false), "{rest:?}");
    assert!(runtime.home().path().join("direct.txt").exists());
}
