//! What the agent runtime adds to a streamed turn, against the fake OpenAI server on loopback,
//! through the real runtime (`LlmService`, gate, SQLite sessions) and the skills agent. Turns
//! and bare requests run on a runtime worker (`tokio::spawn`), as the daemon runs them.
//!
//! - `first_delta/agent` vs `first_delta/client`: from the moment the fake provider hands its
//!   first SSE frame to the connection to the moment the turn's sink (or the bare client's
//!   stream) yields the first text delta; the provider answers at once, so the first byte
//!   arrives while the turn still records its first steps. `first_delta/*_5ms_think`: the same
//!   with the provider "thinking" 5 ms before its first frame, as real providers do (longer).
//! - `fixed/short_turn` vs `fixed/short_request`: a whole two-token turn against the bare
//!   request for the same answer; the difference is a turn's fixed cost (graph, nodes, the
//!   turn and step rows in SQLite, the stored history).
//! - `stream_1000_tokens/*`: a 1000-token answer through a whole turn and through the bare
//!   client, over loopback HTTP (the fake server shares the two cores, so this is noisy).
//! - `per_token/*`: the same turn against the in-process scripted model (no network), with a
//!   1000-token and a 1-token answer, against draining the same scripted streams directly. The
//!   agent's cost per token is ((turn_1000 - turn_1) - (drain_1000 - drain_1)) / 999.
//!
//! - `capture/*`: a whole turn asked to remember something ("Remember that I prefer green
//!   tea"), until its answer is complete, with memory off, with memory on but `capture` off
//!   (recall only), with memory on (the explicit intent is stored after the reply) and with
//!   the LLM writer on too (a second model request after the reply). Capture runs off the
//!   reply path, so `recall_only`, `memory_on` and `llm_writer` should be equal; `memory_off`
//!   against `recall_only` is the cost of recall. Turns are [`CAPTURE_SETTLE`] apart (not
//!   timed), as a person's messages are. `recall_only` holds the fact the others capture, so
//!   all recall the same memory.
//! - `capture_back_to_back/*`: the same turns with no pause, so each turn also shares the two
//!   cores and the database's write lock with the previous turn's capture (the worst case).
//!
//! Run with `scripts/bench.sh agent`.

#![allow(clippy::expect_used, clippy::panic)] // a benchmark may stop loudly

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use souz_core::RuntimeHandle;
use souz_core::agent::{
    AgentEvent, AgentKind, AgentParts, Agents, FixedModel, NoSink, TurnRequest, TurnStatus,
};
use souz_core::llm::fake::FakeLlm;
use souz_core::llm::{ChatRequest, FinishReason, LlmClient, LlmError, Message, StreamEvent};
use souz_core::testing::{RuntimeInternals, TestRuntime};
use souz_testkit::{FakeServer, Reply, openai};
use tokio_util::sync::CancellationToken;

const TOKENS: usize = 1000;

/// The untimed pause between two `capture/*` turns, long enough for the previous turn's
/// capture (a few milliseconds of work) to have finished.
const CAPTURE_SETTLE: Duration = Duration::from_millis(25);

/// "Hello there" after the provider thought for `think` before its first frame.
fn thinking_reply(think: Duration) -> Reply {
    Reply::sse()
        .delay(think)
        // The first frame carries text, so the first delta needs no second frame.
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

/// A daemon on a temporary home whose OpenAI endpoint is `server`.
struct Daemon {
    runtime: TestRuntime,
    handle: RuntimeHandle,
    chats: Arc<AtomicU64>,
}

impl Daemon {
    async fn start(server: &FakeServer) -> Self {
        Self::start_with(server, |_| {}).await
    }

    async fn start_with(
        server: &FakeServer,
        adjust: impl FnOnce(&mut souz_core::config::Config) + 'static,
    ) -> Self {
        let runtime = TestRuntime::builder()
            .with_llm(server)
            .with_config(adjust)
            .start()
            .await;
        let handle = runtime.handle();
        Self {
            runtime,
            handle,
            chats: Arc::new(AtomicU64::new(0)),
        }
    }

    /// One skills turn in a fresh chat, on a worker; when its first and last delta arrived.
    async fn turn(&self) -> (Instant, Instant) {
        self.turn_saying("hi").await
    }

    /// [`Self::turn`] with `input`.
    async fn turn_saying(&self, input: &'static str) -> (Instant, Instant) {
        let (handle, chats) = (self.handle.clone(), Arc::clone(&self.chats));
        on_worker(async move {
            let seen = Arc::new(Mutex::new(None::<(Instant, Instant)>));
            let record = Arc::clone(&seen);
            let sink = move |event: AgentEvent| {
                if let AgentEvent::TextDelta { .. } = event {
                    let now = Instant::now();
                    let mut seen = record.lock().expect("lock");
                    let first = seen.map_or(now, |(first, _)| first);
                    *seen = Some((first, now));
                }
            };
            let chat = chats.fetch_add(1, Ordering::Relaxed);
            let request = TurnRequest {
                agent: Some(AgentKind::Skills),
                ..TurnRequest::new(format!("bench-{chat}"), input)
            };
            let outcome = handle
                .agents()
                .run_turn(request, Arc::new(sink), CancellationToken::new())
                .await
                .expect("turn");
            assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
            let seen = *seen.lock().expect("lock");
            seen.expect("deltas")
        })
        .await
    }

    /// The bare client request for the same answer, on a worker; first and last delta and
    /// their count.
    async fn request(&self) -> (Instant, Instant, usize) {
        let handle = self.handle.clone();
        on_worker(async move {
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
            (first.expect("deltas"), last.expect("deltas"), deltas)
        })
        .await
    }
}

async fn on_worker<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    #[allow(
        clippy::disallowed_methods,
        reason = "the benchmark awaits the task at once (work on a runtime worker, as the daemon runs it)"
    )]
    tokio::spawn(work).await.expect("task")
}

/// Total time from the server's first byte to the first delta, over `iterations` turns (or
/// bare requests when `bare`).
async fn first_delta(
    server: &FakeServer,
    daemon: &Daemon,
    bare: bool,
    iterations: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        server.clear_records();
        let first = if bare {
            daemon.request().await.0
        } else {
            daemon.turn().await.0
        };
        total += first.duration_since(server.first_byte_times()[0]);
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
    let short_daemon = tokio.block_on(Daemon::start(&short));
    let thinking_daemon = tokio.block_on(Daemon::start(&thinking));
    let long_daemon = tokio.block_on(Daemon::start(&long));

    let mut group = c.benchmark_group("first_delta");
    group.measurement_time(Duration::from_secs(8));
    for (name, server, daemon, bare) in [
        ("agent", &short, &short_daemon, false),
        ("client", &short, &short_daemon, true),
        ("agent_5ms_think", &thinking, &thinking_daemon, false),
        ("client_5ms_think", &thinking, &thinking_daemon, true),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                tokio.block_on(first_delta(server, daemon, bare, iterations))
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("fixed");
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("short_turn", |b| {
        b.to_async(&tokio).iter(|| short_daemon.turn());
    });
    group.bench_function("short_request", |b| {
        b.to_async(&tokio).iter(|| async {
            assert_eq!(short_daemon.request().await.2, 2);
        });
    });
    group.finish();

    let mut group = c.benchmark_group("stream_1000_tokens");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.measurement_time(Duration::from_secs(10));
    group.sample_size(40);
    group.bench_function("agent_turn", |b| {
        b.to_async(&tokio).iter(|| long_daemon.turn());
    });
    group.bench_function("client_request", |b| {
        b.to_async(&tokio).iter(|| async {
            assert_eq!(long_daemon.request().await.2, TOKENS);
        });
    });
    group.finish();

    bench_capture(c, &tokio, &short);

    // The in-process scripted model: the agent's own cost, without network or server.
    let fake = Arc::new(FakeLlm::new());
    let agents = Agents::new(AgentParts::new(
        short_daemon.handle.gate().clone(),
        short_daemon.handle.store().clone(),
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
        for daemon in [short_daemon, thinking_daemon, long_daemon] {
            daemon.runtime.shutdown("bench").await.expect("shutdown");
        }
    });
}

/// `capture/*` (see the module documentation).
fn bench_capture(c: &mut Criterion, tokio: &tokio::runtime::Runtime, short: &FakeServer) {
    let memory_off = tokio.block_on(Daemon::start_with(short, |config| {
        config.memory.enabled = false;
    }));
    let recall_only = tokio.block_on(Daemon::start_with(short, |config| {
        config.memory.capture = false;
    }));
    // What `memory_on` holds after its first turn, so both recall the same fact.
    tokio
        .block_on(recall_only.handle.create_memory_fact(
            souz_protocol::memory::NewMemoryFact {
                body: "I prefer green tea".into(),
                ..Default::default()
            },
            souz_core::memory::Origin::MANUAL,
        ))
        .expect("seed fact");
    let memory_on = tokio.block_on(Daemon::start(short));
    let with_writer = tokio.block_on(Daemon::start_with(short, |config| {
        config.memory.writer = true;
    }));
    for (group_name, settle) in [
        ("capture", Some(CAPTURE_SETTLE)),
        ("capture_back_to_back", None),
    ] {
        let mut group = c.benchmark_group(group_name);
        // Criterion sizes the runs by the timed part; the pauses make them about 8 times longer.
        group
            .measurement_time(Duration::from_secs(2))
            .sample_size(20);
        for (name, daemon) in [
            ("memory_off", &memory_off),
            ("recall_only", &recall_only),
            ("memory_on", &memory_on),
            ("llm_writer", &with_writer),
        ] {
            group.bench_function(name, |b| {
                b.to_async(tokio).iter_custom(|turns| async move {
                    let mut answering = Duration::ZERO;
                    for _ in 0..turns {
                        let started = Instant::now();
                        daemon.turn_saying("Remember that I prefer green tea").await;
                        answering += started.elapsed();
                        if let Some(settle) = settle {
                            tokio::time::sleep(settle).await;
                        }
                    }
                    answering
                });
            });
        }
        group.finish();
    }

    tokio.block_on(async {
        for daemon in [memory_off, recall_only, memory_on, with_writer] {
            daemon.runtime.shutdown("bench").await.expect("shutdown");
        }
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
