//! The model-backed web tools wired into the real runtime: `[web]` reaches them, the search
//! goes to the fixture site through the sandbox's client, and the answer is written by the
//! runtime's LLM service (the fake OpenAI server).

use std::sync::Arc;

use souz_testkit::{FakeServer, openai};
use tokio_util::sync::CancellationToken;

use crate::agent::tests::Recorder;
use crate::agent::{TurnRequest, TurnStatus};
use crate::testing::TestRuntime;
use crate::testing::web::FixtureSite;
use souz_protocol::Action;

#[tokio::test]
async fn a_turn_searches_the_web_and_the_runtime_model_writes_the_cited_answer() {
    let site = FixtureSite::start().await;
    let server = FakeServer::start().await;
    let arguments = serde_json::json!({
        "skillId": "InternetSearch",
        "arguments": {"query": "how to grow tomatoes", "maxSources": 2}
    })
    .to_string();
    server.push(
        openai::CHAT_PATH,
        openai::tool_calls(&[("call_1", "RunSkillCommand", arguments.as_str())], 2),
    );
    server.push(
        openai::CHAT_PATH,
        openai::text(&["Six hours of sun [1]; water deeply [2]; misting [5]."]),
    );
    server.push(openai::CHAT_PATH, openai::text(&["Done."]));
    let web = site.web_config();
    let allow = site.allow_entry();
    let runtime = TestRuntime::builder()
        .with_llm(&server)
        .with_config(move |config| {
            config.agent.default_agent = "skills".into();
            config.web = web;
            config.sandbox.network_allow_hosts = vec![allow];
            config.approvals.network = Action::Allow;
        })
        .start()
        .await;
    let outcome = runtime
        .handle()
        .agents()
        .run_turn(
            TurnRequest::new("chat-web", "how do I grow tomatoes?"),
            Arc::new(Recorder::default()),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
    let requests = server.requests_to(openai::CHAT_PATH);
    assert_eq!(requests.len(), 3);
    // The tool's own model call: the pages as untrusted sources.
    let synthesis = requests[1].json();
    assert_eq!(synthesis["messages"][0]["role"], "system");
    let prompt = synthesis["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains(&format!("url=\"{}\"", site.url("/site/sunlight.html"))));
    // The tool result the agent got back: cited sources only, the unfetched [5] gone.
    let tool_result = requests[2].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .cloned()
        .unwrap();
    let content = tool_result["content"].as_str().unwrap();
    assert!(content.contains("Status: COMPLETE"), "{content}");
    assert!(
        content.contains("water deeply [2]; misting.\n"),
        "{content}"
    );
    assert!(
        content.contains("not fetched were removed: [5]"),
        "{content}"
    );
    assert_eq!(site.hits("/ddg/"), 1);
    assert_eq!(site.hits("/site/"), 2);
}

#[tokio::test]
async fn the_brave_key_from_the_environment_puts_brave_first() {
    let site = FixtureSite::start().await;
    let server = FakeServer::start().await;
    server.push(
        openai::CHAT_PATH,
        openai::text(&["Pick when coloured [1]."]),
    );
    let web = site.web_config();
    let allow = site.allow_entry();
    let runtime = TestRuntime::builder()
        .with_llm(&server)
        .with_env(
            "BRAVE_SEARCH_API_KEY",
            crate::testing::web::FIXTURE_BRAVE_KEY,
        )
        .with_config(move |config| {
            config.web = web;
            config.sandbox.network_allow_hosts = vec![allow];
            config.approvals.network = Action::Allow;
        })
        .start()
        .await;
    let handle = runtime.handle();
    let tool = handle.gate().catalog().get("InternetSearch").unwrap();
    let home = crate::testing::TestHome::new();
    let ctx = home.tool_context(&crate::config::SandboxConfig {
        network_allow_hosts: vec![site.allow_entry()],
        ..Default::default()
    });
    let planned = tool
        .plan(serde_json::json!({"query": "tomatoes"}), &ctx)
        .await
        .unwrap();
    assert!(
        matches!(&planned.plan.targets[0], crate::approvals::CallTarget::Url { url, .. } if url.contains("/brave/")),
        "{:?}",
        planned.plan.targets
    );
    let output = planned.run(ctx).await.unwrap().structured.unwrap();
    assert_eq!(output["backend"], "brave", "{output}");
    assert_eq!(site.hits("/ddg/"), 0);
}
