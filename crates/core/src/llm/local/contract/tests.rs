use serde_json::json;

use super::*;
use crate::llm::ToolCall;

fn tool(name: &str, description: &str) -> ToolDeclaration {
    ToolDeclaration {
        name: name.into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        }),
    }
}

fn tools(n: usize) -> Vec<ToolDeclaration> {
    (0..n)
        .map(|i| {
            tool(
                &format!("Tool{i}"),
                "Reads a file. Long details follow here.",
            )
        })
        .collect()
}

#[test]
fn guidance_follows_tool_count_and_context_size() {
    for (count, context, level) in [
        (4, 16000, Guidance::Full),
        (5, 16000, Guidance::Compact),
        (12, 16000, Guidance::Compact),
        (13, 16000, Guidance::Minimal),
        (8, 8192, Guidance::Compact),
        (9, 8192, Guidance::Minimal),
        (9, 8193, Guidance::Compact),
    ] {
        assert_eq!(
            guidance_level(count, context),
            level,
            "{count} tools, {context}"
        );
    }
    let full = tool_guidance(&tools(2), 16000);
    assert!(full.contains("Long details follow here."), "{full}");
    assert!(full.contains("\"required\":[\"path\"]"), "{full}");
    let compact = tool_guidance(&tools(6), 16000);
    assert!(compact.contains("- Tool0(limit: integer?, path: string): Reads a file."));
    assert!(!compact.contains("Long details"), "{compact}");
    let minimal = tool_guidance(&tools(13), 16000);
    assert!(minimal.contains("- Tool12(limit, path)"), "{minimal}");
}

#[test]
fn guidance_never_exceeds_its_budget() {
    let many = tools(400);
    for context in [4096, 32000] {
        let text = tool_guidance(&many, context);
        assert!(text.chars().count() <= budget(context), "{}", text.len());
        assert!(text.contains("Tool0("));
        assert!(text.contains("Also: "), "the rest is named");
    }
    // Full guidance that does not fit falls back to compact.
    let long = vec![ToolDeclaration {
        description: "x".repeat(5000),
        ..tool("Big", "")
    }];
    assert!(tool_guidance(&long, 4096).starts_with("Tools:\n- Big(limit: integer?, path: string)"));
}

#[test]
fn the_conversation_is_rendered_in_the_contract_shape() {
    let call = ToolCall {
        id: "c1".into(),
        name: "ReadFile".into(),
        arguments: r#"{"path":"a.txt"}"#.into(),
    };
    let messages = vec![
        Message::system("You are Souz."),
        Message::user("read a.txt"),
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![call.clone()],
        },
        Message::Tool {
            tool_call_id: "c1".into(),
            name: "ReadFile".into(),
            content: "y".repeat(4000),
            is_error: true,
        },
        Message::assistant("It is long."),
    ];
    let turns = render(&messages, &tools(1), 4096);
    let roles: Vec<&str> = turns.iter().map(|turn| turn.role).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
    assert!(
        turns[0]
            .content
            .starts_with("You are Souz.\n\nReply with exactly one JSON object")
    );
    assert!(turns[0].content.contains("Tools:\n- Tool0:"));
    assert_eq!(
        serde_json::from_str::<Value>(&turns[2].content).expect("json"),
        json!({"type":"tool_calls","calls":[{"id":"c1","name":"ReadFile","arguments":{"path":"a.txt"}}]})
    );
    let result: Value = serde_json::from_str(&turns[3].content).expect("json");
    assert_eq!(result["tool_result"]["tool_call_id"], "c1");
    assert_eq!(result["tool_result"]["tool_name"], "ReadFile");
    assert_eq!(result["tool_result"]["is_error"], true);
    assert_eq!(result["tool_result"]["content"]["truncated"], true);
    assert_eq!(result["tool_result"]["content"]["original_length"], 4000);
    assert_eq!(
        result["tool_result"]["content"]["preview"]
            .as_str()
            .map(str::len),
        Some(3500)
    );
    assert_eq!(
        turns[4].content,
        r#"{"type":"final","content":"It is long."}"#
    );
    // Without tools: the final-only contract and no tool list.
    let plain = render(&[Message::user("hi")], &[], 4096);
    assert!(
        plain[0]
            .content
            .starts_with("Reply with exactly one JSON object")
    );
    assert!(!plain[0].content.contains("tool_calls"));
}

#[test]
fn the_grammar_names_exactly_the_requested_tools() {
    let final_only = grammar(&[]);
    assert!(final_only.starts_with("root ::= final\n"), "{final_only}");
    assert!(!final_only.contains("calls"));
    assert!(final_only.contains(r#"final ::= "{\"type\":\"final\",\"content\":" str "}""#));
    let with_tools = grammar(&[tool("ReadFile", ""), tool("weird\"name", "")]);
    assert!(with_tools.starts_with("root ::= final | calls\n"));
    assert!(
        with_tools.contains("call ::= call0 | call1\n"),
        "{with_tools}"
    );
    assert!(
        with_tools.contains(
            r#"call0 ::= "{\"id\":" str ",\"name\":\"ReadFile\",\"arguments\":" args0 "}""#
        ),
        "{with_tools}"
    );
    assert!(
        with_tools.contains(r#"\"name\":\"weird\\\"name\""#),
        "{with_tools}"
    );
    // Each property once, the required one first, values of their type.
    assert!(
        with_tools.contains(
            r#"args0 ::= "{" ws "\"path\"" ws ":" ws str (ws "," ws "\"limit\"" ws ":" ws integer)? ws "}""#
        ),
        "{with_tools}"
    );
    let required = calls_grammar(&[tool("ReadFile", "")]);
    assert!(required.starts_with("root ::= calls\n"), "{required}");
    // Optional-only and enum properties; a schema it cannot express takes any object.
    let options = grammar(&[
        ToolDeclaration {
            name: "Set".into(),
            description: String::new(),
            parameters: json!({"type":"object","properties":{
                "mode": {"type":"string","enum":["on","off"]},
                "level": {"type":"number"},
            }}),
        },
        ToolDeclaration {
            name: "Any".into(),
            description: String::new(),
            parameters: json!({"type":"object"}),
        },
    ]);
    assert!(
        options.contains(
            r#"args0 ::= "{" ws ("\"level\"" ws ":" ws number (ws "," ws "\"mode\"" ws ":" ws ("\"on\"" | "\"off\""))? | "\"mode\"" ws ":" ws ("\"on\"" | "\"off\""))? ws "}""#
        ),
        "{options}"
    );
    assert!(options.contains("args1 ::= object\n"), "{options}");
    // Every rule used is defined.
    let literals = regex::Regex::new(r#""(\\.|[^"\\])*"|\[(\\.|[^\]\\])*\]"#).expect("regex");
    for text in [&with_tools, &options, &final_only] {
        let defined: Vec<&str> = text
            .lines()
            .filter_map(|line| line.split_once(" ::= ").map(|(name, _)| name))
            .collect();
        for line in text.lines() {
            let (_, body) = line.split_once(" ::= ").expect("a rule");
            let bare = literals.replace_all(body, " ");
            for word in bare.split(|c: char| !c.is_ascii_alphanumeric()) {
                if !word.is_empty() && word.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                {
                    assert!(
                        defined.contains(&word),
                        "{word} is used but not defined in {text}"
                    );
                }
            }
        }
    }
}
