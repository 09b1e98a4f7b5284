//! Who a model-backed tool call acts for.

use super::*;
use crate::config::LlmConfig;
use crate::testing::{self, TestHome};
use crate::tools::builtin::internet::BRAVE_KEY_SECRET;

async fn access(dir: &TestHome) -> LlmModelAccess {
    let store = dir.store().await;
    let llm = LlmService::new(
        &LlmConfig::default(),
        store.clone(),
        dir.path().join("provider-keys.key"),
        testing::environment(&[
            ("OPENAI_API_KEY", "sk-test-1111"),
            ("BRAVE_SEARCH_API_KEY", " brave-env "),
        ]),
    )
    .unwrap();
    LlmModelAccess {
        llm: Arc::new(llm),
        store,
        config: WebConfig::default(),
    }
}

#[tokio::test]
async fn a_chat_call_acts_for_the_chat_user_with_the_chat_model() {
    let dir = TestHome::new();
    let access = access(&dir).await;
    access
        .store
        .write(|transaction| {
            transaction.execute_batch(
                "INSERT INTO users (id, created_at, last_seen_at) VALUES ('alice', 'now', 'now');
                 INSERT INTO chats (id, user_id, created_at, updated_at)
                     VALUES ('chat-a', 'alice', 'now', 'now');
                 INSERT INTO chat_settings (chat_id, settings, updated_at)
                     VALUES ('chat-a', '{\"model\": \"anthropic/claude-sonnet-4-5\"}', 'now');
                 INSERT INTO chats (id, user_id, created_at, updated_at)
                     VALUES ('chat-b', 'alice', 'now', 'now');",
            )?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    let chat = |id: &str| Requester::Chat {
        chat_id: id.to_owned(),
    };
    let caller = access.caller(&chat("chat-a")).await.unwrap();
    assert_eq!(caller.llm.user(), "alice");
    assert_eq!(
        caller.model("").await.unwrap(),
        "anthropic/claude-sonnet-4-5"
    );
    assert_eq!(
        caller.model("openai/gpt-4o").await.unwrap(),
        "openai/gpt-4o"
    );
    let caller = access.caller(&chat("chat-b")).await.unwrap();
    assert_eq!(caller.llm.user(), "alice");
    assert_eq!(caller.model, None, "no chat model: the user's default");
    let caller = access.caller(&Requester::Cli).await.unwrap();
    assert_eq!(caller.llm.user(), crate::LOCAL_USER);
    assert_eq!(
        access.secret(BRAVE_KEY_SECRET).await.unwrap().as_deref(),
        Some("brave-env")
    );
    assert_eq!(access.secret("other").await.unwrap(), None);
}
