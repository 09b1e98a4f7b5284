//! The tools' side of the parse workers ([`souz_parse::worker`]): what a call that gives up
//! says, for a file or a page, as a [`ToolError`].
//!
//! The workers themselves (a thread each, bounded in time, stoppable, never holding up
//! shutdown) live with the parsers in `souz-parse`; this module only names what was being
//! read and maps the ways work ends to the errors the model and the person see.

use std::time::Duration;

pub(crate) use souz_parse::worker::Stop;
use souz_parse::worker::WorkerError;
use tokio_util::sync::CancellationToken;

use super::documents::DocumentError;
use crate::tools::ToolError;

/// Time a document may take to parse before the call gives up (the original allowed 30 s; a
/// debug build or a slow disk deserves some slack).
pub(crate) const PARSE_TIME_LIMIT: Duration = Duration::from_secs(60);

/// What is being read, for the messages of a call that gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// A file (documents, spreadsheets, data).
    File,
    /// A fetched web page.
    Page,
}

/// Runs `work` that reads a file on a parse worker.
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

/// Runs `work` on a parse worker; its own error and the ways a worker ends become tool errors.
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
    souz_parse::worker::run_worker(cancel, limit, work)
        .await
        .map_err(|error| match error {
            WorkerError::Work(error) => error.into(),
            WorkerError::Cancelled => ToolError::Cancelled,
            WorkerError::TimedOut(limit) => too_slow(subject, limit),
            WorkerError::Panicked => ToolError::Failed(
                match subject {
                    Subject::File => {
                        "the file could not be read: the parser failed on its contents"
                    }
                    Subject::Page => {
                        "the page could not be read: the parser failed on its contents"
                    }
                }
                .into(),
            ),
            WorkerError::Internal(message) => {
                ToolError::Internal(format!("parse worker: {message}"))
            }
        })
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
