use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{
    Action, ApprovalStatus, DecisionRequest, ExpiryReason, Risk, ToolCategory, Verdict,
};

use super::*;
use crate::approvals::audit::AuditQuery;
use crate::config::{Config, RuleConfig};
use crate::sandbox::Access;
use crate::testing::{TestGate, TestHome};
use crate::tools::{CatalogBuilder, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProbeArgs {
    /// A path to touch.
    path: Option<String>,
    /// Sleep this long in run.
    sleep_ms: Option<u64>,
    /// Panic in run.
    panic: Option<bool>,
    /// Fail in run with this message.
    fail: Option<String>,
    /// Text to "write": shown as the diff, its length reported by run.
    text: Option<String>,
}

struct Probe {
    name: &'static str,
    risk: Risk,
    runs: Arc<AtomicUsize>,
}

impl Tool for Probe {
    type Args = ProbeArgs;
    type Prepared = ();
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "A probe."
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }
    fn risk(&self) -> Risk {
        self.risk
    }
    async fn plan(&self, args: &ProbeArgs, ctx: &ToolContext) -> Result<Planned<()>, ToolError> {
        let mut plan = Plan::new(format!(
            "{} {}",
            self.name,
            args.path.as_deref().unwrap_or("-")
        ));
        if let Some(path) = &args.path {
            let resolved = ctx.sandbox.resolve(path, Access::Write)?;
            if args.text.is_some() && resolved.path.exists() {
                plan.summary.push_str(" (replacing it)");
            }
            plan = plan.path(&resolved, Access::Write);
        }
        plan.diff = args.text.as_ref().map(|text| format!("+{text}"));
        Ok(plan.ready())
    }
    async fn run(
        &self,
        args: ProbeArgs,
        (): (),
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if args.panic == Some(true) {
            panic!("probe panicked on purpose");
        }
        if let Some(ms) = args.sleep_ms {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            }
        }
        if let Some(message) = args.fail {
            return Err(ToolError::Failed(message));
        }
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::json(serde_json::json!({
            "ran": self.name,
            "token": "sk-secretsecret123",
            "text_bytes": args.text.map(|text| text.len()),
        })))
    }
}

struct Fixture {
    stack: TestGate,
    gate: Gate,
    events: EventBus,
    store: Store,
    runs: Arc<AtomicUsize>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

async fn fixture(adjust: impl FnOnce(&mut Config)) -> Fixture {
    let home = TestHome::new();
    let mut config = TestHome::template_config(home.paths());
    adjust(&mut config);
    let runs = Arc::new(AtomicUsize::new(0));
    let mut builder = CatalogBuilder::default();
    builder
        .add(Probe {
            name: "Look",
            risk: Risk::ReadOnly,
            runs: Arc::clone(&runs),
        })
        .unwrap();
    builder
        .add(Probe {
            name: "Change",
            risk: Risk::Write,
            runs: Arc::clone(&runs),
        })
        .unwrap();
    let stack = TestGate::start(home, config, builder.build()).await;
    Fixture {
        gate: stack.gate.clone(),
        events: stack.events.clone(),
        store: stack.store.clone(),
        runs,
        tasks: stack.tasks.clone(),
        shutdown: stack.shutdown.clone(),
        stack,
    }
}

fn call(tool: &str, arguments: Value) -> CallRequest {
    CallRequest {
        tool: tool.into(),
        arguments,
        requester: Requester::Api,
    }
}

impl Fixture {
    async fn kinds(&self) -> Vec<String> {
        self.gate.flushed().await;
        self.events
            .replay(0, 10_000)
            .await
            .unwrap()
            .iter()
            .map(|e| e.event.kind().to_owned())
            .filter(|k| !k.starts_with("daemon"))
            .collect()
    }

    async fn audit(&self) -> Vec<souz_protocol::AuditEntry> {
        self.gate.flushed().await;
        self.store
            .read(|c| {
                audit::page(
                    c,
                    &AuditQuery {
                        limit: 100,
                        ..Default::default()
                    },
                )
            })
            .await
            .unwrap()
    }

    async fn waiting(&self, handle: &mut CallHandle) -> String {
        let state = handle.settled().await;
        assert_eq!(state.status, ToolCallStatus::WaitingApproval, "{state:?}");
        state.approval_id.unwrap()
    }

    async fn decide(&self, approval_id: &str, verdict: Verdict) {
        self.gate
            .approvals()
            .decide(approval_id, DecisionRequest::once(verdict, "test"))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn allowed_calls_run_and_leave_a_trace() {
    let f = fixture(|_| {}).await;
    let state = f
        .gate
        .call(call("Look", serde_json::json!({"path": "notes.txt"})))
        .await
        .unwrap();
    assert_eq!(state.status, ToolCallStatus::Succeeded);
    let result = state.result.unwrap();
    assert!(!result.is_error);
    assert_eq!(result.structured.unwrap()["ran"], "Look");
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        f.kinds().await,
        vec!["tool.call.started", "tool.call.finished"]
    );
    let audit = f.audit().await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].decision, Some(Action::Allow));
    assert_eq!(
        audit[0].decided_by,
        DecisionSource::Default {
            risk: Risk::ReadOnly
        }
    );
    assert_eq!(audit[0].outcome, Outcome::Succeeded);
    assert_eq!(
        audit[0].result.as_ref().unwrap()["token"],
        "[REDACTED]",
        "secrets never reach the audit"
    );
}

#[tokio::test]
async fn a_call_that_asks_waits_for_the_person_then_runs() {
    let f = fixture(|_| {}).await;
    let mut handle = f
        .gate
        .start(call("Change", serde_json::json!({"path": "a.txt"})))
        .await
        .unwrap();
    let approval_id = f.waiting(&mut handle).await;
    assert_eq!(
        f.runs.load(Ordering::SeqCst),
        0,
        "nothing runs before the yes"
    );
    let stored = f.gate.get(&handle.call_id).await.unwrap().unwrap();
    assert_eq!(stored.status, ToolCallStatus::WaitingApproval);
    assert_eq!(stored.approval_id.as_deref(), Some(approval_id.as_str()));
    let approval = f.gate.approvals().get(&approval_id).await.unwrap();
    assert_eq!(approval.summary, "Change a.txt");
    assert_eq!(
        approval.suggested.argument_match.path_prefix.as_deref(),
        Some("~")
    );

    f.decide(&approval_id, Verdict::Approve).await;
    let state = handle.finished().await;
    assert_eq!(state.status, ToolCallStatus::Succeeded);
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
    let audit = f.audit().await;
    assert_eq!(
        audit[0].decided_by,
        DecisionSource::Person {
            approval_id: approval_id.clone(),
            via: "test".into()
        }
    );
    assert_eq!(
        f.kinds().await,
        vec![
            "approval.requested",
            "approval.decided",
            "tool.call.started",
            "tool.call.finished"
        ]
    );
}

#[tokio::test]
async fn a_denial_reaches_the_caller_as_an_error_result() {
    let f = fixture(|_| {}).await;
    let mut handle = f
        .gate
        .start(call("Change", serde_json::json!({"path": "a.txt"})))
        .await
        .unwrap();
    let approval_id = f.waiting(&mut handle).await;
    f.decide(&approval_id, Verdict::Deny).await;
    let state = handle.finished().await;
    assert_eq!(state.status, ToolCallStatus::Denied);
    let result = state.result.unwrap();
    assert!(result.is_error);
    assert!(result.text.contains("denied"), "{}", result.text);
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    assert_eq!(f.audit().await[0].outcome, Outcome::Denied);
    assert_eq!(f.kinds().await.last().unwrap(), "tool.call.failed");
}

#[tokio::test]
async fn no_answer_in_time_is_a_denial_recorded_as_expired() {
    let f = fixture(|config| config.approvals.timeout_seconds = 1).await;
    let mut handle = f
        .gate
        .start(call("Change", serde_json::json!({"path": "a.txt"})))
        .await
        .unwrap();
    let approval_id = f.waiting(&mut handle).await;
    let state = handle.finished().await;
    assert_eq!(state.status, ToolCallStatus::Denied);
    assert!(state.result.unwrap().text.contains("within 1 s"));
    let approval = f.gate.approvals().get(&approval_id).await.unwrap();
    assert_eq!(approval.status, ApprovalStatus::Expired);
    assert_eq!(approval.expiry_reason, Some(ExpiryReason::Timeout));
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        f.audit().await[0].decided_by,
        DecisionSource::Expiry {
            approval_id,
            reason: ExpiryReason::Timeout
        }
    );
}

#[tokio::test]
async fn a_dropped_waiter_withdraws_the_approval() {
    let f = fixture(|_| {}).await;
    let mut handle = f
        .gate
        .start(call("Change", serde_json::json!({"path": "a.txt"})))
        .await
        .unwrap();
    let approval_id = f.waiting(&mut handle).await;
    let call_id = handle.call_id.clone();
    drop(handle);
    // The call task ends on its own (the batch recorder runs until shutdown, so do not wait
    // for every task).
    for _ in 0..500 {
        if f.gate.watch(&call_id).is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(f.gate.watch(&call_id).is_none(), "the withdrawn call ended");
    let approval = f.gate.approvals().get(&approval_id).await.unwrap();
    assert_eq!(approval.status, ApprovalStatus::Expired);
    assert_eq!(approval.expiry_reason, Some(ExpiryReason::Withdrawn));
    let stored = f.gate.get(&call_id).await.unwrap().unwrap();
    assert_eq!(stored.status, ToolCallStatus::Cancelled);
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    // A decision after the withdrawal changes nothing.
    let late = f
        .gate
        .approvals()
        .decide(
            &approval_id,
            DecisionRequest::once(Verdict::Approve, "test"),
        )
        .await;
    assert!(late.is_err());
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_detached_call_keeps_waiting_and_shutdown_denies_it() {
    let f = fixture(|_| {}).await;
    let mut handle = f
        .gate
        .start(call("Change", serde_json::json!({"path": "a.txt"})))
        .await
        .unwrap();
    let approval_id = f.waiting(&mut handle).await;
    let call_id = handle.detach();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        f.gate.approvals().get(&approval_id).await.unwrap().status,
        ApprovalStatus::Pending
    );
    assert!(f.gate.watch(&call_id).is_some());
    f.shutdown.cancel();
    f.tasks.close();
    f.tasks.wait().await;
    let approval = f.gate.approvals().get(&approval_id).await.unwrap();
    assert_eq!(approval.expiry_reason, Some(ExpiryReason::Shutdown));
    assert_eq!(
        f.gate.get(&call_id).await.unwrap().unwrap().status,
        ToolCallStatus::Denied
    );
}

#[tokio::test]
async fn deny_rules_refuse_without_asking() {
    let f = fixture(|config| {
        config.approvals.rules = vec![RuleConfig {
            action: Action::Deny,
            tool: Some("Look".into()),
            path: None,
            command: None,
            domain: None,
            risk: None,
            requester: None,
            note: Some("no looking".into()),
        }];
    })
    .await;
    let state = f
        .gate
        .call(call("Look", serde_json::json!({})))
        .await
        .unwrap();
    assert_eq!(state.status, ToolCallStatus::Denied);
    assert!(state.result.unwrap().text.contains("no looking"));
    assert!(!f.kinds().await.contains(&"approval.requested".to_owned()));
    let audit = f.audit().await;
    assert!(matches!(
        audit[0].decided_by,
        DecisionSource::Rule { index: 1, .. }
    ));
}

#[tokio::test]
async fn broken_calls_are_error_results_and_the_gate_keeps_working() {
    let f = fixture(|_| {}).await;
    let unknown = f
        .gate
        .call(call("Nope", serde_json::json!({})))
        .await
        .unwrap();
    assert_eq!(unknown.status, ToolCallStatus::Failed);
    assert!(
        unknown
            .result
            .unwrap()
            .text
            .contains("no tool named `Nope`")
    );
    let invalid = f
        .gate
        .call(call("Look", serde_json::json!({"bogus": 1})))
        .await
        .unwrap();
    assert!(
        invalid
            .result
            .unwrap()
            .text
            .starts_with("invalid arguments")
    );
    let escape = f
        .gate
        .call(call("Look", serde_json::json!({"path": "/etc/passwd"})))
        .await
        .unwrap();
    assert_eq!(escape.status, ToolCallStatus::Failed);
    assert!(escape.result.unwrap().text.contains("outside the folders"));
    let failed = f
        .gate
        .call(call("Look", serde_json::json!({"fail": "disk on fire"})))
        .await
        .unwrap();
    assert_eq!(failed.result.unwrap().text, "disk on fire");
    let panicked = f
        .gate
        .call(call("Look", serde_json::json!({"panic": true})))
        .await
        .unwrap();
    assert_eq!(panicked.status, ToolCallStatus::Failed);
    assert!(panicked.result.unwrap().text.contains("crashed"));
    let fine = f
        .gate
        .call(call("Look", serde_json::json!({})))
        .await
        .unwrap();
    assert_eq!(fine.status, ToolCallStatus::Succeeded);
    let audit = f.audit().await;
    assert_eq!(audit.len(), 6, "every call leaves an audit row");
    assert_eq!(
        audit
            .iter()
            .filter(|e| e.decided_by == DecisionSource::NotReached)
            .count(),
        3
    );
}

#[tokio::test]
async fn cancelling_a_running_call_stops_it() {
    let f = fixture(|_| {}).await;
    let mut handle = f
        .gate
        .start(call("Look", serde_json::json!({"sleep_ms": 60_000})))
        .await
        .unwrap();
    handle
        .state
        .wait_for(|s| s.status == ToolCallStatus::Running)
        .await
        .unwrap();
    assert!(f.gate.cancel(&handle.call_id));
    let state = handle.finished().await;
    assert_eq!(state.status, ToolCallStatus::Cancelled);
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    assert_eq!(f.audit().await[0].outcome, Outcome::Cancelled);
}

#[tokio::test]
async fn unfinished_calls_are_failed_after_a_restart() {
    let f = fixture(|_| {}).await;
    let mut handle = f
        .gate
        .start(call("Change", serde_json::json!({"path": "a.txt"})))
        .await
        .unwrap();
    let _ = f.waiting(&mut handle).await;
    let call_id = handle.detach();
    // Simulate a crash: the task never records an end; a new gate recovers.
    let recovered = f.gate.recover().await.unwrap();
    assert_eq!(recovered, 1);
    let stored = f.gate.get(&call_id).await.unwrap().unwrap();
    assert_eq!(stored.status, ToolCallStatus::Failed);
    assert!(stored.result.unwrap().text.contains("restarted"));
    assert!(f.audit().await.iter().any(|e| e.call_id == call_id));
}

#[tokio::test]
async fn a_kept_call_has_a_row_before_its_end_and_is_failed_after_a_restart() {
    let f = fixture(|_| {}).await;
    // A read-only call is stored only when it ends; keeping it stores it now.
    let arguments = serde_json::json!({"sleep_ms": 60_000});
    let mut handle = f.gate.start(call("Look", arguments.clone())).await.unwrap();
    handle
        .state
        .wait_for(|s| s.status == ToolCallStatus::Running)
        .await
        .unwrap();
    let call_id = handle.detach();
    assert!(
        stored(&f.store, &call_id).await.is_none(),
        "not stored before it is kept"
    );
    f.gate.keep(&call_id, arguments.clone()).await.unwrap();
    let kept = stored(&f.store, &call_id).await.unwrap();
    assert_eq!(kept.tool, "Look");
    // A crash (the task never ends): the next start fails it.
    assert_eq!(f.gate.recover().await.unwrap(), 1);
    let recovered = f.gate.get(&call_id).await.unwrap().unwrap();
    assert_eq!(recovered.status, ToolCallStatus::Failed);
    // Keeping a call that already has its row changes nothing.
    f.gate.keep(&call_id, serde_json::json!({})).await.unwrap();
    assert_eq!(
        stored(&f.store, &call_id).await.unwrap().status,
        ToolCallStatus::Failed
    );
}

async fn stored(store: &Store, id: &str) -> Option<souz_protocol::ToolCall> {
    let id = id.to_owned();
    store.read(move |c| calls::load(c, &id)).await.unwrap()
}

#[tokio::test]
async fn results_are_delivered_once() {
    let f = fixture(|_| {}).await;
    let mut handle = f
        .gate
        .start(call("Look", serde_json::json!({})))
        .await
        .unwrap();
    handle.finished().await;
    assert!(f.gate.mark_delivered(&handle.call_id).await.unwrap());
    assert!(!f.gate.mark_delivered(&handle.call_id).await.unwrap());
}

#[tokio::test]
async fn tool_listing_carries_the_effective_policy() {
    let f = fixture(|_| {}).await;
    let tools = f.gate.tools();
    let look = tools.iter().find(|t| t.name == "Look").unwrap();
    assert_eq!(look.policy.action, Action::Allow);
    let change = tools.iter().find(|t| t.name == "Change").unwrap();
    assert_eq!(change.policy.action, Action::Ask);
    assert_eq!(change.input_schema["type"], "object");
}

fn call_as(tool: &str, requester: Requester) -> CallRequest {
    CallRequest {
        requester,
        ..call(tool, serde_json::json!({"path": "a.txt"}))
    }
}

#[tokio::test]
async fn calls_over_the_pending_caps_are_refused_and_the_waiting_ones_stay_decidable() {
    let f = fixture(|config| {
        config.approvals.max_pending = 3;
        config.approvals.max_pending_per_requester = 2;
    })
    .await;
    let mut first = f
        .gate
        .start(call_as("Change", Requester::Api))
        .await
        .unwrap();
    let mut second = f
        .gate
        .start(call_as("Change", Requester::Api))
        .await
        .unwrap();
    let first_id = f.waiting(&mut first).await;
    let second_id = f.waiting(&mut second).await;

    // A third from the same requester: refused at once, nothing asked, nothing run.
    let refused = f
        .gate
        .call(call_as("Change", Requester::Api))
        .await
        .unwrap();
    assert_eq!(refused.status, ToolCallStatus::Denied);
    let text = refused.result.unwrap().text;
    assert!(
        text.contains("too many calls are waiting for approval (2) from an API client; decide or deny some first"),
        "{text}"
    );
    // Another requester still fits under the total, then the total is reached.
    let mut third = f
        .gate
        .start(call_as("Change", Requester::Cli))
        .await
        .unwrap();
    let third_id = f.waiting(&mut third).await;
    let skill = Requester::Skill {
        skill_id: "s".into(),
    };
    let refused = f.gate.call(call_as("Change", skill.clone())).await.unwrap();
    assert_eq!(refused.status, ToolCallStatus::Denied);
    let text = refused.result.unwrap().text;
    assert!(
        text.contains("too many calls are waiting for approval (3); decide or deny some first"),
        "{text}"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    let pending = f
        .gate
        .approvals()
        .list(Some(ApprovalStatus::Pending), 100)
        .await
        .unwrap();
    assert_eq!(pending.len(), 3, "the refused calls left no approval");

    // Nothing lost: the waiting calls are decided as usual, and their slots come back.
    f.decide(&first_id, Verdict::Approve).await;
    f.decide(&second_id, Verdict::Deny).await;
    f.decide(&third_id, Verdict::Approve).await;
    assert_eq!(first.finished().await.status, ToolCallStatus::Succeeded);
    assert_eq!(second.finished().await.status, ToolCallStatus::Denied);
    assert_eq!(third.finished().await.status, ToolCallStatus::Succeeded);
    assert_eq!(f.runs.load(Ordering::SeqCst), 2);
    let mut again = f.gate.start(call_as("Change", skill)).await.unwrap();
    f.waiting(&mut again).await;
}

#[tokio::test]
async fn a_large_call_waits_holding_a_preview_and_runs_whole_once_approved() {
    let f = fixture(|_| {}).await;
    let text = "line of a large file\n".repeat(50_000);
    let arguments = serde_json::json!({"path": "big.txt", "text": text});
    let mut handle = f.gate.start(call("Change", arguments)).await.unwrap();
    let approval_id = f.waiting(&mut handle).await;

    // What every follower keeps (the announced approval) is a preview...
    let events = f.events.replay(0, 100).await.unwrap();
    let announced = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            RuntimeEvent::ApprovalRequested { approval } => Some(approval.clone()),
            _ => None,
        })
        .unwrap();
    let shown = announced.arguments["text"].as_str().unwrap();
    assert!(shown.len() < 4_096, "{}", shown.len());
    assert!(shown.contains("more bytes not shown"));
    assert!(announced.diff.as_deref().unwrap().len() < 20_000);
    // ...and the stored approval has everything the person may want to read.
    let stored = f.gate.approvals().get(&approval_id).await.unwrap();
    assert_eq!(stored.arguments["text"].as_str(), Some(text.as_str()));
    assert_eq!(stored.diff.as_deref().map(str::len), Some(text.len() + 1));

    // Approved, it runs with the whole text, read back from the store.
    f.decide(&approval_id, Verdict::Approve).await;
    let state = handle.finished().await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    let structured = state.result.unwrap().structured.unwrap();
    assert_eq!(structured["text_bytes"], text.len());
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_large_call_whose_plan_changed_while_it_waited_does_not_run() {
    let f = fixture(|_| {}).await;
    let text = "x".repeat(100_000);
    let arguments = serde_json::json!({"path": "c.txt", "text": text});
    let mut handle = f.gate.start(call("Change", arguments)).await.unwrap();
    let approval_id = f.waiting(&mut handle).await;
    // The file appears while the call waits: what was approved is no longer what would run.
    std::fs::write(f.stack.home().path().join("c.txt"), "meanwhile").unwrap();
    f.decide(&approval_id, Verdict::Approve).await;
    let state = handle.finished().await;
    assert_eq!(state.status, ToolCallStatus::Failed, "{state:?}");
    let text = state.result.unwrap().text;
    assert!(
        text.contains("changed while it waited for approval"),
        "{text}"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
}
