//! Building a graph: typed handles for nodes, edges checked by the compiler, and the
//! type-erased form the runner walks.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;

use super::run::Graph;
use super::{BoxError, GraphRuntime, Node, RetryPolicy};

/// Index of the start pseudo-node in every graph.
pub(super) const START: usize = 0;
/// Index of the exit pseudo-node in every graph.
pub(super) const EXIT: usize = 1;

static NEXT_BUILDER: AtomicU64 = AtomicU64::new(1);

/// A context travelling through the graph with its type erased; cloneable for fan-out and
/// retries.
pub(super) trait Value: Any + Send {
    fn clone_value(&self) -> Boxed;
    fn as_any(&self) -> &(dyn Any + Send);
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

pub(super) type Boxed = Box<dyn Value>;

impl<T: Any + Send + Clone> Value for T {
    fn clone_value(&self) -> Boxed {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &(dyn Any + Send) {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// A node with its types erased.
pub(super) trait ErasedNode: Send + Sync {
    fn run<'a>(
        &'a self,
        input: Boxed,
        runtime: &'a GraphRuntime,
    ) -> BoxFuture<'a, Result<Boxed, BoxError>>;
}

struct Typed<N, I, O> {
    node: N,
    types: PhantomData<fn(I) -> O>,
}

/// The runner fed a node a context of the wrong type; the typed builder makes this
/// unreachable, so it means a bug in this module.
#[derive(Debug, thiserror::Error)]
#[error("internal graph error: node received a context of an unexpected type")]
pub(super) struct ContextTypeMismatch;

impl<N, I, O> ErasedNode for Typed<N, I, O>
where
    N: Node<I, O>,
    I: Clone + Send + 'static,
    O: Clone + Send + 'static,
{
    fn run<'a>(
        &'a self,
        input: Boxed,
        runtime: &'a GraphRuntime,
    ) -> BoxFuture<'a, Result<Boxed, BoxError>> {
        Box::pin(async move {
            let input = input
                .into_any()
                .downcast::<I>()
                .map_err(|_| Box::new(ContextTypeMismatch) as BoxError)?;
            let output = self.node.run(*input, runtime).await?;
            Ok(Box::new(output) as Boxed)
        })
    }
}

type Router = Arc<dyn Fn(&(dyn Any + Send)) -> Option<(u64, usize)> + Send + Sync>;

/// Where control may go after a node.
#[derive(Clone)]
pub(super) enum Transition {
    /// Always to this node.
    Static(usize),
    /// Wherever the router says, given the output (`None`: nowhere from this router).
    Dynamic(Router),
}

/// One node of a built graph.
#[derive(Clone)]
pub(super) struct Slot {
    pub(super) name: String,
    /// `None` for the start and exit pseudo-nodes.
    pub(super) node: Option<Arc<dyn ErasedNode>>,
    pub(super) retry: Option<RetryPolicy>,
    pub(super) transitions: Vec<Transition>,
}

/// A node added to a builder: takes `I`, produces `O`. Cheap to copy.
pub(crate) struct NodeHandle<I, O> {
    builder: u64,
    index: usize,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for NodeHandle<I, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I, O> Copy for NodeHandle<I, O> {}

impl<I, O> std::fmt::Debug for NodeHandle<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeHandle({})", self.index)
    }
}

impl<I, O> NodeHandle<I, O> {
    /// This node as an edge target.
    pub(crate) fn target(self) -> EdgeTarget<I> {
        EdgeTarget {
            builder: self.builder,
            index: self.index,
            types: PhantomData,
        }
    }
}

/// Something an edge may lead to: a node taking `I`, or the exit of a graph producing `I`.
pub(crate) struct EdgeTarget<I> {
    builder: u64,
    index: usize,
    types: PhantomData<fn(I)>,
}

impl<I> Clone for EdgeTarget<I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I> Copy for EdgeTarget<I> {}

impl<I> std::fmt::Debug for EdgeTarget<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EdgeTarget({})", self.index)
    }
}

impl<I, O> From<NodeHandle<I, O>> for EdgeTarget<I> {
    fn from(handle: NodeHandle<I, O>) -> Self {
        handle.target()
    }
}

/// Why a graph could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GraphBuildError {
    /// The start leads nowhere.
    #[error("graph `{0}`: the start has no edge")]
    NoStartEdge(String),
    /// A handle from another builder was used.
    #[error("graph `{graph}`: an edge uses a node of another graph")]
    ForeignNode {
        /// The graph being built.
        graph: String,
    },
    /// An edge leads back into the start.
    #[error("graph `{0}`: the start cannot be an edge target")]
    EdgeIntoStart(String),
}

/// Builds a [`Graph`] taking `I` and producing `O`. See the module documentation for an
/// example.
pub(crate) struct GraphBuilder<I, O> {
    name: String,
    id: u64,
    slots: Vec<Slot>,
    retry: RetryPolicy,
    errors: Vec<GraphBuildError>,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O> std::fmt::Debug for GraphBuilder<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("name", &self.name)
            .field("nodes", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl<I, O> GraphBuilder<I, O>
where
    I: Clone + Send + 'static,
    O: Clone + Send + 'static,
{
    /// A builder for a graph called `name`, with no retries by default.
    pub(crate) fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        let pseudo = |suffix: &str| Slot {
            name: format!("{name}::{suffix}"),
            node: None,
            retry: None,
            transitions: Vec::new(),
        };
        let slots = vec![pseudo("start"), pseudo("exit")];
        Self {
            id: NEXT_BUILDER.fetch_add(1, Ordering::Relaxed),
            name,
            slots,
            retry: RetryPolicy::none(),
            errors: Vec::new(),
            types: PhantomData,
        }
    }

    /// The retry policy of every node that has none of its own.
    pub(crate) fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The graph's input, as a node whose output is the input.
    pub(crate) fn start(&self) -> NodeHandle<I, I> {
        NodeHandle {
            builder: self.id,
            index: START,
            types: PhantomData,
        }
    }

    /// The graph's exit: reaching it ends the run with the value that arrives.
    pub(crate) fn exit(&self) -> EdgeTarget<O> {
        EdgeTarget {
            builder: self.id,
            index: EXIT,
            types: PhantomData,
        }
    }

    /// Adds a node (a graph is a node too).
    pub(crate) fn add<NI, NO, N>(&mut self, node: N) -> NodeHandle<NI, NO>
    where
        N: Node<NI, NO> + 'static,
        NI: Clone + Send + 'static,
        NO: Clone + Send + 'static,
    {
        self.push(node, None)
    }

    fn push<NI, NO, N>(&mut self, node: N, retry: Option<RetryPolicy>) -> NodeHandle<NI, NO>
    where
        N: Node<NI, NO> + 'static,
        NI: Clone + Send + 'static,
        NO: Clone + Send + 'static,
    {
        let index = self.slots.len();
        self.slots.push(Slot {
            name: node.name().to_owned(),
            node: Some(Arc::new(Typed {
                node,
                types: PhantomData,
            })),
            retry,
            transitions: Vec::new(),
        });
        NodeHandle {
            builder: self.id,
            index,
            types: PhantomData,
        }
    }

    /// A static edge: after `from`, always go to `to`. Several edges from one node fan out.
    pub(crate) fn edge<A, T>(
        &mut self,
        from: NodeHandle<A, T>,
        to: impl Into<EdgeTarget<T>>,
    ) -> &mut Self {
        let to = to.into();
        if self.check(from.builder, from.index) && self.check_target(to.builder, to.index) {
            self.slots[from.index]
                .transitions
                .push(Transition::Static(to.index));
        }
        self
    }

    /// A dynamic edge: after `from`, `router` looks at the output and names the next node, or
    /// `None` for no transition from this router.
    pub(crate) fn route<A, T>(
        &mut self,
        from: NodeHandle<A, T>,
        router: impl Fn(&T) -> Option<EdgeTarget<T>> + Send + Sync + 'static,
    ) -> &mut Self
    where
        T: 'static,
    {
        if self.check(from.builder, from.index) {
            let router: Router = Arc::new(move |value| {
                value
                    .downcast_ref::<T>()
                    .and_then(&router)
                    .map(|target| (target.builder, target.index))
            });
            self.slots[from.index]
                .transitions
                .push(Transition::Dynamic(router));
        }
        self
    }

    fn check(&mut self, builder: u64, index: usize) -> bool {
        if builder != self.id || index >= self.slots.len() {
            self.errors.push(GraphBuildError::ForeignNode {
                graph: self.name.clone(),
            });
            return false;
        }
        true
    }

    fn check_target(&mut self, builder: u64, index: usize) -> bool {
        if !self.check(builder, index) {
            return false;
        }
        if index == START {
            self.errors
                .push(GraphBuildError::EdgeIntoStart(self.name.clone()));
            return false;
        }
        true
    }

    /// Checks the graph and freezes it.
    pub(crate) fn build(mut self) -> Result<Graph<I, O>, GraphBuildError> {
        if let Some(error) = self.errors.drain(..).next() {
            return Err(error);
        }
        if self.slots[START].transitions.is_empty() {
            return Err(GraphBuildError::NoStartEdge(self.name));
        }
        Ok(Graph::new(
            self.name,
            self.id,
            self.slots.into(),
            self.retry,
        ))
    }
}
