//! The history of file changes: before a file tool changes a path, what restores it exactly is
//! recorded, so a change, a whole chat turn's changes, or a client's changes since a time can
//! be undone ([`undo`]).
//!
//! What is kept for each path a call writes or removes (the plan's `Write` and `Delete` path
//! targets, and every folder the call may create on the way): its kind, permission bits, size,
//! and for a regular file its content, content-addressed by SHA-256, deduplicated and
//! compressed ([`blobs`], inside the Souz home, folders 0700). A symlink keeps its target; a
//! folder keeps a fingerprint of its tree (names, kinds, modes, sizes, times of what is
//! inside), enough to tell that it is untouched, and is restored by moving it back (from its
//! new place or from the Trash). The state after the call is kept the same way, so an undo can
//! tell whether a path changed since Souz wrote it, and show the three versions.
//!
//! Invariants:
//! - Write order ([`checkpoint`]): the blobs of the "before" states are written and the
//!   change is committed as `pending` *before* the tool runs; the "after" states are recorded
//!   and the change marked `done` after it. A process killed in between leaves a pending change
//!   whose before-states are all kept; on start [`reconcile`] compares it with the disk: paths
//!   still as before mean the write never happened (the change is dropped), anything else is
//!   recorded as its after-state. History and disk agree; no checkpoint is lost. (Debug builds
//!   can be made to abort on either side of the write, `crash_point`, for the end-to-end test
//!   `tests/e2e/history_crash.rs` that kills a real daemon there.)
//! - A blob is never removed while a checkpoint may still refer to it: checkpoints hold the
//!   blob lock shared from the blob's write to the commit of its row, pruning holds it alone.
//! - Limits (`[history]`): changes older than `keep_days` go, then the oldest until the kept
//!   contents fit `max_bytes`. A file over `max_file_bytes` is recorded without content ("not
//!   restorable"), and [`History::note_unrestorable`] says so in the plan a person approves.
//! - A call whose checkpoint cannot be recorded does not run: a change Souz cannot take back
//!   is not made silently.
//! - The requester is the gate's: the client is named by its credential (an MCP client's token
//!   name), never by what it calls itself; a chat's change names the chat's running execution.
//!
//! What it does not cover: commands (`RunCommand`, skill commands) may write anywhere inside
//! the roots, and which files they touch is known only after they ran, so no "before" can be
//! kept; their calls are not recorded here.

pub(crate) mod blobs;
pub(crate) mod checkpoint;
#[cfg(debug_assertions)]
mod crash_point;
pub mod reconcile;
pub(crate) mod records;
pub mod review;
pub(crate) mod snapshot;
pub mod undo;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

use souz_protocol::{Requester, RuntimeEvent};

use crate::bus::EventBus;
use crate::config::HistoryConfig;
use crate::sandbox::beneath::daemon_file::DaemonFileError;
use crate::store::{Store, StoreError};

pub(crate) use checkpoint::{Checkpoint, Checkpointed};

/// The folder of the history inside the Souz home.
pub(crate) const FOLDER: &str = "history";

/// Why the history could not do something.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file of the history (a blob, its folder) could not be used.
    #[error("the history's files: {0}")]
    Files(String),
    /// A path the change touches could not be looked at.
    #[error("cannot look at `{path}`: {message}")]
    Path {
        /// The path.
        path: String,
        /// What failed.
        message: String,
    },
    /// A kept content is missing or does not match its hash.
    #[error("the kept content {0} is missing or damaged")]
    Blob(String),
    /// No such change.
    #[error("{0}")]
    NotFound(String),
    /// The request cannot be done as asked.
    #[error("{0}")]
    Invalid(String),
    /// The blocking task failed.
    #[error("history task failed: {0}")]
    Task(String),
}

impl From<DaemonFileError> for HistoryError {
    fn from(error: DaemonFileError) -> Self {
        Self::Files(error.to_string())
    }
}

/// The limits of the history (`[history]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Days a change is kept.
    pub keep_days: u64,
    /// Most bytes the kept contents take (as stored, compressed).
    pub max_bytes: u64,
    /// Largest file whose content is kept.
    pub max_file_bytes: u64,
}

impl Limits {
    /// The limits of `config`.
    pub fn of(config: &HistoryConfig) -> Self {
        Self {
            keep_days: config.keep_days,
            max_bytes: config.max_bytes.bytes(),
            max_file_bytes: config.max_file_bytes.bytes(),
        }
    }
}

/// The history service. Cheap to clone.
#[derive(Clone)]
pub struct History {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    blobs: blobs::Blobs,
    limits: Limits,
    /// Where recorded changes and undos are announced (set once, by the runtime).
    events: std::sync::OnceLock<EventBus>,
    /// Checkpoints hold it shared from their blobs' write to their rows' commit; pruning
    /// holds it alone (see the module header).
    blob_lock: tokio::sync::RwLock<()>,
    /// Held by a review-mode write from before its plan to its staging, so that a write is
    /// planned against the staged changes it will follow (see [`review`]).
    staging_lock: Arc<tokio::sync::Mutex<()>>,
    /// Set while a prune started by a checkpoint runs in the background (one at a time).
    pruning: Arc<std::sync::atomic::AtomicBool>,
    /// Where that prune runs: the runtime's tasks ([`History::run_tasks_on`]), else a set of
    /// its own.
    tasks: std::sync::OnceLock<crate::tasks::Tasks>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("limits", &self.inner.limits)
            .finish()
    }
}

impl History {
    /// Opens the history kept in `souz_home` (creating its folders, 0700) over `store`.
    pub fn open(store: Store, souz_home: &Path, limits: Limits) -> Result<Self, HistoryError> {
        let blobs = blobs::Blobs::open(souz_home)?;
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                blobs,
                limits,
                events: std::sync::OnceLock::new(),
                blob_lock: tokio::sync::RwLock::new(()),
                staging_lock: Arc::new(tokio::sync::Mutex::new(())),
                pruning: Arc::new(std::sync::atomic::AtomicBool::new(false)),
                tasks: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Runs its background work (the prunes checkpoints start) on the runtime's `tasks`, so
    /// shutdown waits for it (set once).
    pub(crate) fn run_tasks_on(&self, tasks: crate::tasks::Tasks) {
        let _ = self.inner.tasks.set(tasks);
    }

    /// Where its background work runs.
    pub(crate) fn tasks(&self) -> &crate::tasks::Tasks {
        self.inner.tasks.get_or_init(crate::tasks::Tasks::detached)
    }

    /// Announces recorded changes (`history.change.recorded`) and undos (`history.undone`)
    /// on `events` from now on, each in the transaction that records it (set once).
    pub fn announce_on(&self, events: EventBus) {
        let _ = self.inner.events.set(events);
    }

    /// Runs `work` in one transaction and announces the events it returns in the same
    /// transaction (stored only when announcing is on).
    pub(crate) async fn write_announcing<T, F>(&self, work: F) -> Result<T, HistoryError>
    where
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<(T, Vec<RuntimeEvent>), StoreError>
            + Send
            + 'static,
        T: Send + 'static,
    {
        Ok(match self.inner.events.get() {
            Some(events) => events.publish_with(work).await?.0,
            None => {
                self.store()
                    .write(move |transaction| work(transaction).map(|(value, _)| value))
                    .await?
            }
        })
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    pub(crate) fn blobs(&self) -> &blobs::Blobs {
        &self.inner.blobs
    }
}

/// The client a requester is, as the history names it: `souz` for Souz's own agents, an MCP
/// client's token name (what its credential says), `cli`, `api`, `skill:<id>`.
pub fn client_of(requester: &Requester) -> String {
    match requester {
        Requester::Chat { .. } => "souz".to_owned(),
        Requester::Mcp {
            token_name,
            client_name,
            ..
        } => {
            if token_name.is_empty() {
                format!("mcp:{client_name}")
            } else {
                token_name.clone()
            }
        }
        Requester::Cli => "cli".to_owned(),
        Requester::Api => "api".to_owned(),
        Requester::Skill { skill_id } => format!("skill:{skill_id}"),
    }
}
