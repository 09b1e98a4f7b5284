//! The worker's promises that the documents' tests do not cover: shutdown never waits for it.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::*;

#[test]
fn a_runtime_shuts_down_without_waiting_for_abandoned_work() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&finished);
    let result = runtime.block_on(async {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            trigger.cancel();
        });
        run_worker(&cancel, Duration::from_secs(60), move |_stop| {
            // A parse stuck inside a library: it never looks at the stop.
            std::thread::sleep(Duration::from_secs(5));
            flag.store(true, Ordering::SeqCst);
            Ok::<(), ()>(())
        })
        .await
    });
    assert_eq!(result, Err(WorkerError::Cancelled));
    let started = Instant::now();
    drop(runtime);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the runtime waited {took:?} for work its caller had given up"
    );
    assert!(!finished.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_time_limit_and_a_panic_end_the_call_with_their_own_errors() {
    let slow: Result<(), WorkerError<()>> = run_worker(
        &CancellationToken::new(),
        Duration::from_millis(50),
        |stop| {
            while !stop.is_requested() {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        },
    )
    .await;
    assert_eq!(slow, Err(WorkerError::TimedOut(Duration::from_millis(50))));
    let panicked: Result<(), WorkerError<()>> =
        run_worker(&CancellationToken::new(), Duration::from_secs(5), |_| {
            panic!("parser bug")
        })
        .await;
    assert_eq!(panicked, Err(WorkerError::Panicked));
    let failed: Result<(), WorkerError<&str>> =
        run_worker(&CancellationToken::new(), Duration::from_secs(5), |_| {
            Err("bad")
        })
        .await;
    assert_eq!(failed, Err(WorkerError::Work("bad")));
}
