//! `RunCommand` through the erased catalog interface, with real commands.

use std::sync::Arc;

use serde_json::{Value, json};
use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{SandboxConfig, SouzPaths};
use crate::sandbox::{Sandbox, SandboxError};
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
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let ctx = ToolContext {
        sandbox: Arc::new(Sandbox::new(&config, &paths).unwrap()),
        cancel: CancellationToken::new(),
        requester: Requester::Cli,
    };
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
        "Run `echo hello; echo oops >&2` in ~/work (time limit 60 s)"
    );
    assert_eq!(
        planned.plan.targets,
        [Target::Command {
            command: "echo hello; echo oops >&2".to_owned(),
            cwd: fixture.home.join("work"),
        }]
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
    tokio::spawn(async move {
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
        Target::Path { protected: true, path, .. } if *path == fixture.home.join(".ssh")
    )));
    // Multi-line commands are summarized by their first line; the target keeps all of it.
    let planned = fixture
        .tool()
        .plan(json!({"command": "cd /tmp\nrm -rf junk"}), &fixture.ctx)
        .await
        .unwrap();
    assert_eq!(
        planned.plan.summary,
        "Run `cd /tmp…` in ~ (time limit 60 s)"
    );
    assert!(matches!(
        &planned.plan.targets[0],
        Target::Command { command, .. } if command == "cd /tmp\nrm -rf junk"
    ));
}

#[test]
fn the_spec_describes_arguments_and_output() {
    let fixture = fixture();
    let spec = fixture.tool().spec();
    assert_eq!(spec.risk, Risk::Exec);
    assert_eq!(spec.category, ToolCategory::Commands);
    let properties = &spec.input_schema["properties"];
    for name in ["command", "cwd", "timeoutSeconds"] {
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
