//! Managing chats from the app: search by title, rename, archive, delete (the agents forget a
//! deleted chat), and input sent while a turn runs (`POST /v1/chats/{chatId}/input`).

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Fixture;
use super::chats::Busy;
use crate::chat::turns::{Turn, TurnEngine, TurnEvent, TurnOutcome};

const ABSENT: &str = "00000000-0000-4000-8000-000000000000";

impl Fixture {
    async fn titled(&self, title: &str) -> String {
        let (status, body) = self
            .send(self.json("POST", "/v1/chats", &json!({"title": title})))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["chat"]["id"].as_str().unwrap().to_owned()
    }

    async fn titles(&self, query: &str) -> Vec<String> {
        let (status, body) = self
            .send(self.bare("GET", &format!("/v1/chats{query}")))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|chat| chat["title"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.send(self.json("POST", path, &body)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer
    }

    /// The ids of the chat's executions, in the order they started (from its events).
    async fn executions(&self, chat: &str) -> Vec<String> {
        let path = format!("/v1/chats/{chat}/events?limit=1000");
        let (_, body) = self.send(self.bare("GET", &path)).await;
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|event| event["type"] == "execution.started")
            .map(|event| event["executionId"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[tokio::test]
async fn chats_are_found_by_title_in_any_case_and_script() {
    let f = Fixture::new().await;
    f.titled("Рецепт Борща").await;
    f.titled("Trip plans").await;
    f.titled("Другое").await;
    assert_eq!(
        f.titles("?q=%D0%B1%D0%BE%D1%80%D1%89").await,
        ["Рецепт Борща"]
    );
    assert_eq!(f.titles("?q=TRIP").await, ["Trip plans"]);
    assert!(f.titles("?q=nothing-like-it").await.is_empty());
    assert_eq!(
        f.titles("?q=%20").await.len(),
        3,
        "a blank search lists all"
    );
    assert_eq!(f.titles("?q=p&limit=1").await.len(), 1, "the limit holds");
}

#[tokio::test]
async fn deleting_a_chat_removes_it_and_what_the_agents_keep_about_it() {
    let f = Fixture::new().await;
    let chat = f.titled("to delete").await;
    let kept = f.titled("to keep").await;
    let knowledge = f.runtime.handle().agents().knowledge().clone();
    let doomed = knowledge
        .put(&chat, "ReadFile", "secret notes")
        .await
        .unwrap();
    let other = knowledge
        .put(&kept, "ReadFile", "other notes")
        .await
        .unwrap();

    let (status, _) = f.send(f.bare("DELETE", &format!("/v1/chats/{chat}"))).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(f.titles("?includeArchived=true").await, ["to keep"]);
    f.expect(
        f.bare("GET", &format!("/v1/chats/{chat}/messages")),
        StatusCode::NOT_FOUND,
        "chat_not_found",
        "Chat not found.",
    )
    .await;
    assert!(knowledge.get(&chat, &doomed.id).await.unwrap().is_none());
    assert!(knowledge.get(&kept, &other.id).await.unwrap().is_some());

    for (path, status, code) in [
        (
            format!("/v1/chats/{chat}"),
            StatusCode::NOT_FOUND,
            "chat_not_found",
        ),
        (
            format!("/v1/chats/{ABSENT}"),
            StatusCode::NOT_FOUND,
            "chat_not_found",
        ),
        (
            "/v1/chats/nope".to_owned(),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ] {
        let (got, body) = f.send(f.bare("DELETE", &path)).await;
        assert_eq!((got, super::code(&body)), (status, code), "{path}: {body}");
    }
}

#[tokio::test]
async fn a_chat_with_a_running_turn_is_not_deleted_until_the_turn_is_cancelled() {
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    f.runtime.handle().chats().set_engine(Arc::new(Busy));
    let chat = f.new_chat().await;
    f.post(
        &format!("/v1/chats/{chat}/messages"),
        json!({"content": "hi"}),
    )
    .await;
    f.expect(
        f.bare("DELETE", &format!("/v1/chats/{chat}")),
        StatusCode::CONFLICT,
        "chat_already_has_active_execution",
        "active execution",
    )
    .await;
    f.post(&format!("/v1/chats/{chat}/cancel-active"), json!({}))
        .await;
    wait_until(|| async {
        let (status, _) = f.send(f.bare("DELETE", &format!("/v1/chats/{chat}"))).await;
        status == StatusCode::NO_CONTENT
    })
    .await;
}

/// Input sent to the graph agent while it works waits for the next turn, which starts as soon
/// as the running one ends, on the stored message.
#[tokio::test]
async fn input_during_a_turn_the_agent_cannot_take_starts_the_next_turn() {
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    f.runtime.handle().chats().set_engine(Arc::new(Busy));
    let chat = f.new_chat().await;
    let input = format!("/v1/chats/{chat}/input");
    let first = f.post(&input, json!({"content": "start"})).await;
    assert_eq!(first["delivery"], "turn");
    let running = first["execution"]["id"].as_str().unwrap().to_owned();

    let queued = f
        .post(
            &input,
            json!({"content": "and also this", "clientMessageId": "k1"}),
        )
        .await;
    assert_eq!(queued["delivery"], "queued");
    assert_eq!(queued["execution"]["id"], running.as_str());
    let (_, messages) = f
        .send(f.bare("GET", &format!("/v1/chats/{chat}/messages")))
        .await;
    let contents: Vec<&str> = messages["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["start", "and also this"], "stored at once");

    f.post(&format!("/v1/chats/{chat}/cancel-active"), json!({}))
        .await;
    wait_until(|| async { f.executions(&chat).await.len() == 2 }).await;
    let (_, turns) = f.send(f.bare("GET", "/v1/turns")).await;
    let next = &turns["items"][0]["execution"];
    assert_ne!(next["id"], running.as_str(), "{turns}");
    assert_eq!(next["userMessageId"], queued["message"]["id"], "{turns}");
}

/// Records what it was steered with, and takes it.
#[derive(Default)]
struct Steerable {
    taken: Mutex<Vec<String>>,
}

impl TurnEngine for Steerable {
    fn run(
        &self,
        turn: Turn,
        events: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, TurnOutcome> {
        Busy.run(turn, events, cancel)
    }

    fn steer(&self, _chat_id: &str, input: &str) -> bool {
        self.taken.lock().unwrap().push(input.to_owned());
        true
    }
}

#[tokio::test]
async fn input_during_a_turn_that_takes_it_is_steered_and_stored() {
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    let engine = Arc::new(Steerable::default());
    f.runtime.handle().chats().set_engine(engine.clone());
    let chat = f.new_chat().await;
    let input = format!("/v1/chats/{chat}/input");
    f.post(&input, json!({"content": "start"})).await;
    let steered = f
        .post(&input, json!({"content": "  use metric units "}))
        .await;
    assert_eq!(steered["delivery"], "steered");
    assert_eq!(steered["message"]["content"], "use metric units");
    assert_eq!(*engine.taken.lock().unwrap(), ["use metric units"]);
    assert_eq!(f.executions(&chat).await.len(), 1, "no new turn");
}

#[tokio::test]
async fn bad_input_is_refused_and_stores_nothing() {
    let f = Fixture::new().await;
    let chat = f.new_chat().await;
    let input = format!("/v1/chats/{chat}/input");
    let bad = StatusCode::BAD_REQUEST;
    f.expect(
        f.json("POST", &input, &json!({"content": "  "})),
        bad,
        "invalid_request",
        "content must not be blank.",
    )
    .await;
    f.expect(
        f.json("POST", &input, &json!({"content": "x", "options": {}})),
        bad,
        "invalid_request",
        "Invalid payload",
    )
    .await;
    f.expect(
        f.json(
            "POST",
            &format!("/v1/chats/{ABSENT}/input"),
            &json!({"content": "x"}),
        ),
        StatusCode::NOT_FOUND,
        "chat_not_found",
        "Chat not found.",
    )
    .await;
    let (_, messages) = f
        .send(f.bare("GET", &format!("/v1/chats/{chat}/messages")))
        .await;
    assert_eq!(messages["items"], json!([]));
}

/// Polls `condition` (what the daemon does next runs on its own task) for up to 10 s.
async fn wait_until<F, Fut>(condition: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..500 {
        if condition().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the condition did not become true");
}

/// Records each turn it is given, then waits until cancelled.
#[derive(Default)]
struct Recording {
    turns: Mutex<Vec<Turn>>,
}

impl TurnEngine for Recording {
    fn run(
        &self,
        turn: Turn,
        events: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, TurnOutcome> {
        self.turns.lock().unwrap().push(turn.clone());
        Busy.run(turn, events, cancel)
    }
}

#[tokio::test]
async fn a_chats_own_model_agent_and_tools_are_validated_stored_and_used_by_its_turns() {
    let f = Fixture::with(|config| {
        config.llm.local_models = vec!["ollama/llama3.2".into(), "ollama/qwen3".into()];
    })
    .await;
    let engine = Arc::new(Recording::default());
    f.runtime.handle().chats().set_engine(engine.clone());
    let chat = f.new_chat().await;
    let other = f.new_chat().await;
    let mine = json!({"defaultModel": "ollama/llama3.2"});
    let (status, _) = f.send(f.json("PATCH", "/v1/me/settings", &mine)).await;
    assert_eq!(status, StatusCode::OK);
    let path = format!("/v1/chats/{chat}/settings");
    let (status, empty) = f.send(f.bare("GET", &path)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        empty,
        json!({"model": null, "agent": null, "enabledTools": null})
    );

    let bad = StatusCode::BAD_REQUEST;
    for (body, message) in [
        (json!({"agent": "clever"}), "agent must be graph or skills."),
        (json!({"model": "gpt-nope"}), "must be a known model alias."),
        (
            json!({"model": "qwen-max"}),
            "model must be available to the current user.",
        ),
        (
            json!({"enabledTools": ["NoSuchTool"]}),
            "enabledTools contains unknown tools: NoSuchTool.",
        ),
        (json!({"surprise": true}), "Invalid payload"),
    ] {
        f.expect(f.json("PUT", &path, &body), bad, "invalid_request", message)
            .await;
    }
    let (_, unchanged) = f.send(f.bare("GET", &path)).await;
    assert_eq!(unchanged, empty, "a refused change stores nothing");
    f.expect(
        f.json("PUT", &format!("/v1/chats/{ABSENT}/settings"), &json!({})),
        StatusCode::NOT_FOUND,
        "chat_not_found",
        "Chat not found.",
    )
    .await;

    let wanted = json!({"model": " ollama/qwen3 ", "agent": "skills", "enabledTools": ["NewFile", "NewFile"]});
    let (status, stored) = f.send(f.json("PUT", &path, &wanted)).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(
        stored,
        json!({"model": "ollama/qwen3", "agent": "skills", "enabledTools": ["NewFile"]})
    );
    assert_eq!(f.send(f.bare("GET", &path)).await.1, stored);

    f.post(
        &format!("/v1/chats/{chat}/messages"),
        json!({"content": "hi"}),
    )
    .await;
    f.post(
        &format!("/v1/chats/{other}/messages"),
        json!({"content": "hi"}),
    )
    .await;
    wait_until(|| async { engine.turns.lock().unwrap().len() == 2 }).await;
    let turns = engine.turns.lock().unwrap().clone();
    let mine = turns.iter().find(|turn| turn.chat_id == chat).unwrap();
    assert_eq!(mine.settings.default_model, "ollama/qwen3");
    assert_eq!(mine.settings.enabled_tools, ["NewFile"]);
    assert_eq!(mine.agent, Some(crate::agent::AgentKind::Skills));
    let theirs = turns.iter().find(|turn| turn.chat_id == other).unwrap();
    assert_eq!(
        theirs.settings.default_model, "ollama/llama3.2",
        "other chats keep the user's"
    );
    assert_eq!(theirs.agent, None);
    assert!(theirs.settings.enabled_tools.len() > 1);
}

/// A settings change is announced as `settings.changed` (the tray reads its language again);
/// a refused one changes and announces nothing.
#[tokio::test]
async fn a_settings_change_is_announced_and_a_refused_one_is_not() {
    let f = Fixture::new().await;
    let announced = || async { f.runtime_events("settings.changed").await.len() };
    let choose = |language: &str| {
        f.send(f.json(
            "PATCH",
            "/v1/me/settings",
            &json!({ "interfaceLanguage": language }),
        ))
    };
    let before = announced().await;
    let (status, _) = choose("de").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(announced().await, before);
    let (status, body) = choose("ru").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["settings"]["interfaceLanguage"], "ru");
    assert_eq!(announced().await, before + 1);
}
