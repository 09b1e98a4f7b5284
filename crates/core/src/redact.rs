//! Redacted, truncated previews of tool arguments and results for the audit log and events
//! (the rules of original-behavior §1.17, with more secret formats).
//!
//! Values: strings that hold JSON are parsed first; nesting deeper than 6 becomes
//! `"[TRUNCATED]"`; objects keep their first 8 fields (plus `"_truncated": "N more fields"`),
//! arrays their first 8 items (plus `"[TRUNCATED N more items]"`); strings are cut at 160
//! characters with `...`; a preview whose JSON is longer than 1024 characters becomes a cut JSON
//! string. Keys that name secrets (`apiKey`, `token`, `password`, `authorization`, ...) have
//! their values replaced by `"[REDACTED]"`, and secrets inside text are replaced too:
//! `Bearer x`, `password=x`, passwords in URLs (`https://user:pass@host`), PEM private keys
//! (the whole block, or to the end when it is cut), OpenAI/Anthropic `sk-...`, GitHub, AWS,
//! Google API keys and OAuth tokens (`ya29.`, `1//` refresh tokens), Stripe (`sk_live_`,
//! `rk_live_`, `whsec_`), Slack (`xoxb-`, `xoxp-`, `xapp-`, webhook URLs), JWTs, Souz client
//! tokens (`souz_...`), and the values registered with [`register_secret`] (the operator
//! token). Replacements never contain quotes, so redacting a JSON log line keeps it JSON.
//!
//! Pure text and JSON in, redacted text out: it sits at the bottom of the layer table and
//! imports nothing from the crate, so every layer (logs in `telemetry`, provider errors in
//! `llm`, audit rows in `approvals`, chat events) redacts the same way.

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use regex::{Regex, RegexSet};
use serde_json::{Map, Value};

const MAX_DEPTH: usize = 6;
const MAX_FIELDS: usize = 8;
const MAX_ITEMS: usize = 8;
const MAX_STRING: usize = 160;
const MAX_PREVIEW: usize = 1024;
const MAX_ERROR: usize = 240;
/// What stands in for a secret.
pub(crate) const REDACTED: &str = "[REDACTED]";

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

const BEARER_PATTERN: &str = r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{6,}";
const KEY_VALUE_PATTERN: &str = r#"(?i)\b([A-Za-z0-9_-]*(?:token|secret|password|passwd|passphrase|cookie|session|credentials?|private[-_]?key|api[-_]?key|client[-_]?secret|auth)[A-Za-z0-9_-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&,;"'\\]+)"#;
const TOKENS_PATTERN: &str = concat!(
    r"\b(?:sk-[A-Za-z0-9_-]{8,}",
    r"|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}",
    r"|xox[abposre]-[A-Za-z0-9-]{8,}|xapp-[A-Za-z0-9-]{8,}",
    r"|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}",
    r"|AIza[0-9A-Za-z_-]{20,}|ya29\.[0-9A-Za-z_-]{10,}|1//0[0-9A-Za-z_-]{20,}",
    r"|(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[0-9A-Za-z+/=]{10,}",
    r"|souz_[0-9A-Za-z_-]{16,}",
    r"|eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*)",
);
/// `scheme://user:password@`: the password goes, the user stays (it says which account).
const URL_PASSWORD_PATTERN: &str = r#"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@"'\\]*):[^/\s@"'\\]+@"#;
/// Slack's incoming webhooks carry their secret in the path.
const SLACK_WEBHOOK_PATTERN: &str =
    r"(?i)\b(hooks\.slack\.com/(?:services|workflows|triggers))/[A-Za-z0-9/_-]+";
/// A PEM private key: the whole block, or, when the end is cut off, the key material after its
/// start: base64, blanks, escaped newlines (`\n` inside a JSON string) and real line breaks
/// followed by more base64. It stops at anything else, so a cut-off key inside a JSON log line
/// keeps the line's closing `"}` and never swallows the next line.
const PEM_PRIVATE_KEY_PATTERN: &str = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|(?:[A-Za-z0-9+/=\\ \t]|\r?\n[A-Za-z0-9+/=])*)";

/// The secret formats in the order they are replaced, each with its replacement.
const FORMATS: [(&str, &str); 6] = [
    (PEM_PRIVATE_KEY_PATTERN, REDACTED),
    (URL_PASSWORD_PATTERN, "$1:[REDACTED]@"),
    (SLACK_WEBHOOK_PATTERN, "$1/[REDACTED]"),
    (BEARER_PATTERN, "$1 [REDACTED]"),
    (KEY_VALUE_PATTERN, "$1$2[REDACTED]"),
    (TOKENS_PATTERN, REDACTED),
];

/// [`FORMATS`], compiled (a pattern that does not compile is skipped; the tests compile each).
static FORMAT_REGEXES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    FORMATS
        .iter()
        .filter_map(|(pattern, replacement)| Some((Regex::new(pattern).ok()?, *replacement)))
        .collect()
});

/// All of [`FORMATS`] in one automaton: text in which none of them occurs (nearly all text)
/// is scanned once instead of once per format. Replacing only ever happens after a match, so
/// text the set does not match comes out of the formats unchanged.
static ANY_FORMAT: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(FORMATS.iter().map(|(pattern, _)| pattern)).ok());

/// Secret values known to this process (the operator token), redacted wherever they appear.
static KNOWN_SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Shortest value [`register_secret`] accepts: shorter ones would redact ordinary words.
const MIN_KNOWN_SECRET: usize = 12;

/// Redacts `secret` from every later preview, error and log line of this process (for
/// secrets without a recognizable format, such as the operator token). Values shorter than
/// 12 characters are ignored.
pub(crate) fn register_secret(secret: &str) {
    let secret = secret.trim();
    if secret.chars().count() < MIN_KNOWN_SECRET {
        return;
    }
    // Keys are named again on every read: a known one costs a shared look, never the write
    // lock every redaction waits on.
    let is_known = |known: &[String]| known.iter().any(|existing| existing == secret);
    if is_known(
        &KNOWN_SECRETS
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    ) {
        return;
    }
    let mut known = KNOWN_SECRETS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !is_known(&known) {
        known.push(secret.to_owned());
    }
}

/// Whether a JSON key names a secret (case and `-`/`_` ignored).
pub(crate) fn is_sensitive_key(key: &str) -> bool {
    let folded: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    SENSITIVE_KEYS.contains(&folded.as_str())
}

/// Replaces secrets inside free text: the registered ones and every known format.
pub(crate) fn redact_text(text: &str) -> String {
    let known = KNOWN_SECRETS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    redact_text_with(text, &known)
}

/// [`redact_text`] with `known` as the secret values to replace, besides the formats.
pub(crate) fn redact_text_with(text: &str, known: &[String]) -> String {
    let mut out = Cow::Borrowed(text);
    for secret in known {
        if !secret.is_empty() && out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    // One scan for any format; then each pattern copies the text only when it finds something.
    if ANY_FORMAT.as_ref().is_none_or(|set| set.is_match(&out)) {
        for (regex, replacement) in FORMAT_REGEXES.iter() {
            if let Cow::Owned(replaced) = regex.replace_all(&out, *replacement) {
                out = Cow::Owned(replaced);
            }
        }
    }
    out.into_owned()
}

/// The audit preview of a value (arguments or a structured result).
pub(crate) fn preview(value: &Value) -> Value {
    let sanitized = sanitize(value, 0);
    let rendered = sanitized.to_string();
    if rendered.chars().count() > MAX_PREVIEW {
        Value::String(cut(rendered, MAX_PREVIEW))
    } else {
        sanitized
    }
}

/// `text` on one line, cut to `limit` characters with an ellipsis: how an approval or a tool's
/// answer quotes a person's text (a scheduled prompt, a message to a channel).
pub(crate) fn one_line(text: &str, limit: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= limit {
        return line;
    }
    let mut cut: String = line.chars().take(limit).collect();
    cut.push('…');
    cut
}

/// The audit preview of text output (parsed as JSON when it is JSON).
pub(crate) fn preview_text(text: &str) -> Value {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => preview(&value),
        _ => preview(&Value::String(text.to_owned())),
    }
}

/// The preview of a tool's result for audits and events: its structured value when it has
/// one, else its text (an error's text as an [`error_preview`]).
pub(crate) fn result_preview(result: &souz_protocol::ToolResult) -> Value {
    match &result.structured {
        Some(structured) => preview(structured),
        None if result.is_error => Value::String(error_preview(&result.text)),
        None => preview_text(&result.text),
    }
}

/// An error message for audits and events: redacted, at most 240 characters.
pub(crate) fn error_preview(message: &str) -> String {
    cut(redact_text(message), MAX_ERROR)
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
            Value::String(cut(redact_text(text), MAX_STRING))
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

fn cut(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
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

    /// Each sample: the text, and the secret that must be gone (`None`: nothing to redact, the
    /// text comes out unchanged).
    #[test]
    #[allow(clippy::too_many_lines, reason = "a table of secret formats")]
    fn secret_formats_table() {
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----";
        let operator = "3f9a1c0e7b2d4a6f8e1c3b5d7f9a0c2e4b6d8f0a1c3e5b7d9f1a3c5e7b9d0f2a";
        let samples: Vec<(String, Option<&str>)> = vec![
            (
                "git clone https://alice:s3cretpw@github.com/x/y".into(),
                Some("s3cretpw"),
            ),
            (
                "postgres://app:pa55word@db:5432/main".into(),
                Some("pa55word"),
            ),
            ("redis://:justapass@cache:6379".into(), Some("justapass")),
            (
                "key sk_live_51HabcdefGHIJKLmnop here".into(),
                Some("51HabcdefGHIJKLmnop"),
            ),
            (
                "rk_live_0123456789abcdefXYZ".into(),
                Some("0123456789abcdefXYZ"),
            ),
            (
                "sk_test_4eC39HqLyjWDarjtT1zdp7dc".into(),
                Some("4eC39HqLyjWDarjtT1zdp7dc"),
            ),
            (
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
                Some("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            ),
            (
                "SLACK xoxb-123456789012-1234567890123-AbCdEfGh".into(),
                Some("1234567890123-AbCdEfGh"),
            ),
            ("xoxp-1234-5678-abcdefgh".into(), Some("abcdefgh")),
            (
                "xapp-1-A0123456789-1234567890-abcdef".into(),
                Some("A0123456789"),
            ),
            (
                "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX".into(),
                Some("XXXXXXXXXXXXXXXX"),
            ),
            (
                "ya29.a0AfH6SMBx3kL9-abcdefghijkl".into(),
                Some("a0AfH6SMBx3kL9"),
            ),
            (
                "refresh 1//0gLm3abcdefghijklmnopqrstuvw".into(),
                Some("0gLm3abcdefghijklmnop"),
            ),
            (pem.into(), Some("b3BlbnNzaC1rZXktdjEAAAAABG5vbmU")),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7cut".into(),
                Some("MIIEowIBAAKCAQEA7cut"),
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r".into(),
                Some("dBjftJeZ4CVP"),
            ),
            (
                "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.".into(),
                Some("eyJzdWIiOiJhIn0"),
            ),
            (
                "client souz_ct_0123456789abcdefghij".into(),
                Some("0123456789abcdefghij"),
            ),
            (
                "AIzaSyA-1234567890abcdefghijklmno".into(),
                Some("1234567890abcdefghijklmno"),
            ),
            ("ASIAABCDEFGHIJKLMNOP".into(), Some("ASIAABCDEFGHIJKLMNOP")),
            (
                format!("curl -H 'X-Key: {operator}' localhost"),
                Some(operator),
            ),
            (
                format!("{{\"message\":\"password={operator}\"}}"),
                Some(operator),
            ),
            // Negatives: ordinary text comes out as it went in.
            ("see https://github.com/user/repo@main".into(), None),
            ("ssh git@github.com:org/repo.git".into(), None),
            ("http://localhost:8080/path".into(), None),
            ("sk_live is the prefix Stripe uses".into(), None),
            (
                "commit 3f9a1c0e7b2d4a6f8e1c3b5d7f9a0c2e4b6d8f0a".into(),
                None,
            ),
            (
                "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----".into(),
                None,
            ),
            ("ls -la ~/projects && cargo test".into(), None),
            ("version 1//2 of the plan".into(), None),
        ];
        assert!(samples.len() >= 25);
        let known = vec![operator.to_owned()];
        for (text, secret) in &samples {
            let out = redact_text_with(text, &known);
            match secret {
                Some(secret) => {
                    assert!(!out.contains(secret), "{text} -> {out}");
                    assert!(out.contains(REDACTED), "{text} -> {out}");
                }
                None => assert_eq!(&out, text),
            }
        }
        let line = format!("{{\"message\":\"fetch https://u:pw1234@h/ password={operator}\"}}");
        let out = redact_text_with(&line, &known);
        assert!(
            serde_json::from_str::<Value>(&out).is_ok(),
            "a redacted JSON line stays JSON: {out}"
        );
    }

    #[test]
    fn every_format_compiles_alone_and_in_the_set() {
        assert_eq!(FORMAT_REGEXES.len(), FORMATS.len());
        assert_eq!(ANY_FORMAT.as_ref().map(RegexSet::len), Some(FORMATS.len()));
    }

    #[test]
    fn registered_secrets_are_redacted_everywhere() {
        let secret = "c0ffee00c0ffee00c0ffee00registered";
        register_secret("short");
        register_secret(secret);
        assert_eq!(redact_text("short"), "short", "too short to register");
        assert_eq!(
            redact_text(&format!("x {secret} y")),
            format!("x {REDACTED} y")
        );
        assert_eq!(error_preview(secret), REDACTED);
        assert_eq!(preview(&json!({"note": secret}))["note"], REDACTED);
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

    /// A cut-off key inside a JSON log line is redacted without eating the line's end or the
    /// next line: both stay JSON.
    #[test]
    fn a_cut_off_key_in_a_json_line_keeps_the_lines_apart() {
        let first = serde_json::json!({
            "message": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7cut",
            "level": "WARN",
        });
        let text = format!("{first}\n{{\"message\":\"next\"}}\n");
        let redacted = redact_text_with(&text, &[]);
        assert!(!redacted.contains("MIIEowIBAAKCAQEA7cut"), "{redacted}");
        let lines: Vec<&str> = redacted.lines().collect();
        assert_eq!(lines.len(), 2, "{redacted}");
        let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(first["level"], "WARN");
        let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(second["message"], "next");
        // In plain text a cut-off key's further lines go too.
        let plain = redact_text_with(
            "-----BEGIN PRIVATE KEY-----\nMIIEabc\nDEFghi\nnot key: text",
            &[],
        );
        assert!(
            !plain.contains("MIIEabc") && !plain.contains("DEFghi"),
            "{plain}"
        );
    }
}
