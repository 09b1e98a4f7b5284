//! `souz-client` against the real daemon: the typed calls of the CLI, the app and the bridge
//! read and write what the gateway serves, errors come back with the daemon's code, and the
//! runtime event follower sees what happens live and reconnects when the daemon goes away.

use std::ops::ControlFlow;
use std::time::Duration;

use souz_client::{EventStream, Reconnect, StreamItem};
use souz_e2e::Daemon;
use souz_protocol::{DecisionRequest, ErrorCode, RuntimeEvent, Verdict};

#[tokio::test]
async fn typed_calls_and_error_codes_against_the_daemon() {
    let daemon = Daemon::start();
    let client = daemon.client().await;
    assert_eq!(client.base(), format!("http://{}", daemon.address));
    assert_eq!(client.health().await.unwrap().status, "ok");
    assert!(!client.pause_state().await.unwrap().paused);
    assert!(client.set_paused(true, "cli").await.unwrap().paused);
    assert!(client.pause_state().await.unwrap().paused);
    assert!(!client.set_paused(false, "cli").await.unwrap().paused);
    assert!(
        client
            .pending_approvals(500)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(client.grants().await.unwrap().items.is_empty());
    assert!(client.questions().await.unwrap().items.is_empty());
    assert!(!client.tools().await.unwrap().items.is_empty());

    let created = client
        .create_client("e2e-client", souz_protocol::ClientScope::Mcp)
        .await
        .unwrap();
    let listed = client.clients().await.unwrap();
    assert!(listed.items.iter().any(|item| item.id == created.id));
    client.revoke_client(&created.id).await.unwrap();

    let request = DecisionRequest::once(Verdict::Deny, "cli");
    let error = client
        .decide("no-such-approval", &request)
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::NotFound), "{error}");
}

#[tokio::test]
async fn the_runtime_follower_sees_events_live_and_reconnects_after_the_daemon_stops() {
    let daemon = Daemon::start();
    let client = daemon.client().await;
    let (items, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let follower = {
        let client = client.clone();
        let reconnect = Reconnect {
            first: Duration::from_millis(10),
            max: Duration::from_millis(50),
        };
        tokio::spawn(async move {
            client
                .follow(EventStream::Runtime, reconnect, |item| {
                    match items.send(item) {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(_) => ControlFlow::Break(()),
                    }
                })
                .await;
        })
    };
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(20), seen.recv())
            .await
            .expect("an item within 20 s")
            .expect("the follower runs")
    };
    assert!(matches!(next().await, StreamItem::Live));
    client.set_paused(true, "cli").await.unwrap();
    loop {
        if let StreamItem::Runtime(envelope) = next().await
            && let RuntimeEvent::DaemonPaused { via } = &envelope.event
        {
            assert_eq!(via, "cli");
            break;
        }
    }
    let stopped = daemon.stop("TERM");
    assert!(stopped.status.success(), "{}", stopped.stderr);
    loop {
        if let StreamItem::Disconnected(_) = next().await {
            break;
        }
    }
    // Nothing listens any more: the follower keeps trying, reporting each failed attempt.
    assert!(matches!(next().await, StreamItem::Disconnected(_)));
    follower.abort();
}
