//! Runs format parsing off the async runtime, bounded in time and stoppable.
//!
//! Parsers are synchronous and CPU-bound, so they run on Tokio's blocking pool. The caller waits
//! for the first of: the result, the call's cancellation, or the time limit. On cancellation or
//! timeout the work is told to [`Stop`]; parsers check it between units (pages, sheets, slides),
//! so an abandoned parse ends soon instead of burning a core for minutes. A panic inside the work
//! becomes an error, never a crash.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::DocumentError;
use crate::tools::ToolError;

/// Time a document may take to parse before the call gives up (the original allowed 30 s; a
/// debug build or a slow disk deserves some slack).
pub(crate) const PARSE_TIME_LIMIT: Duration = Duration::from_secs(60);

/// Tells running work to stop at its next check.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Returns an error once stopping was asked for.
    pub(crate) fn check(&self) -> Result<(), DocumentError> {
        if self.0.load(Ordering::Relaxed) {
            Err(DocumentError::Stopped)
        } else {
            Ok(())
        }
    }

    fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` on the blocking pool; see the module docs for how it ends.
pub(crate) async fn run_blocking<T, F>(
    cancel: &CancellationToken,
    limit: Duration,
    work: F,
) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Stop) -> Result<T, DocumentError> + Send + 'static,
{
    let stop = Stop::default();
    let worker_stop = stop.clone();
    let handle = tokio::task::spawn_blocking(move || work(&worker_stop));
    let outcome = tokio::select! {
        joined = handle => joined,
        () = cancel.cancelled() => {
            stop.request();
            return Err(ToolError::Cancelled);
        }
        () = tokio::time::sleep(limit) => {
            stop.request();
            return Err(ToolError::Failed(format!(
                "reading the file took longer than {} seconds and was stopped; try a smaller \
                 file or range (for PDFs, ReadPdfPages reads a few pages at a time)",
                limit.as_secs()
            )));
        }
    };
    match outcome {
        Ok(result) => result.map_err(ToolError::from),
        Err(error) if error.is_panic() => Err(ToolError::Failed(
            "the file could not be read: the parser failed on its contents".into(),
        )),
        Err(error) => Err(ToolError::Internal(format!("document worker: {error}"))),
    }
}
