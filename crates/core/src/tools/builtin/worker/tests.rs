//! What a call that gives up says, for a file and for a page.

use super::*;

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
