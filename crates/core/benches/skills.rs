//! File-backed skills at scale, through the real runtime on a temporary home.
//!
//! - `skills/list_100`: listing 100 skills in `~/.agents/skills` (each folder read with the
//!   loader's limits, hashed, its `SKILL.md` parsed) — the scan every listing does.
//! - `skills/validate_100`: validating each of the 100 folders (load, hash, spec checks and every
//!   static rule), as `souz skills validate` does one.
//! - Printed, not timed: the share of the model's context window the inventory's file-backed
//!   part takes with 10 and 100 skills, for a 16k and a 200k window, measured on the system
//!   message the fake OpenAI server received in a real skills-agent turn (tokens estimated as
//!   characters / 4, as the summarizer does), and how many skills the budget left out.
//!
//! Run with `cargo bench -p souz-core --features test-support --bench skills`.

#![allow(clippy::expect_used, clippy::panic, clippy::print_stdout)] // a benchmark may stop loudly

use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use souz_core::agent::{NoSink, TurnRequest};
use souz_core::testing::{RuntimeInternals, TestHome, TestRuntime};
use souz_testkit::{FakeServer, openai};
use tokio_util::sync::CancellationToken;

/// Writes `count` realistic skills (a ~120-character description, a 2 KiB body, a script)
/// into `root`; returns their folders.
fn write_skills(root: &Path, count: usize) -> Vec<PathBuf> {
    (0..count)
        .map(|n| {
            let name = format!("skill-{n:03}");
            let folder = root.join(&name);
            std::fs::create_dir_all(folder.join("scripts")).expect("skill folder");
            let description = format!(
                "Skill number {n} converts, checks and summarises documents of kind {n} for \
                 the person, keeping originals untouched."
            );
            let body = "Follow these steps carefully and report what changed.\n".repeat(40);
            std::fs::write(
                folder.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
            )
            .expect("SKILL.md");
            std::fs::write(
                folder.join("scripts/run.sh"),
                "#!/bin/sh\necho \"converting $1\"\n",
            )
            .expect("script");
            folder
        })
        .collect()
}

fn scan_and_validate(c: &mut Criterion) {
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let home = TestHome::new();
    let folders = write_skills(&home.path().join(".agents").join("skills"), 100);
    let runtime = tokio.block_on(TestRuntime::builder().start_in(home));
    let handle = runtime.handle();
    let listed = tokio
        .block_on(handle.list_skills())
        .expect("list")
        .items
        .len();
    assert_eq!(listed, 100);
    let mut group = c.benchmark_group("skills");
    group.sample_size(20);
    group.bench_function("list_100", |b| {
        b.to_async(&tokio)
            .iter(|| async { handle.list_skills().await.expect("list") });
    });
    group.bench_function("validate_100", |b| {
        b.iter(|| {
            for folder in &folders {
                let checked = handle
                    .validate_skill(folder.to_str().expect("utf-8 path"))
                    .expect("validate");
                assert!(checked.approved, "{:?}", checked.findings);
            }
        });
    });
    group.finish();
    tokio.block_on(runtime.shutdown("bench")).expect("shutdown");
}

/// The file-backed part of the inventory in the system message of one skills turn with
/// `count` skills and a `context_size`-token window: (characters, skills left out).
async fn inventory_of(count: usize, context_size: u32) -> (usize, usize) {
    let server = FakeServer::start().await;
    server.push(openai::CHAT_PATH, openai::text(&["ok"]));
    let home = TestHome::new();
    write_skills(&home.path().join(".agents").join("skills"), count);
    let runtime = TestRuntime::builder()
        .with_llm(&server)
        .with_config(|config| config.agent.default_agent = "skills".into())
        .start_in(home)
        .await;
    let handle = runtime.handle();
    let mut request = TurnRequest::new("bench-inventory", "hello");
    request.context_size = Some(context_size);
    handle
        .agents()
        .run_turn(request, Arc::new(NoSink), CancellationToken::new())
        .await
        .expect("turn");
    let body = server.requests_to(openai::CHAT_PATH)[0].json();
    let system = body["messages"][0]["content"]
        .as_str()
        .expect("a system message")
        .to_owned();
    runtime.shutdown("bench").await.expect("shutdown");
    let start = system
        .find("File-backed Skills")
        .expect("the file-backed part");
    let part = &system[start..];
    let omitted = part
        .lines()
        .find(|line| line.contains("more file-backed Skills are not listed"))
        .and_then(|line| {
            line.trim_start_matches("- ")
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    (part.chars().count(), omitted)
}

fn inventory_share(_: &mut Criterion) {
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    for context_size in [16_000u32, 200_000] {
        for count in [10usize, 100] {
            let (chars, omitted) = tokio.block_on(inventory_of(count, context_size));
            let tokens = chars.div_ceil(4);
            println!(
                "inventory: {count} skills, {context_size}-token window: {chars} chars \
                 (~{tokens} tokens, {:.2}% of the window), {omitted} left out",
                tokens as f64 * 100.0 / f64::from(context_size)
            );
        }
    }
}

criterion_group!(benches, scan_and_validate, inventory_share);
criterion_main!(benches);
