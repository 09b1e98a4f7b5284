//! Agent tests with the scripted `FakeLlm` and a real gate (real approvals, real audit, real
//! SQLite) over small probe tools. A turn against the fake OpenAI server through the real
//! `LlmService` and the whole runtime is a runtime test (`runtime::tests::agent_turn`).

mod core_off;
mod inventory;
mod limits;
mod mcp_offload;
mod memory;
mod seams;
mod sessions;
mod steering;
mod trace;
mod turns;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use souz_protocol::{Action, DecisionRequest, Risk, ToolCategory, Verdict};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::nodes::information::{ContextItem, ContextSource};
use super::*;
use crate::config::{Config, RuleConfig};
use crate::llm::fake::FakeLlm;
use crate::llm::{FinishReason, LlmError, StreamEvent, ToolCall, Usage};
use crate::store::Store;
use crate::testing::probes::{Probe, Probes};
use crate::testing::{TestGate, TestHome};
use crate::tools::CatalogBuilder;
use crate::tools::gate::Gate;

/// Background facts that do not depend on the clock.
pub(crate) struct FixedFacts;

impl ContextSource for FixedFacts {
    fn items<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Vec<ContextItem>> {
        Box::pin(async {
            vec![ContextItem {
                kind: "General fact".into(),
                text: "Current date and time: Monday, 2026-11-02 10:00:00 (UTC+00:00)".into(),
            }]
        })
    }
}

/// Records every event and wakes waiters.
#[derive(Default)]
pub(crate) struct Recorder {
    events: Mutex<Vec<AgentEvent>>,
    changed: Notify,
}

impl TurnSink for Recorder {
    fn send(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_waiters();
    }
}

impl Recorder {
    pub(crate) fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }

    /// Waits (up to 10 s) for an event matching `wanted` and returns it.
    pub(crate) async fn wait_for(&self, wanted: impl Fn(&AgentEvent) -> bool) -> AgentEvent {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let notified = self.changed.notified();
            if let Some(event) = self.events().into_iter().find(|event| wanted(event)) {
                return event;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("no matching event; got {:?}", self.events());
            }
        }
    }
}

pub(crate) struct Fixture {
    pub _stack: TestGate,
    pub gate: Gate,
    pub store: Store,
    pub llm: Arc<FakeLlm>,
    pub agents: Agents,
    pub probes: Arc<Probes>,
}

/// A gate over the probes (`ReadNote`, `FetchPage`, `Compute`, `Wait`: read-only; `WriteNote`:
/// asks; `Forbidden`: denied by a rule, so disabled) and agents over it with a fake model.
pub(crate) async fn fixture() -> Fixture {
    fixture_with(|_| {}).await
}

pub(crate) async fn fixture_with(adjust: impl FnOnce(&mut AgentParts)) -> Fixture {
    let home = TestHome::new();
    let mut config = Config::defaults(home.paths());
    config.approvals.rules.push(RuleConfig {
        action: Action::Deny,
        tool: Some("Forbidden".into()),
        path: None,
        command: None,
        domain: None,
        risk: None,
        requester: None,
        note: Some("tests".into()),
    });
    let probes = Arc::new(Probes::default());
    let mut builder = CatalogBuilder::default();
    for (name, category, risk) in [
        ("ReadNote", ToolCategory::Files, Risk::ReadOnly),
        ("WriteNote", ToolCategory::Files, Risk::Write),
        ("FetchPage", ToolCategory::WebSearch, Risk::ReadOnly),
        ("Compute", ToolCategory::Calculator, Risk::ReadOnly),
        ("Forbidden", ToolCategory::Commands, Risk::Exec),
    ] {
        builder
            .add(Probe::new(name, category, risk, &probes))
            .unwrap();
    }
    builder
        .add(Probe::new("Wait", ToolCategory::Commands, Risk::ReadOnly, &probes).blocking())
        .unwrap();
    let stack = TestGate::start(home, config, builder.build()).await;
    let (gate, store) = (stack.gate.clone(), stack.store.clone());
    let llm = Arc::new(FakeLlm::new());
    let models = Arc::new(FixedModel::new("fake-model", llm.clone()));
    let mut parts = AgentParts::new(gate.clone(), store.clone(), models);
    parts.context = Arc::new(FixedFacts);
    adjust(&mut parts);
    Fixture {
        _stack: stack,
        gate,
        store,
        llm,
        agents: Agents::new(parts),
        probes,
    }
}

impl Fixture {
    /// Runs a turn to its end with a recording sink.
    pub(crate) async fn run(&self, request: TurnRequest) -> (AgentOutcome, Arc<Recorder>) {
        let sink = Arc::new(Recorder::default());
        let outcome = self
            .agents
            .run_turn(request, sink.clone(), CancellationToken::new())
            .await
            .unwrap();
        (outcome, sink)
    }

    /// Starts a turn on its own task.
    pub(crate) async fn spawn(
        &self,
        request: TurnRequest,
        cancel: CancellationToken,
    ) -> (
        Steering,
        Arc<Recorder>,
        tokio::task::JoinHandle<AgentOutcome>,
    ) {
        let turn = self.agents.start_turn(request).await.unwrap();
        let steering = turn.steering();
        let sink = Arc::new(Recorder::default());
        let task_sink: Arc<dyn TurnSink> = sink.clone();
        let handle =
            crate::tasks::spawn_in_test(async move { turn.run(task_sink, cancel).await.unwrap() });
        (steering, sink, handle)
    }

    /// Waits until the fake model received `count` requests.
    pub(crate) async fn requests_reach(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.llm.requests().len() < count {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the model got {} requests, expected {count}",
                self.llm.requests().len()
            );
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Decides a pending approval.
    pub(crate) async fn decide(&self, approval_id: &str, verdict: Verdict) {
        self.gate
            .approvals()
            .decide(approval_id, DecisionRequest::once(verdict, "test"))
            .await
            .unwrap();
    }
}

/// A skills-agent request.
pub(crate) fn skills(chat_id: &str, input: &str) -> TurnRequest {
    TurnRequest {
        agent: Some(AgentKind::Skills),
        ..TurnRequest::new(chat_id, input)
    }
}

/// A graph-agent request.
pub(crate) fn graph(chat_id: &str, input: &str) -> TurnRequest {
    TurnRequest {
        agent: Some(AgentKind::Graph),
        ..TurnRequest::new(chat_id, input)
    }
}

/// A tool call of the model.
pub(crate) fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

/// `RunSkillCommand` for `skill` with `arguments`.
pub(crate) fn run_skill(id: &str, skill: &str, arguments: serde_json::Value) -> ToolCall {
    call(
        id,
        "RunSkillCommand",
        json!({"skillId": skill, "arguments": arguments}),
    )
}

/// An answer with text and no usage report (so the size estimate uses characters).
pub(crate) fn bare_text(text: &str) -> Vec<Result<StreamEvent, LlmError>> {
    vec![
        Ok(StreamEvent::TextDelta(text.to_owned())),
        Ok(StreamEvent::Finish(FinishReason::Stop)),
    ]
}

/// Names of the tools a request advertised.
pub(crate) fn advertised(request: &crate::llm::ChatRequest) -> Vec<String> {
    let mut names: Vec<String> = request.tools.iter().map(|tool| tool.name.clone()).collect();
    names.sort();
    names
}

/// The seven core tool names, sorted.
pub(crate) fn core_names() -> Vec<String> {
    let mut names: Vec<String> = CoreTool::ALL
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn agent_kinds_parse_like_the_original() {
    assert_eq!(AgentKind::parse("skills"), AgentKind::Skills);
    assert_eq!(AgentKind::parse("SKILLS_GRAPH"), AgentKind::Skills);
    assert_eq!(AgentKind::parse("Graph"), AgentKind::Graph);
    assert_eq!(AgentKind::parse("something else"), AgentKind::Graph);
    assert_eq!(AgentKind::default(), AgentKind::Graph);
    assert_eq!(AgentKind::Skills.as_str(), "skills");
}
