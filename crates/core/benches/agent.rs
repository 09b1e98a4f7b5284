//! What the agent runtime adds to a streamed turn, against the fake OpenAI server on loopback,
//! through the real runtime (`LlmService`, gate, SQLite sessions) and the skills agent.
//!
//! - `agent/first_delta_after_first_byte`: from the moment the fake provider hands its first
//!   SSE frame to the connection to the moment the turn's sink receives the first text delta.
//!   `agent/client_first_delta_after_first_byte` is the same interval for the bare client
//!   request, measured in the same run: the difference is the agent's share. Here the fake provider answers at once, so the first byte arrives
//!   while the turn still writes its first steps to SQLite (on the blocking pool).
//! - `agent/first_delta_after_first_byte_5ms_think`: the same with the provider "thinking"
//!   5 ms before its first frame, as every real provider does (for far longer): the step
//!   writes are done by then, and what remains is the stream path itself.
//! - `agent/short_turn` vs `agent/short_request`: a whole two-token turn against the bare
//!   client request for the same answer; the difference is the turn's fixed cost (graph, input,
//!   inventory, context, session rows in SQLite, the turn's records).
//! - `stream_1000_tokens/agent_turn` vs `stream_1000_tokens/llm_client`: a 1000-token answer
//!   through a whole turn and through the bare client (fixed costs included).
//! - `stream_1000_tokens/agent_deltas` vs `stream_1000_tokens/client_deltas`: only the time
//!   from the first to the last text delta of the same answer. Over loopback HTTP these race
//!   the fake server for the same two cores, so they are noisy; the next group is exact.
//! - `per_token/*`: the same turn against the in-process scripted model (no network, no
//!   server), with a 1000-token and a 1-token answer, against draining the same scripted
//!   streams directly. The agent's cost per token is
//!   ((turn_1000 - turn_1) - (drain_1000 - drain_1)) / 999.
//!
//! Run with `scripts/bench.sh agent`.

#![allow(clippy::expect_used, clippy::panic)] // a benchmark may stop loudly

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use souz_core::agent::{
    AgentKind, AgentParts, Agents, FixedModel, NoSink, TurnEvent, TurnRequest, TurnStatus,
};
use souz_core::config::{Config, SouzPaths};
use souz_core::llm::fake::FakeLlm;
use souz_core::llm::{ChatRequest, Message, StreamEvent};
use souz_core::llm::{FinishReason, LlmClient, LlmError};
use souz_core::{Runtime, RuntimeHandle};
use souz_testkit::{FakeServer, Reply, openai};
use tokio_util::sync::CancellationToken;

const TOKENS: usize = 1000;

/// "Hello there" after the provider thought for `think` before its first frame.
fn thinking_reply(think: Duration) -> Reply {
    Reply::sse()
        .delay(think)
        // The first frame carries text: a second small frame right behind it can sit ~40 ms in
        // the kernel (Nagle's algorithm against delayed ACKs on loopback), which would measure
        // TCP, not Souz.
        .data(openai::chunk(
            serde_json::json!({"role": "assistant", "content": "Hello"}),
            None,
        ))
        .delay(Duration::ZERO)
        .data(openai::chunk(
            serde_json::json!({"content": " there"}),
            None,
        ))
        .data(openai::chunk(serde_json::json!({}), Some("stop")))
        .data(openai::usage_chunk(10, 2, 0))
        .data("[DONE]")
        .end()
}

/// Mean time from the server's first byte to the first delta at the turn's sink.
async fn first_delta(server: &FakeServer, bench: &Bench, iterations: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        server.clear_records();
        let first_delta = bench.turn().await.expect("a delta");
        let first_byte = server.first_byte_times()[0];
        total += first_delta.duration_since(first_byte);
    }
    total
}

struct Bench {
    _dir: tempfile::TempDir,
    runtime: Runtime,
    handle: RuntimeHandle,
    chats: AtomicU64,
}

impl Bench {
    async fn start(server: &FakeServer) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let paths = SouzPaths::new(dir.path().join(".souz")).with_user_home(dir.path());
        let mut config = Config::defaults(paths);
        config.llm.openai_base_url = format!("{}/v1", server.url());
        let environment: HashMap<String, String> = HashMap::from([(
            "OPENAI_API_KEY".to_owned(),
            "sk-bench-000000000000".to_owned(),
        )]);
        let runtime = Runtime::start_with_environment(
            config,
            Arc::new(move |name: &str| environment.get(name).cloned()),
        )
        .await
        .expect("runtime");
        let handle = runtime.handle();
        Self {
            _dir: dir,
            runtime,
            handle,
            chats: AtomicU64::new(0),
        }
    }

    /// Runs one skills turn in a fresh chat; returns when the first delta arrived.
    async fn turn(&self) -> Option<Instant> {
        self.turn_deltas().await.map(|(first, _)| first)
    }

    /// Runs one skills turn in a fresh chat; returns when the first and the last delta arrived.
    async fn turn_deltas(&self) -> Option<(Instant, Instant)> {
        let seen = Arc::new(Mutex::new(None::<(Instant, Instant)>));
        let record = Arc::clone(&seen);
        let sink = move |event: TurnEvent| {
            if let TurnEvent::TextDelta { .. } = event {
                let now = Instant::now();
                let mut seen = record.lock().expect("lock");
                let first = seen.map_or(now, |(first, _)| first);
                *seen = Some((first, now));
            }
        };
        let chat = self.chats.fetch_add(1, Ordering::Relaxed);
        let request = TurnRequest {
            agent: Some(AgentKind::Skills),
            ..TurnRequest::new(format!("bench-{chat}"), "hi")
        };
        let outcome = self
            .handle
            .agents()
            .run_turn(request, Arc::new(sink), CancellationToken::new())
            .await
            .expect("turn");
        assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
        *seen.lock().expect("lock")
    }
}

/// Mean time from the server's first byte to the first delta of the bare client.
async fn client_first_delta(
    server: &FakeServer,
    handle: &RuntimeHandle,
    iterations: u64,
) -> Duration {
    let (_, client) = handle
        .llm()
        .chat_client("openai/gpt-5-mini")
        .await
        .expect("client");
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        server.clear_records();
        let request = ChatRequest::new("gpt-5-mini", vec![Message::user("hi")]);
        let mut stream = client.stream(request, CancellationToken::new());
        loop {
            match stream.next().await {
                Some(Ok(StreamEvent::TextDelta(_))) => break,
                Some(Ok(_)) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        let seen = Instant::now();
        total += seen.duration_since(server.first_byte_times()[0]);
        while stream.next().await.is_some() {}
    }
    total
}

/// A scripted answer of `tokens` text deltas.
fn scripted(tokens: usize) -> Vec<Result<StreamEvent, LlmError>> {
    let mut events: Vec<Result<StreamEvent, LlmError>> = (0..tokens)
        .map(|index| Ok(StreamEvent::TextDelta(format!("tok{index} "))))
        .collect();
    events.push(Ok(StreamEvent::Finish(FinishReason::Stop)));
    events
}

/// Total time of `iterations` skills turns answered by the scripted model with `tokens` deltas.
async fn fake_turns(agents: &Agents, fake: &FakeLlm, tokens: usize, iterations: u64) -> Duration {
    let script = scripted(tokens);
    let mut total = Duration::ZERO;
    for iteration in 0..iterations {
        fake.push_events(script.clone());
        let request = TurnRequest {
            agent: Some(AgentKind::Skills),
            history: Some(Vec::new()),
            ..TurnRequest::new(format!("fake-{tokens}-{iteration}"), "hi")
        };
        let started = Instant::now();
        let outcome = agents
            .run_turn(request, Arc::new(NoSink), CancellationToken::new())
            .await
            .expect("turn");
        total += started.elapsed();
        assert_eq!(outcome.status, TurnStatus::Completed);
    }
    total
}

/// Total time of draining `iterations` scripted answers of `tokens` deltas directly.
async fn fake_drains(fake: &FakeLlm, tokens: usize, iterations: u64) -> Duration {
    let script = scripted(tokens);
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        fake.push_events(script.clone());
        let request = ChatRequest::new("fake", vec![Message::user("hi")]);
        let started = Instant::now();
        let mut stream = fake.stream(request, CancellationToken::new());
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            if let StreamEvent::TextDelta(delta) = event.expect("event") {
                text.push_str(&delta);
            }
        }
        total += started.elapsed();
        assert!(!text.is_empty());
    }
    total
}

/// Time from the first to the last delta of the bare client's answer, and the delta count.
async fn client_deltas(handle: &RuntimeHandle) -> (Duration, usize) {
    let (_, client) = handle
        .llm()
        .chat_client("openai/gpt-5-mini")
        .await
        .expect("client");
    let request = ChatRequest::new("gpt-5-mini", vec![Message::user("hi")]);
    let mut stream = client.stream(request, CancellationToken::new());
    let (mut first, mut last, mut deltas) = (None, None, 0);
    while let Some(event) = stream.next().await {
        if let StreamEvent::TextDelta(_) = event.expect("event") {
            let now = Instant::now();
            first.get_or_insert(now);
            last = Some(now);
            deltas += 1;
        }
    }
    let span = match (first, last) {
        (Some(first), Some(last)) => last.duration_since(first),
        _ => Duration::ZERO,
    };
    (span, deltas)
}

/// The bare client request for the same answer (no agent).
async fn bare_request(handle: &RuntimeHandle) -> usize {
    let (_, client) = handle
        .llm()
        .chat_client("openai/gpt-5-mini")
        .await
        .expect("client");
    let request = ChatRequest::new("gpt-5-mini", vec![Message::user("hi")]);
    let mut stream = client.stream(request, CancellationToken::new());
    let mut deltas = 0;
    while let Some(event) = stream.next().await {
        if let StreamEvent::TextDelta(_) = event.expect("event") {
            deltas += 1;
        }
    }
    deltas
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Runtime::new().expect("tokio runtime");
    let short = tokio.block_on(FakeServer::start());
    short.set_fallback(openai::CHAT_PATH, openai::text(&["Hello", " there"]));
    let thinking = tokio.block_on(FakeServer::start());
    thinking.set_fallback(openai::CHAT_PATH, thinking_reply(Duration::from_millis(5)));
    let long = tokio.block_on(FakeServer::start());
    let pieces: Vec<String> = (0..TOKENS).map(|index| format!("tok{index} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    long.set_fallback(openai::CHAT_PATH, openai::text(&pieces));
    let short_bench = tokio.block_on(Bench::start(&short));
    let long_bench = tokio.block_on(Bench::start(&long));
    let thinking_bench = tokio.block_on(Bench::start(&thinking));

    let mut group = c.benchmark_group("agent");
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("first_delta_after_first_byte", |b| {
        b.iter_custom(|iterations| tokio.block_on(first_delta(&short, &short_bench, iterations)));
    });
    group.bench_function("client_first_delta_after_first_byte", |b| {
        b.iter_custom(|iterations| {
            tokio.block_on(client_first_delta(&short, &short_bench.handle, iterations))
        });
    });
    group.bench_function("first_delta_after_first_byte_5ms_think", |b| {
        b.iter_custom(|iterations| {
            tokio.block_on(first_delta(&thinking, &thinking_bench, iterations))
        });
    });
    group.bench_function("short_turn", |b| {
        b.to_async(&tokio).iter(|| async {
            short_bench.turn().await.expect("a delta");
        });
    });
    group.bench_function("short_request", |b| {
        b.to_async(&tokio).iter(|| async {
            assert_eq!(bare_request(&short_bench.handle).await, 2);
        });
    });
    group.finish();

    let mut group = c.benchmark_group("stream_1000_tokens");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.measurement_time(Duration::from_secs(20));
    group.sample_size(40);
    group.bench_function("agent_turn", |b| {
        b.to_async(&tokio).iter(|| async {
            long_bench.turn().await.expect("a delta");
        });
    });
    group.bench_function("llm_client", |b| {
        b.to_async(&tokio).iter(|| async {
            assert_eq!(bare_request(&long_bench.handle).await, TOKENS);
        });
    });
    group.bench_function("agent_deltas", |b| {
        b.iter_custom(|iterations| {
            tokio.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (first, last) = long_bench.turn_deltas().await.expect("deltas");
                    total += last.duration_since(first);
                }
                total
            })
        });
    });
    group.bench_function("client_deltas", |b| {
        b.iter_custom(|iterations| {
            tokio.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let (span, deltas) = client_deltas(&long_bench.handle).await;
                    assert_eq!(deltas, TOKENS);
                    total += span;
                }
                total
            })
        });
    });
    group.finish();

    // The in-process scripted model: the agent's own cost, without network or server.
    let fake = Arc::new(FakeLlm::new());
    let handle = &short_bench.handle;
    let agents = Agents::new(AgentParts::new(
        handle.gate().clone(),
        handle.store().clone(),
        Arc::new(FixedModel::new("fake", fake.clone())),
    ));
    let mut group = c.benchmark_group("per_token");
    group.measurement_time(Duration::from_secs(10));
    group.sample_size(40);
    for tokens in [1, TOKENS] {
        group.bench_function(format!("turn_{tokens}"), |b| {
            b.iter_custom(|iterations| {
                tokio.block_on(fake_turns(&agents, &fake, tokens, iterations))
            });
        });
        group.bench_function(format!("drain_{tokens}"), |b| {
            b.iter_custom(|iterations| tokio.block_on(fake_drains(&fake, tokens, iterations)));
        });
    }
    group.finish();
    drop(agents);

    tokio.block_on(async {
        short_bench
            .runtime
            .shutdown("bench")
            .await
            .expect("shutdown");
        long_bench
            .runtime
            .shutdown("bench")
            .await
            .expect("shutdown");
        thinking_bench
            .runtime
            .shutdown("bench")
            .await
            .expect("shutdown");
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
