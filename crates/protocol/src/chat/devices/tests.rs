use serde_json::json;

use super::*;

fn submit() -> serde_json::Value {
    json!({
        "kind": "message.submit",
        "chatId": "c-1",
        "requestId": "r-1",
        "payload": {
            "device": {"userId": "u", "deviceId": "d", "deviceType": "smart_speaker",
                       "capabilities": ["speech"]},
            "content": {"type": "text", "source": "voice", "text": "Hi"}
        }
    })
}

fn invalid(value: serde_json::Value) -> String {
    match ClientFrame::decode(&value.to_string()) {
        Err(FrameError::Invalid { message, .. }) => message,
        other => panic!("not invalid: {other:?}"),
    }
}

#[test]
fn a_well_formed_submit_decodes() {
    let ClientFrame::Submit(frame) = ClientFrame::decode(&submit().to_string()).unwrap() else {
        panic!("not a submit");
    };
    assert_eq!(frame.request_id, "r-1");
    assert_eq!(frame.payload.content.text, "Hi");
}

#[test]
fn unreadable_frames_and_unknown_kinds_are_policy_violations() {
    for text in [
        "nope",
        "[1]",
        "{}",
        r#"{"kind":"message.sent"}"#,
        r#"{"kind":7}"#,
    ] {
        assert!(
            matches!(ClientFrame::decode(text), Err(FrameError::Policy(_))),
            "{text}"
        );
    }
}

#[test]
fn a_known_kind_that_breaks_its_contract_is_invalid_with_its_keys() {
    let mut extra = submit();
    extra["payload"]["device"]["colour"] = json!("red");
    assert!(invalid(extra).contains("colour"));
    let mut twice = submit();
    twice["payload"]["device"]["capabilities"] = json!(["speech", "speech"]);
    assert!(invalid(twice).contains("unique"));
    let mut blank = submit();
    blank["payload"]["content"]["text"] = json!("  ");
    assert!(invalid(blank).contains("blank"));
    let result = json!({"kind": "tool.result", "chatId": "c", "threadId": "t",
                        "toolCallId": "k", "status": "failed", "result": {}});
    assert!(invalid(result).contains("error"));
    match ClientFrame::decode(
        &json!({"kind": "thread.cancel", "chatId": "c",
                                      "requestId": "r-9", "threadId": 3})
        .to_string(),
    ) {
        Err(FrameError::Invalid { kind, keys, .. }) => {
            assert_eq!(kind, "thread.cancel");
            assert_eq!(keys.request_id.as_deref(), Some("r-9"));
            assert_eq!(keys.thread_id, None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn server_frames_carry_every_field_with_explicit_nulls() {
    let frame = ServerFrame::Ack(Ack::Cancel(CancelAck {
        chat_id: "c".into(),
        request_id: "r".into(),
        thread_id: None,
        status: AckStatus::Rejected,
        duplicate: false,
        error: None,
        received_at: chrono::DateTime::UNIX_EPOCH,
    }));
    let value = serde_json::to_value(&frame).unwrap();
    assert_eq!(value["kind"], "ack");
    assert!(value.as_object().unwrap().contains_key("threadId"));
    assert!(value["error"].is_null());
    let back: ServerFrame = serde_json::from_value(value).unwrap();
    assert_eq!(back, frame);
}

/// `docs/protocol.md`, which people read: its examples must be what the types say.
const PAGE: &str = include_str!("../../../../../docs/protocol.md");

/// The fenced blocks of the page whose info string is `info`.
fn blocks(info: &str) -> Vec<&'static str> {
    let fence = format!("```{info}\n");
    PAGE.split(fence.as_str())
        .skip(1)
        .map(|rest| rest.split("\n```").next().unwrap_or_default())
        .collect()
}

#[test]
fn the_protocol_page_examples_decode_as_the_types_say() {
    let clients = blocks("json client");
    assert_eq!(clients.len(), 3, "one example per client frame kind");
    let mut kinds: Vec<&str> = clients
        .iter()
        .map(|text| {
            ClientFrame::decode(text)
                .unwrap_or_else(|e| panic!("{e:?}: {text}"))
                .kind()
        })
        .collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["message.submit", "thread.cancel", "tool.result"]);

    let transcript = blocks("json transcript");
    assert_eq!(transcript.len(), 1);
    let mut server = 0;
    for line in transcript[0].lines() {
        if let Some(frame) = line.strip_prefix("> ") {
            match ClientFrame::decode(frame) {
                Ok(_) | Err(FrameError::Invalid { .. }) => {}
                Err(FrameError::Policy(_)) => assert!(frame.contains("message.sent"), "{frame}"),
            }
        } else if let Some(frame) = line.strip_prefix("< ") {
            if frame.starts_with("close ") {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(frame).unwrap();
            let typed: ServerFrame =
                serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{e}: {frame}"));
            // Nothing the types would drop or add: every field written, none invented.
            assert_eq!(serde_json::to_value(&typed).unwrap(), value, "{frame}");
            server += 1;
        } else {
            panic!("a transcript line starts with `> ` or `< `: {line}");
        }
    }
    assert!(server >= 8);
}

#[test]
fn the_protocol_page_lists_every_error_code_and_close_code() {
    for code in [
        DeviceErrorCode::InvalidRequest,
        DeviceErrorCode::IdempotencyConflict,
        DeviceErrorCode::MessageRejected,
        DeviceErrorCode::ThreadNotFound,
        DeviceErrorCode::ThreadAlreadyTerminal,
        DeviceErrorCode::ToolCallNotFound,
        DeviceErrorCode::InternalError,
    ] {
        let name = serde_json::to_value(code).unwrap();
        let row = format!("| `{}` |", name.as_str().unwrap());
        assert!(PAGE.contains(&row), "docs/protocol.md has no row {row}");
    }
    for code in [CLOSE_POLICY, CLOSE_GOING_AWAY, CLOSE_INTERNAL, CLOSE_RESYNC] {
        assert!(
            PAGE.contains(&format!("| {code} |")),
            "no close code {code}"
        );
    }
}
