use super::*;

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn final_(text: &str) -> Result<Reply, ParseError> {
    Ok(Reply::Final(text.into()))
}

type Case = (&'static str, &'static str, Result<Reply, ParseError>);

fn final_cases() -> Vec<Case> {
    vec![
        (
            "well-formed final",
            r#"{"type":"final","content":"Hello"}"#,
            final_("Hello"),
        ),
        (
            "well-formed calls",
            r#"{"type":"tool_calls","calls":[{"id":"a","name":"ReadFile","arguments":{"path":"x"}}]}"#,
            Ok(Reply::ToolCalls(vec![call(
                "a",
                "ReadFile",
                r#"{"path":"x"}"#,
            )])),
        ),
        (
            "control-token wrapper lines and a fence",
            "<|im_start|>assistant\n```json\n{\"type\":\"final\",\"content\":\"Hi\"}\n```\n<|im_end|>",
            final_("Hi"),
        ),
        (
            "gemma turn markers",
            "<|turn>assistant\n{\"type\":\"final\",\"content\":\"Ok\"}\n<turn|>",
            final_("Ok"),
        ),
        (
            "prose around the object",
            "Sure! Here you go: {\"type\":\"final\",\"content\":\"42\"} Hope it helps.",
            final_("42"),
        ),
    ]
}

fn call_cases() -> Vec<Case> {
    vec![
        (
            "duplicate and missing ids made unique",
            r#"{"type":"tool_calls","calls":[{"id":"x","name":"A","arguments":{}},{"id":"x","name":"B","arguments":{}},{"name":"C"}]}"#,
            Ok(Reply::ToolCalls(vec![
                call("x", "A", "{}"),
                call("call_2", "B", "{}"),
                call("call_3", "C", "{}"),
            ])),
        ),
        (
            "schema-polluted arguments",
            r#"{"type":"tool_calls","calls":[{"id":"1","name":"ReadFile","arguments":{"type":"object","properties":{"path":{"type":"string","value":"a.txt"},"limit":{"type":"integer"}}}}]}"#,
            Ok(Reply::ToolCalls(vec![call(
                "1",
                "ReadFile",
                r#"{"path":"a.txt"}"#,
            )])),
        ),
        (
            "arguments as a JSON string",
            r#"{"type":"tool_calls","calls":[{"id":"1","name":"Calc","arguments":"{\"expr\":\"2+2\"}"}]}"#,
            Ok(Reply::ToolCalls(vec![call(
                "1",
                "Calc",
                r#"{"expr":"2+2"}"#,
            )])),
        ),
        (
            "bare single call object",
            r#"{"name":"Calc","arguments":{"expr":"1"}}"#,
            Ok(Reply::ToolCalls(vec![call(
                "call_1",
                "Calc",
                r#"{"expr":"1"}"#,
            )])),
        ),
        (
            "openai-shaped call",
            r#"{"type":"tool_calls","calls":[{"id":"q","function":{"name":"Calc","arguments":"{}"}}]}"#,
            Ok(Reply::ToolCalls(vec![call("q", "Calc", "{}")])),
        ),
        ("result object", r#"{"result":"done"}"#, final_("done")),
        (
            "unknown type is a plain final",
            r#"{"type":"answer","content":"yes"}"#,
            final_("yes"),
        ),
        (
            "unescaped inner quotes",
            r#"{"type":"final","content":"He said "hi" to me"}"#,
            final_(r#"He said "hi" to me"#),
        ),
        (
            "broken separators",
            r#"{"type" "final" "content" "a\nb"}"#,
            final_("a\nb"),
        ),
        (
            "missing closing quote and brace (cut off)",
            r#"{"type":"final","content":"The answer is 4"#,
            final_("The answer is 4"),
        ),
        (
            "cut-off tool call closed",
            r#"{"type":"tool_calls","calls":[{"id":"1","name":"Calc","arguments":{"expr":"2+"#,
            Ok(Reply::ToolCalls(vec![call(
                "1",
                "Calc",
                r#"{"expr":"2+"}"#,
            )])),
        ),
        ("plain text", "Just words.", final_("Just words.")),
        (
            "empty",
            "  \n",
            Err(ParseError {
                preview: String::new(),
            }),
        ),
        (
            "json that is not the contract and cannot be read",
            r#"{"type":"tool_calls","calls":[{"id":1}]}"#,
            Err(ParseError {
                preview: r#"{"type":"tool_calls","calls":[{"id":1}]}"#.into(),
            }),
        ),
        (
            "an unreadable object",
            "{{{ nope",
            Err(ParseError {
                preview: "{{{ nope".into(),
            }),
        ),
    ]
}

/// Objects inside others: a cut call's complete arguments, an answer after prose.
fn nested_cases() -> Vec<Case> {
    vec![
        (
            "a call cut after its arguments is closed, not read as its arguments",
            r#"{"type":"tool_calls","calls":[{"id":"call_1","name":"SearchKnowledge","arguments":{"knowledgeId":"k", "regex":"a.b"}"#,
            Ok(Reply::ToolCalls(vec![call(
                "call_1",
                "SearchKnowledge",
                r#"{"knowledgeId":"k","regex":"a.b"}"#,
            )])),
        ),
        (
            "prose, then an object",
            r#"Here it is: {"type":"final","content":"hi"} done"#,
            final_("hi"),
        ),
    ]
}

#[test]
fn malformed_outputs_are_recovered_by_the_original_rules() {
    for (case, raw, expected) in final_cases()
        .into_iter()
        .chain(call_cases())
        .chain(nested_cases())
    {
        assert_eq!(parse_reply(raw), expected, "{case}: {raw}");
    }
}

#[test]
fn a_reply_is_marked_closed_only_when_it_had_to_be_closed() {
    let whole = r#"{"type":"tool_calls","calls":[{"id":"1","name":"A","arguments":{"x":1}}]}"#;
    let read = read_reply(whole).expect("whole");
    assert!(!read.closed, "{read:?}");
    for cut in [
        r#"{"type":"tool_calls","calls":[{"id":"1","name":"A","arguments":{"x":1}"#,
        r#"{"type":"tool_calls","calls":[{"id":"1","name":"A","arguments":{"x":"ab"#,
    ] {
        let read = read_reply(cut).expect("closed");
        assert!(
            read.closed && matches!(read.reply, Reply::ToolCalls(_)),
            "{cut}: {read:?}"
        );
    }
    let cut_final = read_reply(r#"{"type":"final","content":"The answer is 4"#).expect("final");
    assert!(!cut_final.closed, "a broken final is recovered, not closed");
}

#[test]
fn the_error_names_the_original_message() {
    let error = parse_reply("{]").expect_err("invalid");
    assert!(
        error
            .to_string()
            .starts_with("Local provider returned invalid JSON: {]"),
        "{error}"
    );
}

#[test]
fn strict_contract_json_is_told_from_what_needs_recovery() {
    use crate::llm::local::is_strict_contract;
    assert!(is_strict_contract(r#"{"type":"final","content":"hi"}"#));
    assert!(is_strict_contract(
        r#" {"type":"tool_calls","calls":[{"id":"1","name":"A","arguments":{}}]} "#
    ));
    for raw in [
        r#"{"type":"final","content":"hi","extra":1}"#,
        r#"{"type":"tool_calls","calls":[]}"#,
        r#"{"type":"tool_calls","calls":[{"id":"1","name":"A","arguments":"{}"}]}"#,
        r#"Sure: {"type":"final","content":"hi"}"#,
        r#"{"result":"x"}"#,
    ] {
        assert!(!is_strict_contract(raw), "{raw}");
    }
}
