//! The service: key precedence, validation of stored keys, model choice and clients.

use super::*;
use crate::testing::{self, TestHome};

pub(super) async fn service(config: LlmConfig, env: &[(&str, &str)]) -> (TestHome, LlmService) {
    let dir = TestHome::new();
    let store = dir.store().await;
    let service = LlmService::new(
        &config,
        store,
        dir.path().join("provider-keys.key"),
        testing::environment(env),
    )
    .unwrap();
    (dir, service)
}

#[tokio::test]
async fn stored_keys_win_over_the_environment_and_both_are_listed() {
    let (_dir, service) = service(
        LlmConfig::default(),
        &[
            ("OPENAI_API_KEY", "sk-env-openai-1111"),
            ("DASHSCOPE_API_KEY", " dash-env-2222 "),
        ],
    )
    .await;
    assert_eq!(
        service
            .key(ProviderId::OpenAi)
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "sk-env-openai-1111"
    );
    assert_eq!(
        service
            .key(ProviderId::Qwen)
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "dash-env-2222"
    );
    service
        .set_provider_key("OpenAI", "  sk-stored-openai-3333 ")
        .await
        .unwrap();
    assert_eq!(
        service
            .key(ProviderId::OpenAi)
            .await
            .unwrap()
            .unwrap()
            .expose(),
        "sk-stored-openai-3333"
    );
    let listed = service.provider_keys().await.unwrap();
    let summary: Vec<(&str, KeySource, &str)> = listed
        .iter()
        .map(|item| (item.provider.as_str(), item.source, item.key_hint.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("openai", KeySource::Stored, "...3333"),
            ("qwen", KeySource::Environment, "...2222")
        ]
    );
}

#[tokio::test]
async fn bad_provider_names_and_keys_are_refused() {
    let (_dir, service) = service(LlmConfig::default(), &[]).await;
    for (provider, key, expected) in [
        ("nosuch", "k-000000000000", "unknown provider `nosuch`"),
        ("codex", "k-000000000000", "sign in with `souz login codex`"),
        ("ollama", "k-000000000000", "does not use an API key"),
        ("local", "k-000000000000", "does not use an API key"),
        ("openai", "   ", "apiKey must not be blank."),
        ("openai", "line\nbreak-000000", "one line"),
    ] {
        let error = service.set_provider_key(provider, key).await.unwrap_err();
        assert!(error.to_string().contains(expected), "{provider}: {error}");
    }
    let long = "k".repeat(MAX_KEY_CHARS + 1);
    assert!(service.set_provider_key("openai", &long).await.is_err());
    assert!(
        service.provider_keys().await.unwrap().is_empty(),
        "nothing was stored"
    );
    service
        .set_provider_key("ai-tunnel", "tunnel-key-0000abcd")
        .await
        .unwrap();
    assert_eq!(
        service.provider_keys().await.unwrap()[0].provider,
        ProviderId::AiTunnel
    );
}

#[tokio::test]
async fn the_default_model_follows_keys_and_configuration() {
    let (_dir, none) = service(LlmConfig::default(), &[]).await;
    assert!(matches!(
        none.default_model().await,
        Err(LlmServiceError::NoModel)
    ));
    assert!(
        none.available_models(ModelKind::Chat)
            .await
            .unwrap()
            .is_empty()
    );
    let error = match none.chat_client("gpt-5-mini").await {
        Err(error) => error,
        Ok(_) => panic!("no key: no client"),
    };
    assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");

    let (_dir, keyed) = service(
        LlmConfig::default(),
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-env-0000"),
            ("GIGA_KEY", "giga-env-0000"),
        ],
    )
    .await;
    assert_eq!(
        keyed.default_model().await.unwrap().qualified(),
        "anthropic/claude-haiku-4-5-20251001"
    );
    let available = keyed.available_models(ModelKind::Chat).await.unwrap();
    assert!(
        available
            .iter()
            .all(|model| matches!(model.provider, ProviderId::Anthropic | ProviderId::Giga))
    );
    assert_eq!(available.len(), 8);

    let config = LlmConfig {
        local_models: vec!["ollama/llama3.2".into()],
        disabled_providers: vec!["anthropic".into()],
        ..LlmConfig::default()
    };
    let (_dir, local) = service(config, &[("ANTHROPIC_API_KEY", "sk-ant-env-0000")]).await;
    assert_eq!(
        local.default_model().await.unwrap().qualified(),
        "ollama/llama3.2"
    );
    let (model, _client) = local.chat_client("ollama/llama3.2").await.unwrap();
    assert_eq!(model.provider, ProviderId::Ollama);
    assert!(
        local.chat_client("claude-haiku-4-5").await.is_err(),
        "disabled provider"
    );

    let config = LlmConfig {
        default_model: "gpt-5-min".into(),
        ..LlmConfig::default()
    };
    let dir = TestHome::new();
    let store = dir.store().await;
    let error = LlmService::new(
        &config,
        store,
        dir.path().join("k"),
        Arc::new(|_: &str| None),
    )
    .unwrap_err();
    assert!(error.to_string().contains("default_model"), "{error}");
}

#[tokio::test]
async fn embedding_clients_only_for_openai_style_endpoints() {
    let (_dir, service) = service(
        LlmConfig::default(),
        &[("GIGA_KEY", "giga-env-0000"), ("QWEN_KEY", "qwen-env-0000")],
    )
    .await;
    assert!(service.embedding_client("giga/Embeddings").await.is_err());
    let (model, _) = service.embedding_client("text-embedding-v3").await.unwrap();
    assert_eq!(model.provider, ProviderId::Qwen);
}
