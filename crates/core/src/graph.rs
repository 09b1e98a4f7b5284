//! A small typed graph runtime: nodes, static and dynamic edges, nested graphs, retries, step
//! tracing, cancellation and a max-steps guard. It knows nothing of LLMs or tools; agents are
//! built on it.
//!
//! Invariants:
//! - Types are checked when the graph is built: an edge from a node producing `T` can only go
//!   to a node taking `T` ([`NodeHandle`], [`EdgeTarget`]). Inside, contexts travel type-erased.
//! - Traversal is FIFO (breadth first): every transition of a step is queued behind those
//!   already waiting. The run ends when a branch reaches the graph's exit; other queued
//!   branches are dropped. A branch whose node has no transition is a leaf and just ends.
//!   If the queue drains without reaching the exit, the run fails with
//!   [`GraphError::ExitNotReached`] instead of inventing an output.
//! - A graph is a [`Node`], so graphs nest. Nested graphs share the run: one step counter, one
//!   max-steps limit, one step callback, one cancellation token.
//! - Retries follow the node's (or its graph's) [`RetryPolicy`]. Cancellation is never retried.
//! - Cancellation (the run's [`CancellationToken`]) is checked before every step and aborts a
//!   running node by dropping its future. The error keeps the last good context of the graph
//!   that was run: its input, or the output of the last step that completed.
//!
//! `tests::a_pipeline_nests_retries_and_routes` builds and runs a whole example: a nested graph,
//! a retry policy, a route on a node's output and a step callback.

mod builder;
mod run;

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub(crate) use builder::{GraphBuildError, GraphBuilder, NodeHandle};
pub(crate) use run::Graph;

/// Steps a run may take before it is stopped as a probable loop.
pub(crate) const DEFAULT_MAX_STEPS: usize = 1000;

/// Any error a node returns.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A unit of work: takes `I`, produces `O`.
pub(crate) trait Node<I, O>: Send + Sync {
    /// Name shown in traces and errors.
    fn name(&self) -> &str;

    /// Runs the node. `runtime` gives access to the run's cancellation token and depth.
    fn run<'a>(&'a self, input: I, runtime: &'a GraphRuntime)
    -> BoxFuture<'a, Result<O, BoxError>>;
}

/// A node made from an async closure. See [`node_fn`].
pub(crate) struct FnNode<F> {
    name: String,
    function: F,
}

/// Makes a node from an async closure `|input| async { Ok(output) }`.
pub(crate) fn node_fn<I, O, F, Fut>(name: impl Into<String>, function: F) -> FnNode<F>
where
    F: Fn(I) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, BoxError>> + Send + 'static,
{
    FnNode {
        name: name.into(),
        function,
    }
}

impl<I, O, F, Fut> Node<I, O> for FnNode<F>
where
    F: Fn(I) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, BoxError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(&'a self, input: I, _: &'a GraphRuntime) -> BoxFuture<'a, Result<O, BoxError>> {
        Box::pin((self.function)(input))
    }
}

/// Whether a failed attempt may be retried, given the error and the attempt number (from 1).
pub(crate) type RetryPredicate = Arc<dyn Fn(&BoxError, u32) -> bool + Send + Sync>;

/// How often a failing node is tried and how long to wait in between.
#[derive(Clone)]
pub(crate) struct RetryPolicy {
    max_attempts: u32,
    delay: Duration,
    should_retry: RetryPredicate,
}

impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::none()
    }
}

impl RetryPolicy {
    /// One attempt, no retry.
    pub(crate) fn none() -> Self {
        Self::attempts(1)
    }

    /// Up to `max_attempts` attempts (at least one) on any error except cancellation.
    pub(crate) fn attempts(max_attempts: u32) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            delay: Duration::ZERO,
            should_retry: Arc::new(|_, _| true),
        }
    }

    /// Retries only errors for which `predicate(error, attempt)` holds.
    pub(crate) fn when(
        mut self,
        predicate: impl Fn(&BoxError, u32) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.should_retry = Arc::new(predicate);
        self
    }

    fn allows(&self, error: &BoxError, attempt: u32) -> bool {
        attempt < self.max_attempts
            && !is_cancellation(error)
            && (self.should_retry)(error, attempt)
    }
}

/// What a node returns to say it stopped because it was cancelled (never retried).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled")]
pub(crate) struct Cancelled;

/// Whether `error` means cancellation: [`Cancelled`] or a nested graph's
/// [`GraphError::Cancelled`].
pub(crate) fn is_cancellation(error: &BoxError) -> bool {
    error.downcast_ref::<Cancelled>().is_some()
        || matches!(
            error.downcast_ref::<GraphError>(),
            Some(GraphError::Cancelled { .. })
        )
}

/// A context that survived a failed or cancelled run. Its type depends on where the run
/// stopped, so it is recovered with [`LastContext::downcast`].
pub(crate) struct LastContext {
    node: String,
    // A mutex so the error stays `Sync` (errors cross threads) without requiring contexts to
    // be `Sync`; it is only locked to inspect or take the value.
    value: std::sync::Mutex<Box<dyn Any + Send>>,
}

impl std::fmt::Debug for LastContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LastContext")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl LastContext {
    /// The node that produced it (`<graph>::start` for the graph's input).
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// Whether the context is a `T`.
    pub(crate) fn is<T: Any>(&self) -> bool {
        self.value
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is::<T>()
    }

    /// The context if it is a `T`; else `self` back.
    pub(crate) fn downcast<T: Any>(self) -> Result<T, Self> {
        let node = self.node;
        let value = self
            .value
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        value
            .downcast::<T>()
            .map(|value| *value)
            .map_err(|value| Self {
                node,
                value: std::sync::Mutex::new(value),
            })
    }
}

/// Why a run stopped without an output.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GraphError {
    /// The run's cancellation token fired (or a node reported [`Cancelled`]).
    #[error("graph `{graph}` was cancelled")]
    Cancelled {
        /// The graph that was run.
        graph: String,
        /// Its last good context.
        last_context: LastContext,
    },
    /// A node failed and its retry policy gave up.
    #[error("node `{node}` of graph `{graph}` failed after {attempts} attempt(s): {source}")]
    Node {
        /// The graph the node belongs to.
        graph: String,
        /// The node.
        node: String,
        /// Attempts made.
        attempts: u32,
        /// The last error.
        source: BoxError,
        /// The graph's last good context.
        last_context: LastContext,
    },
    /// The run took `max_steps` steps; it probably loops.
    #[error("graph `{graph}` reached its limit of {max_steps} steps; it probably loops")]
    MaxSteps {
        /// The graph where the limit was hit.
        graph: String,
        /// The limit.
        max_steps: usize,
        /// The graph's last good context.
        last_context: LastContext,
    },
    /// Every branch ended in a leaf; none reached the exit.
    #[error("graph `{graph}` ended without reaching its exit (last step: `{}`)", .last_context.node())]
    ExitNotReached {
        /// The graph.
        graph: String,
        /// The output of the last step.
        last_context: LastContext,
    },
}

impl GraphError {
    #[cfg(test)]
    /// The last good context, whatever the failure.
    pub(crate) fn last_context(&self) -> &LastContext {
        match self {
            Self::Cancelled { last_context, .. }
            | Self::Node { last_context, .. }
            | Self::MaxSteps { last_context, .. }
            | Self::ExitNotReached { last_context, .. } => last_context,
        }
    }

    /// Takes the last good context out of the error.
    pub(crate) fn into_last_context(self) -> LastContext {
        match self {
            Self::Cancelled { last_context, .. }
            | Self::Node { last_context, .. }
            | Self::MaxSteps { last_context, .. }
            | Self::ExitNotReached { last_context, .. } => last_context,
        }
    }
}

/// One completed step, as the step callback sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepInfo {
    /// Global step number of the run, from 0 (nested graphs share the counter).
    pub index: usize,
    /// The node that ran.
    pub node: String,
    /// The graph it belongs to.
    pub graph: String,
    /// Nesting depth of that graph (0 for the graph that was run).
    pub depth: usize,
    /// Attempts it took.
    pub attempts: u32,
    /// How long the node ran (all attempts).
    pub elapsed: Duration,
}

impl StepInfo {
    /// Whether the node belongs to a nested graph.
    pub(crate) fn is_subgraph(&self) -> bool {
        self.depth > 0
    }
}

/// A step as passed to the step callback: its description and the node's output.
pub(crate) struct Step<'a> {
    /// What ran.
    pub info: StepInfo,
    /// The node's output (downcast it to inspect).
    pub output: &'a (dyn Any + Send),
}

type StepCallback = Arc<dyn Fn(&Step<'_>) + Send + Sync>;

/// How a run is driven: cancellation, step tracing, the step limit.
#[derive(Clone)]
pub(crate) struct RunOptions {
    cancel: CancellationToken,
    on_step: Option<StepCallback>,
    max_steps: usize,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("max_steps", &self.max_steps)
            .field("traced", &self.on_step.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            cancel: CancellationToken::new(),
            on_step: None,
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

impl RunOptions {
    /// Stops the run when `cancel` fires.
    pub(crate) fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Calls `callback` after every completed step, nested graphs included.
    pub(crate) fn on_step(mut self, callback: impl Fn(&Step<'_>) + Send + Sync + 'static) -> Self {
        self.on_step = Some(Arc::new(callback));
        self
    }

    #[cfg(test)]
    /// Stops the run after `max_steps` steps (default [`DEFAULT_MAX_STEPS`]).
    pub(crate) fn max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = max_steps;
        self
    }
}

/// The state of one run, shared by nested graphs; handed to every node.
#[derive(Clone)]
pub(crate) struct GraphRuntime {
    shared: Arc<run::Shared>,
    depth: usize,
}

impl std::fmt::Debug for GraphRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphRuntime")
            .field("depth", &self.depth)
            .field("steps", &self.steps())
            .finish()
    }
}

impl GraphRuntime {
    /// Steps taken so far in the whole run.
    pub(crate) fn steps(&self) -> usize {
        self.shared.steps.load(std::sync::atomic::Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests;
