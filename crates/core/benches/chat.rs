//! Chat event costs (custom harness; prints figures):
//! - replay of 100,000 stored events of one chat, end to end through the follower (time to the
//!   `Live` marker), against a bare SQL scan of the same rows as the peer;
//! - fan-out of `message.delta` to 100 WebSocket subscribers over loopback through the real
//!   gateway: added latency from publish to receipt, p50/p99 over all deliveries.
//!
//! Run: `cargo bench -p souz-core --features test-support --bench chat` (or `scripts/bench.sh chat`);
//! `-- replay` or `-- fan-out` runs one part (`scripts/bench.sh replay` is the first).

// A benchmark fails loudly on setup errors.
#![allow(
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::unwrap_used
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use souz_core::chat::{ChatUser, FollowItem};
use souz_core::gateway::Gateway;
use souz_core::runtime::RuntimeHandle;
use souz_core::testing::{RuntimeInternals, TestRuntime};
use souz_protocol::chat::events::MessageDeltaPayload;
use souz_protocol::chat::{ChatEventBody, CreateChat};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const EVENTS: usize = 100_000;
const SUBSCRIBERS: usize = 100;
const DELTAS: usize = 200;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let souz = TestRuntime::builder()
            .with_config(|config| {
                config.log.file = false;
                config.server.port = 0;
            })
            .start()
            .await;
        let handle = souz.handle();
        let user = ChatUser("local".into());
        let chat = handle
            .chats()
            .create_chat(&user, CreateChat::default())
            .await
            .unwrap()
            .0
            .chat
            .id;

        // `replay`, `fan-out` or nothing (both): the parts to run.
        let part = std::env::args()
            .skip(1)
            .find(|arg| !arg.starts_with('-'))
            .unwrap_or_default();
        if part.is_empty() || part == "replay" {
            replay(&handle, &chat).await;
        }
        if part.is_empty() || part == "fan-out" {
            fan_out(&handle, &user, souz.token()).await;
        }
        souz.shutdown("bench").await.unwrap();
    });
}

/// Replays 100k stored events of one chat through the follower, against a bare SQL scan.
async fn replay(handle: &RuntimeHandle, chat: &str) {
    let chat = chat.to_owned();
    // 100k stored events for one chat, inserted directly in one transaction.
    let fill_chat = chat.clone();
    handle
        .store()
        .write(move |tx| {
            let mut insert = tx.prepare("INSERT INTO chat_events (chat_id, seq, execution_id, type, payload, created_at) VALUES (?1, ?2, NULL, 'message.created', ?3, '2026-11-29T00:00:00.000Z')")?;
            for seq in 1..=EVENTS as i64 {
                let payload = format!(r#"{{"messageId":"m{seq}","seq":{seq},"role":"assistant","content":"event number {seq} with some text"}}"#);
                insert.execute(rusqlite::params![fill_chat, seq, payload])?;
            }
            Ok::<_, souz_core::store::StoreError>(())
        })
        .await
        .unwrap();

    let mut follower_times = Vec::new();
    let mut scan_times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let mut stream = Box::pin(handle.chats().events().follow(&chat, 0));
        let mut count = 0;
        loop {
            match stream.next().await.unwrap() {
                FollowItem::Event(_) => count += 1,
                FollowItem::Live { .. } => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(count, EVENTS);
        follower_times.push(started.elapsed());

        let scan_chat = chat.clone();
        let started = Instant::now();
        let rows = handle
            .store()
            .read(move |c| {
                let mut statement = c.prepare(
                    "SELECT seq, payload FROM chat_events WHERE chat_id = ?1 ORDER BY seq",
                )?;
                let rows = statement
                    .query_map([scan_chat], |row| {
                        Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                    })?
                    .count();
                Ok::<_, souz_core::store::StoreError>(rows)
            })
            .await
            .unwrap();
        assert_eq!(rows, EVENTS);
        scan_times.push(started.elapsed());
    }
    follower_times.sort();
    scan_times.sort();
    let follower = follower_times[2];
    let scan = scan_times[2];
    println!(
        "replay of {EVENTS} events through the follower: median {:.1} ms ({:.2} us/event); bare SQL scan of the same rows: {:.1} ms; ratio {:.1}x",
        follower.as_secs_f64() * 1e3,
        follower.as_secs_f64() * 1e6 / EVENTS as f64,
        scan.as_secs_f64() * 1e3,
        follower.as_secs_f64() / scan.as_secs_f64()
    );
}

/// Fans `message.delta` out to 100 WebSocket subscribers of a fresh chat.
async fn fan_out(handle: &RuntimeHandle, user: &ChatUser, token: &str) {
    // Fan-out: 100 WebSocket subscribers on a fresh chat.
    let chat = handle
        .chats()
        .create_chat(user, CreateChat::default())
        .await
        .unwrap()
        .0
        .chat
        .id;
    let gateway = Gateway::bind(&handle.config().server).await.unwrap();
    let address = gateway.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    #[allow(
        clippy::disallowed_methods,
        reason = "the benchmark's gateway, stopped by its oneshot and awaited by the benchmark"
    )]
    let server = tokio::spawn(gateway.serve(handle.clone(), async move {
        let _ = stopped.await;
        "bench".to_owned()
    }));
    let token = token.to_owned();
    let start = Arc::new(tokio::sync::Barrier::new(SUBSCRIBERS + 1));
    let mut clients = Vec::new();
    for _ in 0..SUBSCRIBERS {
        let mut request = format!("ws://{address}/v1/chats/{chat}/ws")
            .into_client_request()
            .unwrap();
        request.headers_mut().insert(
            "authorization",
            format!("Bearer {}", token.trim()).parse().unwrap(),
        );
        let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        let start = Arc::clone(&start);
        #[allow(
            clippy::disallowed_methods,
            reason = "the benchmark's client tasks, each awaited by the benchmark"
        )]
        clients.push(tokio::spawn(async move {
            // Wait for the replay marker, then collect deltas.
            loop {
                let frame = socket.next().await.unwrap().unwrap();
                if frame.to_text().unwrap().contains("\"live\"") {
                    break;
                }
            }
            start.wait().await;
            let mut latencies = Vec::with_capacity(DELTAS);
            while latencies.len() < DELTAS {
                let frame = socket.next().await.unwrap().unwrap();
                let text = frame.to_text().unwrap();
                let value: serde_json::Value = serde_json::from_str(text).unwrap();
                let sent: u64 = value["payload"]["delta"].as_str().unwrap().parse().unwrap();
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64;
                latencies.push(now.saturating_sub(sent));
            }
            let _ = socket.close(None).await;
            latencies
        }));
    }
    start.wait().await;
    for index in 0..DELTAS {
        let sent = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        // The delta's text carries when it was sent; the attempt numbers the deltas.
        let delta = MessageDeltaPayload {
            message_id: "message".into(),
            execution_id: "execution".into(),
            attempt: index as u64,
            delta: sent.to_string(),
        };
        handle
            .chats()
            .events()
            .publish_live(&chat, None, ChatEventBody::MessageDelta(delta));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut all: Vec<u64> = Vec::new();
    for client in clients {
        all.extend(client.await.unwrap());
    }
    all.sort_unstable();
    let percentile = |p: f64| all[((all.len() as f64 - 1.0) * p) as usize] as f64 / 1e3;
    println!(
        "message.delta fan-out to {SUBSCRIBERS} WebSocket subscribers ({} deliveries): p50 {:.0} us, p99 {:.0} us, max {:.0} us",
        all.len(),
        percentile(0.5),
        percentile(0.99),
        percentile(1.0)
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
