use serde_json::{Value, json};

use super::set_member;

const PATH: &[&str] = &["mcpServers", "souz"];

/// The edit, checked to parse to `expected`.
fn edited(text: &str, expected: &Value) -> String {
    let out = set_member(text, PATH, &json!({"command": "/s", "args": ["mcp-stdio"]}))
        .unwrap_or_else(|| panic!("no edit of {text}"));
    let parsed: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(&parsed, expected, "{out}");
    out
}

fn souz() -> Value {
    json!({"command": "/s", "args": ["mcp-stdio"]})
}

#[test]
fn a_new_server_is_appended_in_the_files_own_style_and_nothing_else_moves() {
    let text = "{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"files\": {\n      \"command\": \"npx\"\n    }\n  },\n  \"alpha\": [1, 2]\n}\n";
    let out = edited(
        text,
        &json!({"zeta": 1, "alpha": [1, 2], "mcpServers": {"files": {"command": "npx"}, "souz": souz()}}),
    );
    assert_eq!(
        out,
        "{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"files\": {\n      \"command\": \"npx\"\n    },\n    \"souz\": {\n      \"args\": [\n        \"mcp-stdio\"\n      ],\n      \"command\": \"/s\"\n    }\n  },\n  \"alpha\": [1, 2]\n}\n"
    );
}

#[test]
fn an_existing_entry_is_replaced_in_place() {
    let text = "{\"b\":2,\"mcpServers\":{\"souz\":{\"command\":\"/old\"},\"x\":{}},\"a\":1}";
    let out = edited(
        text,
        &json!({"b": 2, "a": 1, "mcpServers": {"souz": souz(), "x": {}}}),
    );
    assert_eq!(
        out,
        "{\"b\":2,\"mcpServers\":{\"souz\":{\"args\":[\"mcp-stdio\"],\"command\":\"/s\"},\"x\":{}},\"a\":1}"
    );
}

#[test]
fn missing_or_empty_server_maps_are_created() {
    let out = edited(
        "{\n    \"k\": \"v\"\n}",
        &json!({"k": "v", "mcpServers": {"souz": souz()}}),
    );
    assert!(
        out.starts_with("{\n    \"k\": \"v\",\n    \"mcpServers\": {\n        \"souz\": {\n"),
        "{out}"
    );
    edited("{}", &json!({"mcpServers": {"souz": souz()}}));
    edited(
        " { \"mcpServers\" : { } } ",
        &json!({"mcpServers": {"souz": souz()}}),
    );
}

#[test]
fn strings_with_brackets_quotes_and_escaped_keys_do_not_confuse_the_scan() {
    let text = r#"{"a}": "x\"}{[", "m\u0063pServers": {"q": ["]", "}"]}, "z": "\\"}"#;
    // `m\u0063pServers` is `mcpServers`: the edit lands in it.
    edited(
        text,
        &json!({"a}": "x\"}{[", "mcpServers": {"q": ["]", "}"], "souz": souz()}, "z": "\\"}),
    );
}

#[test]
fn the_last_of_duplicate_keys_is_edited_as_serde_keeps_the_last() {
    let text = r#"{"mcpServers": 1, "mcpServers": {"souz": 2}}"#;
    let out = edited(text, &json!({"mcpServers": {"souz": souz()}}));
    assert!(out.starts_with(r#"{"mcpServers": 1, "#), "{out}");
}

#[test]
fn shapes_it_cannot_edit_are_left_to_the_whole_file_rewrite() {
    for text in [
        "[]",
        "{\"mcpServers\": []}",
        "{\"a\" 1}",
        "{\"a\": 1",
        "{\"a\": {",
        "\"x\"",
        "",
    ] {
        if let Some(out) = set_member(text, PATH, &souz()) {
            // Whatever it returns must not be trusted blindly; the caller checks. Here it
            // must at least not pretend a broken file is fine.
            assert!(
                serde_json::from_str::<Value>(text).is_ok(),
                "{text} -> {out}"
            );
        }
    }
}

#[test]
fn deep_nesting_is_scanned_without_recursion() {
    let depth = 1_000_000;
    let text = format!(
        "{{\"deep\": {}{}, \"mcpServers\": {{}}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let out = set_member(&text, PATH, &souz()).expect("edited");
    assert!(out.ends_with("\"mcpServers\": {\n  \"souz\": {\n    \"args\": [\n      \"mcp-stdio\"\n    ],\n    \"command\": \"/s\"\n  }\n}}"), "{}", &out[out.len() - 120..]);
}
