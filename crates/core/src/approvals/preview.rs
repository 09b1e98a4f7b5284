//! Bounded previews of large pending calls.
//!
//! A call waiting for approval can wait for minutes, and many can wait at once: what stays in
//! memory meanwhile must not grow with its arguments. Its full arguments and diff are stored in
//! the `approvals` row and read back from there when it is approved; everywhere else (the
//! gate's record and so the `tool_calls` and audit rows, the `approval.requested` event every
//! follower keeps) it holds a preview.
//!
//! Invariant: a call whose arguments are at most [`LARGE_ARGUMENTS`] bytes of text is kept
//! whole everywhere (its preview *is* its arguments); only larger ones are cut, and a cut value
//! says so and where the whole one is.

use serde_json::Value;
use souz_protocol::Approval;

/// Calls with more text than this in their arguments keep only a preview in memory.
pub(crate) const LARGE_ARGUMENTS: usize = 64 * 1024;
/// Longest string kept whole in a preview.
const PREVIEW_CHARS: usize = 2048;
/// Longest diff kept whole in a preview.
const PREVIEW_DIFF_CHARS: usize = 16 * 1024;

/// Whether `arguments` hold more than [`LARGE_ARGUMENTS`] bytes of text.
pub(crate) fn is_large(arguments: &Value) -> bool {
    text_size(arguments) > LARGE_ARGUMENTS
}

/// Roughly how many bytes `value` takes as JSON (strings and keys, not punctuation).
fn text_size(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(text_size).sum(),
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| key.len() + text_size(value))
            .sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 8,
    }
}

/// The arguments with every long string cut (all of them unchanged unless [`is_large`]).
pub(crate) fn arguments(arguments: &Value) -> Value {
    if !is_large(arguments) {
        return arguments.clone();
    }
    cut_strings(arguments)
}

fn cut_strings(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(cut(text, PREVIEW_CHARS)),
        Value::Array(items) => Value::Array(items.iter().map(cut_strings).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| (key.clone(), cut_strings(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` cut to about `limit` characters, saying how much was left out.
pub(crate) fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((end, _)) => format!(
            "{}… [{} more bytes not shown; the approval (GET /v1/approvals/{{id}}) has them all]",
            &text[..end],
            text.len() - end
        ),
    }
}

/// The approval as kept in memory, announced and listed: itself when small, else with its
/// arguments and diff cut.
pub(crate) fn approval(approval: Approval) -> Approval {
    if !is_large(&approval.arguments) {
        return approval;
    }
    of(&approval)
}

/// Like [`approval`], leaving the original alone.
pub(crate) fn of(approval: &Approval) -> Approval {
    if !is_large(&approval.arguments) {
        return approval.clone();
    }
    Approval {
        arguments: cut_strings(&approval.arguments),
        diff: approval
            .diff
            .as_deref()
            .map(|diff| cut(diff, PREVIEW_DIFF_CHARS)),
        ..shallow(approval)
    }
}

/// A copy of `approval` without its arguments and diff (filled in by the caller).
fn shallow(approval: &Approval) -> Approval {
    Approval {
        id: approval.id.clone(),
        call_id: approval.call_id.clone(),
        status: approval.status,
        requester: approval.requester.clone(),
        requester_label: approval.requester_label.clone(),
        tool: approval.tool.clone(),
        server: approval.server.clone(),
        risk: approval.risk,
        arguments: Value::Null,
        summary: approval.summary.clone(),
        diff: None,
        reason: approval.reason.clone(),
        suggested: approval.suggested.clone(),
        created_at: approval.created_at,
        expires_at: approval.expires_at,
        decision: approval.decision.clone(),
        expiry_reason: approval.expiry_reason,
        parked: approval.parked.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_arguments_are_kept_whole_and_large_ones_cut() {
        let small = json!({"path": "~/a.txt", "text": "x".repeat(10_000)});
        assert!(!is_large(&small));
        assert_eq!(arguments(&small), small);

        let large = json!({"path": "~/a.txt", "text": "é".repeat(100_000), "n": 3});
        assert!(is_large(&large));
        let preview = arguments(&large);
        assert_eq!(preview["path"], "~/a.txt");
        assert_eq!(preview["n"], 3);
        let text = preview["text"].as_str().unwrap_or_default();
        assert!(text.len() < 5_000, "{}", text.len());
        assert!(text.starts_with(&"é".repeat(PREVIEW_CHARS)));
        assert!(text.contains("195904 more bytes not shown"), "{text}");
    }
}
