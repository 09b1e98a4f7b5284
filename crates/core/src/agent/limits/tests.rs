//! The watch's counting, by itself: what counts as the same call, which limit wins, and the
//! words the person reads.

use super::*;

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: format!("{name}-{arguments}"),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

fn result(content: &str, is_error: bool) -> Message {
    Message::Tool {
        tool_call_id: "x".into(),
        name: "x".into(),
        content: content.to_owned(),
        is_error,
    }
}

fn limits(max_tool_calls: u32, repeated_call_limit: u32) -> TurnLimits {
    TurnLimits {
        max_tool_calls,
        max_duration: Duration::from_secs(60),
        repeated_call_limit,
    }
}

#[test]
fn the_same_call_with_the_same_result_stops_at_the_limit_whatever_the_key_order() {
    let watch = Watch::new(limits(50, 3));
    let missing = result("No such file: notes.txt", true);
    assert_eq!(
        watch.record(
            &call("FindFilesByName", r#"{"name":"notes.txt","root":"~"}"#),
            &missing
        ),
        None
    );
    // Something else in between does not reset the count.
    assert_eq!(
        watch.record(&call("ReadNote", r#"{"path":"a"}"#), &result("a", false)),
        None
    );
    assert_eq!(
        watch.record(
            &call("FindFilesByName", r#"{ "root": "~", "name": "notes.txt" }"#),
            &missing
        ),
        None
    );
    let stop = watch
        .record(
            &call("FindFilesByName", r#"{"name":"notes.txt","root":"~"}"#),
            &missing,
        )
        .expect("the third identical call stops the turn");
    assert_eq!(stop.reason, TurnEndReason::RepeatedToolCall);
    assert_eq!(stop.tool.as_deref(), Some("FindFilesByName"));
    assert_eq!(stop.count, 3);
    assert_eq!(watch.stopped(), Some(stop));
}

#[test]
fn a_call_whose_arguments_or_result_change_is_no_repeat() {
    let watch = Watch::new(limits(50, 2));
    assert_eq!(
        watch.record(&call("Search", r#"{"q":"a"}"#), &result("none", false)),
        None
    );
    assert_eq!(
        watch.record(&call("Search", r#"{"q":"b"}"#), &result("none", false)),
        None
    );
    assert_eq!(
        watch.record(&call("Search", r#"{"q":"a"}"#), &result("found", false)),
        None
    );
    assert_eq!(
        watch.record(&call("Search", r#"{"q":"a"}"#), &result("none", true)),
        None
    );
    assert_eq!(
        watch.record(&call("Other", r#"{"q":"a"}"#), &result("none", false)),
        None
    );
    assert_eq!(watch.stopped(), None);
}

#[test]
fn the_call_cap_stops_the_turn_and_the_first_stop_stays() {
    let watch = Watch::new(limits(3, 3));
    for index in 0..2 {
        let arguments = format!(r#"{{"n":{index}}}"#);
        assert_eq!(
            watch.record(&call("Compute", &arguments), &result("1", false)),
            None
        );
    }
    let stop = watch
        .record(&call("Compute", r#"{"n":2}"#), &result("1", false))
        .expect("the third call reaches the cap");
    assert_eq!(stop.reason, TurnEndReason::ToolCallLimit);
    assert_eq!(stop.count, 3);
    // Later records and the deadline do not replace it.
    assert_eq!(
        watch.record(&call("Compute", r#"{"n":3}"#), &result("1", false)),
        Some(stop.clone())
    );
    assert_eq!(watch.stop_for_time(), stop);
}

#[test]
fn the_person_is_told_in_their_language_with_counted_words() {
    let repeated = Stop {
        reason: TurnEndReason::RepeatedToolCall,
        tool: Some("SearchKnowledge".into()),
        count: 3,
    };
    let english = repeated.text(Language::En);
    assert!(english.contains("SearchKnowledge 3 times"), "{english}");
    let russian = repeated.text(Language::Ru);
    assert!(russian.contains("SearchKnowledge 3 раза"), "{russian}");
    let calls = Stop {
        reason: TurnEndReason::ToolCallLimit,
        tool: None,
        count: 25,
    };
    assert!(calls.text(Language::Ru).contains("25 вызовов инструментов"));
    assert!(calls.text(Language::En).contains("25 tool calls"));
    let time = Stop {
        reason: TurnEndReason::TimeLimit,
        tool: None,
        count: 900,
    };
    assert!(time.text(Language::En).contains("900 seconds"));
    assert!(time.text(Language::Ru).contains("900 секунд"));
    assert!(time.detail().contains("max_turn_seconds"));
}

#[test]
fn open_calls_of_the_last_answer_get_a_result() {
    let mut history = vec![
        Message::user("go"),
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![call("A", "{}"), call("B", "{}")],
        },
        Message::Tool {
            tool_call_id: "A-{}".into(),
            name: "A".into(),
            content: "done".into(),
            is_error: false,
        },
    ];
    answer_open_calls(&mut history);
    assert_eq!(history.len(), 4);
    match &history[3] {
        Message::Tool {
            tool_call_id,
            is_error,
            content,
            ..
        } => {
            assert_eq!(tool_call_id, "B-{}");
            assert!(*is_error);
            assert_eq!(content, NOT_RUN_AFTER_STOP);
        }
        other => panic!("not a tool result: {other:?}"),
    }
    // Nothing open: nothing added.
    answer_open_calls(&mut history);
    assert_eq!(history.len(), 4);
}
