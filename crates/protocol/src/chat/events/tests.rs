//! Every kind against the exact text the untyped `json!` producers stored and sent: the
//! fixtures below are literal, so a renamed, reordered or re-typed field fails here.

use super::*;
use crate::chat::ChatEvent;

/// `(kind, payload text as stored in chat_events.payload)`, one per variant (both approval
/// resolutions, both message shapes).
const FIXTURES: &[(&str, &str)] = &[
    (
        "message.created",
        r#"{"clientMessageId":"k-1","content":"hi","messageId":"m-1","role":"user","seq":1}"#,
    ),
    (
        "message.created",
        r#"{"content":"hello","messageId":"m-2","role":"assistant","seq":2}"#,
    ),
    (
        "message.delta",
        r#"{"attempt":1,"delta":"hel","executionId":"e-1","messageId":"m-2"}"#,
    ),
    (
        "message.discarded",
        r#"{"attempt":1,"executionId":"e-1","messageId":"m-2"}"#,
    ),
    (
        "message.completed",
        r#"{"content":"hello","messageId":"m-2","role":"assistant","seq":2}"#,
    ),
    (
        "tool.call.started",
        r#"{"argumentKeys":["command","path"],"argumentsPreview":{"command":"ls","path":"/tmp"},"name":"RunCommand","toolCallId":"t-1"}"#,
    ),
    (
        "tool.call.progress",
        r#"{"message":"Step 2 of 5","name":"mcp__everything__trigger-long-running-operation","progress":2.0,"toolCallId":"t-1","total":5.0}"#,
    ),
    (
        "tool.call.finished",
        r#"{"durationMs":12,"name":"RunCommand","resultPreview":"done","status":"finished","toolCallId":"t-1"}"#,
    ),
    (
        "tool.call.failed",
        r#"{"durationMs":3,"error":"refused","name":"RunCommand","status":"failed","toolCallId":"t-1"}"#,
    ),
    (
        "approval.requested",
        r#"{"approvalId":"a-1","callId":"g-1","name":"RunCommand","summary":"run ls","toolCallId":"t-1"}"#,
    ),
    (
        "approval.decided",
        r#"{"approvalId":"a-1","callId":"g-1","decidedAt":"2026-01-02T03:04:05.123456789Z","grantId":"gr-1","name":"RunCommand","scope":"requester","status":"approved","toolCallId":"t-1","via":"api"}"#,
    ),
    (
        "approval.decided",
        r#"{"approvalId":"a-1","callId":"g-1","decidedAt":"2026-01-02T03:04:05Z","name":"RunCommand","scope":"once","status":"denied","toolCallId":"t-1","via":"tray"}"#,
    ),
    (
        "approval.expired",
        r#"{"approvalId":"a-1","callId":"g-1","name":"RunCommand","reason":"timeout","status":"expired","toolCallId":"t-1"}"#,
    ),
    (
        "option.requested",
        r#"{"expiresAt":"2026-01-02T03:04:05Z","freeText":true,"kind":"generic_selection","optionId":"o-1","options":[{"content":null,"id":"c-1","label":"Yes"},{"content":"more","id":"c-2","label":"No"}],"selectionMode":"single","title":"Proceed?"}"#,
    ),
    (
        "option.requested",
        r#"{"expiresAt":null,"freeText":false,"kind":"generic_selection","optionId":"o-1","options":[],"selectionMode":"multiple","title":"Pick"}"#,
    ),
    (
        "option.answered",
        r#"{"freeText":"","metadata":{"source":"ui"},"optionId":"o-1","selectedOptionIds":["c-1"],"status":"answered"}"#,
    ),
    (
        "execution.started",
        r#"{"executionId":"e-1","model":"gpt-4o","provider":"openai","streamingMessages":true,"userMessageId":"m-1"}"#,
    ),
    (
        "execution.started",
        r#"{"executionId":"e-1","model":null,"provider":null,"streamingMessages":false,"userMessageId":"m-1"}"#,
    ),
    (
        "execution.finished",
        r#"{"assistantMessageId":"m-2","completionTokens":5,"executionId":"e-1","precachedTokens":0,"promptTokens":10,"status":"completed","totalTokens":15}"#,
    ),
    (
        "execution.finished",
        r#"{"assistantMessageId":"m-2","completionTokens":5,"endReason":"repeated_tool_call","executionId":"e-1","precachedTokens":0,"promptTokens":10,"status":"completed","totalTokens":15}"#,
    ),
    (
        "execution.failed",
        r#"{"errorCode":"agent_execution_failed","errorMessage":"boom","executionId":"e-1"}"#,
    ),
    ("execution.cancelled", r#"{"executionId":"e-1"}"#),
];

fn event(body: ChatEventBody) -> ChatEvent {
    ChatEvent {
        seq: Some(7),
        durable: true,
        chat_id: "c-1".into(),
        execution_id: Some("e-1".into()),
        body,
        created_at: "2026-01-02T03:04:05Z".parse().unwrap(),
    }
}

/// The full wire form of an event with this `type` and `payload` text, as the untyped struct
/// wrote it (fields in declaration order).
fn wire(kind: &str, payload: &str) -> String {
    format!(
        r#"{{"seq":7,"durable":true,"chatId":"c-1","executionId":"e-1","type":"{kind}","payload":{payload},"createdAt":"2026-01-02T03:04:05Z"}}"#
    )
}

#[test]
fn every_kind_round_trips_to_the_exact_stored_and_sent_text() {
    for (kind, payload) in FIXTURES {
        let text = wire(kind, payload);
        let parsed: ChatEvent = serde_json::from_str(&text).unwrap();
        assert!(
            !matches!(parsed.body, ChatEventBody::Other { .. }),
            "{kind} was not read as its typed variant: {payload}"
        );
        assert_eq!(parsed.kind(), *kind);
        // The columns: `type` and `payload` text.
        assert_eq!(parsed.body.payload().unwrap().to_string(), *payload);
        // The wire: the whole event, byte for byte, and back.
        assert_eq!(serde_json::to_string(&parsed).unwrap(), text);
        let again: ChatEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(again, parsed);
        // From the columns, as replay reads them.
        let columns =
            ChatEventBody::from_parts((*kind).to_owned(), serde_json::from_str(payload).unwrap());
        assert_eq!(columns, parsed.body);
        // Straight from the stored text, as replay reads it.
        let text = ChatEventBody::from_text(kind, payload).unwrap();
        assert_eq!(text, parsed.body);
    }
}

#[test]
fn the_fixtures_cover_every_kind() {
    let kinds: std::collections::BTreeSet<&str> = FIXTURES.iter().map(|(kind, _)| *kind).collect();
    let documented = serde_json::to_value(schemars::schema_for!(ChatEventBody)).unwrap();
    let alternatives = documented["oneOf"].as_array().unwrap();
    assert_eq!(alternatives.len(), 17);
    assert_eq!(kinds.len(), alternatives.len());
    for alternative in alternatives {
        let kind = alternative["properties"]["type"]["const"].as_str().unwrap();
        assert!(kinds.contains(kind), "no fixture for {kind}");
        // The documented payload is the one the kind is read as.
        let (_, payload) = FIXTURES.iter().find(|(known, _)| *known == kind).unwrap();
        let body =
            ChatEventBody::from_parts(kind.to_owned(), serde_json::from_str(payload).unwrap());
        let documented = alternative["properties"]["payload"]["$ref"]
            .as_str()
            .unwrap();
        assert_eq!(
            documented,
            format!("#/$defs/{}", payload_type(&body)),
            "{kind}"
        );
    }
}

/// The payload struct of each variant (no wildcard: a new variant must be added here).
fn payload_type(body: &ChatEventBody) -> &'static str {
    match body {
        ChatEventBody::MessageCreated(_) | ChatEventBody::MessageCompleted(_) => "MessagePayload",
        ChatEventBody::MessageDelta(_) => "MessageDeltaPayload",
        ChatEventBody::MessageDiscarded(_) => "MessageDiscardedPayload",
        ChatEventBody::ToolCallStarted(_) => "ToolCallStartedPayload",
        ChatEventBody::ToolCallProgress(_) => "ToolCallProgressPayload",
        ChatEventBody::ToolCallFinished(_) => "ToolCallFinishedPayload",
        ChatEventBody::ToolCallFailed(_) => "ToolCallFailedPayload",
        ChatEventBody::ApprovalRequested(_) => "ApprovalRequestedPayload",
        ChatEventBody::ApprovalDecided(_) | ChatEventBody::ApprovalExpired(_) => {
            "ApprovalResolvedPayload"
        }
        ChatEventBody::OptionRequested(_) => "OptionRequestedPayload",
        ChatEventBody::OptionAnswered(_) => "OptionAnsweredPayload",
        ChatEventBody::ExecutionStarted(_) => "ExecutionStartedPayload",
        ChatEventBody::ExecutionFinished(_) => "ExecutionFinishedPayload",
        ChatEventBody::ExecutionFailed(_) => "ExecutionFailedPayload",
        ChatEventBody::ExecutionCancelled(_) => "ExecutionCancelledPayload",
        ChatEventBody::Other { .. } => "(not documented)",
    }
}

#[test]
fn a_typed_event_is_written_as_before() {
    let body = ChatEventBody::ExecutionFinished(ExecutionFinishedPayload {
        execution_id: "e-1".into(),
        assistant_message_id: "m-2".into(),
        status: "completed".into(),
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
        precached_tokens: 0,
        end_reason: TurnEndReason::Answered,
    });
    let payload = r#"{"assistantMessageId":"m-2","completionTokens":5,"executionId":"e-1","precachedTokens":0,"promptTokens":10,"status":"completed","totalTokens":15}"#;
    assert_eq!(
        serde_json::to_string(&event(body)).unwrap(),
        wire("execution.finished", payload)
    );
}

#[test]
fn a_finished_execution_stored_before_end_reasons_reads_as_answered() {
    let payload = r#"{"assistantMessageId":"m-2","completionTokens":5,"executionId":"e-1","precachedTokens":0,"promptTokens":10,"status":"completed","totalTokens":15}"#;
    let parsed: ChatEvent = serde_json::from_str(&wire("execution.finished", payload)).unwrap();
    match parsed.body {
        ChatEventBody::ExecutionFinished(finished) => {
            assert_eq!(finished.end_reason, TurnEndReason::Answered);
        }
        other => panic!("not typed: {other:?}"),
    }
    let stopped = r#"{"assistantMessageId":"m-2","completionTokens":5,"endReason":"time_limit","executionId":"e-1","precachedTokens":0,"promptTokens":10,"status":"completed","totalTokens":15}"#;
    let parsed: ChatEvent = serde_json::from_str(&wire("execution.finished", stopped)).unwrap();
    assert!(
        matches!(parsed.body, ChatEventBody::ExecutionFinished(ref finished)
            if finished.end_reason == TurnEndReason::TimeLimit),
        "{parsed:?}"
    );
    for reason in [TurnEndReason::TimeLimit, TurnEndReason::ToolCallLimit] {
        assert_eq!(
            serde_json::to_value(reason).unwrap(),
            serde_json::json!(reason.as_str())
        );
    }
}

#[test]
fn unknown_kinds_and_unfitting_payloads_are_kept_verbatim() {
    for (kind, payload) in [
        // A kind from another version.
        ("test.tick", r#"{"n":1,"nested":{"b":[1,2],"a":null}}"#),
        // A known kind with a field this version does not know.
        (
            "execution.cancelled",
            r#"{"executionId":"e-1","reason":"user"}"#,
        ),
        // A known kind missing a field.
        ("execution.failed", r#"{"executionId":"e-1"}"#),
        // A known kind whose payload is not an object.
        ("message.delta", r#""text""#),
    ] {
        let text = wire(kind, payload);
        let parsed: ChatEvent = serde_json::from_str(&text).unwrap();
        assert!(
            matches!(&parsed.body, ChatEventBody::Other { kind: read, .. } if read == kind),
            "{kind}: {:?}",
            parsed.body
        );
        let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
        let written: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&parsed).unwrap()).unwrap();
        assert_eq!(written, expected);
        assert_eq!(parsed.kind(), kind);
        // Read straight from the stored text: the same verbatim body.
        let text = ChatEventBody::from_text(kind, payload).unwrap();
        assert_eq!(text, parsed.body);
    }
}

#[test]
fn stored_text_that_is_not_json_is_an_error() {
    for kind in ["message.created", "test.tick"] {
        for payload in ["", "{", r#"{"messageId":"m"#, "not json"] {
            assert!(
                ChatEventBody::from_text(kind, payload).is_err(),
                "{kind}: {payload}"
            );
        }
    }
}

#[test]
fn an_event_without_a_type_or_payload_is_an_error() {
    for text in [
        r#"{"seq":1,"durable":true,"chatId":"c","executionId":null,"payload":{},"createdAt":"2026-01-02T03:04:05Z"}"#,
        r#"{"seq":1,"durable":true,"chatId":"c","executionId":null,"type":"x","createdAt":"2026-01-02T03:04:05Z"}"#,
    ] {
        assert!(serde_json::from_str::<ChatEvent>(text).is_err(), "{text}");
    }
}
