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
    for text in ["nope", "[1]", "{}", r#"{"kind":"message.sent"}"#, r#"{"kind":7}"#] {
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
    match ClientFrame::decode(&json!({"kind": "thread.cancel", "chatId": "c",
                                      "requestId": "r-9", "threadId": 3}).to_string()) {
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
