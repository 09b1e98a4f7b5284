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
        crate::tasks::spawn_in_test(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        run_blocking(&cancel, Duration::from_secs(60), move |_stop| {
            // A parse stuck inside a library: it never looks at the stop.
            std::thread::sleep(Duration::from_secs(5));
            flag.store(true, Ordering::SeqCst);
            Ok(())
        })
        .await
    });
    assert_eq!(result, Err(ToolError::Cancelled));
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
async fn pages_have_their_own_messages() {
    let slow: Result<(), ToolError> = run_worker(
        &CancellationToken::new(),
        Duration::from_millis(50),
        Subject::Page,
        |stop| {
            while !stop.is_requested() {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(ToolError::Cancelled)
        },
    )
    .await;
    assert_eq!(
        slow,
        Err(ToolError::Failed(
            "reading the page took longer than 0 seconds and was stopped".into()
        ))
    );
    let panicked: Result<(), ToolError> = run_worker(
        &CancellationToken::new(),
        Duration::from_secs(5),
        Subject::Page,
        |_| -> Result<(), ToolError> { panic!("parser bug") },
    )
    .await;
    assert_eq!(
        panicked,
        Err(ToolError::Failed(
            "the page could not be read: the parser failed on its contents".into()
        ))
    );
}
