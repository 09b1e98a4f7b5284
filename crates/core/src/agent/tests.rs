//! Agent tests with the scripted `FakeLlm` and a real gate (real approvals, real audit, real
//! SQLite) over small probe tools; one test runs a turn against the fake OpenAI server through
//! the real `LlmService`.

mod inventory;
mod provider;
mod seams;
mod sessions;
mod steering;
mod turns;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use souz_protocol::{Action, DecisionRequest, Risk, ScopeKind, ToolCategory, Verdict};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::nodes::information::{ContextItem, ContextSource};
use super::*;
use crate::approvals::Approvals;
use crate::config::{Config, RuleConfig, SouzPaths};
use crate::llm::fake::FakeLlm;
use crate::llm::{FinishReason, LlmError, StreamEvent, ToolCall, Usage};
use crate::runtime::EventBus;
use crate::sandbox::Sandbox;
use crate::store::Store;
use crate::tools::gate::{Gate, GateParts};
use crate::tools::{CatalogBuilder, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput};

/// Arguments of the probe tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbeArgs {
    /// A path.
    path: Option<String>,
    /// Answer this many characters.
    size: Option<usize>,
}

/// What the probes share with the test.
pub(crate) struct Probes {
    /// Names of the probes that ran, in order.
    pub runs: Mutex<Vec<String>>,
    /// `Wait` blocks until a permit is added.
    pub release: Semaphore,
    /// Signalled when `Wait` starts.
    pub waiting: Notify,
    /// How many `Wait` calls started.
    pub waits: AtomicUsize,
}

impl Default for Probes {
    fn default() -> Self {
        Self {
            runs: Mutex::new(Vec::new()),
            release: Semaphore::new(0),
            waiting: Notify::new(),
            waits: AtomicUsize::new(0),
        }
    }
}

impl Probes {
    pub(crate) fn runs(&self) -> Vec<String> {
        self.runs.lock().unwrap().clone()
    }
}

struct Probe {
    name: &'static str,
    category: ToolCategory,
    risk: Risk,
    probes: Arc<Probes>,
}

impl Tool for Probe {
    type Args = ProbeArgs;
    type Prepared = ();
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "A probe tool for agent tests."
    }
    fn category(&self) -> ToolCategory {
        self.category
    }
    fn risk(&self) -> Risk {
        self.risk
    }
    async fn plan(&self, args: &ProbeArgs, _: &ToolContext) -> Result<Planned<()>, ToolError> {
        Ok(Plan::new(format!(
            "{} {}",
            self.name,
            args.path.as_deref().unwrap_or("-")
        ))
        .ready())
    }
    async fn run(
        &self,
        args: ProbeArgs,
        (): (),
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if self.name == "Wait" {
            self.probes.waits.fetch_add(1, Ordering::SeqCst);
            self.probes.waiting.notify_waiters();
            tokio::select! {
                permit = self.probes.release.acquire() => permit.map(|permit| permit.forget())
                    .map_err(|_| ToolError::Cancelled)?,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            }
        }
        self.probes.runs.lock().unwrap().push(self.name.to_owned());
        Ok(match args.size {
            Some(size) => ToolOutput::text("n".repeat(size)),
            None => ToolOutput::text(format!(
                "{} done for {}",
                self.name,
                args.path.as_deref().unwrap_or("-")
            )),
        })
    }
}

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
    events: Mutex<Vec<TurnEvent>>,
    changed: Notify,
}

impl TurnSink for Recorder {
    fn send(&self, event: TurnEvent) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_waiters();
    }
}

impl Recorder {
    pub(crate) fn events(&self) -> Vec<TurnEvent> {
        self.events.lock().unwrap().clone()
    }

    /// Waits (up to 10 s) for an event matching `wanted` and returns it.
    pub(crate) async fn wait_for(&self, wanted: impl Fn(&TurnEvent) -> bool) -> TurnEvent {
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
    pub _dir: tempfile::TempDir,
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
    let dir = tempfile::tempdir().unwrap();
    let paths = SouzPaths::new(dir.path().join(".souz")).with_user_home(dir.path());
    paths.ensure_home().unwrap();
    let mut config = Config::defaults(paths.clone());
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
    let store = Store::open(paths.database()).await.unwrap();
    let events = EventBus::new(store.clone(), 4096);
    let approvals = Approvals::open(store.clone(), events.clone(), config.clone())
        .await
        .unwrap();
    let probes = Arc::new(Probes::default());
    let mut builder = CatalogBuilder::default();
    for (name, category, risk) in [
        ("ReadNote", ToolCategory::Files, Risk::ReadOnly),
        ("WriteNote", ToolCategory::Files, Risk::Write),
        ("FetchPage", ToolCategory::WebSearch, Risk::ReadOnly),
        ("Compute", ToolCategory::Calculator, Risk::ReadOnly),
        ("Wait", ToolCategory::Commands, Risk::ReadOnly),
        ("Forbidden", ToolCategory::Commands, Risk::Exec),
    ] {
        builder
            .add(Probe {
                name,
                category,
                risk,
                probes: Arc::clone(&probes),
            })
            .unwrap();
    }
    let sandbox = Arc::new(Sandbox::new(&config.sandbox, &config.paths).unwrap());
    let gate = Gate::new(GateParts {
        catalog: builder.build(),
        sandbox,
        approvals,
        events,
        store: store.clone(),
        tasks: TaskTracker::new(),
        shutdown: CancellationToken::new(),
    });
    let llm = Arc::new(FakeLlm::new());
    let models = Arc::new(FixedModel::new("fake-model", llm.clone()));
    let mut parts = AgentParts::new(gate.clone(), store.clone(), models);
    parts.context = Arc::new(FixedFacts);
    adjust(&mut parts);
    Fixture {
        _dir: dir,
        gate,
        store,
        llm,
        agents: Agents::new(parts),
        probes,
    }
}

impl Fixture {
    /// Runs a turn to its end with a recording sink.
    pub(crate) async fn run(&self, request: TurnRequest) -> (TurnOutcome, Arc<Recorder>) {
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
        tokio::task::JoinHandle<TurnOutcome>,
    ) {
        let turn = self.agents.start_turn(request).await.unwrap();
        let steering = turn.steering();
        let sink = Arc::new(Recorder::default());
        let task_sink: Arc<dyn TurnSink> = sink.clone();
        let handle = tokio::spawn(async move { turn.run(task_sink, cancel).await.unwrap() });
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
            .decide(
                approval_id,
                DecisionRequest {
                    decision: verdict,
                    scope: ScopeKind::Once,
                    minutes: None,
                    argument_match: None,
                    via: Some("test".into()),
                },
            )
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
