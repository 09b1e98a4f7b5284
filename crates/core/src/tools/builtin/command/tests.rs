//! `RunCommand` through the erased catalog interface, with real commands.

use std::sync::Arc;

use serde_json::{Value, json};
use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{SandboxConfig, SouzPaths};
use crate::sandbox::{Confinement, Sandbox, SandboxError};
use crate::testing::tool_context;

/// Why commands are not confined in these tests.
const UNIT_TEST_REASON: &str = "not confined in unit tests";
use crate::tools::{Catalog, CatalogBuilder, DynTool};

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ctx: ToolContext,
    catalog: Catalog,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join("work")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let config = SandboxConfig {
        command_max_timeout_seconds: 120,
        allow_unconfined_commands: true,
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    // Real commands run here without OS confinement (the e2e tests run the real helper).
    let sandbox = Sandbox::new(&config, &paths)
        .unwrap()
        .with_confinement(Confinement::None {
            reason: UNIT_TEST_REASON.into(),
        });
    let ctx = tool_context(sandbox);
    let mut builder = CatalogBuilder::default();
    register(&mut builder).unwrap();
    Fixture {
        _dir: dir,
        home,
        ctx,
        catalog: builder.build(),
    }
}

impl Fixture {
    fn tool(&self) -> &Arc<dyn DynTool> {
        self.catalog.get("RunCommand").unwrap()
    }

    async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolError> {
        let planned = self.tool().plan(arguments, &self.ctx).await?;
        planned.run(self.ctx.clone()).await
    }
}

#[tokio::test]
async fn plans_name_the_command_and_folder_then_runs_it() {
    let fixture = fixture();
    let planned = fixture
        .tool()
        .plan(
            json!({"command": "echo hello; echo oops >&2", "cwd": "~/work"}),
            &fixture.ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        planned.plan.summary,
        "Run `echo hello; echo oops >&2` in ~/work (time limit 60 s), unconfined: nothing \
         limits what it can touch"
    );
    assert_eq!(
        planned.plan.targets,
        [
            CallTarget::Command {
                command: "echo hello; echo oops >&2".to_owned(),
                cwd: fixture.home.join("work"),
            },
            CallTarget::Unconfined {
                reason: UNIT_TEST_REASON.to_owned()
            }
        ]
    );
    let output = planned.run(fixture.ctx.clone()).await.unwrap();
    let structured = output.structured.unwrap();
    assert_eq!(structured["exitCode"], 0);
    assert_eq!(structured["stdout"], "hello\n");
    assert_eq!(structured["stderr"], "oops\n");
    assert_eq!(structured["timedOut"], false);
    assert_eq!(structured["cwd"], "~/work");
    assert_eq!(structured["confinement"], "none");
    assert!(output.text.starts_with("exit code 0 ("), "{}", output.text);
    assert!(
        output
            .text
            .contains("--- stdout ---\nhello\n--- stderr ---\noops\n"),
        "{}",
        output.text
    );
}

#[tokio::test]
async fn failing_and_timed_out_commands_are_results_with_their_output() {
    let fixture = fixture();
    let output = fixture
        .call(json!({"command": "echo partial; ls /definitely/missing"}))
        .await
        .unwrap();
    let structured = output.structured.unwrap();
    assert_eq!(structured["exitCode"], 2);
    assert_eq!(structured["stdout"], "partial\n");
    assert!(
        structured["stderr"]
            .as_str()
            .unwrap()
            .contains("/definitely/missing")
    );

    let output = fixture
        .call(json!({"command": "echo started; sleep 30", "timeoutSeconds": 1}))
        .await
        .unwrap();
    let structured = output.structured.unwrap();
    assert_eq!(structured["timedOut"], true);
    assert_eq!(structured["exitCode"], Value::Null);
    assert_eq!(structured["stdout"], "started\n");
    assert!(
        output.text.starts_with("timed out after 1 s"),
        "{}",
        output.text
    );
}

#[tokio::test]
async fn cancelling_the_call_stops_the_command() {
    let fixture = fixture();
    let planned = fixture
        .tool()
        .plan(json!({"command": "sleep 30"}), &fixture.ctx)
        .await
        .unwrap();
    let cancel = fixture.ctx.cancel.clone();
    crate::tasks::spawn_in_test(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let error = planned.run(fixture.ctx.clone()).await.unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[tokio::test]
async fn bad_arguments_and_refused_folders_are_clear_errors() {
    let fixture = fixture();
    let invalid = [
        json!({"command": "   "}),
        json!({"command": "ls", "timeoutSeconds": 0}),
        json!({"command": "ls", "timeoutSeconds": 121}),
        json!({"command": "ls", "shell": "zsh"}),
        json!({}),
    ];
    for arguments in invalid {
        let error = fixture.call(arguments.clone()).await.unwrap_err();
        assert!(
            matches!(error, ToolError::InvalidArguments(_)),
            "{arguments}: {error:?}"
        );
    }
    let error = fixture
        .call(json!({"command": "ls", "cwd": "/etc"}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ToolError::Sandbox(SandboxError::OutsideRoots { .. })),
        "{error:?}"
    );
    let error = fixture
        .call(json!({"command": "ls", "cwd": "~/missing"}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ToolError::Sandbox(SandboxError::NotFound(_))),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_protected_working_folder_is_a_protected_target() {
    let fixture = fixture();
    let planned = fixture
        .tool()
        .plan(json!({"command": "ls", "cwd": "~/.ssh"}), &fixture.ctx)
        .await
        .unwrap();
    assert!(planned.plan.targets.iter().any(|target| matches!(
        target,
        CallTarget::Path { protected: true, path, .. } if *path == fixture.home.join(".ssh")
    )));
    // Multi-line commands are summarized by their first line; the target keeps all of it.
    let planned = fixture
        .tool()
        .plan(json!({"command": "cd /tmp\nrm -rf junk"}), &fixture.ctx)
        .await
        .unwrap();
    assert_eq!(
        planned.plan.summary,
        "Run `cd /tmp…` in ~ (time limit 60 s), unconfined: nothing limits what it can touch"
    );
    assert!(matches!(
        &planned.plan.targets[0],
        CallTarget::Command { command, .. } if command == "cd /tmp\nrm -rf junk"
    ));
}

#[test]
fn the_spec_describes_arguments_and_output() {
    let fixture = fixture();
    let spec = fixture.tool().spec();
    assert_eq!(spec.risk, Risk::Exec);
    assert_eq!(spec.category, ToolCategory::Commands);
    let properties = &spec.input_schema["properties"];
    for name in ["command", "cwd", "timeoutSeconds", "network"] {
        assert!(
            properties[name]["description"].is_string(),
            "{name}: {properties}"
        );
    }
    assert_eq!(spec.input_schema["required"], json!(["command"]));
    let output = spec.output_schema.as_ref().unwrap();
    for name in ["exitCode", "stdout", "stderr", "timedOut", "confinement"] {
        assert!(output["properties"][name].is_object(), "{name}: {output}");
    }
}

#[tokio::test]
async fn unconfined_commands_are_refused_unless_allowed_and_then_always_ask() {
    let fixture = fixture();
    let unconfined = |allow: bool| {
        let config = SandboxConfig {
            allow_unconfined_commands: allow,
            ..fixture.ctx.sandbox.config().clone()
        };
        let paths = SouzPaths::new(fixture.home.join(".souz")).with_user_home(&fixture.home);
        ToolContext {
            sandbox: Arc::new(Sandbox::new(&config, &paths).unwrap().with_confinement(
                Confinement::None {
                    reason: "Landlock is not available on this kernel: ENOSYS".into(),
                },
            )),
            ..fixture.ctx.clone()
        }
    };
    // Off (the default): refused before anything runs, naming the cause and the setting.
    assert!(!SandboxConfig::default().allow_unconfined_commands);
    let marker = fixture.home.join("ran");
    let command = json!({"command": format!("touch {}", marker.display())});
    let error = fixture
        .tool()
        .plan(command.clone(), &unconfined(false))
        .await
        .err()
        .unwrap();
    let message = error.to_string();
    assert!(message.contains("ENOSYS"), "{message}");
    assert!(message.contains("allow_unconfined_commands"), "{message}");
    // The runner refuses too (skills call it directly).
    let refused = unconfined(false)
        .sandbox
        .run_command(
            crate::sandbox::CommandRequest::shell(format!("touch {}", marker.display())),
            &CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(refused, Err(crate::sandbox::CommandError::Unconfined(_))),
        "{refused:?}"
    );
    assert!(!marker.exists());

    // On: the plan says so, and an allow rule or grant for the command does not let it run
    // without asking.
    let ctx = unconfined(true);
    let planned = fixture.tool().plan(command, &ctx).await.unwrap();
    assert!(
        planned.plan.summary.contains("unconfined"),
        "{}",
        planned.plan.summary
    );
    let approvals = crate::config::ApprovalsConfig {
        rules: vec![
            serde_json::from_value(json!({"action": "allow", "tool": "RunCommand"})).unwrap(),
        ],
        ..crate::config::ApprovalsConfig::default()
    };
    let policy = crate::approvals::policy::Policy::new(&approvals, &fixture.home);
    let facts = crate::approvals::policy::CallFacts {
        tool: "RunCommand",
        known: true,
        risk: Risk::Exec,
        requester: &Requester::Cli,
        targets: &planned.plan.targets,
    };
    match policy.decide(&facts, &[], chrono::Utc::now()) {
        crate::approvals::policy::Decision::Ask { reason } => {
            assert!(reason.contains("unconfined"), "{reason}");
            assert!(reason.contains("ENOSYS"), "{reason}");
        }
        other => panic!("an unconfined command must ask: {other:?}"),
    }
    // The same call, confined, is allowed by the rule.
    let confined: Vec<_> = planned
        .plan
        .targets
        .iter()
        .filter(|target| !matches!(target, CallTarget::Unconfined { .. }))
        .cloned()
        .collect();
    let facts = crate::approvals::policy::CallFacts {
        targets: &confined,
        ..facts
    };
    assert!(matches!(
        policy.decide(&facts, &[], chrono::Utc::now()),
        crate::approvals::policy::Decision::Allow(_)
    ));
}

#[tokio::test]
async fn a_command_that_asks_for_the_network_is_a_network_call() {
    let fixture = fixture();
    // Confined (the policy view does not depend on how): no unconfined target in the way.
    let ctx = ToolContext {
        sandbox: Arc::new(fixture.ctx.sandbox.as_ref().clone().with_confinement(
            Confinement::Landlock {
                helper: PathBuf::from("/opt/souz"),
                complete: true,
            },
        )),
        ..fixture.ctx.clone()
    };
    let offline = fixture
        .tool()
        .plan(json!({"command": "cargo build"}), &ctx)
        .await
        .unwrap();
    assert!(!offline.plan.targets.contains(&CallTarget::Network));
    assert!(!offline.plan.summary.contains("network"));
    let online = fixture
        .tool()
        .plan(json!({"command": "cargo build", "network": true}), &ctx)
        .await
        .unwrap();
    assert!(online.plan.targets.contains(&CallTarget::Network));
    assert!(
        online.plan.summary.ends_with(", with network access"),
        "{}",
        online.plan.summary
    );

    let decide = |network: &str, targets: &[CallTarget]| {
        let approvals: crate::config::ApprovalsConfig = serde_json::from_value(json!({
            "network": network,
            "rules": [{"action": "allow", "tool": "RunCommand", "command": "cargo build"}],
        }))
        .unwrap();
        let policy = crate::approvals::policy::Policy::new(&approvals, &fixture.home);
        let facts = crate::approvals::policy::CallFacts {
            tool: "RunCommand",
            known: true,
            risk: Risk::Exec,
            requester: &Requester::Cli,
            targets,
        };
        policy.decide(&facts, &[], chrono::Utc::now()).action()
    };
    use souz_protocol::Action;
    // The rule allows the command; asking for the network still asks (or follows the
    // network default when that allows or denies).
    assert_eq!(decide("ask", &offline.plan.targets), Action::Allow);
    assert_eq!(decide("ask", &online.plan.targets), Action::Ask);
    assert_eq!(decide("deny", &online.plan.targets), Action::Deny);
    assert_eq!(decide("allow", &online.plan.targets), Action::Allow);
}
