//! Graph semantics: edges, fan-out order, nesting, retries, cancellation, max steps.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;

type Log = Arc<Mutex<Vec<String>>>;
type TagFn =
    dyn Fn(Vec<String>) -> futures::future::Ready<Result<Vec<String>, BoxError>> + Send + Sync;

/// A node that appends its name to a shared log and to the context.
fn tag(name: &'static str, log: &Log) -> FnNode<Box<TagFn>> {
    let log = Arc::clone(log);
    let function: Box<TagFn> = Box::new(move |mut trail: Vec<String>| {
        log.lock().unwrap().push(name.to_owned());
        trail.push(name.to_owned());
        futures::future::ready(Ok(trail))
    });
    node_fn(name, function)
}

fn traced(log: &Log) -> RunOptions {
    let log = Arc::clone(log);
    RunOptions::default().on_step(move |step| {
        log.lock().unwrap().push(format!(
            "step {} {} depth {} attempts {}",
            step.info.index, step.info.node, step.info.depth, step.info.attempts
        ));
    })
}

#[derive(Debug, thiserror::Error)]
#[error("flaky: {0}")]
struct Flaky(u32);

#[derive(Debug, thiserror::Error)]
#[error("fatal")]
struct Fatal;

#[tokio::test]
async fn static_edges_run_in_order_and_reach_the_exit() {
    let log = Log::default();
    let mut builder = GraphBuilder::<Vec<String>, Vec<String>>::new("line");
    let a = builder.add(tag("a", &log));
    let b = builder.add(tag("b", &log));
    builder.edge(builder.start(), a);
    builder.edge(a, b);
    builder.edge(b, builder.exit());
    let graph = builder.build().unwrap();
    let out = graph
        .run(vec!["in".into()], RunOptions::default())
        .await
        .unwrap();
    assert_eq!(out, ["in", "a", "b"]);
}

#[tokio::test]
async fn dynamic_edges_route_on_the_output_and_can_loop() {
    let mut builder = GraphBuilder::<u32, String>::new("counter");
    let increment = builder.add(node_fn("increment", |n: u32| async move { Ok(n + 1) }));
    let render = builder.add(node_fn(
        "render",
        |n: u32| async move { Ok(format!("n={n}")) },
    ));
    builder.edge(builder.start(), increment);
    let (again, done) = (increment.target(), render.target());
    builder.route(increment, move |n: &u32| {
        Some(if *n < 5 { again } else { done })
    });
    builder.edge(render, builder.exit());
    let graph = builder.build().unwrap();
    assert_eq!(graph.run(0, RunOptions::default()).await.unwrap(), "n=5");
    assert_eq!(graph.run(7, RunOptions::default()).await.unwrap(), "n=8");
}

#[tokio::test]
async fn fan_out_is_fifo_and_the_first_branch_at_the_exit_wins() {
    // start -> a, b (fan-out); a -> c -> exit; b -> d -> e.
    // FIFO: a and b run before c and d; d was queued ahead of c's exit frame, so it runs; e is
    // queued behind the exit frame, which ends the run first.
    let log = Log::default();
    let mut builder = GraphBuilder::<Vec<String>, Vec<String>>::new("fan");
    let a = builder.add(tag("a", &log));
    let b = builder.add(tag("b", &log));
    let c = builder.add(tag("c", &log));
    let d = builder.add(tag("d", &log));
    let e = builder.add(tag("e", &log));
    builder.edge(builder.start(), a);
    builder.edge(builder.start(), b);
    builder.edge(a, c);
    builder.edge(b, d);
    builder.edge(c, builder.exit());
    builder.edge(d, e); // queued behind the exit frame: never runs
    let graph = builder.build().unwrap();
    let out = graph.run(Vec::new(), RunOptions::default()).await.unwrap();
    assert_eq!(out, ["a", "c"], "the exit gets the branch that reached it");
    assert_eq!(*log.lock().unwrap(), ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn the_same_next_node_twice_in_one_step_runs_once() {
    let log = Log::default();
    let mut builder = GraphBuilder::<Vec<String>, Vec<String>>::new("dedupe");
    let a = builder.add(tag("a", &log));
    let b = builder.add(tag("b", &log));
    builder.edge(builder.start(), a);
    builder.edge(a, b);
    let b_target = b.target();
    builder.route(a, move |_| Some(b_target));
    builder.edge(b, builder.exit());
    let graph = builder.build().unwrap();
    graph.run(Vec::new(), RunOptions::default()).await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["a", "b"]);
}

#[tokio::test]
async fn nested_graphs_share_the_step_counter_and_report_their_depth() {
    let log = Log::default();
    let mut inner = GraphBuilder::<Vec<String>, Vec<String>>::new("inner");
    let x = inner.add(tag("x", &log));
    let y = inner.add(tag("y", &log));
    inner.edge(inner.start(), x);
    inner.edge(x, y);
    inner.edge(y, inner.exit());
    let inner = inner.build().unwrap();

    let mut outer = GraphBuilder::<Vec<String>, usize>::new("outer");
    let a = outer.add(tag("a", &log));
    let nested = outer.add(inner);
    let count = outer.add(node_fn("count", |trail: Vec<String>| async move {
        Ok(trail.len())
    }));
    outer.edge(outer.start(), a);
    outer.edge(a, nested);
    outer.edge(nested, count);
    outer.edge(count, outer.exit());
    let graph = outer.build().unwrap();

    let trace = Log::default();
    let out = graph.run(Vec::new(), traced(&trace)).await.unwrap();
    assert_eq!(out, 3);
    assert_eq!(
        *trace.lock().unwrap(),
        [
            "step 0 a depth 0 attempts 1",
            "step 2 x depth 1 attempts 1",
            "step 3 y depth 1 attempts 1",
            "step 1 inner depth 0 attempts 1",
            "step 4 count depth 0 attempts 1",
        ]
    );
}

#[tokio::test]
async fn retries_follow_the_policy_and_the_trace_counts_attempts() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let mut builder = GraphBuilder::<u32, u32>::new("retry")
        .retry_policy(RetryPolicy::attempts(3).when(|error, _| error.is::<Flaky>()));
    let flaky = builder.add(node_fn("flaky", move |n: u32| {
        let call = counter.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if call < 3 {
                Err(Box::new(Flaky(call)) as BoxError)
            } else {
                Ok(n * 10)
            }
        }
    }));
    builder.edge(builder.start(), flaky);
    builder.edge(flaky, builder.exit());
    let graph = builder.build().unwrap();
    let trace = Log::default();
    assert_eq!(graph.run(4, traced(&trace)).await.unwrap(), 40);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(*trace.lock().unwrap(), ["step 0 flaky depth 0 attempts 3"]);
}

#[tokio::test]
async fn errors_the_policy_rejects_fail_at_once_with_the_last_good_context() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let mut builder = GraphBuilder::<u32, u32>::new("fatal")
        .retry_policy(RetryPolicy::attempts(5).when(|error, _| error.is::<Flaky>()));
    let double = builder.add(node_fn("double", |n: u32| async move { Ok(n * 2) }));
    let fail = builder.add(node_fn("fail", move |_: u32| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Err::<u32, BoxError>(Box::new(Fatal)) }
    }));
    builder.edge(builder.start(), double);
    builder.edge(double, fail);
    builder.edge(fail, builder.exit());
    let graph = builder.build().unwrap();
    let error = graph.run(21, RunOptions::default()).await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    match &error {
        GraphError::Node {
            node,
            attempts,
            source,
            ..
        } => {
            assert_eq!(node, "fail");
            assert_eq!(*attempts, 1);
            assert!(source.is::<Fatal>());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(error.last_context().node(), "double");
    assert_eq!(error.into_last_context().downcast::<u32>().unwrap(), 42);
}

#[tokio::test]
async fn cancellation_reported_by_a_node_is_never_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let mut builder =
        GraphBuilder::<u32, u32>::new("no-retry").retry_policy(RetryPolicy::attempts(5));
    let node = builder.add(node_fn("gives-up", move |_: u32| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Err::<u32, BoxError>(Box::new(Cancelled)) }
    }));
    builder.edge(builder.start(), node);
    builder.edge(node, builder.exit());
    let graph = builder.build().unwrap();
    let error = graph.run(1, RunOptions::default()).await.unwrap_err();
    assert!(matches!(error, GraphError::Cancelled { .. }), "{error:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(error.into_last_context().downcast::<u32>().unwrap(), 1);
}

#[tokio::test]
async fn cancelling_a_run_aborts_the_running_node_and_keeps_the_last_good_context() {
    let cancel = CancellationToken::new();
    let finished = Arc::new(AtomicU32::new(0));
    let finished_in_node = Arc::clone(&finished);
    let mut inner = GraphBuilder::<String, String>::new("inner");
    let slow = inner.add(node_fn("slow", move |text: String| {
        let finished = Arc::clone(&finished_in_node);
        async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            Ok(text)
        }
    }));
    inner.edge(inner.start(), slow);
    inner.edge(slow, inner.exit());
    let inner = inner.build().unwrap();

    let mut outer =
        GraphBuilder::<String, String>::new("outer").retry_policy(RetryPolicy::attempts(3));
    let first = outer.add(node_fn("first", |text: String| async move {
        Ok(format!("{text}+first"))
    }));
    let nested = outer.add(inner);
    outer.edge(outer.start(), first);
    outer.edge(first, nested);
    outer.edge(nested, outer.exit());
    let graph = outer.build().unwrap();

    let trigger = cancel.clone();
    crate::tasks::spawn_in_test(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let began = std::time::Instant::now();
    let error = graph
        .run("ctx".to_owned(), RunOptions::default().cancel(cancel))
        .await
        .unwrap_err();
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "cancellation must not wait for the node"
    );
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    let GraphError::Cancelled {
        graph,
        last_context,
    } = error
    else {
        panic!("expected cancellation");
    };
    assert_eq!(graph, "outer");
    assert_eq!(last_context.node(), "first");
    assert_eq!(last_context.downcast::<String>().unwrap(), "ctx+first");
}

#[tokio::test]
async fn a_run_cancelled_before_it_starts_runs_nothing() {
    let log = Log::default();
    let mut builder = GraphBuilder::<Vec<String>, Vec<String>>::new("never");
    let a = builder.add(tag("a", &log));
    builder.edge(builder.start(), a);
    builder.edge(a, builder.exit());
    let graph = builder.build().unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = graph
        .run(vec!["input".into()], RunOptions::default().cancel(cancel))
        .await
        .unwrap_err();
    assert!(log.lock().unwrap().is_empty());
    let context = error.into_last_context();
    assert_eq!(context.node(), "never::start");
    assert_eq!(context.downcast::<Vec<String>>().unwrap(), ["input"]);
}

#[tokio::test]
async fn a_loop_stops_at_max_steps_even_inside_a_nested_graph() {
    let mut inner = GraphBuilder::<u64, u64>::new("spin");
    let step = inner.add(node_fn("step", |n: u64| async move { Ok(n + 1) }));
    inner.edge(inner.start(), step);
    let again = step.target();
    inner.route(step, move |_| Some(again));
    let inner = inner.build().unwrap();

    let mut outer = GraphBuilder::<u64, u64>::new("outer").retry_policy(RetryPolicy::attempts(3));
    let nested = outer.add(inner);
    outer.edge(outer.start(), nested);
    outer.edge(nested, outer.exit());
    let graph = outer.build().unwrap();

    let error = graph
        .run(0, RunOptions::default().max_steps(25))
        .await
        .unwrap_err();
    let GraphError::MaxSteps {
        graph, max_steps, ..
    } = &error
    else {
        panic!("expected max steps, got {error:?}");
    };
    assert_eq!((graph.as_str(), *max_steps), ("outer", 25));

    // The default limit applies without options.
    let mut builder = GraphBuilder::<u64, u64>::new("forever");
    let step = builder.add(node_fn("step", |n: u64| async move { Ok(n + 1) }));
    builder.edge(builder.start(), step);
    builder.edge(step, step);
    let forever = builder.build().unwrap();
    let error = forever.run(0, RunOptions::default()).await.unwrap_err();
    assert!(matches!(
        error,
        GraphError::MaxSteps {
            max_steps: DEFAULT_MAX_STEPS,
            ..
        }
    ));
    assert_eq!(
        error.into_last_context().downcast::<u64>().unwrap(),
        DEFAULT_MAX_STEPS as u64
    );
}

#[tokio::test]
async fn ending_in_leaves_without_the_exit_is_an_error() {
    let log = Log::default();
    let mut builder = GraphBuilder::<Vec<String>, Vec<String>>::new("leafy");
    let a = builder.add(tag("a", &log));
    builder.edge(builder.start(), a);
    builder.route(a, |_| None);
    let graph = builder.build().unwrap();
    let error = graph
        .run(Vec::new(), RunOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, GraphError::ExitNotReached { .. }));
    assert!(error.to_string().contains("last step: `a`"), "{error}");
}

#[test]
fn build_errors_are_explicit() {
    let builder = GraphBuilder::<u8, u8>::new("empty");
    assert_eq!(
        builder.build().unwrap_err(),
        GraphBuildError::NoStartEdge("empty".into())
    );

    let mut other = GraphBuilder::<u8, u8>::new("other");
    let foreign = other.add(node_fn("n", |n: u8| async move { Ok(n) }));
    let mut builder = GraphBuilder::<u8, u8>::new("mine");
    builder.edge(builder.start(), foreign);
    assert!(matches!(
        builder.build().unwrap_err(),
        GraphBuildError::ForeignNode { .. }
    ));

    let mut builder = GraphBuilder::<u8, u8>::new("loop-to-start");
    let n = builder.add(node_fn("n", |n: u8| async move { Ok(n) }));
    builder.edge(builder.start(), n);
    builder.edge(n, builder.start());
    assert_eq!(
        builder.build().unwrap_err(),
        GraphBuildError::EdgeIntoStart("loop-to-start".into())
    );
}

/// The module's example: a nested graph, a retry policy, a route on a node's output and a step
/// callback, run end to end.
#[tokio::test]
async fn a_pipeline_nests_retries_and_routes() {
    // A nested graph: trims its input.
    let mut inner = GraphBuilder::<String, String>::new("clean");
    let trim = inner.add(node_fn("trim", |text: String| async move {
        Ok(text.trim().to_owned())
    }));
    inner.edge(inner.start(), trim);
    inner.edge(trim, inner.exit());
    let clean = inner.build().unwrap();

    // The outer graph: clean, count words, then route on the count.
    let mut outer =
        GraphBuilder::<String, String>::new("pipeline").retry_policy(RetryPolicy::attempts(2));
    let clean = outer.add(clean);
    let count = outer.add(node_fn("count", |text: String| async move {
        Ok(text.split_whitespace().count())
    }));
    let short = outer.add(node_fn("short", |n: usize| async move {
        Ok(format!("{n} word(s)"))
    }));
    let long = outer.add(node_fn("long", |n: usize| async move {
        Ok(format!("{n} words!"))
    }));
    outer.edge(outer.start(), clean);
    outer.edge(clean, count);
    let (short_target, long_target) = (short.target(), long.target());
    outer.route(count, move |n: &usize| {
        Some(if *n < 3 { short_target } else { long_target })
    });
    outer.edge(short, outer.exit());
    outer.edge(long, outer.exit());
    let pipeline = outer.build().unwrap();

    let steps = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = steps.clone();
    let options = RunOptions::default()
        .on_step(move |step| seen.lock().unwrap().push(step.info.node.clone()));
    let answer = pipeline
        .run("  to be or not  ".to_owned(), options)
        .await
        .unwrap();
    assert_eq!(answer, "4 words!");
    assert_eq!(*steps.lock().unwrap(), ["trim", "clean", "count", "long"]);
}
