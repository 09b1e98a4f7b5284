//! `WebPageText` against a real server on 127.0.0.1.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::config::SandboxConfig;
use crate::sandbox::net::test_server::TestServer;
use crate::testing::TestHome;
use crate::tools::{Catalog, CatalogBuilder, DynTool};

struct Fixture {
    _dir: TestHome,
    ctx: ToolContext,
    catalog: Catalog,
}

fn fixture(allow_hosts: Vec<String>) -> Fixture {
    let dir = TestHome::new();
    let ctx = dir.tool_context(&SandboxConfig {
        network_allow_hosts: allow_hosts,
        ..SandboxConfig::default()
    });
    let mut builder = CatalogBuilder::default();
    register(&mut builder).unwrap();
    Fixture {
        _dir: dir,
        ctx,
        catalog: builder.build(),
    }
}

impl Fixture {
    fn tool(&self) -> &Arc<dyn DynTool> {
        self.catalog.get("WebPageText").unwrap()
    }

    async fn call(&self, arguments: Value) -> Result<Value, ToolError> {
        let planned = self.tool().plan(arguments, &self.ctx).await?;
        let output = planned.run(self.ctx.clone()).await?;
        Ok(output.structured.unwrap())
    }
}

#[tokio::test]
async fn reads_the_main_content_of_an_article() {
    let server = TestServer::start("127.0.0.1").await;
    let fixture = fixture(vec![server.allow_entry()]);
    let url = server.url("/html?name=article");
    let planned = fixture
        .tool()
        .plan(json!({"url": url}), &fixture.ctx)
        .await
        .unwrap();
    assert_eq!(planned.plan.summary, format!("Read the web page {url}"));
    assert_eq!(
        planned.plan.targets,
        [CallTarget::Url {
            url: url.clone(),
            host: "127.0.0.1".to_owned()
        }]
    );
    let output = planned.run(fixture.ctx.clone()).await.unwrap();
    let structured = output.structured.unwrap();
    let text = structured["text"].as_str().unwrap();
    for expected in [
        "six hours of direct sunlight",
        "twenty litres",
        "blossom end rot",
        "Harvest when fully coloured",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in {text}");
    }
    for unwanted in [
        "SCRIPT_CONTENT_MUST_NOT_APPEAR",
        "STYLE_CONTENT_MUST_NOT_APPEAR",
        "NAVIGATION_AND_ADS",
        "FOOTER_TEXT",
        "Log in",
    ] {
        assert!(!text.contains(unwanted), "{unwanted:?} leaked into {text}");
    }
    assert!(
        structured["title"]
            .as_str()
            .unwrap()
            .starts_with("Growing tomatoes on a balcony")
    );
    assert_eq!(structured["truncated"], false);
    assert_eq!(structured["finalUrl"], url);
    assert!(
        structured["contentType"]
            .as_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        output.text.starts_with("Title: Growing tomatoes"),
        "{}",
        output.text
    );
}

#[tokio::test]
async fn long_text_is_cut_at_max_chars_with_a_flag() {
    let server = TestServer::start("127.0.0.1").await;
    let fixture = fixture(vec![server.allow_entry()]);
    let output = fixture
        .call(json!({"url": server.url("/html?name=article"), "maxChars": 100}))
        .await
        .unwrap();
    assert_eq!(output["truncated"], true);
    assert_eq!(output["text"].as_str().unwrap().chars().count(), 100);
    assert!(output["totalChars"].as_u64().unwrap() > 400);
}

#[tokio::test]
async fn declared_charsets_are_decoded() {
    let server = TestServer::start("127.0.0.1").await;
    let fixture = fixture(vec![server.allow_entry()]);
    let output = fixture
        .call(json!({"url": server.url("/html?name=cp1251")}))
        .await
        .unwrap();
    let text = output["text"].as_str().unwrap();
    assert!(
        text.contains("Съешь же ещё этих мягких французских булок"),
        "{text}"
    );
    assert_eq!(output["title"], "Привет");
}

#[tokio::test]
async fn pages_without_an_article_fall_back_to_visible_text() {
    let server = TestServer::start("127.0.0.1").await;
    let fixture = fixture(vec![server.allow_entry()]);
    let output = fixture
        .call(json!({"url": server.url("/html?name=tiny")}))
        .await
        .unwrap();
    assert_eq!(output["text"], "Just one line.");
    assert_eq!(output["title"], "Tiny");
    let output = fixture
        .call(json!({"url": server.url("/text")}))
        .await
        .unwrap();
    assert_eq!(output["text"], "hello from the test server");
    assert_eq!(output["title"], Value::Null);
}

#[tokio::test]
async fn non_text_content_is_refused() {
    let server = TestServer::start("127.0.0.1").await;
    let fixture = fixture(vec![server.allow_entry()]);
    let error = fixture
        .call(json!({"url": server.url("/binary")}))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ToolError::Failed(message) if message.contains("application/octet-stream")),
        "{error:?}"
    );
}

#[tokio::test]
async fn local_addresses_are_refused_before_anything_is_sent() {
    let server = TestServer::start("127.0.0.1").await;
    let fixture = fixture(Vec::new());
    let error = fixture
        .tool()
        .plan(json!({"url": server.url("/text")}), &fixture.ctx)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ToolError::Failed(message) if message.contains("loopback")),
        "{error:?}"
    );
    // A name that resolves to loopback passes planning (no DNS there) and is refused on run.
    let url = format!("http://localhost:{}/text", server.address.port());
    let error = fixture.call(json!({"url": url})).await.unwrap_err();
    assert!(
        matches!(&error, ToolError::Failed(message) if message.contains("localhost resolves to")),
        "{error:?}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn redirects_from_an_allowed_host_to_a_local_one_are_refused() {
    let allowed = TestServer::start("127.0.0.1").await;
    let internal = TestServer::start("127.0.0.2").await;
    let fixture = fixture(vec![allowed.allow_entry()]);
    let url = format!("{}?to={}", allowed.url("/redirect"), internal.url("/text"));
    let error = fixture.call(json!({"url": url})).await.unwrap_err();
    assert!(
        matches!(&error, ToolError::Failed(message) if message.contains("127.0.0.2")),
        "{error:?}"
    );
    assert_eq!(internal.hits(), 0);
}

#[tokio::test]
async fn bad_arguments_are_clear_errors() {
    let fixture = fixture(Vec::new());
    for arguments in [
        json!({"url": "https://example.com", "maxChars": 0}),
        json!({"url": "https://example.com", "maxChars": 100_001}),
        json!({"url": "not a url"}),
        json!({"url": "ftp://example.com/file"}),
        json!({"url": "https://example.com", "extra": 1}),
    ] {
        let error = fixture
            .tool()
            .plan(arguments.clone(), &fixture.ctx)
            .await
            .unwrap_err();
        assert!(
            matches!(error, ToolError::InvalidArguments(_)),
            "{arguments}: {error:?}"
        );
    }
}

#[test]
fn the_spec_is_read_only_network() {
    let fixture = fixture(Vec::new());
    let spec = fixture.tool().spec();
    assert_eq!(spec.risk, Risk::Network);
    assert_eq!(spec.category, ToolCategory::WebSearch);
    assert!(spec.annotations.read_only_hint && spec.annotations.open_world_hint);
    assert_eq!(spec.input_schema["required"], json!(["url"]));
    assert!(spec.input_schema["properties"]["maxChars"]["description"].is_string());
}
