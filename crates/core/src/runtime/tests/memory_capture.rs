//! `[memory] capture` through the real runtime: on, a "remember that ..." turn stores the fact
//! after the reply; off, the same turn stores nothing while a fact added by hand is still
//! recalled into the next turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use souz_testkit::{FakeServer, openai};
use tokio_util::sync::CancellationToken;

use crate::agent::tests::Recorder;
use crate::agent::{TurnRequest, TurnStatus};
use crate::memory::facts::Filter;
use crate::testing::TestRuntime;

async fn runtime(server: &FakeServer, capture: bool) -> TestRuntime {
    TestRuntime::builder()
        .with_llm(server)
        .with_config(move |config| {
            config.agent.default_agent = "skills".into();
            config.memory.capture = capture;
        })
        .start()
        .await
}

async fn turn(runtime: &TestRuntime, chat: &str, text: &str) {
    let outcome = runtime
        .handle()
        .agents()
        .run_turn(
            TurnRequest::new(chat, text),
            Arc::new(Recorder::default()),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
}

async fn facts(runtime: &TestRuntime) -> Vec<String> {
    let filter = Filter {
        owner: "local".into(),
        limit: 10,
        ..Filter::default()
    };
    let listed = runtime.handle().memory().list(filter).await.unwrap();
    listed.into_iter().map(|fact| fact.body).collect()
}

#[tokio::test]
async fn with_capture_off_a_remembered_fact_is_not_stored_but_memory_is_still_recalled() {
    // Capture on: the fact arrives after the reply; how long that took bounds the wait below.
    let server = FakeServer::start().await;
    server.push(openai::CHAT_PATH, openai::text(&["Noted."]));
    let on = runtime(&server, true).await;
    let started = Instant::now();
    turn(&on, "chat-a", "Remember that I prefer green tea").await;
    while facts(&on).await.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never captured"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let captured_in = started.elapsed();

    let server = FakeServer::start().await;
    server.push(openai::CHAT_PATH, openai::text(&["Noted."]));
    let off = runtime(&server, false).await;
    let started = Instant::now();
    turn(&off, "chat-a", "Remember that I prefer green tea").await;
    tokio::time::sleep(
        (captured_in * 3).saturating_sub(started.elapsed()) + Duration::from_millis(200),
    )
    .await;
    assert!(facts(&off).await.is_empty(), "{:?}", facts(&off).await);

    // Added by hand, recalled into the next turn all the same.
    off.handle()
        .create_memory_fact(
            souz_protocol::memory::NewMemoryFact {
                title: Some("Tea".into()),
                body: "The person prefers oolong tea".into(),
                ..Default::default()
            },
            crate::runtime::facade::MemoryOrigin::MANUAL,
        )
        .await
        .unwrap();
    server.push(openai::CHAT_PATH, openai::text(&["Oolong."]));
    turn(&off, "chat-b", "Which tea should I buy?").await;
    let requests = server.requests_to(openai::CHAT_PATH);
    let sent = requests.last().unwrap().json().to_string();
    assert!(sent.contains("The person prefers oolong tea"), "{sent}");
}
