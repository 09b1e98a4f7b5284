//! Shared fixtures for provider tests, and the behaviour every streaming provider must have
//! against a fake server speaking its wire format: retries on 429 (honouring `Retry-After`)
//! and 5xx, errors for malformed chunks and disconnects, and cancellation of a slow stream.

use std::time::Duration;

use futures::StreamExt;
use souz_testkit::{FakeServer, Reply, SseBuilder};
use tokio_util::sync::CancellationToken;

use super::http::{HttpSettings, ProviderHttp};
use super::*;

/// Fast settings: short backoff, short idle timeout.
pub(crate) fn http() -> ProviderHttp {
    ProviderHttp::with_client(
        reqwest::Client::new(),
        HttpSettings {
            request_timeout: Duration::from_secs(20),
            stream_idle_timeout: Duration::from_secs(3),
            max_retries: 2,
            backoff_base: Duration::from_millis(5),
            backoff_max: Duration::from_secs(2),
        },
    )
}

pub(crate) fn request() -> ChatRequest {
    ChatRequest::new(
        "test-model",
        vec![Message::system("Be brief."), Message::user("Hi")],
    )
}

/// Every event of a stream, failing the test if it does not end within 15 s.
pub(crate) async fn drain(stream: EventStream) -> Vec<Result<StreamEvent, LlmError>> {
    tokio::time::timeout(Duration::from_secs(15), stream.collect::<Vec<_>>())
        .await
        .expect("the stream must end, not hang")
}

pub(crate) fn text_of(events: &[Result<StreamEvent, LlmError>]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Ok(StreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The checks shared by every streaming provider. `partial` is a started answer (a text
/// delta `partial` already sent), `complete` a whole answer whose text is `Hello`, `error`
/// an error reply in the provider's shape.
#[allow(
    clippy::too_many_lines,
    clippy::too_many_arguments,
    reason = "the shared list of checks every streaming provider passes, one reply shape each"
)]
pub(crate) async fn common_stream_behaviour(
    server: &FakeServer,
    path: &str,
    client: &dyn LlmClient,
    partial: fn() -> SseBuilder,
    complete: fn() -> Reply,
    error: fn(u16) -> Reply,
) {
    // 429 with Retry-After, then success: retried, and the answer arrives.
    server.clear_records();
    server.push(path, error(429).header("retry-after", "0"));
    server.push(path, complete());
    let response = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.content, "Hello");
    assert_eq!(server.requests_to(path).len(), 2, "one retry after 429");

    // A Retry-After longer than the backoff cap: no retry, the wait is reported.
    server.clear_records();
    server.push(path, error(429).header("retry-after", "120"));
    let failure = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    match failure {
        LlmError::Status {
            status: 429,
            retry_after,
            ..
        } => {
            assert_eq!(retry_after, Some(Duration::from_secs(120)));
        }
        other => panic!("expected 429, got {other:?}"),
    }
    assert_eq!(server.requests_to(path).len(), 1);

    // 500 then success.
    server.clear_records();
    server.push(path, error(500));
    server.push(path, complete());
    let response = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.content, "Hello");
    assert_eq!(server.requests_to(path).len(), 2);

    // 503 every time: max_retries + 1 attempts, then the status.
    server.clear_records();
    for _ in 0..3 {
        server.push(path, error(503));
    }
    let failure = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, LlmError::Status { status: 503, .. }),
        "{failure:?}"
    );
    assert!(failure.is_transient());
    assert_eq!(server.requests_to(path).len(), 3);

    // 400 is not retried.
    server.clear_records();
    server.push(path, error(400));
    let failure = collect(client.stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert!(
        matches!(failure, LlmError::Status { status: 400, .. }),
        "{failure:?}"
    );
    assert_eq!(server.requests_to(path).len(), 1);

    // A malformed chunk is an error, and nothing follows it.
    server.push(path, partial().data("{\"choices\": [oops").end());
    let events = drain(client.stream(request(), CancellationToken::new())).await;
    assert_eq!(text_of(&events), "partial");
    assert!(
        matches!(events.last(), Some(Err(LlmError::Malformed { .. }))),
        "{events:?}"
    );
    assert_eq!(events.iter().filter(|event| event.is_err()).count(), 1);

    // A disconnect mid-stream is an error, not a silent end or a hang.
    server.push(path, partial().disconnect());
    let events = drain(client.stream(request(), CancellationToken::new())).await;
    assert_eq!(text_of(&events), "partial");
    let last = events.last().unwrap().as_ref().unwrap_err();
    assert!(
        matches!(
            last,
            LlmError::Interrupted { .. } | LlmError::Transport { .. }
        ),
        "{last:?}"
    );

    // A body that ends cleanly but early is interrupted too.
    server.push(path, partial().end());
    let events = drain(client.stream(request(), CancellationToken::new())).await;
    assert!(
        matches!(events.last(), Some(Err(LlmError::Interrupted { .. }))),
        "{events:?}"
    );

    // A slow stream, cancelled after its first delta: Cancelled at once, connection closed.
    let dropped_before = server.streams_dropped_early();
    server.push(
        path,
        partial().delay(Duration::from_secs(5)).data("{}").end(),
    );
    let cancel = CancellationToken::new();
    let mut stream = client.stream(request(), cancel.clone());
    let first = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(Ok(StreamEvent::TextDelta(text))) = stream.next().await {
                return text;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(first, "partial");
    let began = std::time::Instant::now();
    cancel.cancel();
    assert_eq!(stream.next().await, Some(Err(LlmError::Cancelled)));
    assert_eq!(stream.next().await, None);
    assert!(began.elapsed() < Duration::from_secs(1));
    drop(stream);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server.streams_dropped_early() == dropped_before && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        server.streams_dropped_early(),
        dropped_before + 1,
        "the request was aborted"
    );

    // A stream that goes silent hits the idle timeout.
    server.push(path, partial().hang());
    let began = std::time::Instant::now();
    let events = drain(client.stream(request(), CancellationToken::new())).await;
    assert!(
        matches!(events.last(), Some(Err(LlmError::Timeout { .. }))),
        "{events:?}"
    );
    assert!(began.elapsed() >= Duration::from_secs(3));
}

#[tokio::test]
async fn collect_requires_a_finish_event() {
    let stream: EventStream =
        futures::stream::iter([Ok(StreamEvent::TextDelta("x".into()))]).boxed();
    assert!(matches!(
        collect(stream).await,
        Err(LlmError::Interrupted { .. })
    ));
}

#[test]
fn messages_serialize_tagged_by_role() {
    let call = ToolCall {
        id: "c1".into(),
        name: "ReadFile".into(),
        arguments: "{\"path\":\"a\"}".into(),
    };
    let history = vec![
        Message::user("read a"),
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![call.clone()],
        },
        Message::tool_result(&call, "contents"),
    ];
    let json = serde_json::to_value(&history).unwrap();
    assert_eq!(
        json[0],
        serde_json::json!({"role": "user", "content": "read a"})
    );
    assert_eq!(json[1]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        json[2],
        serde_json::json!({"role": "tool", "tool_call_id": "c1", "name": "ReadFile", "content": "contents"})
    );
    let back: Vec<Message> = serde_json::from_value(json).unwrap();
    assert_eq!(back, history);
    assert_eq!(call.arguments_json().unwrap()["path"], "a");
    assert_eq!(history[2].role(), Role::Tool);
}

#[test]
fn transient_errors_are_the_retryable_ones() {
    let status = |status| LlmError::Status {
        provider: ProviderId::OpenAi,
        status,
        message: String::new(),
        retry_after: None,
    };
    assert!(status(429).is_transient() && status(502).is_transient());
    assert!(!status(401).is_transient());
    assert!(!LlmError::Cancelled.is_transient());
    let missing = LlmError::MissingKey {
        provider: ProviderId::Qwen,
    }
    .to_string();
    assert!(
        missing.contains("QWEN_KEY or DASHSCOPE_API_KEY"),
        "{missing}"
    );
}
