//! Running a graph: the FIFO queue, the step guard, retries, cancellation and tracing.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures::future::BoxFuture;

use super::builder::{Boxed, EXIT, START, Slot, Transition};
use super::{
    BoxError, GraphError, GraphRuntime, LastContext, Node, RetryPolicy, RunOptions, Step, StepInfo,
    is_cancellation,
};

/// What every graph of one run shares.
pub(super) struct Shared {
    pub(super) options: RunOptions,
    pub(super) steps: AtomicUsize,
}

/// A built graph taking `I` and producing `O`. Cheap to clone; a graph is a [`Node`], so it
/// can be added to another graph.
pub(crate) struct Graph<I, O> {
    name: String,
    builder: u64,
    slots: Arc<[Slot]>,
    retry: RetryPolicy,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for Graph<I, O> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            builder: self.builder,
            slots: Arc::clone(&self.slots),
            retry: self.retry.clone(),
            types: PhantomData,
        }
    }
}

impl<I, O> std::fmt::Debug for Graph<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<&str> = self.slots.iter().map(|slot| slot.name.as_str()).collect();
        f.debug_struct("Graph")
            .field("name", &self.name)
            .field("nodes", &nodes)
            .finish()
    }
}

/// A router returned a node of another graph.
#[derive(Debug, thiserror::Error)]
#[error("a router of node `{0}` chose a node of another graph")]
struct ForeignRoute(String);

impl<I, O> Graph<I, O>
where
    I: Clone + Send + 'static,
    O: Clone + Send + 'static,
{
    pub(super) fn new(name: String, builder: u64, slots: Arc<[Slot]>, retry: RetryPolicy) -> Self {
        Self {
            name,
            builder,
            slots,
            retry,
            types: PhantomData,
        }
    }

    /// Runs the graph on `input` until a branch reaches the exit.
    pub(crate) async fn run(&self, input: I, options: RunOptions) -> Result<O, GraphError> {
        let runtime = GraphRuntime {
            shared: Arc::new(Shared {
                options,
                steps: AtomicUsize::new(0),
            }),
            depth: 0,
        };
        self.execute(input, &runtime).await
    }

    /// Runs the graph inside a run (`runtime` is already at this graph's depth).
    async fn execute(&self, input: I, runtime: &GraphRuntime) -> Result<O, GraphError> {
        let shared = &runtime.shared;
        let cancel = &shared.options.cancel;
        let mut last = LastGood {
            node: self.slots[START].name.clone(),
            value: Box::new(input.clone()),
        };
        let mut queue: VecDeque<(usize, Boxed)> =
            VecDeque::from([(START, Box::new(input) as Boxed)]);

        while let Some((index, value)) = queue.pop_front() {
            let slot = &self.slots[index];
            if index == EXIT {
                return match value.into_any().downcast::<O>() {
                    Ok(output) => Ok(*output),
                    Err(_) => Err(self.node_error(
                        slot,
                        1,
                        Box::new(super::builder::ContextTypeMismatch),
                        last,
                    )),
                };
            }
            let output = match &slot.node {
                None => value,
                Some(node) => {
                    if cancel.is_cancelled() {
                        return Err(self.cancelled(last));
                    }
                    let step = shared.steps.fetch_add(1, Ordering::AcqRel);
                    if step >= shared.options.max_steps {
                        return Err(GraphError::MaxSteps {
                            graph: self.name.clone(),
                            max_steps: shared.options.max_steps,
                            last_context: last.into_context(),
                        });
                    }
                    let began = Instant::now();
                    let policy = slot.retry.as_ref().unwrap_or(&self.retry);
                    let mut attempt = 1;
                    let output = loop {
                        let result = tokio::select! {
                            biased;
                            () = cancel.cancelled() => return Err(self.cancelled(last)),
                            result = node.run(value.clone_value(), runtime) => result,
                        };
                        match result {
                            Ok(output) => break output,
                            Err(error) if cancel.is_cancelled() || is_cancellation(&error) => {
                                return Err(self.cancelled(last));
                            }
                            Err(error) if is_max_steps(&error) => {
                                return Err(GraphError::MaxSteps {
                                    graph: self.name.clone(),
                                    max_steps: shared.options.max_steps,
                                    last_context: last.into_context(),
                                });
                            }
                            Err(error) if policy.allows(&error, attempt) => {
                                tracing::debug!(graph = %self.name, node = %slot.name, attempt, %error, "retrying node");
                                if !policy.delay.is_zero() {
                                    tokio::select! {
                                        biased;
                                        () = cancel.cancelled() => return Err(self.cancelled(last)),
                                        () = tokio::time::sleep(policy.delay) => {}
                                    }
                                }
                                attempt += 1;
                            }
                            Err(error) => return Err(self.node_error(slot, attempt, error, last)),
                        }
                    };
                    if let Some(callback) = &shared.options.on_step {
                        callback(&Step {
                            info: StepInfo {
                                index: step,
                                node: slot.name.clone(),
                                graph: self.name.clone(),
                                depth: runtime.depth,
                                attempts: attempt,
                                elapsed: began.elapsed(),
                            },
                            output: output.as_any(),
                        });
                    }
                    last = LastGood {
                        node: slot.name.clone(),
                        value: output.clone_value(),
                    };
                    output
                }
            };

            if let Err(error) = self.route(slot, output, &mut queue) {
                return Err(self.node_error(slot, 1, error, last));
            }
        }
        Err(GraphError::ExitNotReached {
            graph: self.name.clone(),
            last_context: last.into_context(),
        })
    }

    /// Queues the nodes `slot`'s transitions pick for `output` (the same node once); a router
    /// naming a node of another graph is an error.
    fn route(
        &self,
        slot: &Slot,
        output: Boxed,
        queue: &mut VecDeque<(usize, Boxed)>,
    ) -> Result<(), BoxError> {
        let mut targets: Vec<usize> = Vec::with_capacity(slot.transitions.len());
        for transition in &slot.transitions {
            let target = match transition {
                Transition::Static(target) => Some(*target),
                Transition::Dynamic(router) => match router(output.as_any()) {
                    Some((builder, target)) if builder == self.builder => Some(target),
                    Some(_) => return Err(Box::new(ForeignRoute(slot.name.clone()))),
                    None => None,
                },
            };
            // The same next node twice in one step runs once.
            if let Some(target) = target
                && !targets.contains(&target)
            {
                targets.push(target);
            }
        }
        if let Some((&final_target, rest)) = targets.split_last() {
            for &target in rest {
                queue.push_back((target, output.clone_value()));
            }
            queue.push_back((final_target, output));
        }
        Ok(())
    }

    fn cancelled(&self, last: LastGood) -> GraphError {
        GraphError::Cancelled {
            graph: self.name.clone(),
            last_context: last.into_context(),
        }
    }

    fn node_error(
        &self,
        slot: &Slot,
        attempts: u32,
        source: BoxError,
        last: LastGood,
    ) -> GraphError {
        GraphError::Node {
            graph: self.name.clone(),
            node: slot.name.clone(),
            attempts,
            source,
            last_context: last.into_context(),
        }
    }
}

fn is_max_steps(error: &BoxError) -> bool {
    matches!(
        error.downcast_ref::<GraphError>(),
        Some(GraphError::MaxSteps { .. })
    )
}

struct LastGood {
    node: String,
    value: Boxed,
}

impl LastGood {
    fn into_context(self) -> LastContext {
        LastContext {
            node: self.node,
            value: std::sync::Mutex::new(self.value.into_any()),
        }
    }
}

impl<I, O> Node<I, O> for Graph<I, O>
where
    I: Clone + Send + 'static,
    O: Clone + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(
        &'a self,
        input: I,
        runtime: &'a GraphRuntime,
    ) -> BoxFuture<'a, Result<O, BoxError>> {
        Box::pin(async move {
            let nested = GraphRuntime {
                shared: Arc::clone(&runtime.shared),
                depth: runtime.depth + 1,
            };
            self.execute(input, &nested)
                .await
                .map_err(|error| Box::new(error) as BoxError)
        })
    }
}
