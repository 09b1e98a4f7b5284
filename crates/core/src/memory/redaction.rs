//! Secrets and private details removed before anything reaches memory (original
//! `MemorySanitizer`): everything the audit redaction knows (`crate::redact`: bearer tokens,
//! `key=value` secrets, provider keys, JWTs, PEM blocks, registered secrets), plus the
//! original's memory rules: `Authorization:` headers, `ENV_NAME=value`, runs of 64 or more token
//! characters, 32 or more hex digits, e-mail addresses (`[redacted-email]`) and home-folder
//! paths (`[redacted-path]`).
//!
//! Invariant: [`redact`] is idempotent, and [`looks_secret`] is true for any text that
//! [`redact`] would change for a secret (not for an e-mail address or a path alone).

use std::sync::LazyLock;

use regex::Regex;

use crate::redact::redact_text;

/// What stands in for a secret in memory.
pub(crate) const REDACTED_SECRET: &str = "[redacted-secret]";

fn regex(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

static KEY_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(
        r#"(?i)\b(api[-_]?key|secret|token|password|auth|authorization|credential)\s*[:=]\s*["']?[a-zA-Z0-9_\-.~]{10,}["']?"#,
    )
});
static AUTH_HEADER: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"(?i)Authorization:\s*(?:Bearer|Basic)\s+[a-zA-Z0-9_\-.~+/=]{10,}"));
static BEARER: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"(?i)bearer\s+[a-zA-Z0-9_\-.~+/=]{15,}"));
static ENV_VALUE: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"\b([A-Z0-9_]{3,30})=[a-zA-Z0-9_\-.~]{8,}"));
static LONG_TOKEN: LazyLock<Option<Regex>> = LazyLock::new(|| regex(r"[a-zA-Z0-9_\-.+/=]{64,}"));
static HEX: LazyLock<Option<Regex>> = LazyLock::new(|| regex(r"\b[a-fA-F0-9]{32,}\b"));
static EMAIL: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"[a-zA-Z0-9_\-.+]+@[a-zA-Z0-9_\-.]+\.[a-zA-Z]{2,}"));
static HOME_PATH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r#"(?:/Users/[^\s"'<>]+|/home/[^\s"'<>]+|~/[^\s"'<>]+|[A-Za-z]:\\Users\\[^\s"'<>]+)"#)
});

fn replace(text: String, pattern: &Option<Regex>, with: &str) -> String {
    match pattern {
        Some(pattern) => pattern.replace_all(&text, with).into_owned(),
        None => text,
    }
}

/// `text` with secrets, e-mail addresses and home paths replaced.
pub(crate) fn redact(text: &str) -> String {
    let mut text = redact_text(text);
    text = replace(text, &KEY_VALUE, &format!("$1={REDACTED_SECRET}"));
    text = replace(text, &AUTH_HEADER, "Authorization: [redacted-auth]");
    text = replace(text, &BEARER, "[redacted-auth]");
    text = replace(text, &ENV_VALUE, &format!("$1={REDACTED_SECRET}"));
    text = replace(text, &LONG_TOKEN, REDACTED_SECRET);
    text = replace(text, &HEX, REDACTED_SECRET);
    text = replace(text, &EMAIL, "[redacted-email]");
    replace(text, &HOME_PATH, "[redacted-path]")
}

/// Whether `text` holds something secret (e-mail addresses and paths are private, not
/// secret: they are redacted but do not make a fact unsavable).
pub(crate) fn looks_secret(text: &str) -> bool {
    let secret_patterns: [&Option<Regex>; 6] = [
        &KEY_VALUE,
        &AUTH_HEADER,
        &BEARER,
        &ENV_VALUE,
        &LONG_TOKEN,
        &HEX,
    ];
    redact_text(text) != text
        || secret_patterns
            .into_iter()
            .any(|pattern| pattern.as_ref().is_some_and(|p| p.is_match(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_class_is_redacted() {
        let cases = [
            ("my api_key: abcdefghijklmnop1234", "abcdefghijklmnop1234"),
            (
                "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
                "dXNlcjpwYXNzd29yZDEyMw",
            ),
            (
                "use bearer abcdefghijklmnopqrstu please",
                "abcdefghijklmnopqrstu",
            ),
            (
                "run with DATABASE_PASSWORD=hunter2hunter2",
                "hunter2hunter2",
            ),
            ("export OPENAI_MODEL_NAME=gpt4omini2024", "gpt4omini2024"),
            (&format!("blob {} end", "Ab1".repeat(30)), "Ab1Ab1Ab1Ab1"),
            (
                "commit 0123456789abcdef0123456789abcdef01 done",
                "0123456789abcdef0123",
            ),
            (
                "key sk-proj-abcdefghijklmnopqrstuvwxyz",
                "abcdefghijklmnopqrstuvwxyz",
            ),
            ("mail me at ivan.petrov+x@example.co.uk", "ivan.petrov"),
            ("my notes are in /home/ivan/notes/todo.md", "/home/ivan"),
            ("or ~/Documents/plan.txt", "~/Documents"),
            ("or /Users/anna/work", "/Users/anna"),
        ];
        for (text, secret) in cases {
            let redacted = redact(text);
            assert!(!redacted.contains(secret), "{text:?} became {redacted:?}");
            assert_eq!(redact(&redacted), redacted, "not idempotent for {text:?}");
        }
        assert_eq!(redact("mail a@b.io"), "mail [redacted-email]");
        assert_eq!(redact("see /home/u/x"), "see [redacted-path]");
    }

    #[test]
    fn ordinary_text_is_kept_and_not_secret() {
        for text in [
            "I prefer answers in Russian",
            "Мой любимый цвет — синий",
            "The deploy command is make release",
        ] {
            assert_eq!(redact(text), text);
            assert!(!looks_secret(text), "{text}");
        }
        assert!(looks_secret("password=correcthorsebattery"));
        assert!(!looks_secret("write to a@b.io"));
    }
}
