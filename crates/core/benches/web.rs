//! The model-backed web tools' own overhead (issue 18).
//!
//! - `web/cited_answer_5_sources`: one `InternetSearch` with `maxSources` 5 against the loopback
//!   fixture site (DuckDuckGo's results page, five article pages) with a scripted model that
//!   answers at once, through the erased catalog as the gate runs it: search request, HTML
//!   parse, five concurrent fetches through the SSRF-safe client, extraction, prompt, citation
//!   check. No cache, no pacing, so every iteration does all of it.
//! - `web/extract_pages`: the readable-text extraction of the saved real pages in
//!   `tests/fixtures/web/pages` (25 pages of the Rust documentation); criterion prints pages/s.
//!
//! Run with `cargo bench -p souz-core --features test-support --bench web`.

#![allow(clippy::expect_used, clippy::panic, clippy::print_stdout)] // a benchmark may stop loudly

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use souz_core::config::SandboxConfig;
use souz_core::testing::TestHome;
use souz_core::testing::web::{FixtureSite, ScriptedModel, fixtures_dir, readable_text, web_tools};

const ANSWER: &str = "Tomatoes need six hours of sun [1], deep watering [2], slightly acidic \
                      soil [3], an eye on blight [4], and picking when fully coloured [5].";

fn cited_answer(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let site = runtime.block_on(FixtureSite::start());
    let home = TestHome::new();
    let ctx = home.tool_context(&SandboxConfig {
        network_allow_hosts: vec![site.allow_entry()],
        ..SandboxConfig::default()
    });
    let model = Arc::new(ScriptedModel::default());
    let catalog = web_tools(site.web_config(), None, Some(Arc::clone(&model)));
    let tool = Arc::clone(catalog.get("InternetSearch").expect("InternetSearch"));
    let arguments = json!({"query": "how to grow tomatoes", "maxSources": 5});
    // One checked run first: the figure is only meaningful for a complete, 5-source answer.
    let call = || {
        model.push(Ok(ANSWER));
        let tool = Arc::clone(&tool);
        let ctx = ctx.clone();
        let arguments = arguments.clone();
        async move {
            let planned = tool.plan(arguments, &ctx).await.expect("planned");
            planned.run(ctx).await.expect("answered")
        }
    };
    let output = runtime.block_on(call());
    let structured = output.structured.expect("structured");
    assert_eq!(structured["status"], "COMPLETE", "{structured}");
    assert_eq!(structured["sources"].as_array().map(Vec::len), Some(5));
    let mut group = c.benchmark_group("web");
    group.sample_size(30);
    group.bench_function("cited_answer_5_sources", |b| {
        b.to_async(&runtime).iter(call);
    });
    group.finish();
}

fn extraction(c: &mut Criterion) {
    let mut pages: Vec<(String, String)> = std::fs::read_dir(fixtures_dir().join("pages"))
        .expect("the saved pages")
        .map(|entry| {
            let path = entry.expect("an entry").path();
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            (
                format!("https://pages.example/{name}"),
                std::fs::read_to_string(&path).expect("a page"),
            )
        })
        .collect();
    pages.sort();
    assert!(pages.len() >= 20, "{} pages", pages.len());
    let bytes: usize = pages.iter().map(|(_, html)| html.len()).sum();
    println!(
        "web/extract_pages: {} pages, {} KiB of HTML",
        pages.len(),
        bytes / 1024
    );
    let mut group = c.benchmark_group("web");
    group.throughput(Throughput::Elements(pages.len() as u64));
    group.sample_size(10);
    group.bench_function("extract_pages", |b| {
        b.iter(|| {
            for (url, html) in &pages {
                let (_, text) = readable_text(html, url);
                assert!(!text.is_empty(), "{url}");
            }
        });
    });
    group.finish();
}

criterion_group!(benches, cited_answer, extraction);
criterion_main!(benches);
