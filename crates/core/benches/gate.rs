//! The approval gate's cost: the pure policy decision, and a full gate pass (plan, decide,
//! run, record: three SQLite transactions, two events, one audit row) for an allowed
//! read-only call.
//!
//! Run: `cargo bench -p souz-core --bench gate` (or `scripts/bench.sh gate`).

// A benchmark fails loudly on setup errors.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use souz_core::approvals::{Approvals, CallFacts, GrantRule, Policy};
use souz_core::config::{Config, RuleConfig, SouzPaths};
use souz_core::runtime::EventBus;
use souz_core::sandbox::{Access, Sandbox};
use souz_core::store::Store;
use souz_core::tools::gate::{CallRequest, Gate, GateParts};
use souz_core::tools::{
    CatalogBuilder, Plan, Planned, Target, Tool, ToolContext, ToolError, ToolOutput,
};
use souz_protocol::{Action, ArgumentMatch, Effect, Requester, Risk, ToolCategory};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

fn rule(action: Action) -> RuleConfig {
    RuleConfig {
        action,
        tool: None,
        path: None,
        command: None,
        domain: None,
        risk: None,
        requester: None,
        note: None,
    }
}

/// A realistic configuration: a dozen rules of every kind and a few grants.
fn policy_fixture() -> (Policy, Vec<GrantRule>) {
    let mut config =
        Config::defaults(SouzPaths::new("/home/u/.souz").with_user_home("/home/u")).approvals;
    config.rules = vec![
        RuleConfig {
            command: Some("rm -rf".into()),
            ..rule(Action::Deny)
        },
        RuleConfig {
            command: Some("git push".into()),
            ..rule(Action::Ask)
        },
        RuleConfig {
            command: Some("git status".into()),
            ..rule(Action::Allow)
        },
        RuleConfig {
            command: Some("cargo test".into()),
            ..rule(Action::Allow)
        },
        RuleConfig {
            command: Some("ls".into()),
            ..rule(Action::Allow)
        },
        RuleConfig {
            tool: Some("*File".into()),
            path: Some("~/projects/notes".into()),
            ..rule(Action::Allow)
        },
        RuleConfig {
            path: Some("~/secret".into()),
            ..rule(Action::Deny)
        },
        RuleConfig {
            path: Some("~/src/**/*.rs".into()),
            ..rule(Action::Allow)
        },
        RuleConfig {
            domain: Some("docs.rs".into()),
            ..rule(Action::Allow)
        },
        RuleConfig {
            domain: Some("tracker.example".into()),
            ..rule(Action::Deny)
        },
        RuleConfig {
            requester: Some("mcp:evil".into()),
            ..rule(Action::Deny)
        },
        RuleConfig {
            tool: Some("WebPageText".into()),
            ..rule(Action::Ask)
        },
    ];
    let grants = (0..8)
        .map(|index| GrantRule {
            id: format!("g{index}"),
            effect: Effect::Allow,
            tool: "EditFile".into(),
            requester: Some(Requester::Cli),
            argument_match: ArgumentMatch {
                path_prefix: Some(format!("~/work/p{index}")),
                ..ArgumentMatch::default()
            },
            expires_at: None,
        })
        .collect();
    (Policy::new(&config, Path::new("/home/u")), grants)
}

fn policy(c: &mut Criterion) {
    let (policy, grants) = policy_fixture();
    let requester = Requester::Mcp {
        client_name: "Claude Code".into(),
        client_version: "2".into(),
        session_id: "s".into(),
        token_id: "c-claude".into(),
        token_name: "claude-code".into(),
    };
    let command = [Target::Command {
        command: "sudo bash -lc 'git status -s && ls -la ~/src'".into(),
        cwd: PathBuf::from("/home/u/src"),
    }];
    let edit = [Target::Path {
        path: PathBuf::from("/home/u/work/p7/src/lib.rs"),
        access: Access::Write,
        protected: false,
    }];
    let now = Utc::now();
    let mut group = c.benchmark_group("policy");
    group.bench_function("decide_command_through_wrappers", |b| {
        let facts = CallFacts {
            tool: "RunCommand",
            known: true,
            risk: Risk::Exec,
            requester: &requester,
            targets: &command,
        };
        b.iter(|| policy.decide(std::hint::black_box(&facts), &grants, now));
    });
    group.bench_function("decide_file_edit_with_grants", |b| {
        let facts = CallFacts {
            tool: "EditFile",
            known: true,
            risk: Risk::Write,
            requester: &Requester::Cli,
            targets: &edit,
        };
        b.iter(|| policy.decide(std::hint::black_box(&facts), &grants, now));
    });
    group.finish();
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// A read-only tool that does nothing, so the measurement is the gate itself.
struct Nothing;

impl Tool for Nothing {
    type Args = NoArgs;
    type Prepared = ();
    fn name(&self) -> &'static str {
        "Nothing"
    }
    fn description(&self) -> &'static str {
        "Does nothing."
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }
    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }
    async fn plan(&self, _: &NoArgs, _: &ToolContext) -> Result<Planned<()>, ToolError> {
        Ok(Plan::new("nothing").ready())
    }
    async fn run(&self, _: NoArgs, (): (), _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("done"))
    }
}

fn gate(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = runtime.block_on(async {
        let paths = SouzPaths::new(dir.path().join(".souz")).with_user_home(dir.path());
        paths.ensure_home().expect("home");
        let config = Config::defaults(paths.clone());
        let store = Store::open(paths.database()).await.expect("store");
        let events = EventBus::new(store.clone(), 1024);
        let approvals = Approvals::open(store.clone(), events.clone(), config.clone())
            .await
            .expect("approvals");
        let sandbox = Arc::new(Sandbox::new(&config.sandbox, &config.paths).expect("sandbox"));
        let mut catalog = CatalogBuilder::default();
        catalog.add(Nothing).expect("catalog");
        Gate::new(GateParts {
            catalog: catalog.build(),
            sandbox,
            approvals,
            events,
            store,
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
        })
    });
    let mut group = c.benchmark_group("gate");
    group.bench_function("allowed_read_only_call", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let state = gate
                    .call(CallRequest {
                        tool: "Nothing".into(),
                        arguments: serde_json::json!({}),
                        requester: Requester::Cli,
                    })
                    .await
                    .expect("call");
                assert!(state.status.is_final());
            })
        });
    });
    group.finish();
}

criterion_group!(benches, policy, gate);
criterion_main!(benches, extra);

fn store(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = runtime
        .block_on(Store::open(dir.path().join("x.db")))
        .expect("store");
    c.bench_function("store/write_one_row", |b| {
        b.iter(|| runtime.block_on(store.write(|tx| tx.execute("INSERT INTO runtime_events (kind, payload, created_at) VALUES ('x','{}','now')", []).map_err(souz_core::store::StoreError::from))).expect("write"));
    });
    c.bench_function("store/read_one_row", |b| {
        b.iter(|| {
            runtime
                .block_on(store.read(|c| {
                    c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
                        .map_err(souz_core::store::StoreError::from)
                }))
                .expect("read")
        });
    });
}
criterion_group!(extra, store);
