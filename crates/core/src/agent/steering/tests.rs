//! The mailbox state machine, with its races forced rather than hoped for: interleavings are
//! driven by polling futures by hand, and the submit-versus-seal linearization is checked on a
//! multi-threaded runtime thousands of times.

use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::oneshot;

use super::*;

#[test]
fn inputs_drain_in_order_as_one_text() {
    let mailbox = Mailbox::new();
    assert_eq!(mailbox.drain(), None);
    assert_eq!(mailbox.submit("only"), Ok(1));
    assert_eq!(
        mailbox.drain().as_deref(),
        Some("only"),
        "one input stays raw"
    );
    for text in ["first", "second\nline", "third"] {
        mailbox.submit(text).unwrap();
    }
    assert_eq!(mailbox.revision(), 4);
    assert_eq!(
        mailbox.drain().as_deref(),
        Some(
            "<additional_user_messages>\n<message index=\"1\">\nfirst\n</message>\n\
             <message index=\"2\">\nsecond\nline\n</message>\n<message index=\"3\">\nthird\n\
             </message>\n</additional_user_messages>"
        )
    );
    assert_eq!(mailbox.drain(), None, "a drain takes everything");
    assert!(mailbox.is_open(), "draining keeps the turn open");
}

#[test]
fn blank_input_is_refused_and_changes_nothing() {
    let mailbox = Mailbox::new();
    assert_eq!(mailbox.submit("  \n"), Err(SteerError::Empty));
    assert_eq!(mailbox.revision(), 0);
    assert_eq!(
        mailbox.next_step(),
        Ok(NextStep::Request { revision: 0 }),
        "nothing was queued"
    );
}

#[test]
fn next_step_drains_or_names_the_revision_the_request_sees() {
    let mailbox = Mailbox::new();
    mailbox.submit("a").unwrap();
    mailbox.submit("b").unwrap();
    let NextStep::Queued(text) = mailbox.next_step().unwrap() else {
        panic!("queued input must be drained first");
    };
    assert!(text.contains("a\n</message>") && text.contains("b\n</message>"));
    assert_eq!(
        mailbox.next_step().unwrap(),
        NextStep::Request { revision: 2 }
    );
}

#[tokio::test]
async fn an_empty_queue_seals_and_later_input_is_refused() {
    let mailbox = Arc::new(Mailbox::new());
    assert_eq!(mailbox.drain_or_seal().await, None);
    assert!(!mailbox.is_open());
    assert_eq!(mailbox.submit("too late"), Err(SteerError::Sealed));
    assert_eq!(mailbox.reserve().unwrap_err(), SteerError::Sealed);
    assert_eq!(mailbox.next_step(), Err(SteerError::Sealed));
    assert_eq!(mailbox.close().await, Vec::<String>::new());
    assert_eq!(mailbox.submit("later"), Err(SteerError::Closed));
}

#[tokio::test]
async fn queued_input_is_drained_instead_of_sealing() {
    let mailbox = Mailbox::new();
    mailbox.submit("wait, one more thing").unwrap();
    assert_eq!(
        mailbox.drain_or_seal().await.as_deref(),
        Some("wait, one more thing")
    );
    assert!(mailbox.is_open(), "a drain is not a seal");
    assert_eq!(mailbox.submit("still open"), Ok(2));
}

/// Submit and seal race on two threads: whichever wins, an accepted input is always the one the
/// seal drained, and a refused one was refused because the seal came first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_and_seal_are_linearizable() {
    let mut drained = 0;
    let mut refused = 0;
    for round in 0..3000 {
        let mailbox = Arc::new(Mailbox::new());
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let submitter = {
            let (mailbox, barrier) = (Arc::clone(&mailbox), Arc::clone(&barrier));
            tokio::task::spawn_blocking(move || {
                barrier.wait();
                mailbox.submit(format!("input {round}"))
            })
        };
        barrier.wait();
        let sealed = mailbox.drain_or_seal().await;
        let submitted = submitter.await.unwrap();
        match (submitted, sealed) {
            (Ok(1), Some(text)) => {
                assert_eq!(text, format!("input {round}"));
                drained += 1;
            }
            (Err(SteerError::Sealed), None) => refused += 1,
            other => panic!("round {round}: lost or duplicated input: {other:?}"),
        }
    }
    assert_eq!(drained + refused, 3000);
}

#[tokio::test]
async fn a_reservation_holds_the_seal_until_it_is_published() {
    let mailbox = Arc::new(Mailbox::new());
    let reservation = mailbox.reserve().unwrap();
    let seal = mailbox.drain_or_seal();
    tokio::pin!(seal);
    assert!(
        futures::poll!(&mut seal).is_pending(),
        "sealing must wait for the reserved input"
    );
    assert_eq!(reservation.publish("committed first".into()), 1);
    assert_eq!(seal.await.as_deref(), Some("committed first"));
    assert!(mailbox.is_open());
}

#[tokio::test]
async fn a_released_reservation_lets_the_seal_through() {
    let mailbox = Arc::new(Mailbox::new());
    let reservation = mailbox.reserve().unwrap();
    let seal = mailbox.drain_or_seal();
    tokio::pin!(seal);
    assert!(futures::poll!(&mut seal).is_pending());
    drop(reservation);
    assert_eq!(seal.await, None);
    assert_eq!(mailbox.submit("after"), Err(SteerError::Sealed));
    assert_eq!(mailbox.revision(), 0, "a released reservation adds nothing");
}

#[tokio::test]
async fn a_committed_input_is_published_even_when_its_caller_gives_up() {
    let mailbox = Arc::new(Mailbox::new());
    let (commit_done, commit_wait) = oneshot::channel::<()>();
    let caller = {
        let mailbox = Arc::clone(&mailbox);
        crate::tasks::spawn_in_test(async move {
            mailbox
                .submit_after("durable".into(), async move {
                    commit_wait.await.map_err(|_| "commit abandoned")
                })
                .await
        })
    };
    tokio::task::yield_now().await;
    caller.abort();
    assert!(caller.await.unwrap_err().is_cancelled());
    assert_eq!(
        mailbox.revision(),
        0,
        "nothing is published before the commit"
    );
    commit_done.send(()).unwrap();
    mailbox.input_arrived().await;
    assert_eq!(mailbox.next_step(), Ok(NextStep::Queued("durable".into())));
}

#[tokio::test]
async fn a_failed_commit_publishes_nothing_and_releases_the_slot() {
    let mailbox = Arc::new(Mailbox::new());
    let result = mailbox
        .submit_after("lost?".into(), async { Err::<(), _>("disk full") })
        .await;
    assert_eq!(result, Err(SubmitAfterError::Commit("disk full")));
    assert_eq!(
        mailbox.drain_or_seal().now_or_never(),
        Some(None),
        "no reservation is left behind"
    );
    let refused = mailbox
        .submit_after("later".into(), async { Ok::<(), ()>(()) })
        .await;
    assert_eq!(refused, Err(SubmitAfterError::Rejected(SteerError::Sealed)));
}

#[tokio::test]
async fn closing_waits_for_reservations_and_hands_back_undrained_input() {
    let mailbox = Arc::new(Mailbox::new());
    mailbox.submit("queued").unwrap();
    let reservation = mailbox.reserve().unwrap();
    let close = mailbox.close();
    tokio::pin!(close);
    assert!(futures::poll!(&mut close).is_pending());
    reservation.publish("reserved".into());
    assert_eq!(
        close.await,
        vec!["queued".to_owned(), "reserved".to_owned()]
    );
    assert_eq!(mailbox.submit("x"), Err(SteerError::Closed));
}

#[tokio::test]
async fn input_arrival_wakes_a_waiter_and_so_does_closing() {
    let mailbox = Arc::new(Mailbox::new());
    let waiter = mailbox.input_arrived();
    tokio::pin!(waiter);
    assert!(futures::poll!(&mut waiter).is_pending());
    mailbox.submit("hello").unwrap();
    assert!(futures::poll!(&mut waiter).is_ready());

    mailbox.drain();
    let waiter = mailbox.input_arrived();
    tokio::pin!(waiter);
    assert!(futures::poll!(&mut waiter).is_pending());
    let closing = Arc::clone(&mailbox);
    crate::tasks::spawn_in_test(async move { closing.close().await });
    waiter.await;
    assert!(!mailbox.is_open());
}
