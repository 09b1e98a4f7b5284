//! `WS /v1/chats/{chatId}/ws` over a real socket: a client that stops reading is told to resync
//! and closed while publishers go on, and replay→live has no gap and no duplicate while events
//! are being written.

use std::time::{Duration, Instant};

use serde_json::json;
use souz_protocol::chat::ChatEventBody;
use souz_protocol::chat::events::MessageDeltaPayload;

use super::*;
use crate::chat::events::NewChatEvent;
use crate::store::StoreError;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn chat(f: &Fixture) -> String {
    let request = Request::post("/v1/chats")
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let (status, body) = f.send(request).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["chat"]["id"].as_str().unwrap().to_owned()
}

async fn follow(f: &Fixture, served: &Served, chat: &str, after: i64) -> Socket {
    follow_at(served.address, &f.token, chat, after).await
}

async fn follow_at(address: std::net::SocketAddr, token: &str, chat: &str, after: i64) -> Socket {
    let mut request = format!("ws://{address}/v1/chats/{chat}/ws?afterSeq={after}")
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// A live-only delta.
fn live_delta(attempt: u64, delta: String) -> ChatEventBody {
    ChatEventBody::MessageDelta(MessageDeltaPayload {
        message_id: "message".into(),
        execution_id: "execution".into(),
        attempt,
        delta,
    })
}

/// Stores one event in `chat` (and announces it).
pub(super) async fn store_event(f: &Fixture, chat: &str, n: usize) {
    let event = NewChatEvent {
        chat_id: chat.to_owned(),
        execution_id: None,
        // A kind the protocol does not know: stored, replayed and sent as it is.
        body: ChatEventBody::Other {
            kind: "test.tick".into(),
            payload: json!({"n": n}),
        },
    };
    f.runtime
        .handle()
        .chats()
        .events()
        .publish_with(move |_| Ok::<_, StoreError>(((), vec![event])))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_falls_behind_is_told_to_resync_and_closed() {
    let f = Fixture::new().await;
    let chat = chat(&f).await;
    store_event(&f, &chat, 1).await;
    let served = serve(&f).await;
    let mut socket = follow(&f, &served, &chat, 0).await;
    assert_eq!(next_json(&mut socket).await["seq"], 1);
    assert_eq!(
        next_json(&mut socket).await,
        json!({"kind": "live", "lastSeq": 1})
    );

    // The client stops reading. Far more is announced than the follower's buffer (1024
    // events) and the socket's buffers hold; the publisher never waits for the reader.
    let events = f.runtime.handle().chats().events().clone();
    let delta = "x".repeat(64 * 1024);
    let started = Instant::now();
    for attempt in 0..2500 {
        events.publish_live(&chat, None, live_delta(attempt, delta.clone()));
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "publishing waited for a reader: {:?}",
        started.elapsed()
    );
    store_event(&f, &chat, 2).await;

    // Reading again: what the socket held, then the resync and close code 4000.
    let mut delivered = 0;
    let resync = loop {
        let frame = next_json(&mut socket).await;
        match frame["kind"].as_str() {
            Some("event") => {
                assert_eq!(frame["type"], "message.delta");
                assert_eq!(
                    frame["payload"]["attempt"], delivered,
                    "in order, none skipped"
                );
                delivered += 1;
            }
            _ => break frame,
        }
    };
    assert!(delivered < 2500, "the follower must have fallen behind");
    assert_eq!(resync, json!({"kind": "resync", "lastSeq": 1}));
    assert_eq!(next_json(&mut socket).await, json!({"closed": 4000}));

    // Reconnecting from lastSeq catches up on what was stored meanwhile.
    let mut again = follow(&f, &served, &chat, 1).await;
    let frame = next_json(&mut again).await;
    assert_eq!(
        (frame["seq"].clone(), frame["payload"]["n"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(next_json(&mut again).await["kind"], "live");
    let _ = served.stop.send(());
    let _ = served.server.await;
}

/// Follows `chat` from `after` until event `last` arrived, as a client does: when told to
/// resync (it fell behind, say on a loaded machine), it follows again from the last event it
/// has. Returns the sequence numbers in arrival order, and the `live` frames seen and the
/// connections made.
async fn read_until(
    address: std::net::SocketAddr,
    token: String,
    chat: String,
    after: i64,
    last: i64,
) -> (Vec<i64>, usize, usize) {
    let mut seqs: Vec<i64> = Vec::new();
    let (mut live, mut connections) = (0, 1);
    let mut socket = follow_at(address, &token, &chat, after).await;
    while seqs.last() != Some(&last) {
        let frame = next_json(&mut socket).await;
        match frame["kind"].as_str() {
            Some("live") => live += 1,
            Some("event") => {
                if let Some(seq) = frame["seq"].as_i64() {
                    seqs.push(seq);
                } else {
                    assert_eq!(frame["type"], "message.delta", "only deltas lack a seq");
                }
            }
            Some("resync") => {
                let from = seqs.last().copied().unwrap_or(after);
                socket = follow_at(address, &token, &chat, from).await;
                connections += 1;
            }
            _ => panic!("unexpected frame {frame}"),
        }
    }
    (seqs, live, connections)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_then_live_has_no_gap_and_no_duplicate_while_events_are_written() {
    const TOTAL: usize = 300;
    let f = Arc::new(Fixture::new().await);
    let chat = chat(&f).await;
    let served = serve(&f).await;
    let writer = {
        let (f, chat) = (Arc::clone(&f), chat.clone());
        crate::tasks::spawn_in_test(async move {
            for n in 1..=TOTAL {
                store_event(&f, &chat, n).await;
                if n % 7 == 0 {
                    f.runtime.handle().chats().events().publish_live(
                        &chat,
                        None,
                        live_delta(0, n.to_string()),
                    );
                }
                if n % 25 == 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        })
    };
    // Followers join at different moments and from different points, while the writer runs.
    let mut readers = Vec::new();
    for (after, pause) in [(0, 0), (0, 10), (40, 15), (5, 20), (200, 5), (0, 30)] {
        tokio::time::sleep(Duration::from_millis(pause)).await;
        let reader = read_until(
            served.address,
            f.token.clone(),
            chat.clone(),
            after,
            TOTAL as i64,
        );
        readers.push((after, crate::tasks::spawn_in_test(reader)));
    }
    writer.await.unwrap();
    for (after, reader) in readers {
        let (seqs, live, connections) = reader.await.unwrap();
        let expected: Vec<i64> = ((after + 1)..=TOTAL as i64).collect();
        assert_eq!(
            seqs, expected,
            "follower from {after}: a gap or a duplicate"
        );
        // At most one live marker per connection (the last one may end inside its replay).
        assert!(
            (1..=connections).contains(&live),
            "{live} live markers over {connections} connections, from {after}"
        );
    }
    let _ = served.stop.send(());
    let _ = served.server.await;
}
