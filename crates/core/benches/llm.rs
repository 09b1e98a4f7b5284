//! What the LLM layer adds to a streamed turn, against the fake OpenAI server on loopback.
//!
//! - `first_delta_after_first_byte`: from the moment the fake provider hands its first SSE
//!   frame to the connection to the moment our stream yields the first text delta (HTTP read,
//!   SSE parsing, JSON decoding, event mapping).
//! - `stream_1000_tokens/souz`: a whole 1000-token answer through `OpenAiClient` (per-token
//!   cost = time / 1000, criterion reports it as throughput).
//! - `stream_1000_tokens/raw_bytes`: the same response read as raw bytes with the same
//!   `reqwest` client and no parsing: the floor the first number is compared against.
//!
//! Run with `scripts/bench.sh llm`.

#![allow(clippy::expect_used, clippy::panic)] // a benchmark may stop loudly

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use souz_core::llm::http::{HttpSettings, ProviderHttp};
use souz_core::llm::keys::ApiKey;
use souz_core::llm::openai::{OpenAiClient, OpenAiEndpoint};
use souz_core::llm::{ChatRequest, LlmClient, Message, StreamEvent};
use souz_testkit::{FakeServer, openai};
use tokio_util::sync::CancellationToken;

const TOKENS: usize = 1000;

fn client(server: &FakeServer) -> OpenAiClient {
    let http = ProviderHttp::with_client(reqwest::Client::new(), HttpSettings::default());
    OpenAiClient::new(
        http,
        OpenAiEndpoint::official(format!("{}/v1", server.url())),
        Some(ApiKey::new("sk-bench-000000000000")),
        1024,
    )
}

fn request() -> ChatRequest {
    ChatRequest::new("bench", vec![Message::user("hi")])
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let short = runtime.block_on(FakeServer::start());
    short.set_fallback(openai::CHAT_PATH, openai::text(&["Hello", " there"]));
    let long = runtime.block_on(FakeServer::start());
    let pieces: Vec<String> = (0..TOKENS).map(|index| format!("tok{index} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    long.set_fallback(openai::CHAT_PATH, openai::text(&pieces));

    let mut group = c.benchmark_group("llm");
    group.measurement_time(Duration::from_secs(8));
    let short_client = client(&short);
    group.bench_function("first_delta_after_first_byte", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    short.clear_records();
                    let mut stream = short_client.stream(request(), CancellationToken::new());
                    loop {
                        match stream.next().await {
                            Some(Ok(StreamEvent::TextDelta(_))) => break,
                            Some(Ok(_)) => {}
                            other => panic!("unexpected {other:?}"),
                        }
                    }
                    let seen = Instant::now();
                    let first_byte = short.first_byte_times()[0];
                    total += seen.duration_since(first_byte);
                    // Finish the stream so the next iteration starts clean.
                    while stream.next().await.is_some() {}
                }
                total
            })
        });
    });
    group.finish();

    let mut group = c.benchmark_group("stream_1000_tokens");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.measurement_time(Duration::from_secs(8));
    let long_client = client(&long);
    group.bench_function("souz", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut stream = long_client.stream(request(), CancellationToken::new());
            let mut deltas = 0;
            while let Some(event) = stream.next().await {
                if let StreamEvent::TextDelta(_) = event.expect("event") {
                    deltas += 1;
                }
            }
            assert_eq!(deltas, TOKENS);
        });
    });
    let raw = reqwest::Client::new();
    let url = format!("{}{}", long.url(), openai::CHAT_PATH);
    group.bench_function("raw_bytes", |b| {
        b.to_async(&runtime).iter(|| async {
            let response = raw.post(&url).body("{}").send().await.expect("response");
            let mut bytes = response.bytes_stream();
            let mut total = 0;
            while let Some(chunk) = bytes.next().await {
                total += chunk.expect("chunk").len();
            }
            assert!(total > TOKENS);
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
