//! Background tasks the runtime owns: [`Tasks`] is the runtime's `TaskTracker` and its shutdown
//! token, handed to the services that start tasks of their own (memory's retrieval counts and
//! embedder, standing approvals, MCP reloads), so `Runtime::shutdown` stops and awaits them.
//!
//! Invariants: a task spawned here is tracked (shutdown's wait includes it); one spawned with
//! [`Tasks::spawn`] is dropped at its next await once shutdown begins, one spawned with
//! [`Tasks::spawn_to_end`] watches [`Tasks::stopping`] itself and finishes its work (a last
//! write) before shutdown returns. `tokio::spawn` is forbidden elsewhere (`clippy.toml`) unless
//! a site says who owns its task and how it ends.

use std::future::Future;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Where a service spawns its background tasks. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Tasks {
    tracker: TaskTracker,
    shutdown: CancellationToken,
}

impl Tasks {
    /// The runtime's tracker and shutdown token.
    pub(crate) fn new(tracker: TaskTracker, shutdown: CancellationToken) -> Self {
        Self { tracker, shutdown }
    }

    /// A set no runtime waits for, for a service used on its own (tests, tools, benches): its
    /// tasks behave as tracked ones but nothing stops them.
    pub(crate) fn detached() -> Self {
        Self::new(TaskTracker::new(), CancellationToken::new())
    }

    /// Cancelled when shutdown begins.
    pub(crate) fn stopping(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Spawns `task`, dropped at its next await once shutdown begins; shutdown waits for it.
    /// The handle yields `None` when it was stopped so.
    pub(crate) fn spawn<F>(&self, task: F) -> JoinHandle<Option<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker
            .spawn(self.shutdown.clone().run_until_cancelled_owned(task))
    }

    /// Spawns `task`, which runs to its end: it watches [`Tasks::stopping`] itself to end
    /// early. Shutdown waits for it.
    pub(crate) fn spawn_to_end<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(task)
    }
}

/// Spawns a task of a test (a server, a publisher, a trigger): the test owns it, awaits or
/// aborts its handle or lets it end with the test's runtime. Library code spawns on [`Tasks`].
#[cfg(any(test, feature = "test-support"))]
#[allow(
    clippy::disallowed_methods,
    reason = "a test's own task, ended by the test or its runtime"
)]
pub(crate) fn spawn_in_test<F>(task: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(task)
}
