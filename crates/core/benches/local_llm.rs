//! In-process local models on this machine's CPU with the test model (SmolLM2-135M-Instruct
//! Q4_1, `souz_core::testing::local_llm_model`): load time, resident memory loaded and
//! unloaded, time to first token and tokens per second on one thread and on every core —
//! straight from the engine and through the client the daemon uses (contract, grammar,
//! streaming, parsing) — and the share of answers that are strictly the contract's JSON over
//! 50 tool-call prompts, with and without the grammar (one thread); and a chat's second turn
//! (its system prompt and tool definitions the same as the first's) with the KV cache the
//! first turn left, against the same turn on a model that kept nothing (every core).
//!
//! `cargo bench -p souz-core --features test-support --bench local_llm` (or
//! `scripts/bench.sh local`). Prints its figures; no criterion statistics.

#![allow(clippy::expect_used, clippy::print_stdout)] // a benchmark may stop loudly

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use souz_core::llm::local::llama::LlamaCpp;
use souz_core::llm::local::profiles::{self, resident_memory};
use souz_core::llm::local::{
    Generation, LocalClient, LocalModels, LocalModelsOptions, is_strict_contract, prepare,
};
use souz_core::llm::{ChatRequest, LlmClient, Message, StreamEvent, ToolDeclaration};
use souz_core::testing::local_llm_model;
use tokio_util::sync::CancellationToken;

const PROFILE: &str = "smollm2-135m-instruct";
const STORY: &str = "Write a long story about a lighthouse keeper and a storm.";
const TOKENS: u32 = 128;

fn mib(bytes: Option<u64>) -> f64 {
    bytes.map_or(0.0, |bytes| bytes as f64 / (1 << 20) as f64)
}

fn models(dir: &std::path::Path, threads: u32) -> Arc<LocalModels> {
    Arc::new(LocalModels::new(
        Arc::new(LlamaCpp),
        LocalModelsOptions {
            dir: dir.to_owned(),
            idle_unload: Duration::from_secs(600),
            threads,
        },
    ))
}

/// Time to first token and tokens per second straight from the engine (no grammar).
async fn engine_speed(models: &LocalModels) -> (Duration, f64) {
    let profile = profiles::find(PROFILE).expect("profile");
    let model = models.acquire(profile, false).await.expect("load");
    let request = ChatRequest::new(PROFILE, vec![Message::user(STORY)]);
    let (prompt, _) = prepare(profile, &request);
    let generation = Generation {
        prompt,
        grammar: None,
        max_tokens: TOKENS,
        temperature: 0.0,
        seed: 1,
    };
    let stats = tokio::task::spawn_blocking(move || {
        model.generate(&generation, &mut |_| true, &CancellationToken::new())
    })
    .await
    .expect("join")
    .expect("generate");
    let first = stats.first_token.unwrap_or_default();
    let rate = stats.output_tokens.saturating_sub(1) as f64
        / (stats.total - first).as_secs_f64().max(1e-9);
    (first, rate)
}

/// The same through the client (contract prompt, grammar, streaming decode, parsing).
async fn client_speed(models: &Arc<LocalModels>) -> (Duration, f64) {
    let client = LocalClient::new(Arc::clone(models), PROFILE, TOKENS, 0.0).expect("client");
    let started = Instant::now();
    let mut first = None;
    let mut output = 0;
    let mut stream = client.stream(
        ChatRequest::new(PROFILE, vec![Message::user(STORY)]),
        CancellationToken::new(),
    );
    while let Some(event) = stream.next().await {
        match event.expect("event") {
            StreamEvent::TextDelta(_) => {
                first.get_or_insert_with(|| started.elapsed());
            }
            StreamEvent::Usage(usage) => output = usage.output_tokens,
            _ => {}
        }
    }
    let total = started.elapsed();
    let first = first.unwrap_or(total);
    // The first text arrives after the contract's prefix (about 8 tokens): count from it.
    let rate = output.saturating_sub(8) as f64 / (total - first).as_secs_f64().max(1e-9);
    (first, rate)
}

/// Time to the first token and tokens reused of one turn with tools, from the engine with
/// the grammar (what the client runs).
async fn turn(models: &LocalModels, question: &str) -> (Duration, u64, u64) {
    let profile = profiles::find(PROFILE).expect("profile");
    let model = models.acquire(profile, false).await.expect("load");
    let request = ChatRequest {
        tools: tools(),
        ..ChatRequest::new(PROFILE, vec![Message::user(question)])
    };
    let (prompt, rules) = prepare(profile, &request);
    let generation = Generation {
        prompt,
        grammar: Some(rules),
        max_tokens: 16,
        temperature: 0.0,
        seed: 1,
    };
    let stats = tokio::task::spawn_blocking(move || {
        model.generate(&generation, &mut |_| true, &CancellationToken::new())
    })
    .await
    .expect("join")
    .expect("generate");
    (
        stats.first_token.unwrap_or(stats.total),
        stats.reused_tokens,
        stats.prompt_tokens,
    )
}

fn tools() -> Vec<ToolDeclaration> {
    vec![
        ToolDeclaration {
            name: "ReadFile".into(),
            description: "Reads a text file at a path.".into(),
            parameters: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        },
        ToolDeclaration {
            name: "Calculator".into(),
            description: "Evaluates an arithmetic expression.".into(),
            parameters: json!({"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}),
        },
    ]
}

fn prompt(i: usize) -> String {
    match i % 5 {
        0 => format!("Read the file notes{i}.txt"),
        1 => format!("What is {i} * 17? Use the calculator."),
        2 => format!("Open report-{i}.md and tell me what it says."),
        3 => format!("Compute {i} plus {} with the tool.", i * 3),
        _ => format!("Show me the contents of /tmp/list{i}.txt"),
    }
}

/// Tool-call prompts per validity run: 50, or `SOUZ_BENCH_PROMPTS` (a quick run).
fn prompts() -> usize {
    souz_core::config::env::read(souz_core::config::env::Var::BenchPrompts)
        .and_then(|value| value.parse().ok())
        .unwrap_or(50)
}

/// Strictly valid contract answers (and of those, tool calls) over [`prompts`] prompts.
async fn validity(models: &LocalModels, grammar: bool) -> (usize, usize) {
    let profile = profiles::find(PROFILE).expect("profile");
    let model = models.acquire(profile, false).await.expect("load");
    let (mut valid, mut calls) = (0, 0);
    for i in 0..prompts() {
        let request = ChatRequest {
            tools: tools(),
            ..ChatRequest::new(PROFILE, vec![Message::user(prompt(i))])
        };
        let (prompt, rules) = prepare(profile, &request);
        let generation = Generation {
            prompt,
            grammar: grammar.then_some(rules),
            max_tokens: 96,
            temperature: 0.0,
            seed: 1,
        };
        let model = Arc::clone(&model);
        let raw = tokio::task::spawn_blocking(move || {
            let mut raw = String::new();
            model
                .generate(
                    &generation,
                    &mut |piece| {
                        raw.push_str(piece);
                        true
                    },
                    &CancellationToken::new(),
                )
                .expect("generate");
            raw
        })
        .await
        .expect("join");
        if is_strict_contract(&raw) {
            valid += 1;
            calls += usize::from(raw.contains("\"tool_calls\""));
        }
    }
    (valid, calls)
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(run());
}

async fn run() {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = home.path().join("models");
    let profile = profiles::find(PROFILE).expect("profile");
    std::fs::create_dir_all(profile.dir(&dir)).expect("mkdir");
    std::os::unix::fs::symlink(local_llm_model(), profile.path(&dir)).expect("link");
    let all = std::thread::available_parallelism().map_or(1, usize::from) as u32;

    let before = resident_memory();
    let one = models(&dir, 1);
    let started = Instant::now();
    one.acquire(profile, false).await.expect("load");
    let load = started.elapsed();
    let loaded = resident_memory();
    println!(
        "local_llm/load: {:.0} ms; RSS {:.1} MiB before, {:.1} MiB loaded (+{:.1})",
        load.as_secs_f64() * 1e3,
        mib(before),
        mib(loaded),
        mib(loaded) - mib(before)
    );
    for (threads, models) in [(1, Arc::clone(&one)), (all, self::models(&dir, all))] {
        let (first, rate) = engine_speed(&models).await;
        println!(
            "local_llm/engine {threads} thread(s): first token {:.0} ms, {rate:.1} tokens/s",
            first.as_secs_f64() * 1e3
        );
        let (first, rate) = client_speed(&models).await;
        println!(
            "local_llm/client {threads} thread(s): first text {:.0} ms, {rate:.1} tokens/s",
            first.as_secs_f64() * 1e3
        );
        if threads == 1 {
            for grammar in [true, false] {
                let (valid, calls) = validity(&models, grammar).await;
                println!(
                    "local_llm/contract {} grammar: {valid}/{} strictly valid JSON ({calls} tool calls)",
                    if grammar { "with" } else { "without" },
                    prompts()
                );
            }
        }
    }
    // A chat's second turn: with what the first turn left in the KV cache, and on a model that
    // kept nothing (loaded afresh), interleaved, five rounds; medians.
    let (mut warm, mut cold) = (Vec::new(), Vec::new());
    let mut reused = (0, 0);
    for round in 0..5 {
        let kept = self::models(&dir, all);
        turn(&kept, &prompt(round)).await;
        let (first, cached, total) = turn(&kept, &prompt(round + 1)).await;
        warm.push(first);
        reused = (cached, total);
        let fresh = self::models(&dir, all);
        let (first, cached, _) = turn(&fresh, &prompt(round + 1)).await;
        assert_eq!(cached, 0, "a fresh model kept nothing");
        cold.push(first);
    }
    warm.sort();
    cold.sort();
    let (warm, cold) = (warm[2], cold[2]);
    println!(
        "local_llm/second turn: first token {:.0} ms with the first turn's cache ({} of {} prompt tokens reused), {:.0} ms without: {:.1}x",
        warm.as_secs_f64() * 1e3,
        reused.0,
        reused.1,
        cold.as_secs_f64() * 1e3,
        cold.as_secs_f64() / warm.as_secs_f64().max(1e-9)
    );
    one.unload_all();
    println!("local_llm/unloaded: RSS {:.1} MiB", mib(resident_memory()));
}
