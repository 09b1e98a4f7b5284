use super::super::schema::{
    ContentBlock, PermissionOptionKind, SessionUpdate, StopReason, ToolKind,
};
use serde_json::{Value, json};
use souz_protocol::chat::ChatEventBody;
use souz_protocol::{Approval, ScopeKind, Verdict};

use super::*;

fn event(kind: &str, payload: Value) -> ChatEventBody {
    let body = ChatEventBody::from_parts(kind.to_owned(), payload);
    assert!(
        !matches!(body, ChatEventBody::Other { .. }),
        "{kind} did not decode"
    );
    body
}

fn approval() -> Approval {
    serde_json::from_value(json!({
        "id": "a1", "call_id": "c1", "status": "pending",
        "requester": {"kind": "chat", "chat_id": "chat1"}, "requester_label": "chat",
        "tool": "NewFile", "risk": "write", "arguments": {"path": "note.txt"},
        "summary": "Create note.txt", "reason": "writes ask",
        "suggested": {"scope": "minutes", "minutes": 30, "label": "file writes for 30 minutes"},
        "created_at": "2026-12-07T10:00:00Z", "expires_at": "2026-12-07T10:10:00Z"
    }))
    .unwrap()
}

/// (status of each tool-call update, in order) for `updates`; `announce` marks a `tool_call`.
fn statuses(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .map(|update| match update {
            SessionUpdate::ToolCall(call) => format!("announce {:?}", call.status),
            SessionUpdate::ToolCallUpdate(update) => format!("{:?}", update.fields.status),
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(text) => format!("text {}", text.text),
                other => format!("{other:?}"),
            },
        })
        .collect()
}

#[test]
fn a_tool_call_is_announced_once_then_goes_pending_in_progress_completed() {
    let mut view = TurnView::default();
    let requested = event(
        "approval.requested",
        json!({"approvalId": "a1", "toolCallId": "t1", "callId": "c1", "name": "NewFile", "summary": "Create note.txt"}),
    );
    let asked = view.updates(&requested);
    assert_eq!(statuses(&asked), ["announce Pending"]);
    let SessionUpdate::ToolCall(call) = &asked[0] else {
        unreachable!()
    };
    assert_eq!(call.title, "Create note.txt");
    assert_eq!(call.kind, ToolKind::Edit);
    let decided = event(
        "approval.decided",
        json!({"approvalId": "a1", "toolCallId": "t1", "callId": "c1", "name": "NewFile", "status": "approved"}),
    );
    assert_eq!(statuses(&view.updates(&decided)), ["Some(InProgress)"]);
    let started = event(
        "tool.call.started",
        json!({"toolCallId": "t1", "name": "NewFile", "argumentKeys": ["path"], "argumentsPreview": {}}),
    );
    assert_eq!(statuses(&view.updates(&started)), ["Some(InProgress)"]);
    let finished = event(
        "tool.call.finished",
        json!({"toolCallId": "t1", "name": "NewFile", "status": "finished", "durationMs": 3, "resultPreview": "ok"}),
    );
    let done = view.updates(&finished);
    assert_eq!(statuses(&done), ["Some(Completed)"]);
    let SessionUpdate::ToolCallUpdate(update) = &done[0] else {
        unreachable!()
    };
    assert_eq!(update.fields.raw_output, Some(json!("ok")));
}

#[test]
fn a_denied_or_expired_approval_fails_the_call_and_a_failed_call_says_why() {
    let mut view = TurnView::default();
    let denied = event(
        "approval.decided",
        json!({"approvalId": "a1", "toolCallId": "t1", "callId": "c1", "name": "RunCommand", "status": "denied"}),
    );
    // Never announced before: announced first, then failed.
    assert_eq!(
        statuses(&view.updates(&denied)),
        ["announce Pending", "Some(Failed)"]
    );
    let expired = event(
        "approval.expired",
        json!({"approvalId": "a2", "toolCallId": "t2", "callId": "c2", "name": "RunCommand", "status": "expired"}),
    );
    assert_eq!(
        statuses(&view.updates(&expired)),
        ["announce Pending", "Some(Failed)"]
    );
    let failed = event(
        "tool.call.failed",
        json!({"toolCallId": "t1", "name": "RunCommand", "status": "failed", "error": "denied by the person", "durationMs": 1}),
    );
    let updates = view.updates(&failed);
    assert_eq!(statuses(&updates), ["Some(Failed)"]);
    let SessionUpdate::ToolCallUpdate(update) = &updates[0] else {
        unreachable!()
    };
    assert!(format!("{:?}", update.fields.content).contains("denied by the person"));
}

#[test]
fn streamed_text_is_sent_once_and_an_unstreamed_answer_whole() {
    let mut view = TurnView::default();
    let delta = event(
        "message.delta",
        json!({"messageId": "m1", "executionId": "e1", "attempt": 1, "delta": "Hel"}),
    );
    assert_eq!(statuses(&view.updates(&delta)), ["text Hel"]);
    let completed = |id: &str| {
        event(
            "message.completed",
            json!({"messageId": id, "seq": 2, "role": "assistant", "content": "Hello"}),
        )
    };
    assert!(view.updates(&completed("m1")).is_empty());
    assert_eq!(statuses(&view.updates(&completed("m2"))), ["text Hello"]);
    let user = event(
        "message.completed",
        json!({"messageId": "m3", "seq": 1, "role": "user", "content": "Hi"}),
    );
    assert!(view.updates(&user).is_empty());
}

#[test]
fn turn_ends_map_to_stop_reasons() {
    let finished = |reason: Option<&str>| {
        let mut payload = json!({"executionId": "e1", "assistantMessageId": "m1", "status": "finished",
            "promptTokens": 1, "completionTokens": 1, "totalTokens": 2, "precachedTokens": 0});
        if let Some(reason) = reason {
            payload["endReason"] = json!(reason);
        }
        event("execution.finished", payload)
    };
    assert_eq!(stop_reason(&finished(None)), Some(StopReason::EndTurn));
    assert_eq!(
        stop_reason(&finished(Some("cut_off"))),
        Some(StopReason::MaxTokens)
    );
    assert_eq!(
        stop_reason(&finished(Some("tool_call_limit"))),
        Some(StopReason::MaxTurnRequests)
    );
    assert_eq!(
        stop_reason(&finished(Some("time_limit"))),
        Some(StopReason::EndTurn)
    );
    let cancelled = event("execution.cancelled", json!({"executionId": "e1"}));
    assert_eq!(stop_reason(&cancelled), Some(StopReason::Cancelled));
    let started = event(
        "execution.started",
        json!({"executionId": "e1", "userMessageId": "u1", "model": null, "provider": null, "streamingMessages": true}),
    );
    assert_eq!(stop_reason(&started), None);
}

#[test]
fn permission_options_map_to_souz_decisions_and_back() {
    let approval = approval();
    let options = permission_options(&approval);
    let kinds: Vec<_> = options.iter().map(|option| option.kind).collect();
    assert_eq!(
        kinds,
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::RejectOnce
        ]
    );
    assert!(options[1].name.contains("file writes for 30 minutes"));
    for option in &options {
        assert!(decision(&approval, &option.option_id).is_some());
    }
    let once = decision(&approval, ALLOW_ONCE).unwrap();
    assert_eq!(
        (once.decision, once.scope, once.via.as_deref()),
        (Verdict::Approve, ScopeKind::Once, Some("acp"))
    );
    let suggested = decision(&approval, ALLOW_SUGGESTED).unwrap();
    assert_eq!(
        (suggested.decision, suggested.scope, suggested.minutes),
        (Verdict::Approve, ScopeKind::Minutes, Some(30))
    );
    let reject = decision(&approval, REJECT).unwrap();
    assert_eq!(reject.decision, Verdict::Deny);
    // An option the bridge never offered approves nothing.
    assert_eq!(decision(&approval, "allow_everything"), None);
}

#[test]
fn tool_kinds_follow_the_tool_name() {
    assert_eq!(tool_kind("NewFile"), ToolKind::Edit);
    assert_eq!(tool_kind("DeleteFile"), ToolKind::Delete);
    assert_eq!(tool_kind("ReadFile"), ToolKind::Read);
    assert_eq!(tool_kind("RunCommand"), ToolKind::Execute);
    assert_eq!(tool_kind("WebFetch"), ToolKind::Fetch);
    assert_eq!(tool_kind("Mystery"), ToolKind::Other);
}
