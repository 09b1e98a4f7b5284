//! Settings that apply without a restart: a `PUT /v1/config` that changes `[llm]` or `[agent]`
//! is used by the next turn, one that changes `[sandbox]` by the next tool call, and the save
//! says what applied and what waits for a restart.

use std::sync::Arc;

use serde_json::json;
use souz_testkit::{FakeServer, openai};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::agent::tests::{Recorder, core_names};
use crate::agent::{TurnRequest, TurnStatus};

async fn put_config(f: &Fixture, text: &str) -> Value {
    let request = f
        .authed("/v1/config")
        .method("PUT")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({ "text": text }).to_string()))
        .unwrap();
    let (status, saved) = f.send(request).await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    saved
}

async fn turn(f: &Fixture) -> crate::agent::AgentOutcome {
    f.runtime
        .handle()
        .agents()
        .run_turn(
            TurnRequest::new("chat-live", "hello"),
            Arc::new(Recorder::default()),
            CancellationToken::new(),
        )
        .await
        .unwrap()
}

async fn completed_turn(f: &Fixture, label: &str) {
    let outcome = turn(f).await;
    assert_eq!(
        outcome.status,
        TurnStatus::Completed,
        "{label}: {:?}",
        outcome.reply
    );
}

fn tool_names(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn an_llm_base_url_change_is_used_by_the_next_turn() {
    let (first, second) = (FakeServer::start().await, FakeServer::start().await);
    first.push(openai::CHAT_PATH, openai::text(&["from the first"]));
    second.push(openai::CHAT_PATH, openai::text(&["from the second"]));
    let runtime = TestRuntime::builder()
        .flat_home()
        .with_llm(&first)
        .with_config(|config| config.agent.default_agent = "skills".into())
        .start()
        .await;
    let f = Fixture::on(runtime);
    completed_turn(&f, "before").await;
    assert_eq!(first.requests_to(openai::CHAT_PATH).len(), 1);

    let text = format!(
        "[llm]\nopenai_base_url = \"{}/v1\"\nkey_storage = \"file\"\n",
        second.url()
    );
    let saved = put_config(&f, &text).await;
    assert_eq!(saved["applied"], json!(["llm.openai_base_url"]), "{saved}");
    assert_eq!(saved["restartRequired"], json!(["llm.key_storage"]));

    completed_turn(&f, "after").await;
    assert_eq!(first.requests_to(openai::CHAT_PATH).len(), 1);
    assert_eq!(second.requests_to(openai::CHAT_PATH).len(), 1);
    let (status, doc) = f
        .send(f.authed("/v1/config").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["pendingRestart"], json!(["llm.key_storage"]), "{doc}");
}

#[tokio::test]
async fn an_agent_change_is_used_by_the_next_turn() {
    let server = FakeServer::start().await;
    for _ in 0..4 {
        server.push(openai::CHAT_PATH, openai::text(&["done"]));
    }
    let runtime = TestRuntime::builder()
        .flat_home()
        .with_llm(&server)
        .with_config(|config| config.agent.default_agent = "skills".into())
        .start()
        .await;
    let f = Fixture::on(runtime);
    completed_turn(&f, "before").await;
    assert_eq!(server.requests_to(openai::CHAT_PATH).len(), 1);
    let base_url = format!("{}/v1", server.url());
    let text = |agent: &str| {
        format!("[llm]\nopenai_base_url = \"{base_url}\"\n\n[agent]\ndefault_agent = \"{agent}\"\n")
    };
    // The file first says what the runtime was started with.
    put_config(&f, &text("skills")).await;
    let saved = put_config(&f, &text("graph")).await;
    assert_eq!(saved["applied"], json!(["agent.default_agent"]), "{saved}");
    assert_eq!(saved["restartRequired"], json!([]));

    // The graph agent's first request is not the skills agent's (its core tools only).
    turn(&f).await;
    let requests = server.requests_to(openai::CHAT_PATH);
    assert!(requests.len() >= 2);
    assert_eq!(tool_names(&requests[0].json()), core_names());
    assert_ne!(
        tool_names(&requests[1].json()),
        core_names(),
        "the second turn ran the graph agent"
    );
}

#[tokio::test]
async fn notification_changes_apply_and_server_changes_wait_for_a_restart() {
    let f = Fixture::new().await;
    let saved = put_config(
        &f,
        "[notifications]\nturn_finished = false\n\n[server]\nport = 9111\n",
    )
    .await;
    assert_eq!(
        saved["applied"],
        json!(["notifications.turn_finished"]),
        "{saved}"
    );
    assert_eq!(saved["restartRequired"], json!(["server.port"]));
}

/// A `ListFiles` call by the API on `folder` (relative to the home): whether it ran.
async fn lists(f: &Fixture, folder: &str) -> bool {
    let mut call = f
        .runtime
        .handle()
        .start_call(crate::tools::gate::CallRequest {
            tool: "ListFiles".into(),
            arguments: json!({ "path": folder }),
            requester: souz_protocol::Requester::Api,
        })
        .await
        .unwrap();
    let state = call.wait_for(std::time::Duration::from_secs(30)).await;
    state.status == souz_protocol::ToolCallStatus::Succeeded
}

#[tokio::test]
async fn a_sandbox_change_applies_to_the_next_call() {
    // The Souz home in `~/.souz`: the roots are folders of the user's home.
    let runtime = TestRuntime::builder().start().await;
    let home = runtime.home().path().to_path_buf();
    for folder in ["a", "b"] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
    }
    let f = Fixture::on(runtime);
    assert!(
        lists(&f, "a").await && lists(&f, "b").await,
        "~ is the root"
    );

    let saved = put_config(&f, "[sandbox]\nroots = [\"~/a\"]\n").await;
    assert_eq!(saved["applied"], json!(["sandbox.roots"]), "{saved}");
    assert_eq!(saved["restartRequired"], json!([]));
    assert!(lists(&f, "a").await, "inside the new root");
    assert!(!lists(&f, "b").await, "outside it now, without a restart");
    let (status, health) = f
        .send(f.authed("/health").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(health["sandbox"].is_object(), "{health}");

    // And back the other way: the next change replaces it again.
    let saved = put_config(&f, "[sandbox]\nroots = [\"~/b\"]\n").await;
    assert_eq!(saved["applied"], json!(["sandbox.roots"]), "{saved}");
    assert!(!lists(&f, "a").await && lists(&f, "b").await);
}
