//! Runs parsers of untrusted input (documents, spreadsheets, web pages) off the async runtime,
//! bounded in time and stoppable, without ever holding up the daemon's shutdown.
//!
//! Parsers are synchronous and CPU-bound. Each piece of work runs on a thread of its own with
//! a known stack ([`WORKER_STACK_BYTES`]), not on Tokio's blocking pool: a runtime that shuts
//! down waits for its blocking tasks, while nothing waits for a detached thread, so a parse in
//! progress never delays the end of the process. The caller waits for the first of: the result,
//! the call's cancellation, or the time limit. On cancellation or timeout the work is told to
//! [`Stop`]; parsers check it between units (pages, sheets, slides, chunks of a page), so an
//! abandoned parse ends soon instead of burning a core for minutes. At most [`MAX_WORKERS`]
//! run at once, abandoned ones included, so abandoned work cannot pile up. A panic inside the
//! work becomes an error, never a crash. A stack overflow is not a panic (it aborts the
//! process): parsers bound the depth of what they recurse on, and the stack here is a margin
//! over that bound, not the bound.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::documents::DocumentError;
use crate::tools::ToolError;

/// Time a document may take to parse before the call gives up (the original allowed 30 s; a
/// debug build or a slow disk deserves some slack).
pub(crate) const PARSE_TIME_LIMIT: Duration = Duration::from_secs(60);
/// Stack of a worker thread. Address space only: pages are committed when touched.
pub(crate) const WORKER_STACK_BYTES: usize = 64 << 20;
/// Parses running at once, in the whole process.
pub(crate) const MAX_WORKERS: usize = 8;

/// The permits of the running workers (process-wide: threads are a process-wide resource).
static WORKERS: Semaphore = Semaphore::const_new(MAX_WORKERS);

/// What is being read, for the messages of a call that gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// A file (documents, spreadsheets, data).
    File,
    /// A fetched web page.
    Page,
}

/// Tells running work to stop at its next check.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Returns an error once stopping was asked for.
    pub(crate) fn check(&self) -> Result<(), DocumentError> {
        if self.is_requested() {
            Err(DocumentError::Stopped)
        } else {
            Ok(())
        }
    }

    /// Whether stopping was asked for.
    pub(crate) fn is_requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Asks the work to stop, as a cancelled call does.
    #[cfg(test)]
    pub(crate) fn request_for_tests(&self) {
        self.request();
    }
}

/// Runs `work` that reads a file; see the module docs for how it ends.
pub(crate) async fn run_blocking<T, F>(
    cancel: &CancellationToken,
    limit: Duration,
    work: F,
) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Stop) -> Result<T, DocumentError> + Send + 'static,
{
    run_worker(cancel, limit, Subject::File, work).await
}

/// Runs `work` on a worker thread; see the module docs for how it ends.
pub(crate) async fn run_worker<T, E, F>(
    cancel: &CancellationToken,
    limit: Duration,
    subject: Subject,
    work: F,
) -> Result<T, ToolError>
where
    T: Send + 'static,
    E: Into<ToolError> + Send + 'static,
    F: FnOnce(&Stop) -> Result<T, E> + Send + 'static,
{
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    let permit = tokio::select! {
        permit = WORKERS.acquire() => permit
            .map_err(|error| ToolError::Internal(format!("parse workers: {error}")))?,
        () = cancel.cancelled() => return Err(ToolError::Cancelled),
        () = &mut deadline => return Err(too_slow(subject, limit)),
    };
    let stop = Stop::default();
    let worker_stop = stop.clone();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("souz-parse".to_owned())
        .stack_size(WORKER_STACK_BYTES)
        .spawn(move || {
            let _permit = permit;
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| work(&worker_stop)));
            // The caller may have given up already: nobody to tell.
            let _ = sender.send(outcome);
        })
        .map_err(|error| ToolError::Internal(format!("cannot start a parse worker: {error}")))?;
    let outcome = tokio::select! {
        joined = receiver => joined,
        () = cancel.cancelled() => {
            stop.request();
            return Err(ToolError::Cancelled);
        }
        () = &mut deadline => {
            stop.request();
            return Err(too_slow(subject, limit));
        }
    };
    match outcome {
        Ok(Ok(result)) => result.map_err(Into::into),
        Ok(Err(_panic)) => Err(ToolError::Failed(
            match subject {
                Subject::File => "the file could not be read: the parser failed on its contents",
                Subject::Page => "the page could not be read: the parser failed on its contents",
            }
            .into(),
        )),
        Err(_) => Err(ToolError::Internal(
            "parse worker ended without a result".into(),
        )),
    }
}

fn too_slow(subject: Subject, limit: Duration) -> ToolError {
    ToolError::Failed(match subject {
        Subject::File => format!(
            "reading the file took longer than {} seconds and was stopped; try a smaller \
             file or range (for PDFs, ReadPdfPages reads a few pages at a time)",
            limit.as_secs()
        ),
        Subject::Page => format!(
            "reading the page took longer than {} seconds and was stopped",
            limit.as_secs()
        ),
    })
}

#[cfg(test)]
mod tests;
