//! `/v1/options`: pending questions listed per user (foreign ids are 404 in trusted-proxy
//! mode), one question by id, validation, and the schemas in the OpenAPI document.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use souz_protocol::chat::{OptionChoice, SelectionMode};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{BOUND, Fixture, code};
use crate::chat::turns::{NewQuestion, Turn, TurnEngine, TurnEvent, TurnOutcome};

const SECRET: &str = "proxy-secret-0123456789";

/// The first turn asks which color, choices for several; the turn resumed by the answer
/// completes (asking again would race the test's check that nothing is pending any more).
#[derive(Default)]
struct Asks {
    asked: AtomicBool,
}

impl TurnEngine for Asks {
    fn run(
        &self,
        _: Turn,
        _: mpsc::UnboundedSender<TurnEvent>,
        _: CancellationToken,
    ) -> BoxFuture<'static, TurnOutcome> {
        let choice = |id: &str, label: &str| OptionChoice {
            id: id.into(),
            label: label.into(),
            content: None,
        };
        if self.asked.swap(true, Ordering::SeqCst) {
            return Box::pin(async {
                TurnOutcome::Completed {
                    text: "Red and blue.".into(),
                    usage: Default::default(),
                    end_reason: Default::default(),
                }
            });
        }
        Box::pin(async move {
            TurnOutcome::Asked {
                question: NewQuestion {
                    kind: "generic_selection".into(),
                    title: "Which colors?".into(),
                    selection_mode: SelectionMode::Multiple,
                    choices: vec![choice("choice-1", "Red"), choice("choice-2", "Blue")],
                    free_text: false,
                },
                usage: Default::default(),
            }
        })
    }
}

fn as_user(method: &str, path: &str, user: &str, body: Option<Value>) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, BOUND)
        .header("X-Souz-Proxy-Auth", SECRET)
        .header("X-User-Id", user)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.map_or_else(Body::empty, |body| Body::from(body.to_string())))
        .unwrap()
}

impl Fixture {
    async fn send_as(
        &self,
        method: &str,
        path: &str,
        user: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = as_user(method, path, user, body);
        request.headers_mut().insert(
            header::AUTHORIZATION,
            format!("Bearer {}", self.token).parse().unwrap(),
        );
        self.send(request).await
    }
}

#[tokio::test]
async fn pending_questions_are_listed_per_user_and_answered() {
    let f = Fixture::with(|config| {
        config.server.trusted_proxy_token = SECRET.into();
        config.llm.local_models = vec!["ollama/llama3.2".into()];
    })
    .await;
    f.runtime
        .handle()
        .chats()
        .set_engine(Arc::new(Asks::default()));
    let (status, chat) = f
        .send_as(
            "POST",
            "/v1/chats",
            "alice",
            Some(json!({"title": "Paint"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{chat}");
    let chat_id = chat["chat"]["id"].as_str().unwrap().to_owned();
    let (status, posted) = f
        .send_as(
            "POST",
            &format!("/v1/chats/{chat_id}/messages"),
            "alice",
            Some(json!({"content": "paint it"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{posted}");

    let mut listed = Value::Null;
    for _ in 0..1000 {
        listed = f.send_as("GET", "/v1/options", "alice", None).await.1;
        if listed["items"]
            .as_array()
            .is_some_and(|items| !items.is_empty())
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(1),
        "one pending question: {listed}"
    );
    let question = listed["items"][0].clone();
    assert_eq!(question["chatId"], chat_id.as_str(), "{listed}");
    assert_eq!(question["chatTitle"], "Paint");
    assert_eq!(question["executionId"], posted["execution"]["id"]);
    assert_eq!(question["title"], "Which colors?");
    assert_eq!(question["selectionMode"], "multiple");
    assert_eq!(question["freeText"], false);
    assert_eq!(question["status"], "pending");
    assert_eq!(question["options"][1]["label"], "Blue");
    let id = question["id"].as_str().unwrap().to_owned();

    let (status, one) = f
        .send_as("GET", &format!("/v1/options/{id}"), "alice", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one, question);
    // Bob sees none of it.
    let (_, bobs) = f.send_as("GET", "/v1/options", "bob", None).await;
    assert_eq!(bobs["items"], json!([]));
    let (status, body) = f
        .send_as("GET", &format!("/v1/options/{id}"), "bob", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code(&body), "option_not_found");
    let (status, body) = f
        .send_as(
            "POST",
            &format!("/v1/options/{id}/answer"),
            "bob",
            Some(json!({"selectedOptionIds": ["choice-1"]})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(code(&body), "option_not_found");

    let (status, answered) = f
        .send_as(
            "POST",
            &format!("/v1/options/{id}/answer"),
            "alice",
            Some(json!({"selectedOptionIds": ["choice-1", "choice-2"]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answered}");
    assert_eq!(answered["execution"]["id"], posted["execution"]["id"]);
    let (_, after) = f.send_as("GET", "/v1/options", "alice", None).await;
    assert_eq!(after["items"], json!([]));
    let (_, settled) = f
        .send_as("GET", &format!("/v1/options/{id}"), "alice", None)
        .await;
    assert_eq!(settled["status"], "answered");
    assert_eq!(
        settled["answer"]["selectedOptionIds"],
        json!(["choice-1", "choice-2"])
    );
}

#[tokio::test]
async fn option_routes_validate_ids_and_limits_and_are_documented() {
    let f = Fixture::new().await;
    let bare = |path: &str| {
        f.authed(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::empty())
            .unwrap()
    };
    let (status, body) = f.send(bare("/v1/options/not-a-uuid")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["message"], "optionId must be a valid UUID.");
    let (status, body) = f
        .send(bare("/v1/options/00000000-0000-7000-8000-000000000000"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code(&body), "option_not_found");
    let (status, body) = f.send(bare("/v1/options?limit=0")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["message"], "limit must be positive.");
    let (status, body) = f.send(bare("/v1/options")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["items"], json!([]));

    let (_, doc) = f
        .send(f.get("/docs/openapi.json").body(Body::empty()).unwrap())
        .await;
    let schema = |path: &str, method: &str| {
        doc["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
            ["$ref"]
            .clone()
    };
    assert_eq!(
        schema("/v1/options", "get"),
        "#/components/schemas/QuestionList"
    );
    assert_eq!(
        schema("/v1/options/{optionId}", "get"),
        "#/components/schemas/Question"
    );
    let question = &doc["components"]["schemas"]["Question"]["properties"];
    for field in [
        "chatId",
        "chatTitle",
        "executionId",
        "title",
        "selectionMode",
        "options",
    ] {
        assert!(
            question[field].is_object(),
            "Question.{field} in {question}"
        );
    }
}
