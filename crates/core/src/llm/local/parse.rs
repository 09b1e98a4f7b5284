//! Reading a local model's answer under the strict-JSON contract, with the original's recovery
//! rules (§7.6) for models that stray from it (no grammar, a small model, a cut-off answer).
//!
//! Rules, in order: control-token wrapper lines (`<|im_start|>assistant`, `<turn|>`, code
//! fences) are dropped; the first JSON object is read; `final` → its content; `tool_calls` →
//! the calls (ids made unique, a schema written where arguments belong turned into its
//! values); a bare call object `{"name","arguments"}` → one call; `{"result":"..."}` → final;
//! any other object type → a plain final of its text. When no object parses: a broken final
//! (inner quotes, broken separators, a missing closing quote) is recovered; a cut-off call is
//! closed and read again; text that is not JSON at all is the final answer; anything else is
//! [`ParseError`].
//!
//! Only an object whose braces balance is read as written: an object inside one that never
//! closes (the arguments of a call cut at the token limit) is not the answer. [`read_reply`]
//! also says whether the answer had to be closed, so a caller that knows generation stopped at
//! the token limit can refuse to run calls whose end it never saw.
//!
//! Invariant: the parser never invents a tool name; calls keep the order the model wrote.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::llm::ToolCall;

/// What a local model answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The answer for the person.
    Final(String),
    /// Tools to call, in order.
    ToolCalls(Vec<ToolCall>),
}

/// The answer could not be read as the contract's JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Local provider returned invalid JSON: {preview}")]
pub(crate) struct ParseError {
    /// The start of what it wrote.
    pub(crate) preview: String,
}

/// An answer read, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    /// What the model answered.
    pub(crate) reply: Reply,
    /// The answer was cut inside an object and read only after closing it.
    pub(crate) closed: bool,
}

/// Reads `raw` (see the module's rules).
#[cfg(test)]
pub(crate) fn parse_reply(raw: &str) -> Result<Reply, ParseError> {
    read_reply(raw).map(|reading| reading.reply)
}

/// Reads `raw` and says whether it had to be closed (see the module's rules).
pub(crate) fn read_reply(raw: &str) -> Result<Reading, ParseError> {
    let as_written = |reply| Reading {
        reply,
        closed: false,
    };
    let text = strip_wrappers(raw);
    let text = text.trim();
    let invalid = || ParseError {
        preview: text.chars().take(200).collect(),
    };
    if text.is_empty() {
        return Err(invalid());
    }
    if let Some(value) = first_object(text) {
        return interpret(value, text).map(as_written).ok_or_else(invalid);
    }
    if let Some(content) = broken_final(text) {
        return Ok(as_written(Reply::Final(content)));
    }
    if let Some(value) = closed(text) {
        return interpret(value, text)
            .map(|reply| Reading {
                reply,
                closed: true,
            })
            .ok_or_else(invalid);
    }
    if !text.starts_with('{') && !text.starts_with('[') {
        return Ok(as_written(Reply::Final(text.to_owned())));
    }
    Err(invalid())
}

/// Drops lines that are only control tokens or code fences, and control tokens inside lines.
fn strip_wrappers(raw: &str) -> String {
    raw.lines()
        .map(strip_control_tokens)
        .filter(|line| {
            let trimmed = line.trim();
            !(trimmed.starts_with("```") || matches!(trimmed, "assistant" | "model"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Removes `<|...|>`, `<|turn>`, `<turn|>`, `<start_of_turn>`-style tokens from a line.
fn strip_control_tokens(line: &str) -> String {
    let mut out = line.to_owned();
    for (open, close) in [("<|", "|>"), ("<|", ">"), ("<", "|>")] {
        while let Some(start) = out.find(open) {
            let Some(length) = out.get(start + open.len()..).and_then(|rest| {
                rest.find(close).filter(|at| {
                    rest.get(..*at).is_some_and(|inner| {
                        inner.len() <= 24
                            && inner
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
                    })
                })
            }) else {
                break;
            };
            out.replace_range(start..start + open.len() + length + close.len(), "");
        }
    }
    for token in [
        "<start_of_turn>",
        "<end_of_turn>",
        "<eos>",
        "<bos>",
        "</s>",
        "<s>",
    ] {
        out = out.replace(token, "");
    }
    out
}

/// The first balanced `{...}` in `text` that parses as a JSON object. A `{` that never closes
/// ends the search: everything after it is inside that cut object.
fn first_object(text: &str) -> Option<Value> {
    let mut from = 0;
    while let Some(offset) = text.get(from..)?.find('{') {
        let start = from + offset;
        let end = balanced_end(text, start)?;
        if let Ok(value) = serde_json::from_str::<Value>(text.get(start..end)?)
            && value.is_object()
        {
            return Some(value);
        }
        from = start + 1;
    }
    None
}

/// The end (exclusive) of the object starting at `start`, strings respected.
fn balanced_end(text: &str, start: usize) -> Option<usize> {
    let mut depth = 0_usize;
    let mut in_string = false;
    let mut escaped = false;
    for (at, c) in text.get(start..)?.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(start + at + c.len_utf8());
                }
            }
            _ => {}
        }
    }
    None
}

fn interpret(value: Value, text: &str) -> Option<Reply> {
    let object = value.as_object()?;
    match object.get("type").and_then(Value::as_str) {
        Some("final") => Some(Reply::Final(
            object.get("content").map(as_text).unwrap_or_default(),
        )),
        Some("tool_calls") => {
            let calls = object.get("calls").or_else(|| object.get("tool_calls"))?;
            let calls = match calls {
                Value::Array(items) => items.iter().filter_map(call).collect::<Vec<_>>(),
                single @ Value::Object(_) => call(single).into_iter().collect(),
                _ => Vec::new(),
            };
            (!calls.is_empty()).then(|| Reply::ToolCalls(unique_ids(calls)))
        }
        _ if object.contains_key("name") && object.contains_key("arguments") => {
            call(&value).map(|call| Reply::ToolCalls(unique_ids(vec![call])))
        }
        _ => {
            let content = ["result", "content", "answer", "text", "response"]
                .iter()
                .find_map(|key| object.get(*key))
                .map(as_text)
                .unwrap_or_else(|| text.to_owned());
            Some(Reply::Final(content))
        }
    }
}

fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One call object: `{"id","name","arguments"}`, or OpenAI's `{"function":{...}}`.
fn call(value: &Value) -> Option<ToolCall> {
    let object = value.as_object()?;
    let inner = object
        .get("function")
        .and_then(Value::as_object)
        .unwrap_or(object);
    let name = inner
        .get("name")
        .or_else(|| inner.get("tool"))
        .and_then(Value::as_str)?
        .trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match inner.get("arguments").or_else(|| inner.get("parameters")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::String(text.clone())),
        Some(other) => other.clone(),
    };
    let arguments = depollute(arguments);
    Some(ToolCall {
        id: object
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned(),
        name: name.to_owned(),
        arguments: match arguments {
            Value::String(text) => text,
            other => other.to_string(),
        },
    })
}

/// A schema written where the arguments belong (`{"type":"object","properties":{"path":
/// {"type":"string","value":"a.txt"}}}`) becomes its values (`{"path":"a.txt"}`); a property
/// with no value is left out.
fn depollute(arguments: Value) -> Value {
    let Value::Object(object) = &arguments else {
        return arguments;
    };
    let Some(Value::Object(properties)) = object.get("properties") else {
        return arguments;
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return arguments;
    }
    let mut values = Map::new();
    for (name, property) in properties {
        let value = match property {
            Value::Object(schema) if schema.contains_key("type") => ["value", "default", "example"]
                .iter()
                .find_map(|key| schema.get(*key).cloned()),
            Value::Object(schema) => Some(Value::Object(schema.clone())),
            plain => Some(plain.clone()),
        };
        if let Some(value) = value {
            values.insert(name.clone(), value);
        }
    }
    Value::Object(values)
}

/// Ids as written when present and unique, else `call_<n>`.
fn unique_ids(mut calls: Vec<ToolCall>) -> Vec<ToolCall> {
    let mut seen = HashSet::new();
    for (index, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() || !seen.insert(call.id.clone()) {
            let mut n = index + 1;
            while seen.contains(&format!("call_{n}")) {
                n += 1;
            }
            call.id = format!("call_{n}");
            seen.insert(call.id.clone());
        }
    }
    calls
}

/// A final answer whose JSON is broken: `"type"` `final`, then `"content"` with whatever
/// separators, then the text up to the last quote before the closing brace (or the end).
fn broken_final(text: &str) -> Option<String> {
    let pattern = regex::Regex::new(
        r#"^\{\s*"type"\s*[:=]?\s*"final"\s*[,;]?\s*"content"\s*[:=]?\s*"(?s)(.*)$"#,
    )
    .ok()?;
    let body = pattern.captures(text)?.get(1)?.as_str();
    let body = body.trim_end();
    let body = body.strip_suffix('}').map_or(body, str::trim_end);
    let body = body.strip_suffix('"').unwrap_or(body);
    Some(unescape_lenient(body))
}

/// JSON string escapes decoded where valid; anything else (a bare quote) kept as written.
fn unescape_lenient(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) => out.push(decoded),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// A cut-off object closed: an open string ended, open arrays and objects closed in order.
fn closed(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let body = text.get(start..)?;
    let mut stack = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in body.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                stack.pop()?;
            }
            _ => {}
        }
    }
    let mut repaired = body.trim_end().to_owned();
    if escaped {
        repaired.pop();
    }
    if in_string {
        repaired.push('"');
    }
    let trimmed = repaired.trim_end_matches([',', ':', ' ', '\n']).len();
    repaired.truncate(trimmed);
    while let Some(close) = stack.pop() {
        repaired.push(close);
    }
    serde_json::from_str::<Value>(&repaired)
        .ok()
        .filter(Value::is_object)
}

#[cfg(test)]
mod tests;
