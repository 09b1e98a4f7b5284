//! Stored keys are redacted by their stored value, whatever their shape: a key stored now (the
//! provider-keys facade) or by an earlier process (read at start) never reaches an audit row
//! in plaintext, in a call's arguments or its result.

use std::time::Duration;

use serde_json::json;
use souz_protocol::Requester;

use crate::approvals::audit::AuditQuery;
use crate::chat::ChatUser;
use crate::llm::ProviderId;
use crate::llm::keys::{ApiKey, KeyStore};
use crate::redact::redact_text;
use crate::store::Store;
use crate::testing::{TestHome, TestRuntime};
use crate::tools::gate::CallRequest;

/// Calls `Calculator` with `value` as its expression and returns the call's audit row as JSON.
async fn audited_call(runtime: &TestRuntime, value: &str) -> String {
    let handle = runtime.handle();
    let mut call = handle
        .start_call(CallRequest {
            tool: "Calculator".to_owned(),
            arguments: json!({"expression": format!("1 + {value}")}),
            requester: Requester::Api,
        })
        .await
        .unwrap();
    call.wait_for(Duration::from_secs(10)).await;
    let rows = handle
        .audit(AuditQuery {
            limit: 10,
            call_id: Some(call.call_id.clone()),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    serde_json::to_string(&rows[0]).unwrap()
}

#[tokio::test]
async fn a_provider_key_of_no_known_shape_stored_now_is_redacted_from_audit_rows() {
    let value = "zz-unshaped-value-stored-now-4821";
    assert_eq!(
        redact_text(value),
        value,
        "no format matches it: only its value can"
    );
    let runtime = TestRuntime::builder().start().await;
    runtime
        .handle()
        .set_provider_key(&ChatUser(crate::LOCAL_USER.to_owned()), "openai", value)
        .await
        .unwrap();
    let row = audited_call(&runtime, value).await;
    assert!(!row.contains(value), "{row}");
    assert!(row.contains("[REDACTED]"), "{row}");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn keys_stored_by_an_earlier_process_are_redacted_from_the_start() {
    let provider_key = "zz-unshaped-value-from-before-7393";
    let secret = "zz-unshaped-bearer-from-before-1177";
    for value in [provider_key, secret] {
        assert_eq!(
            redact_text(value),
            value,
            "no format matches it: only its value can"
        );
    }
    // An earlier run stored a user's provider key and a server's bearer token.
    let home = TestHome::new();
    let paths = home.paths();
    paths.ensure_home().unwrap();
    let store = Store::open(paths.database()).await.unwrap();
    let keys = KeyStore::new(store.clone(), paths.provider_key_file());
    keys.for_user("someone-else")
        .put_as_an_earlier_process(
            ProviderId::parse("anthropic").unwrap(),
            ApiKey::new(provider_key),
        )
        .await
        .unwrap();
    keys.put_secret_as_an_earlier_process("mcp:files:bearer", &ApiKey::new(secret))
        .await
        .unwrap();
    drop(keys);
    store.close().await.unwrap();
    assert_eq!(
        redact_text(provider_key),
        provider_key,
        "not known before the start"
    );

    let runtime = TestRuntime::builder().start_in(home).await;
    for value in [provider_key, secret] {
        let row = audited_call(&runtime, value).await;
        assert!(!row.contains(value), "{row}");
        assert!(row.contains("[REDACTED]"), "{row}");
    }
    runtime.shutdown("test").await.unwrap();
}
