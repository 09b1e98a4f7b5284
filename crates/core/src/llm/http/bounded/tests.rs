//! The bounds against real local servers (axum over loopback, the real `reqwest` client, the
//! real SSE parser and provider decoders): an endless line, an endless stream of tiny events,
//! an oversized JSON answer (announced or not), and deeply nested JSON, each ending the call
//! with a typed error while the process's peak memory stays bounded.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::llm::embeddings::{EmbeddingClient, OpenAiEmbeddings};
use crate::llm::http::decode_sse_within;
use crate::llm::keys::ApiKey;
use crate::llm::openai::{ChatCompletionsDecoder, OpenAiClient, OpenAiEndpoint};
use crate::llm::tests::{drain, http, request};
use crate::llm::{LlmClient, StreamEvent};

/// Peak resident memory a test may reach (the process starts at a few tens of MB; the bounds
/// keep at most tens of MB more).
const PEAK_LIMIT_KIB: u64 = 256 * 1024;
/// What the hostile servers send at most, so that a client without bounds fails the test by
/// time or memory instead of taking the machine down.
const HOSTILE_BYTES: usize = 512 << 20;

/// The peak resident memory so far, in KiB (0 where `/proc` does not say).
fn peak_memory_kib() -> u64 {
    crate::testing::peak_memory_kib().unwrap_or(0)
}

/// A body that starts with `head`, then repeats `unit` until [`HOSTILE_BYTES`].
fn endless(head: &'static [u8], unit: &'static [u8]) -> Body {
    let repeated = bytes::Bytes::from(unit.repeat((64 << 10) / unit.len()));
    let chunks = HOSTILE_BYTES / repeated.len();
    let stream = futures::stream::once(async move { bytes::Bytes::from_static(head) })
        .chain(futures::stream::iter(std::iter::repeat_n(repeated, chunks)))
        .map(Ok::<_, std::io::Error>);
    Body::from_stream(stream)
}

/// Serves every request with what `answer` builds; returns the base URL.
async fn serve(answer: fn() -> Response) -> String {
    let router = Router::new().fallback(move || async move { answer() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    crate::tasks::spawn_in_test(async move { axum::serve(listener, router).await });
    format!("http://{address}/v1")
}

fn event_stream(body: Body) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap()
}

fn chat_client(base_url: String) -> OpenAiClient {
    OpenAiClient::new(
        http(),
        OpenAiEndpoint::official(base_url),
        Some(ApiKey::new("sk-test-1234567890abcd")),
        1024,
    )
}

fn embeddings_client(base_url: String) -> OpenAiEmbeddings {
    OpenAiEmbeddings::new(
        http(),
        ProviderId::OpenAi,
        base_url,
        Some(ApiKey::new("sk-embeddings-0000")),
    )
}

fn the_error(events: Vec<Result<StreamEvent, LlmError>>) -> LlmError {
    match events.into_iter().last() {
        Some(Err(error)) => error,
        other => panic!("the stream must end with an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_line_that_never_ends_ends_the_stream_at_the_event_limit() {
    let base_url = serve(|| event_stream(endless(b"data: {\"x\":\"", b"a"))).await;
    let stream = chat_client(base_url).stream(request(), CancellationToken::new());
    let error = the_error(drain(stream).await);
    assert_eq!(
        error,
        LlmError::TooLarge {
            provider: ProviderId::OpenAi,
            part: AnswerPart::Event,
            limit: EVENT_LIMIT,
        }
    );
    assert!(error.to_string().contains("single event of the stream"));
    let peak = peak_memory_kib();
    assert!(peak < PEAK_LIMIT_KIB, "peak memory {peak} KiB");
}

#[tokio::test]
async fn an_endless_stream_of_tiny_events_ends_at_the_stream_limit() {
    let base_url = serve(|| event_stream(endless(b"", b"data: {\"choices\":[]}\n\n"))).await;
    let response = reqwest::get(format!("{base_url}/chat/completions"))
        .await
        .unwrap();
    let stream_limit = 1 << 20;
    let stream = decode_sse_within(
        ProviderId::OpenAi,
        BoundedLines::new(response.bytes_stream().boxed(), EVENT_LIMIT, stream_limit),
        ChatCompletionsDecoder::new(ProviderId::OpenAi),
        http().settings(),
        CancellationToken::new(),
    );
    let error = the_error(drain(stream).await);
    assert_eq!(
        error,
        LlmError::TooLarge {
            provider: ProviderId::OpenAi,
            part: AnswerPart::Stream,
            limit: stream_limit,
        }
    );
}

#[tokio::test]
async fn an_oversized_json_answer_is_refused_while_it_is_read() {
    let base_url = serve(|| {
        Response::builder()
            .header("content-type", "application/json")
            .body(endless(b"{\"data\":[{\"index\":0,\"embedding\":[", b"0.1,"))
            .unwrap()
    })
    .await;
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        embeddings_client(base_url).embed(
            "m".to_owned(),
            vec!["hello".to_owned()],
            CancellationToken::new(),
        ),
    )
    .await
    .expect("the call must end");
    assert_eq!(
        outcome,
        Err(LlmError::TooLarge {
            provider: ProviderId::OpenAi,
            part: AnswerPart::Body,
            limit: BODY_LIMIT,
        })
    );
    let peak = peak_memory_kib();
    assert!(peak < PEAK_LIMIT_KIB, "peak memory {peak} KiB");
}

#[tokio::test]
async fn an_announced_oversized_answer_is_refused_before_it_is_read() {
    let base_url = serve(|| {
        Response::builder()
            .header("content-type", "application/json")
            .header("content-length", (BODY_LIMIT + 1).to_string())
            // The body never comes: only the announcement is needed to refuse it.
            .body(Body::from_stream(futures::stream::pending::<
                Result<bytes::Bytes, std::io::Error>,
            >()))
            .unwrap()
    })
    .await;
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        embeddings_client(base_url).embed("m".to_owned(), vec!["hello".to_owned()], {
            CancellationToken::new()
        }),
    )
    .await
    .expect("the call must not wait for the body");
    assert!(
        matches!(
            outcome,
            Err(LlmError::TooLarge {
                part: AnswerPart::Body,
                ..
            })
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn deeply_nested_answers_are_errors_not_crashes() {
    // serde_json's recursion limit (128) is on: no crate in the daemon's build turns on its
    // `unbounded_depth` feature (cargo_metadata does, for build-time tools only).
    let nested = "[".repeat(200_000);
    let error = serde_json::from_str::<serde_json::Value>(&nested).unwrap_err();
    assert!(error.to_string().contains("recursion limit"), "{error}");

    let base_url = serve(|| {
        let nested = "[".repeat(200_000);
        let body = format!("{{\"data\":[{{\"index\":0,\"embedding\":{nested}");
        Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    })
    .await;
    let outcome = embeddings_client(base_url)
        .embed(
            "m".to_owned(),
            vec!["hello".to_owned()],
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(outcome, Err(LlmError::Malformed { .. })),
        "{outcome:?}"
    );

    let base_url = serve(|| {
        let nested = "[".repeat(200_000);
        event_stream(Body::from(format!("data: {nested}\n\n")))
    })
    .await;
    let stream = chat_client(base_url).stream(request(), CancellationToken::new());
    let error = the_error(drain(stream).await);
    assert!(matches!(error, LlmError::Malformed { .. }), "{error:?}");
}

/// The same events come out however the bytes are cut, and lines are handed on whole.
#[test]
fn lines_are_handed_on_whole_however_the_bytes_are_cut() {
    let text = b"data: one\r\n\r\ndata: two\rdata: more\r\rdata: three\n\n: note\n\ndata: four";
    for cut in 1..text.len() {
        let mut lines = Lines::new(64, 1 << 20);
        let mut out = Vec::new();
        for piece in text.chunks(cut) {
            if let Some(whole) = lines.take(&bytes::Bytes::copy_from_slice(piece)).unwrap() {
                let last = *whole.last().unwrap();
                assert!(last == b'\n' || last == b'\r', "cut {cut}: {whole:?}");
                out.extend_from_slice(&whole);
            }
        }
        out.extend_from_slice(&lines.partial);
        assert_eq!(out, text, "cut {cut}");
    }
}

#[test]
fn an_event_may_reach_its_limit_but_not_pass_it() {
    // Two lines of one event: 10 + 10 bytes without their line ends.
    let event = bytes::Bytes::from_static(b"data: 1234\ndata: 5678\n\n");
    let mut exact = Lines::new(20, 1 << 20);
    assert!(exact.take(&event).is_ok());
    assert!(
        exact.take(&event).is_ok(),
        "a blank line starts a new event"
    );
    let mut short = Lines::new(19, 1 << 20);
    assert!(matches!(
        short.take(&event),
        Err(BoundedReadError::TooLarge {
            part: AnswerPart::Event,
            limit: 19
        })
    ));
}
