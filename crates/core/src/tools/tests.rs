use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;

use super::*;
use crate::config::SandboxConfig;
use crate::testing::TestHome;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EchoArgs {
    /// What to echo.
    text: String,
    /// How often.
    times: Option<u32>,
}

struct Echo {
    runs: Arc<AtomicUsize>,
}

impl Tool for Echo {
    type Args = EchoArgs;
    type Prepared = String;

    fn name(&self) -> &'static str {
        "Echo"
    }
    fn description(&self) -> &'static str {
        "Echoes text."
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }
    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }
    async fn plan(
        &self,
        args: &EchoArgs,
        _ctx: &ToolContext,
    ) -> Result<Planned<String>, ToolError> {
        if args.text == "bad" {
            return Err(ToolError::Failed("bad text".into()));
        }
        let repeated = args.text.repeat(args.times.unwrap_or(1) as usize);
        Ok(Plan::new(format!("echo {}", args.text)).with(repeated))
    }
    async fn run(
        &self,
        _args: EchoArgs,
        prepared: String,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(prepared))
    }
}

fn catalog(runs: &Arc<AtomicUsize>) -> Catalog {
    let mut builder = CatalogBuilder::default();
    builder
        .add(Echo {
            runs: Arc::clone(runs),
        })
        .unwrap();
    builder.build()
}

#[tokio::test]
async fn plan_then_run_through_the_erased_tool() {
    let dir = TestHome::new();
    let ctx = dir.tool_context(&SandboxConfig::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let catalog = catalog(&runs);
    let tool = catalog.get("Echo").unwrap();
    let planned = tool
        .plan(serde_json::json!({"text": "ab", "times": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(planned.plan.summary, "echo ab");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "planning runs nothing");
    let output = planned.run(ctx.clone()).await.unwrap();
    assert_eq!(output.text, "abab");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Arguments may arrive as a JSON string.
    let planned = tool
        .plan(Value::String(r#"{"text":"x"}"#.into()), &ctx)
        .await
        .unwrap();
    assert_eq!(planned.run(ctx).await.unwrap().text, "x");
}

#[tokio::test]
async fn bad_arguments_are_errors_not_panics() {
    let dir = TestHome::new();
    let ctx = dir.tool_context(&SandboxConfig::default());
    let catalog = catalog(&Arc::new(AtomicUsize::new(0)));
    let tool = catalog.get("Echo").unwrap();
    for bad in [
        serde_json::json!({}),
        serde_json::json!({"text": 5}),
        serde_json::json!({"text": "a", "extra": true}),
        Value::String("{not json".into()),
        serde_json::json!([1, 2]),
    ] {
        let error = tool.plan(bad.clone(), &ctx).await.unwrap_err();
        assert!(
            matches!(error, ToolError::InvalidArguments(_)),
            "{bad}: {error:?}"
        );
    }
    let failed = tool
        .plan(serde_json::json!({"text": "bad"}), &ctx)
        .await
        .unwrap_err();
    let result = into_result(Err(failed));
    assert!(result.is_error);
    assert_eq!(result.text, "bad text");
}

#[test]
fn duplicate_names_are_rejected() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut builder = CatalogBuilder::default();
    builder
        .add(Echo {
            runs: Arc::clone(&runs),
        })
        .unwrap();
    let error = builder.add(Echo { runs }).err().unwrap();
    assert_eq!(error, CatalogError::Duplicate("Echo".into()));
}

#[test]
fn input_schema_is_an_inlined_object_schema() {
    let schema = input_schema::<EchoArgs>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["text"]["type"], "string");
    assert_eq!(schema["properties"]["text"]["description"], "What to echo.");
    assert_eq!(schema["required"], serde_json::json!(["text"]));
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema.get("$defs").is_none());
    assert!(schema.get("title").is_none());
}

#[test]
fn builtin_catalog_builds_without_duplicates() {
    let catalog = builtin::catalog().unwrap();
    for tool in catalog.iter() {
        let spec = tool.spec();
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert!(!spec.description.is_empty(), "{}", spec.name);
    }
}
