//! The editor's pure parts: applying key changes to TOML text, telling changed keys apart, and
//! what counts as live. The routes are tested end to end in `gateway::tests::settings`.

use serde_json::json;

use super::*;
use crate::config::SouzPaths;

fn change(section: &str, key: &str, value: Value) -> ConfigValue {
    ConfigValue {
        section: section.into(),
        key: key.into(),
        value,
    }
}

#[test]
fn changes_keep_comments_and_layout() {
    let text = "# top\n[server]\n# the port\nport = 8383 # inline\n";
    let out = apply_changes(
        text,
        &[
            change("server", "port", json!(9000)),
            change("log", "level", json!("debug")),
            change("sandbox", "roots", json!(["~/work", "/tmp/x"])),
        ],
    )
    .unwrap();
    assert!(
        out.starts_with("# top\n[server]\n# the port\nport = 9000"),
        "{out}"
    );
    assert!(out.contains("[log]\nlevel = \"debug\""), "{out}");
    assert!(out.contains("roots = [\"~/work\", \"/tmp/x\"]"), "{out}");
    let removed = apply_changes(&out, &[change("server", "port", Value::Null)]).unwrap();
    assert!(!removed.contains("port ="), "{removed}");
    assert!(removed.contains("# top"));
}

#[test]
fn broken_toml_cannot_be_patched() {
    let error = apply_changes("[server\n", &[change("server", "port", json!(1))]).unwrap_err();
    assert!(matches!(error, ConfigEditError::BadChange(message) if message.contains("raw editor")));
}

#[test]
fn values_convert_to_toml() {
    assert_eq!(toml_value(&json!(1.5)).unwrap().as_float(), Some(1.5));
    assert_eq!(toml_value(&json!(-3)).unwrap().as_integer(), Some(-3));
    assert_eq!(toml_value(&json!(true)).unwrap().as_bool(), Some(true));
    let table = toml_value(&json!({"action": "allow", "tool": "X", "note": null})).unwrap();
    let table = table.as_inline_table().unwrap();
    assert_eq!(table.len(), 2, "null fields are left out");
    assert!(toml_value(&json!([1, null])).is_none());
}

#[test]
fn changed_keys_and_live_keys() {
    let paths = SouzPaths::new("/tmp/souz-editor-test");
    let before = Config::defaults(paths.clone());
    let mut after = before.clone();
    after.server.port = 1;
    after.approvals.timeout_seconds = 10;
    assert_eq!(
        changed_keys(&before, &after),
        ["approvals.timeout_seconds", "server.port"]
    );
    assert!(is_live("approvals.rules"));
    assert!(!is_live("server.port"));
    assert!(!is_live("approvals"));
    assert_eq!(kind_of(Some(&json!(1))), "integer");
    assert_eq!(kind_of(Some(&json!(0.5))), "float");
    assert_eq!(kind_of(Some(&json!(["a"]))), "list");
    assert_eq!(kind_of(Some(&json!("10MiB"))), "string");
}

#[test]
fn revisions_tell_texts_apart() {
    assert_eq!(revision("a"), revision("a"));
    assert_ne!(revision("a"), revision("a "));
}
