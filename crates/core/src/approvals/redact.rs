//! Redacted, truncated previews of tool arguments and results for the audit log and events
//! (the rules of original-behavior §1.17, with more secret formats).
//!
//! Values: strings that hold JSON are parsed first; nesting deeper than 6 becomes
//! `"[TRUNCATED]"`; objects keep their first 8 fields (plus `"_truncated": "N more fields"`),
//! arrays their first 8 items (plus `"[TRUNCATED N more items]"`); strings are cut at 160
//! characters with `...`; a preview whose JSON is longer than 1024 characters becomes a cut JSON
//! string. Keys that name secrets (`apiKey`, `token`, `password`, `authorization`, ...) have
//! their values replaced by `"[REDACTED]"`, and secrets inside text (`Bearer x`, `sk-...`,
//! `password=x`, GitHub/Slack/AWS tokens, JWTs) are replaced too.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

const MAX_DEPTH: usize = 6;
const MAX_FIELDS: usize = 8;
const MAX_ITEMS: usize = 8;
const MAX_STRING: usize = 160;
const MAX_PREVIEW: usize = 1024;
const MAX_ERROR: usize = 240;
/// What stands in for a secret.
pub const REDACTED: &str = "[REDACTED]";

const SENSITIVE_KEYS: &[&str] = &[
    "apikey",
    "token",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "authorization",
    "auth",
    "cookie",
    "setcookie",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "clientsecret",
    "privatekey",
    "session",
    "sessionid",
    "credential",
    "credentials",
    "xapikey",
];

static BEARER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{6,}").ok());
static KEY_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b([A-Za-z0-9_-]*(?:token|secret|password|passwd|passphrase|cookie|session|credentials?|private[-_]?key|api[-_]?key|client[-_]?secret|auth)[A-Za-z0-9_-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&,;]+)"#,
    )
    .ok()
});
static TOKENS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}|xox[abposr]-[A-Za-z0-9-]{8,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{20,}|eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,})",
    )
    .ok()
});

/// Whether a JSON key names a secret (case and `-`/`_` ignored).
pub fn is_sensitive_key(key: &str) -> bool {
    let folded: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    SENSITIVE_KEYS.contains(&folded.as_str())
}

/// Replaces secrets inside free text.
pub fn redact_text(text: &str) -> String {
    let mut out = text.to_owned();
    if let Some(regex) = BEARER.as_ref() {
        out = regex
            .replace_all(&out, format!("$1 {REDACTED}"))
            .into_owned();
    }
    if let Some(regex) = KEY_VALUE.as_ref() {
        out = regex
            .replace_all(&out, format!("$1$2{REDACTED}"))
            .into_owned();
    }
    if let Some(regex) = TOKENS.as_ref() {
        out = regex.replace_all(&out, REDACTED).into_owned();
    }
    out
}

/// The audit preview of a value (arguments or a structured result).
pub fn preview(value: &Value) -> Value {
    let sanitized = sanitize(value, 0);
    let rendered = sanitized.to_string();
    if rendered.chars().count() > MAX_PREVIEW {
        Value::String(cut(&rendered, MAX_PREVIEW))
    } else {
        sanitized
    }
}

/// The audit preview of text output (parsed as JSON when it is JSON).
pub fn preview_text(text: &str) -> Value {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => preview(&value),
        _ => preview(&Value::String(text.to_owned())),
    }
}

/// The preview of a tool's result for audits and events: its structured value when it has
/// one, else its text (an error's text as an [`error_preview`]).
pub fn result_preview(result: &souz_protocol::ToolResult) -> Value {
    match &result.structured {
        Some(structured) => preview(structured),
        None if result.is_error => Value::String(error_preview(&result.text)),
        None => preview_text(&result.text),
    }
}

/// An error message for audits and events: redacted, at most 240 characters.
pub fn error_preview(message: &str) -> String {
    cut(&redact_text(message), MAX_ERROR)
}

fn sanitize(value: &Value, depth: usize) -> Value {
    if depth >= MAX_DEPTH {
        return Value::String("[TRUNCATED]".to_owned());
    }
    match value {
        Value::String(text) => {
            let trimmed = text.trim();
            if (trimmed.starts_with('{') || trimmed.starts_with('['))
                && let Ok(parsed @ (Value::Object(_) | Value::Array(_))) =
                    serde_json::from_str::<Value>(trimmed)
            {
                return sanitize(&parsed, depth);
            }
            Value::String(cut(&redact_text(text), MAX_STRING))
        }
        Value::Object(fields) => {
            let mut out = Map::new();
            for (key, field) in fields.iter().take(MAX_FIELDS) {
                let cleaned = if is_sensitive_key(key) && !field.is_null() {
                    Value::String(REDACTED.to_owned())
                } else {
                    sanitize(field, depth + 1)
                };
                out.insert(key.clone(), cleaned);
            }
            if fields.len() > MAX_FIELDS {
                out.insert(
                    "_truncated".to_owned(),
                    Value::String(format!("{} more fields", fields.len() - MAX_FIELDS)),
                );
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(MAX_ITEMS)
                .map(|item| sanitize(item, depth + 1))
                .collect();
            if items.len() > MAX_ITEMS {
                out.push(Value::String(format!(
                    "[TRUNCATED {} more items]",
                    items.len() - MAX_ITEMS
                )));
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(3)).collect();
    format!("{kept}...")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sensitive_keys_are_redacted_at_any_depth() {
        let value = json!({
            "apiKey": "sk-live-123",
            "nested": {"Access-Token": "abc", "refresh_token": "def", "ok": "fine"},
            "Authorization": "Bearer xyz",
            "password": null,
            "list": [{"client_secret": "s"}],
        });
        let out = preview(&value);
        assert_eq!(out["apiKey"], REDACTED);
        assert_eq!(out["nested"]["Access-Token"], REDACTED);
        assert_eq!(out["nested"]["refresh_token"], REDACTED);
        assert_eq!(out["nested"]["ok"], "fine");
        assert_eq!(out["Authorization"], REDACTED);
        assert_eq!(out["password"], Value::Null, "absent secrets stay absent");
        assert_eq!(out["list"][0]["client_secret"], REDACTED);
    }

    #[test]
    fn secrets_inside_text_are_redacted() {
        let cases = [
            (
                "curl -H 'Authorization: Bearer abcdef123456' x",
                "abcdef123456",
            ),
            (
                "OPENAI_API_KEY=sk-proj-aaaaaaaaaaaa python run.py",
                "sk-proj-aaaa",
            ),
            (
                "export ANTHROPIC_API_KEY=\"sk-ant-xxxxxxxxxxxx\"",
                "sk-ant-xxxx",
            ),
            ("mysql --password=hunter2 db", "hunter2"),
            ("login with password: hunter2", "hunter2"),
            (
                "git clone https://ghp_0123456789abcdef0123@github.com/x",
                "ghp_0123456789",
            ),
            ("aws key AKIAABCDEFGHIJKLMNOP here", "AKIAABCDEFGHIJKLMNOP"),
            (
                "token eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4",
                "SflKxwRJSMeKKF2QT4",
            ),
            ("session_id=abc123def", "abc123def"),
        ];
        for (text, secret) in cases {
            let out = redact_text(text);
            assert!(!out.contains(secret), "{text} -> {out}");
            assert!(out.contains(REDACTED), "{text} -> {out}");
        }
        assert_eq!(redact_text("ls -la ~/projects"), "ls -la ~/projects");
    }

    #[test]
    fn truncation_rules() {
        let long = "x".repeat(500);
        assert_eq!(
            preview(&json!(long)).as_str().unwrap().chars().count(),
            MAX_STRING
        );
        let many: Map<String, Value> = (0..12).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let out = preview(&Value::Object(many));
        assert_eq!(out.as_object().unwrap().len(), MAX_FIELDS + 1);
        assert_eq!(out["_truncated"], "4 more fields");
        let items: Vec<Value> = (0..20).map(|i| json!(i)).collect();
        let out = preview(&Value::Array(items));
        assert_eq!(out.as_array().unwrap().len(), MAX_ITEMS + 1);
        assert_eq!(out[MAX_ITEMS], "[TRUNCATED 12 more items]");
        let deep = json!({"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}});
        assert_eq!(preview(&deep)["a"]["b"]["c"]["d"]["e"]["f"], "[TRUNCATED]");
        let wide: Map<String, Value> = (0..8)
            .map(|i| (format!("k{i}"), json!("y".repeat(150))))
            .collect();
        let out = preview(&Value::Object(wide));
        let text = out.as_str().expect("oversized previews become a string");
        assert_eq!(text.chars().count(), MAX_PREVIEW);
        assert!(text.ends_with("..."));
    }

    #[test]
    fn json_strings_are_parsed_first() {
        let out = preview(&json!({"arguments": "{\"token\": \"t\", \"path\": \"~/a\"}"}));
        assert_eq!(out["arguments"]["token"], REDACTED);
        assert_eq!(out["arguments"]["path"], "~/a");
        let out = preview_text("{\"stdout\": \"password=hunter2\"}");
        assert_eq!(out["stdout"], "password=[REDACTED]");
        assert_eq!(preview_text("plain text"), json!("plain text"));
    }

    #[test]
    fn errors_are_short_and_clean() {
        let message = format!(
            "request failed with api_key=sk-abcdefghijkl: {}",
            "e".repeat(400)
        );
        let preview = error_preview(&message);
        assert!(preview.chars().count() <= MAX_ERROR);
        assert!(!preview.contains("sk-abcdefghijkl"));
    }
}
