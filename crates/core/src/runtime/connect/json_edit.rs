//! Setting one member of a client's JSON configuration (`mcpServers.souz`) by editing its
//! text, so every other byte of the file (key order, formatting, other servers) stays as the
//! person or their client wrote it, and the diff shown before the write is only the change.
//!
//! Why: `serde_json` (without `preserve_order`, which Souz keeps off: trust hashes rely on
//! sorted keys) re-sorts every object it writes, so a whole-file rewrite of Claude Code's
//! `~/.claude.json` — megabytes of history, OAuth state and other servers' keys — showed up
//! as a diff of the whole file, secrets included.
//!
//! Invariants:
//! - The scan is iterative (a depth counter, no recursion) and linear in the text: a hostile
//!   file nests as deep as it likes without touching the stack.
//! - The result is only used when it parses to exactly the value a whole-file rewrite would
//!   give ([`super::with_server`] checks); anything this scanner misreads falls back to that.
//! - Of duplicate keys the last one is edited, as `serde_json` keeps the last one.

use serde_json::Value;

/// One member of an object: the key's text (decoded) and the byte span of its value.
struct Member {
    key: String,
    value: (usize, usize),
}

/// An object in the text: where its `{` and `}` are, and its members.
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

/// `text` (a JSON object) with `path` (object keys, outermost first) set to `value`, written
/// in the file's own indentation; `None` when the text is not shaped as expected (the caller
/// then rewrites the whole file).
pub(super) fn set_member(text: &str, path: &[&str], value: &Value) -> Option<String> {
    let bytes = text.as_bytes();
    let mut open = skip_space(bytes, 0);
    if bytes.get(open) != Some(&b'{') {
        return None;
    }
    for (index, key) in path.iter().enumerate() {
        let object = object(text, open)?;
        let found = object
            .members
            .iter()
            .rev()
            .find(|member| member.key == *key);
        let rest = &path[index..];
        match found {
            Some(member) if rest.len() == 1 => {
                let (start, end) = member.value;
                let indent = line_indent(text, start);
                let rendered = render(value, &indent, unit(text, open, &object.members))?;
                return Some(format!("{}{rendered}{}", &text[..start], &text[end..]));
            }
            Some(member) => {
                open = member.value.0;
                if bytes.get(open) != Some(&b'{') {
                    return None;
                }
            }
            None => {
                let mut nested = value.clone();
                for key in rest[1..].iter().rev() {
                    nested = Value::Object([((*key).to_owned(), nested)].into_iter().collect());
                }
                return insert(text, &object, key, &nested);
            }
        }
    }
    None
}

/// `text` with `"key": value` added as the last member of `object`.
fn insert(text: &str, object: &Object, key: &str, value: &Value) -> Option<String> {
    let Object {
        open,
        close,
        ref members,
    } = *object;
    let key = serde_json::to_string(key).ok()?;
    let outer = line_indent(text, open);
    let unit = unit(text, open, members);
    match members.last() {
        Some(last) => {
            // The whitespace before the first member is the separator every member uses.
            let first_key = key_start(text, open)?;
            let separator = &text[open + 1..first_key];
            let indent = separator.rsplit('\n').next().unwrap_or_default();
            let rendered = render(value, indent, unit)?;
            let colon = if unit.is_empty() { ":" } else { ": " };
            let end = last.value.1;
            Some(format!(
                "{},{separator}{key}{colon}{rendered}{}",
                &text[..end],
                &text[end..]
            ))
        }
        None => {
            let inner = format!("{outer}{}", if unit.is_empty() { "  " } else { unit });
            let rendered = render(value, &inner, "  ")?;
            Some(format!(
                "{}{{\n{inner}{key}: {rendered}\n{outer}}}{}",
                &text[..open],
                &text[close + 1..]
            ))
        }
    }
}

/// `value` pretty-printed with every line after the first indented by `indent`; compact when
/// the file is (`unit` empty).
fn render(value: &Value, indent: &str, unit: &str) -> Option<String> {
    if unit.is_empty() {
        return serde_json::to_string(value).ok();
    }
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut serializer).ok()?;
    let pretty = String::from_utf8(out).ok()?;
    Some(pretty.replace('\n', &format!("\n{indent}")))
}

/// The file's indentation step: the first member's indentation minus its object's, or empty
/// for a one-line object; two spaces when the object is empty.
fn unit<'t>(text: &'t str, open: usize, members: &[Member]) -> &'t str {
    let Some(first) = key_start(text, open).filter(|_| !members.is_empty()) else {
        return "  ";
    };
    let separator = &text[open + 1..first];
    let Some(inner) = separator.rsplit_once('\n').map(|(_, inner)| inner) else {
        return "";
    };
    let outer = line_indent(text, open).len();
    inner
        .get(outer..)
        .filter(|unit| !unit.is_empty())
        .unwrap_or("  ")
}

/// The whitespace at the start of the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> String {
    let start = text[..at].rfind('\n').map_or(0, |newline| newline + 1);
    text[start..at]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// Where the first key of the object at `open` starts.
fn key_start(text: &str, open: usize) -> Option<usize> {
    let at = skip_space(text.as_bytes(), open + 1);
    (text.as_bytes().get(at) == Some(&b'"')).then_some(at)
}

/// The object whose `{` is at `open`.
fn object(text: &str, open: usize) -> Option<Object> {
    let bytes = text.as_bytes();
    let mut members = Vec::new();
    let mut at = skip_space(bytes, open + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(Object {
            open,
            close: at,
            members,
        });
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(bytes, at)?;
        let key: String = serde_json::from_str(&text[at..key_end]).ok()?;
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_space(bytes, at + 1);
        let end = skip_value(bytes, start)?;
        members.push(Member {
            key,
            value: (start, end),
        });
        at = skip_space(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') => {
                return Some(Object {
                    open,
                    close: at,
                    members,
                });
            }
            _ => return None,
        }
    }
}

/// The end of the value starting at `at` (iterative: brackets are counted, not recursed).
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut index = at;
            while let Some(&byte) = bytes.get(index) {
                match byte {
                    b'"' => {
                        index = skip_string(bytes, index)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(index + 1);
                        }
                    }
                    _ => {}
                }
                index += 1;
            }
            None
        }
        _ => {
            let end = bytes[at..]
                .iter()
                .position(|byte| matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace())
                .map_or(bytes.len(), |offset| at + offset);
            (end > at).then_some(end)
        }
    }
}

/// The end (after the closing quote) of the string starting at `at`.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let mut index = at + 1;
    while let Some(&byte) = bytes.get(index) {
        match byte {
            b'\\' => index += 2,
            b'"' => return Some(index + 1),
            _ => index += 1,
        }
    }
    None
}

/// The first index at or after `at` that is not JSON whitespace.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|byte| b" \t\r\n".contains(byte)) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests;
