//! The chat routes: status codes, error codes and validation messages per route, and the
//! trusted-proxy identity.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{BOUND, Fixture, code};
use crate::chat::turns::{Turn, TurnEngine, TurnEvent, TurnOutcome};

/// Turns that wait until cancelled, so a chat stays busy.
pub(super) struct Busy;

impl TurnEngine for Busy {
    fn run(
        &self,
        _: Turn,
        _: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, TurnOutcome> {
        Box::pin(async move {
            cancel.cancelled().await;
            TurnOutcome::Cancelled {
                usage: Default::default(),
            }
        })
    }
}

impl Fixture {
    pub(super) fn json(&self, method: &str, path: &str, body: &Value) -> Request<Body> {
        Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    }

    pub(super) fn bare(&self, method: &str, path: &str) -> Request<Body> {
        Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .body(Body::empty())
            .unwrap()
    }

    pub(super) async fn expect(
        &self,
        request: Request<Body>,
        status: StatusCode,
        error_code: &str,
        message: &str,
    ) {
        let (got, body) = self.send(request).await;
        assert_eq!(got, status, "{body}");
        assert_eq!(code(&body), error_code, "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(message),
            "{body} should say {message:?}"
        );
    }

    pub(super) async fn new_chat(&self) -> String {
        let (status, body) = self.send(self.json("POST", "/v1/chats", &json!({}))).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["chat"]["id"].as_str().unwrap().to_owned()
    }
}

#[tokio::test]
#[allow(clippy::too_many_lines, reason = "a table of invalid requests")]
async fn chat_routes_validate_their_input() {
    let f = Fixture::new().await;
    let chat = f.new_chat().await;
    let bad = StatusCode::BAD_REQUEST;
    f.expect(
        f.bare("GET", "/v1/chats?limit=0"),
        bad,
        "invalid_request",
        "limit must be positive.",
    )
    .await;
    f.expect(
        f.bare("GET", "/v1/chats?limit=x"),
        bad,
        "invalid_request",
        "limit must be positive.",
    )
    .await;
    f.expect(
        f.bare("GET", "/v1/chats?includeArchived=yes"),
        bad,
        "invalid_request",
        "includeArchived must be true or false.",
    )
    .await;
    f.expect(
        f.json("POST", "/v1/chats", &json!({"surprise": 1})),
        bad,
        "invalid_request",
        "Invalid payload",
    )
    .await;
    f.expect(
        f.json("POST", "/v1/chats", &json!({"userId": "someone-else"})),
        bad,
        "invalid_request",
        "userId",
    )
    .await;
    f.expect(
        f.json(
            "PATCH",
            &format!("/v1/chats/{chat}/title"),
            &json!({"title": "  "}),
        ),
        bad,
        "invalid_request",
        "title must not be blank.",
    )
    .await;
    f.expect(
        f.bare("GET", &format!("/v1/chats/{chat}/messages?beforeSeq=0")),
        bad,
        "invalid_request",
        "beforeSeq must be positive.",
    )
    .await;
    f.expect(
        f.bare("GET", &format!("/v1/chats/{chat}/messages?limit=-5")),
        bad,
        "invalid_request",
        "limit must be positive.",
    )
    .await;
    f.expect(
        f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": " "}),
        ),
        bad,
        "invalid_request",
        "content must not be blank.",
    )
    .await;
    f.expect(
        f.bare("GET", &format!("/v1/chats/{chat}/events?afterSeq=-1")),
        bad,
        "invalid_request",
        "afterSeq must be 0 or more.",
    )
    .await;
    f.expect(
        f.bare("GET", &format!("/v1/chats/{chat}/events?limit=0")),
        bad,
        "invalid_request",
        "limit must be positive.",
    )
    .await;
    f.expect(
        f.bare("GET", &format!("/v1/chats/{chat}/ws")),
        bad,
        "invalid_request",
        "WebSocket upgrade required",
    )
    .await;
    f.expect(
        f.bare("POST", &format!("/v1/chats/{chat}/cancel-active")),
        bad,
        "invalid_request",
        "Chat has no active execution.",
    )
    .await;
    f.expect(
        f.json("PATCH", "/v1/me/settings", &json!({"locale": "und"})),
        bad,
        "invalid_request",
        "locale must be a valid BCP 47 language tag.",
    )
    .await;
    f.expect(
        f.json(
            "PATCH",
            "/v1/me/settings",
            &json!({"requestTimeoutMillis": 5}),
        ),
        bad,
        "invalid_request",
        "requestTimeoutMillis must be at least 1000.",
    )
    .await;
    f.expect(
        f.json(
            "PATCH",
            "/v1/me/settings",
            &json!({"enabledTools": ["Nope"]}),
        ),
        bad,
        "invalid_request",
        "unknown tools: Nope",
    )
    .await;
    let plain = Request::post(format!("/v1/chats/{chat}/messages"))
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("hi"))
        .unwrap();
    f.expect(
        plain,
        bad,
        "invalid_request",
        "Content-Type must be application/json.",
    )
    .await;
}

/// A well-formed id that names nothing.
const ABSENT: &str = "0190f5a0-0000-7000-8000-000000000000";

#[tokio::test]
async fn missing_resources_have_their_own_codes() {
    let f = Fixture::new().await;
    let chat = f.new_chat().await;
    let missing = StatusCode::NOT_FOUND;
    for request in [
        f.json(
            "PATCH",
            &format!("/v1/chats/{ABSENT}/title"),
            &json!({"title": "x"}),
        ),
        f.bare("POST", &format!("/v1/chats/{ABSENT}/archive")),
        f.bare("POST", &format!("/v1/chats/{ABSENT}/unarchive")),
        f.bare("GET", &format!("/v1/chats/{ABSENT}/messages")),
        f.json(
            "POST",
            &format!("/v1/chats/{ABSENT}/messages"),
            &json!({"content": "hi"}),
        ),
        f.bare("GET", &format!("/v1/chats/{ABSENT}/events")),
        f.bare("POST", &format!("/v1/chats/{ABSENT}/cancel-active")),
        // An upper-case spelling is the same id.
        f.bare(
            "GET",
            &format!("/v1/chats/{}/messages", ABSENT.to_uppercase()),
        ),
    ] {
        f.expect(request, missing, "chat_not_found", "Chat not found.")
            .await;
    }
    f.expect(
        f.bare(
            "POST",
            &format!("/v1/chats/{chat}/executions/{ABSENT}/cancel"),
        ),
        missing,
        "execution_not_found",
        "Execution not found.",
    )
    .await;
    f.expect(
        f.json(
            "POST",
            &format!("/v1/options/{ABSENT}/answer"),
            &json!({"selectedOptionIds": ["a"]}),
        ),
        missing,
        "option_not_found",
        "Option not found.",
    )
    .await;
    let (status, _) = f
        .send(f.bare(
            "GET",
            &format!("/v1/chats/{}/messages", chat.to_uppercase()),
        ))
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "ids are compared in their stored form"
    );
}

#[tokio::test]
async fn ids_that_are_not_uuids_are_bad_requests() {
    let f = Fixture::new().await;
    let chat = f.new_chat().await;
    let bad = StatusCode::BAD_REQUEST;
    for request in [
        f.json("PATCH", "/v1/chats/nope/title", &json!({"title": "x"})),
        f.bare("POST", "/v1/chats/nope/archive"),
        f.bare("POST", "/v1/chats/nope/unarchive"),
        f.bare("GET", "/v1/chats/nope/messages"),
        f.json("POST", "/v1/chats/nope/messages", &json!({"content": "hi"})),
        f.bare("GET", "/v1/chats/nope/events"),
        f.bare("GET", "/v1/chats/nope/ws"),
        f.bare("POST", "/v1/chats/nope/cancel-active"),
        f.bare(
            "POST",
            &format!("/v1/chats/nope/executions/{ABSENT}/cancel"),
        ),
    ] {
        let path = request.uri().to_string();
        let (status, body) = f.send(request).await;
        assert_eq!(status, bad, "{path}: {body}");
        assert_eq!(code(&body), "invalid_request", "{path}: {body}");
        assert_eq!(
            body["error"]["message"], "chatId must be a valid UUID.",
            "{path}"
        );
    }
    f.expect(
        f.bare("POST", &format!("/v1/chats/{chat}/executions/nope/cancel")),
        bad,
        "invalid_request",
        "executionId must be a valid UUID.",
    )
    .await;
    f.expect(
        f.json(
            "POST",
            "/v1/options/nope/answer",
            &json!({"selectedOptionIds": ["a"]}),
        ),
        bad,
        "invalid_request",
        "optionId must be a valid UUID.",
    )
    .await;
}

#[tokio::test]
async fn models_and_locales_are_validated_like_the_original() {
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    f.runtime.handle().chats().set_engine(Arc::new(Busy));
    let chat = f.new_chat().await;
    let messages = format!("/v1/chats/{chat}/messages");
    let bad = StatusCode::BAD_REQUEST;
    let turn = |options: Value| json!({"content": "hi", "options": options});
    f.expect(
        f.json("POST", &messages, &turn(json!({"model": "gpt-nope"}))),
        bad,
        "invalid_request",
        "model must be a known model alias.",
    )
    .await;
    f.expect(
        f.json(
            "PATCH",
            "/v1/me/settings",
            &json!({"defaultModel": "gpt-nope"}),
        ),
        bad,
        "invalid_request",
        "defaultModel must be a known model alias.",
    )
    .await;
    f.expect(
        f.json(
            "POST",
            "/v1/onboarding/complete",
            &json!({"defaultModel": "gpt-nope"}),
        ),
        bad,
        "invalid_request",
        "defaultModel must be a known model alias.",
    )
    .await;
    // A real model that cannot serve chats is the one 409 (original §1.7).
    f.expect(
        f.json(
            "POST",
            &messages,
            &turn(json!({"model": "text-embedding-v3"})),
        ),
        StatusCode::CONFLICT,
        "unsupported_backend_model",
        "embedding model",
    )
    .await;
    // A known chat model whose provider has no key is not available to this user.
    f.expect(
        f.json(
            "PATCH",
            "/v1/me/settings",
            &json!({"defaultModel": "qwen-max"}),
        ),
        bad,
        "invalid_request",
        "defaultModel must be available to the current user.",
    )
    .await;
    for locale in ["qq", "zz-ZZ", "xx-US", "und", "en-US!"] {
        f.expect(
            f.json("PATCH", "/v1/me/settings", &json!({"locale": locale})),
            bad,
            "invalid_request",
            "locale must be a valid BCP 47 language tag.",
        )
        .await;
        f.expect(
            f.json("POST", &messages, &turn(json!({"locale": locale}))),
            bad,
            "invalid_request",
            "locale must be a valid BCP 47 language tag.",
        )
        .await;
    }
    let (status, body) = f
        .send(f.json("PATCH", "/v1/me/settings", &json!({"locale": "pt-BR"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["settings"]["locale"], "pt-BR");
    // None of the refused turns started: the chat is free for a valid one.
    let (status, body) = f
        .send(f.json(
            "POST",
            &messages,
            &turn(json!({"model": "ollama/llama3.2", "locale": "fil-PH"})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn turns_need_a_model_and_a_free_chat() {
    let f = Fixture::new().await;
    let chat = f.new_chat().await;
    // No provider key and no local model: there is nothing to run a turn with.
    f.expect(
        f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "hi"}),
        ),
        StatusCode::CONFLICT,
        "onboarding_requires_model_access",
        "no model is available yet: add a provider's API key (`souz keys set openai`, or the \
         setup page of the web UI: `souz ui --open`)",
    )
    .await;
    f.expect(
        f.json("POST", "/v1/onboarding/complete", &json!({})),
        StatusCode::CONFLICT,
        "onboarding_requires_model_access",
        "provider key",
    )
    .await;
    let (status, state) = f.send(f.bare("GET", "/v1/onboarding/state")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["currentStep"], "provider");
    assert_eq!(
        state["reasons"],
        json!(["missing_model_access", "preferences_incomplete"])
    );

    // With a local model configured, turns start; a second one conflicts.
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    f.runtime.handle().chats().set_engine(Arc::new(Busy));
    let chat = f.new_chat().await;
    let (status, body) = f
        .send(f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "hi", "clientMessageId": "m1"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["execution"]["status"], "running");
    assert_eq!(body["execution"]["model"], "ollama/llama3.2");
    assert_eq!(
        body["execution"]["metadata"],
        json!({}),
        "internal metadata never shows"
    );
    let execution = body["execution"]["id"].as_str().unwrap().to_owned();
    f.expect(
        f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "more"}),
        ),
        StatusCode::CONFLICT,
        "chat_already_has_active_execution",
        "active execution",
    )
    .await;
    let (status, again) = f
        .send(f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "hi", "clientMessageId": "m1"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        again["execution"]["id"],
        execution.as_str(),
        "an idempotent retry is not a conflict"
    );
    let (status, cancelled) = f
        .send(f.bare(
            "POST",
            &format!("/v1/chats/{chat}/executions/{execution}/cancel"),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["execution"]["cancelRequested"], true);
    let (_, state) = f.send(f.bare("GET", "/v1/onboarding/state")).await;
    assert_eq!(state["currentStep"], "preferences");
    let (status, _) = f
        .send(f.json(
            "POST",
            "/v1/onboarding/complete",
            &json!({"locale": "ru-RU"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, state) = f.send(f.bare("GET", "/v1/onboarding/state")).await;
    assert_eq!(state["currentStep"], "done");
    assert_eq!(state["required"], false);
    let (_, settings) = f.send(f.bare("GET", "/v1/me/settings")).await;
    assert_eq!(settings["settings"]["locale"], "ru-RU");
}

#[tokio::test]
async fn chat_lifecycle_over_http() {
    let f = Fixture::new().await;
    let (status, created) = f
        .send(f.json(
            "POST",
            "/v1/chats",
            &json!({"requestId": "r1", "title": "Trip"}),
        ))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, duplicate) = f
        .send(f.json(
            "POST",
            "/v1/chats",
            &json!({"requestId": "r1", "title": "Trip"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(duplicate["duplicate"], true);
    assert_eq!(duplicate["chat"]["id"], created["chat"]["id"]);
    f.expect(
        f.json(
            "POST",
            "/v1/chats",
            &json!({"requestId": "r1", "title": "Other"}),
        ),
        StatusCode::CONFLICT,
        "idempotency_conflict",
        "requestId",
    )
    .await;
    let id = created["chat"]["id"].as_str().unwrap();
    let (_, renamed) = f
        .send(f.json(
            "PATCH",
            &format!("/v1/chats/{id}/title"),
            &json!({"title": "Trip 2"}),
        ))
        .await;
    assert_eq!(renamed["title"], "Trip 2");
    let (_, archived) = f
        .send(f.bare("POST", &format!("/v1/chats/{id}/archive")))
        .await;
    assert_eq!(archived["archived"], true);
    let (_, list) = f.send(f.bare("GET", "/v1/chats")).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0);
    assert!(list["nextCursor"].is_null());
    let (_, list) = f
        .send(f.bare("GET", "/v1/chats?includeArchived=true&limit=500"))
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let (_, unarchived) = f
        .send(f.bare("POST", &format!("/v1/chats/{id}/unarchive")))
        .await;
    assert_eq!(unarchived["archived"], false);
    let (status, messages) = f
        .send(f.bare("GET", &format!("/v1/chats/{id}/messages")))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(messages["items"], json!([]));
    let (status, events) = f
        .send(f.bare("GET", &format!("/v1/chats/{id}/events?afterSeq=0")))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(events["items"], json!([]));
}

fn proxied(f: &Fixture, path: &str, proxy: Option<&str>, user: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path)
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token));
    if let Some(proxy) = proxy {
        request = request.header("X-Souz-Proxy-Auth", proxy);
    }
    if let Some(user) = user {
        request = request.header("X-User-Id", user);
    }
    request.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn trusted_proxy_mode_scopes_everything_to_its_user() {
    const SECRET: &str = "proxy-secret-0123456789";
    let f = Fixture::with(|config| config.server.trusted_proxy_token = SECRET.into()).await;
    let unauthorized = StatusCode::UNAUTHORIZED;
    f.expect(
        proxied(&f, "/v1/chats", None, Some("alice")),
        unauthorized,
        "untrusted_proxy",
        "trusted proxy",
    )
    .await;
    f.expect(
        proxied(
            &f,
            "/v1/chats",
            Some("wrong-secret-0123456789"),
            Some("alice"),
        ),
        unauthorized,
        "untrusted_proxy",
        "trusted proxy",
    )
    .await;
    f.expect(
        proxied(&f, "/v1/chats", Some(SECRET), None),
        unauthorized,
        "missing_user_identity",
        "X-User-Id",
    )
    .await;
    f.expect(
        proxied(&f, "/v1/chats", Some(SECRET), Some(&"x".repeat(300))),
        unauthorized,
        "invalid_user_identity",
        "X-User-Id",
    )
    .await;

    let create = |user: &str| {
        Request::post("/v1/chats")
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
            .header("X-Souz-Proxy-Auth", SECRET)
            .header("X-User-Id", user)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{}"))
            .unwrap()
    };
    let (status, alice_chat) = f.send(create("alice")).await;
    assert_eq!(status, StatusCode::CREATED);
    let id = alice_chat["chat"]["id"].as_str().unwrap();
    let (status, _) = f
        .send(proxied(
            &f,
            &format!("/v1/chats/{id}/messages"),
            Some(SECRET),
            Some("alice"),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    f.expect(
        proxied(
            &f,
            &format!("/v1/chats/{id}/messages"),
            Some(SECRET),
            Some("bob"),
        ),
        StatusCode::NOT_FOUND,
        "chat_not_found",
        "Chat not found.",
    )
    .await;
    let (_, bobs) = f
        .send(proxied(&f, "/v1/chats", Some(SECRET), Some("bob")))
        .await;
    assert_eq!(bobs["items"], json!([]));
    let (_, bootstrap) = f
        .send(proxied(&f, "/v1/bootstrap", Some(SECRET), Some("alice")))
        .await;
    assert_eq!(bootstrap["user"]["id"], "alice");
    assert_eq!(
        bootstrap["features"]["mcp"], false,
        "/mcp refuses proxied users"
    );
}
