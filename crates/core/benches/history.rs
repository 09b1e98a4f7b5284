//! The history of file changes: what a checkpoint adds to an `EditFile` of a 100 KB file
//! through the whole gate (the same call with and without a history, medians compared), and
//! the undo of a 50-file batch of changes (as a turn's: newest first, each recorded).
//!
//! Run: `cargo bench -p souz-core --features test-support --bench history`. Budgets: overhead
//! under 1 ms (median), undo of 50 files under 100 ms.

// A benchmark fails loudly on setup errors.
#![allow(clippy::expect_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use souz_core::history::undo::UndoOrder;
use souz_core::history::{History, Limits};
use souz_core::testing::{TestGate, TestHome};
use souz_core::tools::gate::CallRequest;
use souz_protocol::history::UndoSelection;
use souz_protocol::{Action, Requester, ToolCallStatus};

const SAMPLES: usize = 200;

struct Bench {
    stack: TestGate,
    history: Option<History>,
    root: PathBuf,
}

async fn bench(with_history: bool) -> Bench {
    let home = TestHome::new();
    let mut config = TestHome::template_config(home.paths());
    config.approvals.write = Action::Allow;
    config.approvals.delete = Action::Allow;
    let stack = TestGate::start(home, config, TestGate::builtin_catalog()).await;
    let history = with_history.then(|| {
        let limits = Limits {
            keep_days: 30,
            max_bytes: 1 << 30,
            max_file_bytes: 64 << 20,
        };
        let history =
            History::open(stack.store.clone(), stack.config.paths.home(), limits).expect("history");
        stack.gate.set_history(history.clone());
        history
    });
    let root = stack.config.paths.user_home().join("w");
    std::fs::create_dir_all(&root).expect("folder");
    Bench {
        stack,
        history,
        root,
    }
}

/// A 100 KB text file whose first line is `marker`.
fn content(marker: &str) -> String {
    let mut text = format!("{marker}\n");
    while text.len() < 100_000 {
        text.push_str("a line of ordinary text in a file someone edits now and then\n");
    }
    text
}

async fn edit(bench: &Bench, name: &str, from: &str, to: &str) -> Duration {
    let started = Instant::now();
    let state = bench
        .stack
        .gate
        .call(CallRequest {
            tool: "EditFile".into(),
            arguments: json!({"path": format!("~/w/{name}"), "oldString": from, "newString": to}),
            requester: Requester::Cli,
        })
        .await
        .expect("call");
    let elapsed = started.elapsed();
    assert_eq!(
        state.status,
        ToolCallStatus::Succeeded,
        "{:?}",
        state.result
    );
    elapsed
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn edit_medians() -> (Duration, Duration) {
    let mut medians = Vec::new();
    for with_history in [false, true] {
        let bench = bench(with_history).await;
        std::fs::write(bench.root.join("big.txt"), content("marker-0")).expect("file");
        let mut samples = Vec::with_capacity(SAMPLES);
        for index in 0..SAMPLES {
            let (from, to) = (format!("marker-{index}"), format!("marker-{}", index + 1));
            samples.push(edit(&bench, "big.txt", &from, &to).await);
        }
        medians.push(median(samples));
    }
    (medians[0], medians[1])
}

/// Edits 50 files (untimed), then times the undo of all 50 changes.
async fn undo_fifty(bench: &Bench, round: usize) -> Duration {
    let since = chrono::Utc::now() - chrono::Duration::milliseconds(1);
    for file in 0..50 {
        let name = format!("f{file}.txt");
        if round == 0 {
            std::fs::write(bench.root.join(&name), content("start")).expect("file");
        }
        edit(bench, &name, "start", "changed").await;
    }
    let history = bench.history.as_ref().expect("history");
    let started = Instant::now();
    let report = history
        .undo(
            bench.stack.gate.sandbox(),
            UndoOrder {
                selection: UndoSelection::Since {
                    since,
                    client: None,
                },
                force: false,
                requester: Requester::Cli,
            },
        )
        .await
        .expect("undo");
    let elapsed = started.elapsed();
    assert_eq!(report.undone.len(), 50, "{report:?}");
    elapsed
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (without, with) = runtime.block_on(edit_medians());
    println!(
        "EditFile of a 100 KB file through the gate, median of {SAMPLES}: without history \
         {without:?}, with history {with:?}, checkpoint overhead {:?} (budget < 1 ms)",
        with.saturating_sub(without)
    );
    let undo_bench = runtime.block_on(bench(true));
    let mut undo_samples = Vec::new();
    for round in 0..10 {
        undo_samples.push(runtime.block_on(undo_fifty(&undo_bench, round)));
    }
    println!(
        "undo of 50 changed files, median of 10: {:?} (budget < 100 ms)",
        median(undo_samples)
    );

    let mut group = c.benchmark_group("history");
    group.sample_size(30);
    for with_history in [false, true] {
        let bench = runtime.block_on(bench(with_history));
        std::fs::write(bench.root.join("big.txt"), content("marker-0")).expect("file");
        let counter = std::cell::Cell::new(0usize);
        let name = if with_history {
            "edit_100kb_with_history"
        } else {
            "edit_100kb_without_history"
        };
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_custom(|iterations| {
                let bench = &bench;
                let counter = &counter;
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        let index = counter.get();
                        counter.set(index + 1);
                        let (from, to) =
                            (format!("marker-{index}"), format!("marker-{}", index + 1));
                        total += edit(bench, "big.txt", &from, &to).await;
                    }
                    total
                }
            });
        });
    }
    group.bench_function("undo_50_files", |b| {
        let round = std::cell::Cell::new(10usize);
        b.to_async(&runtime).iter_custom(|iterations| {
            let undo_bench = &undo_bench;
            let round = &round;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    round.set(round.get() + 1);
                    total += undo_fifty(undo_bench, round.get()).await;
                }
                total
            }
        });
    });
    group.finish();
}

criterion_group!(history_benches, benches);
criterion_main!(history_benches);
