//! Runs parsers of untrusted input (documents, spreadsheets, web pages) off the async runtime,
//! bounded in time and stoppable, without ever holding up the daemon's shutdown. The daemon
//! maps a [`WorkerError`] to its own errors (it knows what was being read).
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

use crate::documents::DocumentError;

/// Stack of a worker thread. Address space only: pages are committed when touched.
pub const WORKER_STACK_BYTES: usize = 64 << 20;
/// Parses running at once, in the whole process.
pub const MAX_WORKERS: usize = 8;

/// The permits of the running workers (process-wide: threads are a process-wide resource).
static WORKERS: Semaphore = Semaphore::const_new(MAX_WORKERS);

/// Tells running work to stop at its next check.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Returns an error once stopping was asked for.
    pub fn check(&self) -> Result<(), DocumentError> {
        if self.is_requested() {
            Err(DocumentError::Stopped)
        } else {
            Ok(())
        }
    }

    /// Whether stopping was asked for.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Asks the work to stop, as a cancelled call does.
    #[cfg(any(test, feature = "fixtures"))]
    pub fn request_for_tests(&self) {
        self.request();
    }
}

/// How work on a worker ended without its own result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkerError<E> {
    /// The caller's cancellation came first (the work was told to stop).
    #[error("cancelled")]
    Cancelled,
    /// The time limit came first (the work was told to stop).
    #[error("took longer than {} seconds", .0.as_secs())]
    TimedOut(Duration),
    /// The work panicked (a parser bug on hostile input): never a crash.
    #[error("the parser failed on its contents")]
    Panicked,
    /// No worker could be started, or it ended without a word.
    #[error("parse worker: {0}")]
    Internal(String),
    /// The work's own error.
    #[error(transparent)]
    Work(E),
}

/// Runs `work` on a worker thread; see the module docs for how it ends.
pub async fn run_worker<T, E, F>(
    cancel: &CancellationToken,
    limit: Duration,
    work: F,
) -> Result<T, WorkerError<E>>
where
    T: Send + 'static,
    E: Send + 'static,
    F: FnOnce(&Stop) -> Result<T, E> + Send + 'static,
{
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    let permit = tokio::select! {
        permit = WORKERS.acquire() => permit
            .map_err(|error| WorkerError::Internal(error.to_string()))?,
        () = cancel.cancelled() => return Err(WorkerError::Cancelled),
        () = &mut deadline => return Err(WorkerError::TimedOut(limit)),
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
        .map_err(|error| WorkerError::Internal(format!("cannot start one: {error}")))?;
    let outcome = tokio::select! {
        joined = receiver => joined,
        () = cancel.cancelled() => {
            stop.request();
            return Err(WorkerError::Cancelled);
        }
        () = &mut deadline => {
            stop.request();
            return Err(WorkerError::TimedOut(limit));
        }
    };
    match outcome {
        Ok(Ok(result)) => result.map_err(WorkerError::Work),
        Ok(Err(_panic)) => Err(WorkerError::Panicked),
        Err(_) => Err(WorkerError::Internal("it ended without a result".into())),
    }
}

#[cfg(test)]
mod tests;
