//! Service keys: names, precedence over the environment, hints only, MCP tokens untouched.

use souz_protocol::{KeySource, SERVICE_KEYS};

use super::super::tests::service;
use super::*;
use crate::config::LlmConfig;

#[test]
fn the_protocol_names_every_service_key_in_order() {
    let names: Vec<&str> = KNOWN.iter().map(|key| key.name).collect();
    assert_eq!(names, SERVICE_KEYS);
    assert_eq!(
        BRAVE.name,
        crate::tools::builtin::internet::BRAVE_KEY_SECRET,
        "the web tools ask for the Brave key by this name"
    );
}

#[test]
fn names_are_case_insensitive_and_unknown_ones_are_refused() {
    assert_eq!(service_key(" Brave ").ok(), Some(BRAVE));
    let error = service_key("mcp:files")
        .err()
        .map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some("unknown service key `mcp:files`; known service keys: brave, salute_speech, telegram")
    );
}

#[tokio::test]
async fn a_stored_key_wins_over_the_environment_and_only_hints_are_listed() {
    let (_dir, service) = service(
        LlmConfig::default(),
        &[("BRAVE_SEARCH_API_KEY", " env-brave-1111 ")],
    )
    .await;
    let listed = service.service_keys().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].source, KeySource::Environment);
    assert_eq!(listed[0].key_hint, "...1111");
    assert_eq!(
        service
            .service_key("brave")
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "env-brave-1111"
    );

    let stored = service
        .set_service_key("BRAVE", "  stored-brave-2222 ")
        .await
        .unwrap();
    assert_eq!(stored.source, KeySource::Stored);
    assert_eq!(stored.key_hint, "...2222");
    assert!(stored.updated_at.is_some());
    assert_eq!(
        service
            .service_key("brave")
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "stored-brave-2222"
    );
    let listed = serde_json::to_string(&service.service_keys().await.unwrap()).unwrap();
    assert!(!listed.contains("stored-brave"), "{listed}");

    service.delete_service_key("brave").await.unwrap();
    service.delete_service_key("brave").await.unwrap();
    assert_eq!(
        service
            .service_key("brave")
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "env-brave-1111"
    );
}

#[tokio::test]
async fn bad_keys_and_names_change_nothing_and_other_secrets_stay_hidden() {
    let (_dir, service) = service(LlmConfig::default(), &[]).await;
    assert!(service.service_keys().await.unwrap().is_empty());
    service
        .key_store()
        .put_secret("mcp:files", &ApiKey::new("mcp-token-3333"))
        .await
        .unwrap();
    for bad in ["", "   ", "two\nlines"] {
        let error = service.set_service_key("brave", bad).await.unwrap_err();
        assert!(matches!(error, LlmServiceError::InvalidKey(_)), "{error}");
    }
    let error = service
        .set_service_key("mcp:files", "overwrite-4444")
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmServiceError::UnknownServiceKey(_)),
        "{error}"
    );
    assert!(service.delete_service_key("mcp:files").await.is_err());
    assert!(service.service_keys().await.unwrap().is_empty());
    assert!(service.service_key("brave").await.unwrap().is_none());
    assert_eq!(
        service
            .key_store()
            .get_secret("mcp:files")
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "mcp-token-3333"
    );
}

#[test]
fn every_service_key_variable_is_registered() {
    use crate::config::env::{Setter, Var};
    for key in KNOWN {
        let var = Var::from_name(key.variable).expect("registered in config::env");
        assert_eq!(var.setter(), Setter::Key, "{}", key.variable);
    }
}
