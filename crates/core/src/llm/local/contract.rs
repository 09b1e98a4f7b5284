//! The strict-JSON contract of in-process models (original §7.6): what the model is told, what
//! the grammar lets it write, and how the conversation is rendered back to it.
//!
//! A local model answers with exactly one JSON object: `{"type":"final","content":"..."}` or
//! `{"type":"tool_calls","calls":[{"id","name","arguments":{}}]}`. The instructions say so,
//! the GBNF grammar ([`grammar`]) makes any other output impossible when the engine samples
//! under it, and [`super::parse`] recovers what a model wrote without it.
//!
//! Invariants: tool guidance is FULL, COMPACT or MINIMAL by tool count and context size and
//! never longer than its budget (3,500 characters for contexts up to 8,192 tokens, else
//! 7,000); a tool result is rendered as a user message `{"tool_result":{...}}` whose content is
//! cut to the same budget with its original length said; the grammar only names the tools of
//! the request. Engine-independent: shared by every backend.

use serde_json::{Value, json};

use crate::llm::{Message, ToolDeclaration};

/// Contexts up to this many tokens are "small": less guidance, shorter tool results.
pub(crate) const SMALL_CONTEXT: u32 = 8192;

/// How much is said about each tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Guidance {
    /// Name, description and the whole parameter schema.
    Full,
    /// Name, the description's first sentence, the arguments with their types.
    Compact,
    /// Name and argument names.
    Minimal,
}

/// The guidance level for `tools` tools in a context of `context` tokens (original: more than 4
/// tools compact, more than 12 minimal; in a small context more than 8 minimal).
pub(crate) fn guidance_level(tools: usize, context: u32) -> Guidance {
    let small = context <= SMALL_CONTEXT;
    if tools > 12 || (small && tools > 8) {
        Guidance::Minimal
    } else if tools > 4 {
        Guidance::Compact
    } else {
        Guidance::Full
    }
}

/// The character budget of tool guidance and of one tool result.
pub(crate) fn budget(context: u32) -> usize {
    if context <= SMALL_CONTEXT { 3500 } else { 7000 }
}

const CONTRACT_FINAL: &str = "Reply with exactly one JSON object and nothing else: \
{\"type\":\"final\",\"content\":\"<your answer>\"}. No prose, markdown fences or control \
tokens outside the object.";

const CONTRACT_TOOLS: &str = "Reply with exactly one JSON object and nothing else, one of:\n\
{\"type\":\"final\",\"content\":\"<your answer>\"}\n\
{\"type\":\"tool_calls\",\"calls\":[{\"id\":\"call_1\",\"name\":\"<tool name>\",\"arguments\":{}}]}\n\
Rules: no prose, markdown fences or control tokens outside the object; call only the tools \
listed below; every call has a unique id and only the keys id, name and arguments; arguments \
hold concrete values, never a schema or a placeholder. After a tool result, either call \
another tool or give the final answer.";

/// The system prompt: the conversation's own system messages, then the contract and the tool
/// guidance.
pub(crate) fn system_prompt(
    messages: &[Message],
    tools: &[ToolDeclaration],
    context: u32,
) -> String {
    let mut parts: Vec<String> = messages
        .iter()
        .filter_map(|message| match message {
            Message::System { content } if !content.trim().is_empty() => {
                Some(content.trim().to_owned())
            }
            _ => None,
        })
        .collect();
    if tools.is_empty() {
        parts.push(CONTRACT_FINAL.to_owned());
    } else {
        parts.push(CONTRACT_TOOLS.to_owned());
        parts.push(tool_guidance(tools, context));
    }
    parts.join("\n\n")
}

/// What the model is told about `tools`, within [`budget`]: the level [`guidance_level`]
/// picks, lowered further while the text does not fit; tools that still do not fit are named
/// only.
pub(crate) fn tool_guidance(tools: &[ToolDeclaration], context: u32) -> String {
    let limit = budget(context);
    let mut level = guidance_level(tools.len(), context);
    loop {
        let text = render_tools(tools, level);
        if text.chars().count() <= limit || level == Guidance::Minimal {
            return cut_guidance(text, tools, limit);
        }
        level = match level {
            Guidance::Full => Guidance::Compact,
            _ => Guidance::Minimal,
        };
    }
}

fn render_tools(tools: &[ToolDeclaration], level: Guidance) -> String {
    let mut text = String::from("Tools:");
    for tool in tools {
        text.push('\n');
        text.push_str(&render_tool(tool, level));
    }
    text
}

fn render_tool(tool: &ToolDeclaration, level: Guidance) -> String {
    match level {
        Guidance::Full => format!(
            "- {}: {} Arguments (JSON Schema): {}",
            tool.name,
            tool.description.trim(),
            tool.parameters
        ),
        Guidance::Compact => {
            let arguments: Vec<String> = arguments(&tool.parameters)
                .into_iter()
                .map(|(name, kind, required)| {
                    format!("{name}: {kind}{}", if required { "" } else { "?" })
                })
                .collect();
            format!(
                "- {}({}): {}",
                tool.name,
                arguments.join(", "),
                first_sentence(&tool.description)
            )
        }
        Guidance::Minimal => {
            let names: Vec<String> = arguments(&tool.parameters)
                .into_iter()
                .map(|(name, _, _)| name)
                .collect();
            format!("- {}({})", tool.name, names.join(", "))
        }
    }
}

/// Minimal guidance that is still too long keeps the tools that fit and names the rest.
fn cut_guidance(text: String, tools: &[ToolDeclaration], limit: usize) -> String {
    if text.chars().count() <= limit {
        return text;
    }
    let mut kept = String::from("Tools:");
    let mut left = Vec::new();
    for tool in tools {
        let line = render_tool(tool, Guidance::Minimal);
        if left.is_empty() && kept.chars().count() + line.chars().count() < limit * 3 / 4 {
            kept.push('\n');
            kept.push_str(&line);
        } else {
            left.push(tool.name.as_str());
        }
    }
    let head = format!("{kept}\nAlso: ");
    let room = limit.saturating_sub(head.chars().count());
    let names: String = left.join(", ").chars().take(room).collect();
    format!("{head}{names}")
}

/// (name, type, required) of the schema's properties, in schema order.
fn arguments(schema: &Value) -> Vec<(String, String, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, property)| {
                    let kind = property
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("any")
                        .to_owned();
                    (name.clone(), kind, required.contains(&name.as_str()))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|(at, c)| {
            *c == '.'
                && text
                    .get(at + 1..)
                    .is_none_or(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
        })
        .map_or(text.len(), |(at, _)| at + 1);
    text.get(..end).unwrap_or(text).chars().take(160).collect()
}

/// One turn of the rendered conversation: a role and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Turn {
    /// `system`, `user` or `assistant`.
    pub(crate) role: &'static str,
    /// The text.
    pub(crate) content: String,
}

/// The conversation as the model sees it: one system turn ([`system_prompt`]), then the
/// user and assistant turns; assistant answers in the contract's own JSON, tool results as
/// user turns `{"tool_result":{...}}`.
pub(crate) fn render(messages: &[Message], tools: &[ToolDeclaration], context: u32) -> Vec<Turn> {
    let mut turns = vec![Turn {
        role: "system",
        content: system_prompt(messages, tools, context),
    }];
    let limit = budget(context);
    for message in messages {
        match message {
            Message::System { .. } => {}
            // The in-process engines read text only; a message with images for a local model
            // is refused when it is posted (`ProviderId::takes_images`).
            Message::User { content, .. } => turns.push(Turn {
                role: "user",
                content: content.clone(),
            }),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                turns.push(Turn {
                    role: "assistant",
                    content: assistant_reply(content, tool_calls),
                });
            }
            Message::Tool {
                tool_call_id,
                name,
                content,
                is_error,
            } => {
                let error = if *is_error { ",\"is_error\":true" } else { "" };
                turns.push(Turn {
                    role: "user",
                    content: format!(
                        "{{\"tool_result\":{{\"tool_name\":{},\"tool_call_id\":{},\"content\":{}{error}}}}}",
                        quoted(name),
                        quoted(tool_call_id),
                        tool_content(content, limit)
                    ),
                });
            }
        }
    }
    turns
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// An assistant answer in the contract's own shape, keys in the grammar's order.
fn assistant_reply(content: &str, tool_calls: &[crate::llm::ToolCall]) -> String {
    if tool_calls.is_empty() {
        return format!("{{\"type\":\"final\",\"content\":{}}}", quoted(content));
    }
    let calls: Vec<String> = tool_calls
        .iter()
        .map(|call| {
            let arguments = call
                .arguments_json()
                .unwrap_or_else(|_| Value::String(call.arguments.clone()));
            format!(
                "{{\"id\":{},\"name\":{},\"arguments\":{arguments}}}",
                quoted(&call.id),
                quoted(&call.name)
            )
        })
        .collect();
    format!(
        "{{\"type\":\"tool_calls\",\"calls\":[{}]}}",
        calls.join(",")
    )
}

/// A tool result as rendered: the text itself within `limit` characters, else
/// `{truncated, original_length, preview}`.
fn tool_content(content: &str, limit: usize) -> Value {
    let length = content.chars().count();
    if length <= limit {
        return Value::String(content.to_owned());
    }
    json!({
        "truncated": true,
        "original_length": length,
        "preview": content.chars().take(limit).collect::<String>(),
    })
}

/// The start every final answer has under the grammar (streamed as it is decoded).
pub(crate) const FINAL_PREFIX: &str = "{\"type\":\"final\",\"content\":\"";

/// The GBNF grammar (llama.cpp's format, root rule `root`) that allows exactly the contract's
/// output: a final answer, or, when `tools` is not empty, calls of those tools with a JSON
/// object of arguments. No whitespace outside argument objects, so a final answer always
/// starts with [`FINAL_PREFIX`].
pub(crate) fn grammar(tools: &[ToolDeclaration]) -> String {
    let mut rules = vec![
        format!(
            "final ::= {} str \"}}\"",
            gbnf_literal("{\"type\":\"final\",\"content\":")
        ),
        "str ::= \"\\\"\" char* \"\\\"\"".to_owned(),
        "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" hex hex hex hex)"
            .to_owned(),
        "hex ::= [0-9a-fA-F]".to_owned(),
    ];
    if tools.is_empty() {
        rules.insert(0, "root ::= final".to_owned());
        return rules.join("\n") + "\n";
    }
    rules.insert(0, "root ::= final | calls".to_owned());
    let calls: Vec<String> = (0..tools.len())
        .map(|index| format!("call{index}"))
        .collect();
    rules.push(format!(
        "calls ::= {} call (\",\" call)* \"]}}\"",
        gbnf_literal("{\"type\":\"tool_calls\",\"calls\":[")
    ));
    rules.push(format!("call ::= {}", calls.join(" | ")));
    for (index, tool) in tools.iter().enumerate() {
        rules.push(format!(
            "call{index} ::= {} str {} args{index} \"}}\"",
            gbnf_literal("{\"id\":"),
            gbnf_literal(&format!(
                ",\"name\":\"{}\",\"arguments\":",
                json_escape(&tool.name)
            )),
        ));
        rules.push(format!(
            "args{index} ::= {}",
            arguments_rule(&tool.parameters)
        ));
    }
    rules.extend([
        "integer ::= \"-\"? ([0-9] | [1-9] [0-9]*)".to_owned(),
        "boolean ::= \"true\" | \"false\"".to_owned(),
        "object ::= \"{\" ws (pair (ws \",\" ws pair)*)? ws \"}\"".to_owned(),
        "pair ::= str ws \":\" ws value".to_owned(),
        "value ::= object | array | str | number | \"true\" | \"false\" | \"null\"".to_owned(),
        "array ::= \"[\" ws (value (ws \",\" ws value)*)? ws \"]\"".to_owned(),
        "number ::= \"-\"? ([0-9] | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?".to_owned(),
        "ws ::= [ \\t\\n]?".to_owned(),
    ]);
    rules.join("\n") + "\n"
}

/// [`grammar`] allowing only tool calls (a request that must call a tool: benchmarks and tests).
#[cfg(test)]
pub(crate) fn calls_grammar(tools: &[ToolDeclaration]) -> String {
    grammar(tools).replacen("root ::= final | calls", "root ::= calls", 1)
}

/// Schemas with more properties than this get a plain JSON object as their arguments rule.
const MAX_GRAMMAR_PROPERTIES: usize = 12;

/// The arguments rule of a tool: its schema's properties, each once, required ones first in
/// a fixed order, values of their declared type (an enum of strings as its literals); a schema
/// this cannot express takes any JSON object.
fn arguments_rule(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "object".to_owned();
    };
    if properties.len() > MAX_GRAMMAR_PROPERTIES {
        return "object".to_owned();
    }
    if properties.is_empty() {
        return "\"{\" ws \"}\"".to_owned();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut pairs: Vec<(String, bool)> = required
        .iter()
        .filter_map(|name| {
            properties
                .get(*name)
                .map(|property| (pair_rule(name, property), true))
        })
        .collect();
    pairs.extend(
        properties
            .iter()
            .filter(|(name, _)| !required.contains(&name.as_str()))
            .map(|(name, property)| (pair_rule(name, property), false)),
    );
    let comma = "ws \",\" ws";
    let body = if pairs.first().is_some_and(|(_, required)| *required) {
        let mut body = pairs
            .first()
            .map(|(pair, _)| pair.clone())
            .unwrap_or_default();
        for (pair, required) in pairs.iter().skip(1) {
            if *required {
                body.push_str(&format!(" {comma} {pair}"));
            } else {
                body.push_str(&format!(" ({comma} {pair})?"));
            }
        }
        body
    } else {
        let starts: Vec<String> = (0..pairs.len())
            .map(|start| {
                let mut alternative = pairs[start].0.clone();
                for (pair, _) in pairs.iter().skip(start + 1) {
                    alternative.push_str(&format!(" ({comma} {pair})?"));
                }
                alternative
            })
            .collect();
        format!("({})?", starts.join(" | "))
    };
    format!("\"{{\" ws {body} ws \"}}\"")
}

/// `"name" ws ":" ws <value of its type>`.
fn pair_rule(name: &str, property: &Value) -> String {
    let key = gbnf_literal(&format!("\"{}\"", json_escape(name)));
    let strings: Vec<String> = property
        .get("enum")
        .and_then(Value::as_array)
        .map(|values| {
            values
                .iter()
                .filter_map(Value::as_str)
                .map(|value| gbnf_literal(&quoted(value)))
                .collect()
        })
        .unwrap_or_default();
    let value = match property.get("type").and_then(Value::as_str) {
        Some("string") if !strings.is_empty() => format!("({})", strings.join(" | ")),
        Some("string") => "str".to_owned(),
        Some("integer") => "integer".to_owned(),
        Some("number") => "number".to_owned(),
        Some("boolean") => "boolean".to_owned(),
        Some("array") => "array".to_owned(),
        Some("object") => "object".to_owned(),
        _ => "value".to_owned(),
    };
    format!("{key} ws \":\" ws {value}")
}

/// `text` as a GBNF string literal.
fn gbnf_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` escaped for the inside of a JSON string.
fn json_escape(text: &str) -> String {
    let quoted = Value::String(text.to_owned()).to_string();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests;
