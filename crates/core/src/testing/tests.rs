//! The kit itself: a test runtime takes its configuration, layout and provider keys from its
//! builder alone, and the shared probes run through a real gate and record their runs.

use std::sync::Arc;

use souz_protocol::{Requester, Risk};
use souz_testkit::FakeServer;

use super::probes::{self, Probes, RISK_PROBES};
use super::{FAKE_OPENAI_KEY, TestGate, TestHome, TestRuntime};
use crate::config::Config;
use crate::llm::ProviderId;
use crate::tools::CatalogBuilder;
use crate::tools::gate::CallRequest;

async fn key(runtime: &TestRuntime, provider: ProviderId) -> Option<String> {
    runtime
        .handle()
        .llm()
        .key(provider)
        .await
        .unwrap()
        .map(|key| key.expose().to_owned())
}

#[tokio::test]
async fn provider_keys_come_from_the_builder_and_the_llm_is_the_fake_server() {
    let server = FakeServer::start().await;
    let runtime = TestRuntime::builder()
        .with_llm(&server)
        .with_env("AITUNNEL_KEY", "tunnel-key-4242")
        .with_config(|config| config.agent.default_agent = "skills".into())
        .start()
        .await;
    let config = runtime.handle().config().clone();
    assert_eq!(config.llm.openai_base_url, format!("{}/v1", server.url()));
    assert_eq!(config.agent.default_agent, "skills");
    assert_eq!(
        key(&runtime, ProviderId::OpenAi).await.as_deref(),
        Some(FAKE_OPENAI_KEY)
    );
    assert_eq!(
        key(&runtime, ProviderId::AiTunnel).await.as_deref(),
        Some("tunnel-key-4242")
    );
    assert_eq!(key(&runtime, ProviderId::Anthropic).await, None);
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn the_home_layouts_and_the_template() {
    let nested = TestRuntime::builder().start().await;
    let paths = nested.handle().config().paths.clone();
    assert_eq!(paths.home(), nested.home().path().join(".souz"));
    assert_eq!(paths.user_home(), nested.home().path());
    assert!(!paths.config_file().exists(), "defaults, no template");
    // The token the runtime holds is the one written in the nested home, and it is the
    // operator's.
    assert_eq!(
        std::fs::read_to_string(paths.token()).unwrap().trim(),
        nested.token()
    );
    assert!(matches!(
        nested.handle().authenticate(nested.token()),
        Some(crate::token::Credential::Operator)
    ));

    let flat = TestRuntime::builder()
        .flat_home()
        .from_template()
        .start()
        .await;
    let paths = flat.handle().config().paths.clone();
    assert_eq!(paths.home(), flat.home().path());
    assert_eq!(paths.user_home(), flat.home().path());
    assert!(paths.config_file().is_file(), "the template was written");
}

#[tokio::test]
async fn probes_of_each_risk_run_through_a_real_gate_and_record_their_runs() {
    let home = TestHome::new();
    let config = Config::defaults(home.paths());
    let recorded = Arc::new(Probes::default());
    let mut catalog = CatalogBuilder::default();
    probes::of_each_risk(&mut catalog, &recorded);
    let stack = TestGate::start(home, config, catalog.build()).await;
    let mut listed: Vec<(&str, Risk)> = stack
        .gate
        .catalog()
        .iter()
        .map(|tool| (tool.spec().name, tool.spec().risk))
        .collect();
    listed.sort_by_key(|(_, risk)| *risk);
    assert_eq!(listed, RISK_PROBES);

    let state = stack
        .gate
        .call(CallRequest {
            tool: "ReadProbe".into(),
            arguments: serde_json::json!({"path": "notes.txt"}),
            requester: Requester::Cli,
        })
        .await
        .unwrap();
    assert!(state.status.is_final(), "{state:?}");
    assert_eq!(recorded.runs(), ["ReadProbe"]);
    assert!(stack.home().path().join(".souz/souz.db").is_file());
}
