//! Trusted-proxy mode with two users, alice and bob, and the operator (the bearer token alone),
//! over real agent turns against the fake OpenAI server: each user sees and decides only the
//! approvals and audit rows of their own chats, operator routes answer 403 to proxied users and
//! work for the operator, and provider keys are per user, a turn using its owner's key.

use std::time::Duration;

use axum::http::Method;

use serde_json::json;
use souz_testkit::{FakeServer, openai};

use super::*;
use crate::llm::ProviderId;

const SECRET: &str = "proxy-secret-0123456789";
const SERVER_KEY: &str = "sk-server-environment-key-0000";
const ALICE_KEY: &str = "sk-alice-own-key-1111";
const BOB_KEY: &str = "sk-bob-own-key-2222";

/// A proxy-mode daemon whose OpenAI endpoint is `provider`, with `OPENAI_API_KEY` (the server's
/// key) in its environment. The operator's home is the fixture's folder; each user's folder is
/// `users/<user>` in it, and users decide their own chats' approvals.
async fn daemon(provider: &FakeServer) -> Fixture {
    daemon_with(provider, |config| config.server.proxy_users_decide = true).await
}

async fn daemon_with(provider: &FakeServer, adjust: impl FnOnce(&mut Config) + 'static) -> Fixture {
    let runtime = TestRuntime::builder()
        .with_llm(provider)
        .with_env("OPENAI_API_KEY", SERVER_KEY)
        .with_config_in(|config, home| {
            config.server.trusted_proxy_token = SECRET.into();
            config.server.proxy_user_roots = format!("{}/users/{{user}}", home.path().display());
            config.agent.default_agent = "skills".into();
        })
        .with_config(adjust)
        .start()
        .await;
    Fixture::on(runtime)
}

/// A request with the bearer token, as `user` through the proxy (`None`: as the operator).
fn call(
    f: &Fixture,
    user: Option<&str>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Request<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token));
    if let Some(user) = user {
        request = request
            .header("X-Souz-Proxy-Auth", SECRET)
            .header("X-User-Id", user);
    }
    match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
        None => request.body(Body::empty()).unwrap(),
    }
}

async fn ok(f: &Fixture, request: Request<Body>) -> Value {
    let (status, body) = f.send(request).await;
    assert!(status.is_success(), "{status}: {body}");
    body
}

async fn store_key(f: &Fixture, user: &str, key: &str) {
    let path = "/v1/me/provider-keys/openai";
    ok(
        f,
        call(f, Some(user), "PUT", path, Some(json!({"apiKey": key}))),
    )
    .await;
}

async fn new_chat(f: &Fixture, user: &str) -> String {
    let chat = ok(f, call(f, Some(user), "POST", "/v1/chats", Some(json!({})))).await;
    chat["chat"]["id"].as_str().unwrap().to_owned()
}

async fn post_message(f: &Fixture, user: &str, chat: &str, content: &str) {
    let path = format!("/v1/chats/{chat}/messages");
    let body = json!({"content": content});
    ok(f, call(f, Some(user), "POST", &path, Some(body))).await;
}

/// Waits for the first stored event of `kind` in `chat`, read as `user`.
async fn wait_event(f: &Fixture, user: &str, chat: &str, kind: &str) -> Value {
    let path = format!("/v1/chats/{chat}/events?afterSeq=0&limit=1000");
    for _ in 0..1500 {
        let events = ok(f, call(f, Some(user), "GET", &path, None)).await;
        let found = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|event| event["type"] == kind)
            .cloned();
        if let Some(event) = found {
            return event;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no {kind} in chat {chat}");
}

/// A model reply that writes `path` through `RunSkillCommand` (a write: it asks).
fn writes(id: &str, path: &str) -> souz_testkit::Reply {
    let arguments = json!({"skillId": "NewFile", "arguments": {"path": path, "text": "milk\n"}});
    openai::tool_calls(&[(id, "RunSkillCommand", &arguments.to_string())], 2)
}

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The chat of each audit row (`None` for a requester that is not a chat).
fn audit_chats(page: &Value) -> Vec<Option<String>> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["requester"]["chat_id"].as_str().map(str::to_owned))
        .collect()
}

/// The keys the model requests carried, in order.
fn keys_used(provider: &FakeServer) -> Vec<String> {
    provider
        .requests_to(openai::CHAT_PATH)
        .iter()
        .map(|request| {
            request
                .header("authorization")
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[path = "proxy_isolation.rs"]
mod isolation;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_user_sees_and_decides_only_the_approvals_and_audit_rows_of_their_chats() {
    let provider = FakeServer::start().await;
    let f = daemon(&provider).await;
    store_key(&f, "alice", ALICE_KEY).await;
    store_key(&f, "bob", BOB_KEY).await;
    let (alice_chat, bob_chat) = (new_chat(&f, "alice").await, new_chat(&f, "bob").await);

    // Each asks their agent to write a file: one pending approval each.
    provider.push(openai::CHAT_PATH, writes("a1", "alice.txt"));
    post_message(&f, "alice", &alice_chat, "Write alice.txt").await;
    let asked = wait_event(&f, "alice", &alice_chat, "approval.requested").await;
    let alice_approval = asked["payload"]["approvalId"].as_str().unwrap().to_owned();
    provider.push(openai::CHAT_PATH, writes("b1", "bob.txt"));
    post_message(&f, "bob", &bob_chat, "Write bob.txt").await;
    let asked = wait_event(&f, "bob", &bob_chat, "approval.requested").await;
    let bob_approval = asked["payload"]["approvalId"].as_str().unwrap().to_owned();

    // Lists: each user their own; the operator neither (both were raised by users' chats).
    for (user, expected) in [
        (Some("alice"), vec![alice_approval.clone()]),
        (Some("bob"), vec![bob_approval.clone()]),
        (None, vec![]),
    ] {
        for path in ["/v1/approvals", "/v1/approvals?status=pending"] {
            let list = ok(&f, call(&f, user, "GET", path, None)).await;
            assert_eq!(ids(&list), expected, "{user:?} {path}");
        }
    }

    // A foreign approval is 404 to read and to decide, exactly like a missing one.
    let approve = json!({"decision": "approve"});
    for user in [Some("bob"), None] {
        let path = format!("/v1/approvals/{alice_approval}");
        let (status, body) = f.send(call(&f, user, "GET", &path, None)).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
        let path = format!("/v1/approvals/{alice_approval}/decision");
        let (status, body) = f
            .send(call(&f, user, "POST", &path, Some(approve.clone())))
            .await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
    }
    let missing = format!("/v1/approvals/{}", uuid::Uuid::now_v7());
    let (status, _) = f.send(call(&f, Some("bob"), "GET", &missing, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // `always` would write a rule into config.toml for everyone: not a user's choice.
    let config_file = f.runtime.handle().config().paths.config_file();
    let config_before = std::fs::read_to_string(&config_file).unwrap_or_default();
    let path = format!("/v1/approvals/{alice_approval}/decision");
    let always = json!({"decision": "approve", "scope": "always"});
    let (status, body) = f
        .send(call(&f, Some("alice"), "POST", &path, Some(always)))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "forbidden"),
        "{body}"
    );
    assert_eq!(
        std::fs::read_to_string(&config_file).unwrap_or_default(),
        config_before
    );
    let show = format!("/v1/approvals/{alice_approval}");
    let approval = ok(&f, call(&f, Some("alice"), "GET", &show, None)).await;
    assert_eq!(approval["status"], "pending", "nothing was decided");

    // Each decides their own; the turns go on.
    provider.push(openai::CHAT_PATH, openai::text(&["Saved."]));
    ok(&f, call(&f, Some("alice"), "POST", &path, Some(approve))).await;
    wait_event(&f, "alice", &alice_chat, "execution.finished").await;
    provider.push(openai::CHAT_PATH, openai::text(&["Not saved."]));
    let path = format!("/v1/approvals/{bob_approval}/decision");
    let deny = json!({"decision": "deny"});
    ok(&f, call(&f, Some("bob"), "POST", &path, Some(deny))).await;
    wait_event(&f, "bob", &bob_chat, "execution.finished").await;
    let show = format!("/v1/approvals/{bob_approval}");
    let approval = ok(&f, call(&f, Some("bob"), "GET", &show, None)).await;
    assert_eq!(approval["status"], "denied");

    // Every model request of a turn carried its chat owner's key.
    let bearer = |key: &str| format!("Bearer {key}");
    assert_eq!(
        keys_used(&provider),
        [ALICE_KEY, BOB_KEY, ALICE_KEY, BOB_KEY].map(bearer)
    );

    // The operator's own call: theirs in the audit, nobody else's.
    let calculate = json!({"tool": "Calculator", "arguments": {"expression": "2 + 2"}});
    ok(
        &f,
        call(&f, None, "POST", "/v1/tool-calls", Some(calculate)),
    )
    .await;

    // Audit rows: each user those of their chat, the operator those of no user's chat.
    for (user, chat) in [("alice", &alice_chat), ("bob", &bob_chat)] {
        let page = ok(&f, call(&f, Some(user), "GET", "/v1/audit", None)).await;
        let chats = audit_chats(&page);
        assert!(!chats.is_empty(), "{user} has audit rows");
        assert!(chats.iter().all(|row| row.as_ref() == Some(chat)), "{page}");
    }
    let foreign = format!("/v1/audit?chat_id={bob_chat}");
    let page = ok(&f, call(&f, Some("alice"), "GET", &foreign, None)).await;
    assert_eq!(page["items"], json!([]));
    let page = ok(&f, call(&f, None, "GET", "/v1/audit", None)).await;
    let tools: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["Calculator"], "{page}");
    assert_eq!(page["items"][0]["requester"]["kind"], "api");
}

/// The operator routes, as the registry marks them.
const OPERATOR_ROUTES: &[&str] = &[
    "DELETE /v1/channels/telegram/link",
    "DELETE /v1/clients/{id}",
    "DELETE /v1/grants/{id}",
    "DELETE /v1/mcp/servers/{name}",
    "DELETE /v1/mcp/servers/{name}/token",
    "DELETE /v1/memory/{id}",
    "DELETE /v1/models/local/{name}",
    "DELETE /v1/settings/service-keys/{name}",
    "DELETE /v1/skills/{id}",
    "DELETE /v1/speech/models/{id}",
    "GET /v1/channels/telegram",
    "GET /v1/clients",
    "GET /v1/config",
    "GET /v1/connect",
    "GET /v1/connect/claude-code/config",
    "GET /v1/connect/claude-desktop",
    "GET /v1/events",
    "GET /v1/grants",
    "GET /v1/history",
    "GET /v1/mcp/servers",
    "GET /v1/memory",
    "GET /v1/memory/model",
    "GET /v1/memory/{id}",
    "GET /v1/memory/{id}/evidence",
    "GET /v1/models/local",
    "GET /v1/pause",
    "GET /v1/review-mode",
    "GET /v1/reviews",
    "GET /v1/reviews/{id}",
    "GET /v1/settings/service-keys",
    "GET /v1/setup",
    "GET /v1/setup/local-servers",
    "GET /v1/skills",
    "GET /v1/skills/{id}",
    "GET /v1/tool-calls/{id}",
    "GET /v1/tools",
    "PATCH /v1/config",
    "PATCH /v1/memory/{id}",
    "POST /v1/channels/telegram/link",
    "POST /v1/clients",
    "POST /v1/connect/claude-code",
    "POST /v1/connect/claude-code/config",
    "POST /v1/connect/claude-desktop",
    "POST /v1/history/undo",
    "POST /v1/history/undo/check",
    "POST /v1/mcp/servers/{name}/login",
    "POST /v1/mcp/servers/{name}/test",
    "POST /v1/memory",
    "POST /v1/memory/search",
    "POST /v1/memory/{id}/pin",
    "POST /v1/memory/{id}/retire",
    "POST /v1/memory/{id}/unpin",
    "POST /v1/models/local/{name}/pull",
    "POST /v1/restart",
    "POST /v1/reviews/{id}/decisions",
    "POST /v1/settings/service-keys/{name}/test",
    "POST /v1/setup/local-servers/probe",
    "POST /v1/skills",
    "POST /v1/skills/archive",
    "POST /v1/skills/git",
    "POST /v1/skills/validate",
    "POST /v1/skills/{id}/disable",
    "POST /v1/skills/{id}/enable",
    "POST /v1/speech/models/{id}/pull",
    "POST /v1/tool-calls",
    "POST /v1/ui-codes",
    "PUT /v1/config",
    "PUT /v1/connect/clients/{id}/memory",
    "PUT /v1/mcp/servers/{name}",
    "PUT /v1/mcp/servers/{name}/enabled",
    "PUT /v1/mcp/servers/{name}/token",
    "PUT /v1/pause",
    "PUT /v1/review-mode",
    "PUT /v1/settings/service-keys/{name}",
    "PUT /v1/setup",
];

/// `path` with every `{param}` replaced by a fresh UUID.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                uuid::Uuid::now_v7().to_string()
            } else {
                segment.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario over every operator route"
)]
async fn operator_routes_answer_403_to_proxied_users_and_serve_the_operator() {
    let provider = FakeServer::start().await;
    let f = daemon(&provider).await;
    let (_, operations) = crate::gateway::routes::all().finish();
    let mut operator: Vec<String> = operations
        .iter()
        .filter(|operation| operation.is_operator())
        .map(|operation| operation.endpoint())
        .collect();
    operator.sort();
    assert_eq!(operator, OPERATOR_ROUTES);

    // Every authenticated route, as a proxied user: 403 `forbidden` exactly on operator routes.
    for operation in operations.iter().filter(|operation| !operation.is_public()) {
        let path = concrete(operation.path());
        let method = operation.method().clone();
        let body = (method != Method::GET && method != Method::DELETE).then(|| json!({}));
        let request = call(&f, Some("alice"), method.as_str(), &path, body);
        let (status, body) = f.send(request).await;
        if operation.is_operator() {
            assert_eq!(
                (status, code(&body)),
                (StatusCode::FORBIDDEN, "forbidden"),
                "{} {body}",
                operation.endpoint()
            );
        } else {
            assert_ne!(
                status,
                StatusCode::FORBIDDEN,
                "{} {body}",
                operation.endpoint()
            );
            assert_ne!(
                status,
                StatusCode::UNAUTHORIZED,
                "{} {body}",
                operation.endpoint()
            );
        }
    }

    // The same routes serve the operator.
    for path in [
        "/v1/config",
        "/v1/pause",
        "/v1/grants",
        "/v1/tools",
        "/v1/skills",
        "/v1/memory",
    ] {
        let (status, body) = f.send(call(&f, None, "GET", path, None)).await;
        assert_eq!(status, StatusCode::OK, "{path} {body}");
    }
    let calculate = json!({"tool": "Calculator", "arguments": {"expression": "6 * 7"}});
    let done = ok(
        &f,
        call(&f, None, "POST", "/v1/tool-calls", Some(calculate)),
    )
    .await;
    let path = format!("/v1/tool-calls/{}", done["id"].as_str().unwrap());
    ok(&f, call(&f, None, "GET", &path, None)).await;
    let paused = json!({"paused": false});
    ok(&f, call(&f, None, "PUT", "/v1/pause", Some(paused))).await;

    // Proxy headers that do not check out are never the operator.
    let wrong_secret = Request::get("/v1/config")
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
        .header("X-Souz-Proxy-Auth", "not-the-secret")
        .body(Body::empty())
        .unwrap();
    let user_only = Request::get("/v1/config")
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
        .header("X-User-Id", "alice")
        .body(Body::empty())
        .unwrap();
    for request in [wrong_secret, user_only] {
        let (status, body) = f.send(request).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNAUTHORIZED, "untrusted_proxy")
        );
    }
    // The operator has no chats or keys of their own here, and nobody can pose as `local`.
    for path in ["/v1/chats", "/v1/me/provider-keys"] {
        let (status, body) = f.send(call(&f, None, "GET", path, None)).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNAUTHORIZED, "untrusted_proxy")
        );
    }
    let (status, body) = f
        .send(call(&f, Some("local"), "GET", "/v1/chats", None))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNAUTHORIZED, "invalid_user_identity")
    );

    // The document says so: operator routes carry the mark and document the 403.
    let (_, document) = f
        .send(f.get("/docs/openapi.json").body(Body::empty()).unwrap())
        .await;
    for operation in &operations {
        let documented =
            &document["paths"][operation.path()][operation.method().as_str().to_ascii_lowercase()];
        let forbidden = documented["responses"]["403"]["description"]
            .as_str()
            .unwrap_or_default();
        if operation.is_operator() {
            assert_eq!(
                documented["x-souz-operator"],
                true,
                "{}",
                operation.endpoint()
            );
            assert!(
                forbidden.contains("`forbidden`"),
                "{}",
                operation.endpoint()
            );
        } else {
            assert!(
                documented["x-souz-operator"].is_null(),
                "{}",
                operation.endpoint()
            );
        }
    }
}

/// Runs one turn in a new chat of `user`; returns the `Authorization` its model request sent.
async fn turn(f: &Fixture, provider: &FakeServer, user: &str) -> String {
    provider.push(openai::CHAT_PATH, openai::text(&["Hi."]));
    let chat = new_chat(f, user).await;
    post_message(f, user, &chat, "Hello").await;
    wait_event(f, user, &chat, "execution.finished").await;
    keys_used(provider).last().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_keys_are_per_user_and_a_turn_uses_its_owners_key_then_the_servers() {
    let provider = FakeServer::start().await;
    let f = daemon(&provider).await;
    store_key(&f, "alice", ALICE_KEY).await;

    // Alice sees her key; bob sees only the server's, in the key list and in the bootstrap.
    for (user, source, hint, own_key) in [
        ("alice", "stored", "...1111", true),
        ("bob", "environment", "...0000", false),
    ] {
        let keys = ok(
            &f,
            call(&f, Some(user), "GET", "/v1/me/provider-keys", None),
        )
        .await;
        assert_eq!(keys["items"][0]["source"], source, "{user}");
        assert_eq!(keys["items"][0]["keyHint"], hint, "{user}");
        let bootstrap = ok(&f, call(&f, Some(user), "GET", "/v1/bootstrap", None)).await;
        let model = &bootstrap["capabilities"]["models"][0];
        assert_eq!(
            (
                model["userManagedKey"].clone(),
                model["serverManagedKey"].clone()
            ),
            (json!(own_key), json!(!own_key)),
            "{user}"
        );
    }
    let handle = f.runtime.handle();
    let stored = |user: &str| handle.llm().for_user(user).key_store().clone();
    assert!(stored("bob").list().await.unwrap().is_empty());
    assert!(
        handle.llm().key_store().list().await.unwrap().is_empty(),
        "the local user's keys are untouched"
    );

    // A turn uses its owner's key, else the server's.
    let bearer = |key: &str| format!("Bearer {key}");
    assert_eq!(turn(&f, &provider, "alice").await, bearer(ALICE_KEY));
    assert_eq!(turn(&f, &provider, "bob").await, bearer(SERVER_KEY));

    // Bob's key is his alone; deleting alice's leaves her with the server's.
    store_key(&f, "bob", BOB_KEY).await;
    assert_eq!(turn(&f, &provider, "bob").await, bearer(BOB_KEY));
    let path = "/v1/me/provider-keys/openai";
    let (status, _) = f.send(call(&f, Some("alice"), "DELETE", path, None)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(turn(&f, &provider, "alice").await, bearer(SERVER_KEY));
    assert_eq!(
        stored("bob")
            .get(ProviderId::OpenAi)
            .await
            .unwrap()
            .unwrap()
            .expose(),
        BOB_KEY
    );
}
