//! Scheduled runs (issue 40, Performance) with 10,000 schedules in a real SQLite database:
//!
//! - `schedules/next_fires/10000` (criterion): computing the next fire of all 10,000 (parse
//!   the cron in its zone, find the first fire after where deciding got to), as an engine
//!   does once under new rules (an upgrade). Printed too: an engine's whole start over them
//!   after a change of `config.toml` (the cached next fires read and indexed; aim < 50 ms),
//!   and under new rules (read, compute all, write back, index).
//! - Idle wake-ups: an engine with 10,000 schedules, none due for hours, on a manual clock that
//!   counts the sleeps the loop asks for (one per wake-up); the clock is moved through a minute
//!   a second at a time. Aim: 0 wake-ups in the minute. As a check that the counter sees
//!   wake-ups, moving past the earliest fire must count at least one.
//! - RSS growth of an engine loading 10,000 schedules (`/proc/self/statm` before and after).
//!   Aim: < 5 MB.
//! - Fire to first model request: a schedule due in a second, fired by the runtime's engine
//!   on the system clock, runs its prompt against the fake OpenAI-compatible server, which
//!   records when the request arrives; latency = arrival − the occurrence's fire time. Aim:
//!   < 20 ms.
//!
//! Run: `cargo bench -p souz-core --features test-support --bench schedules`.

#![allow(clippy::expect_used, clippy::panic, clippy::print_stdout)] // a benchmark may stop loudly

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use souz_core::chat::ChatUser;
use souz_core::testing::{ScheduleBench, TestRuntime};
use souz_protocol::schedules::{NewSchedule, ScheduleAction};
use souz_testkit::{FakeServer, openai};

const COUNT: usize = 10_000;
/// Fires measured for the latency.
const FIRES: usize = 10;

/// Resident memory of this process in bytes, in all and its anonymous part (`/proc/self/statm`:
/// resident minus shared, i.e. without file pages such as the database SQLite maps; 4 KiB
/// pages).
fn resident_bytes() -> (u64, u64) {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let fields: Vec<u64> = statm
        .split_whitespace()
        .map(|field| field.parse().expect("a number of pages"))
        .collect();
    let (resident, shared) = (fields[1] * 4096, fields[2] * 4096);
    (resident, resident.saturating_sub(shared))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Criterion's case, and the engine start it prints.
fn next_fires(c: &mut Criterion, runtime: &tokio::runtime::Runtime, path: &std::path::Path) {
    let bench = runtime
        .block_on(ScheduleBench::open(path))
        .expect("the database");
    let loaded = runtime.block_on(bench.load()).expect("the schedules");
    assert_eq!(ScheduleBench::next_fires(&loaded), COUNT);
    c.bench_function("schedules/next_fires/10000", |b| {
        b.iter(|| black_box(ScheduleBench::next_fires(black_box(&loaded))));
    });
    // An engine start after a change of `config.toml` (a restart in place) reads the cached
    // next fires; the first start under new rules (an upgrade) computes all of them again and
    // writes them back. Interleaved, five of each.
    let (mut recomputed, mut cached) = (Vec::new(), Vec::new());
    let start = || {
        let started = Instant::now();
        runtime
            .block_on(bench.start_engine())
            .expect("an engine starts");
        started.elapsed().as_secs_f64() * 1000.0
    };
    for _ in 0..5 {
        runtime
            .block_on(bench.forget_rules())
            .expect("rules forgotten");
        recomputed.push(start());
        cached.push(start());
    }
    println!(
        "schedules: engine start over {COUNT} schedules after a config change (read the cached \
         next fires, index): median {:.1} ms of 5",
        median(cached)
    );
    println!(
        "schedules: engine start over {COUNT} schedules under new rules (read, compute every \
         next fire, write back, index): median {:.1} ms of 5",
        median(recomputed)
    );
    runtime.block_on(bench.stop()).expect("stopped");
}

/// Wake-ups of an idle engine over a simulated minute, and its RSS growth.
fn idle_engine(runtime: &tokio::runtime::Runtime, path: &std::path::Path) {
    let bench = runtime
        .block_on(ScheduleBench::open(path))
        .expect("the database");
    let before = resident_bytes();
    runtime
        .block_on(bench.start_engine())
        .expect("an engine starts");
    let settle = |bench: &ScheduleBench| {
        runtime.block_on(async {
            for _ in 0..50 {
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
        bench.sleeps()
    };
    let asleep = settle(&bench);
    let after = resident_bytes();
    assert_eq!(asleep, 1, "the loop sleeps once after starting");
    for _ in 0..60 {
        bench.advance(chrono::Duration::seconds(1));
        settle(&bench);
    }
    let wakes = bench.sleeps() - asleep;
    // The counter sees a wake-up: just past the earliest fire, the loop wakes.
    let loaded = runtime.block_on(bench.load()).expect("the schedules");
    let earliest = ScheduleBench::earliest_fire(&loaded).expect("a fire");
    drop(loaded);
    bench.advance(earliest - bench.now() + chrono::Duration::seconds(1));
    let mut woken = 0;
    for _ in 0..100 {
        woken = settle(&bench) - asleep - wakes;
        if woken > 0 {
            break;
        }
    }
    println!(
        "schedules: idle engine with {COUNT} schedules (next fire hours away): {wakes} wake-ups \
         in a simulated minute (60 one-second steps); {woken} after moving past the earliest fire (check)"
    );
    let megabytes = |from: u64, to: u64| to.saturating_sub(from) as f64 / 1_000_000.0;
    println!(
        "schedules: RSS growth loading {COUNT} schedules into an engine: {:.2} MB in all, \
         {:.2} MB anonymous (the rest: pages of the mapped database file)",
        megabytes(before.0, after.0),
        megabytes(before.1, after.1)
    );
    assert_eq!(wakes, 0, "an idle engine woke during the minute");
    assert!(woken >= 1, "the counter saw no wake-up past a due fire");
    runtime.block_on(bench.stop()).expect("stopped");
}

/// Fire to the first request at the fake provider, for schedules fired by the engine.
fn fire_to_first_request(runtime: &tokio::runtime::Runtime) {
    runtime.block_on(async {
        let provider = FakeServer::start().await;
        let arrivals: Arc<Mutex<Vec<DateTime<Utc>>>> = Arc::default();
        let seen = Arc::clone(&arrivals);
        provider.set_responder(openai::CHAT_PATH, move |_| {
            seen.lock().expect("arrivals").push(Utc::now());
            openai::text(&["Done."])
        });
        let test = TestRuntime::builder()
            .with_llm(&provider)
            .with_config(|config| {
                config.agent.default_agent = "skills".into();
                config.memory.capture = false;
            })
            .start()
            .await;
        let handle = test.handle();
        let user = ChatUser(souz_core::LOCAL_USER.to_owned());
        let mut latencies = Vec::new();
        for index in 0..FIRES {
            let before = arrivals.lock().expect("arrivals").len();
            let schedule = handle
                .create_schedule(
                    &user,
                    NewSchedule {
                        name: format!("Latency {index}"),
                        spec: "in 1 seconds".to_owned(),
                        zone: Some("UTC".to_owned()),
                        action: ScheduleAction::Prompt {
                            prompt: "Say done.".to_owned(),
                            settings: Default::default(),
                        },
                        missed: None,
                        overlap: None,
                        envelope: None,
                        enabled: None,
                    },
                )
                .await
                .expect("a schedule");
            let fire_at = schedule.next_fire.expect("a fire time");
            let mut arrival = None;
            for _ in 0..1000 {
                if let Some(at) = arrivals.lock().expect("arrivals").get(before) {
                    arrival = Some(*at);
                }
                if arrival.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let arrival = arrival.expect("the run reached the provider");
            latencies
                .push((arrival - fire_at).num_microseconds().unwrap_or(i64::MAX) as f64 / 1000.0);
            // Let the run end before the next one.
            for _ in 0..400 {
                let runs = handle
                    .schedule_runs(&user, &schedule.id, 1)
                    .await
                    .expect("runs");
                if runs.items.first().is_some_and(|run| run.state.is_final()) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let worst = latencies.iter().copied().fold(0.0, f64::max);
        println!(
            "schedules: fire to first model request over {FIRES} engine fires: median {:.1} ms, \
             max {worst:.1} ms",
            median(latencies)
        );
        test.shutdown("bench").await.expect("shutdown");
    });
}

fn schedules(c: &mut Criterion) {
    let runtime = tokio_runtime();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("souz.db");
    runtime
        .block_on(ScheduleBench::fill(&path, COUNT))
        .expect("10,000 schedules");
    idle_engine(&runtime, &path);
    next_fires(c, &runtime, &path);
    fire_to_first_request(&runtime);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(5));
    targets = schedules
}
criterion_main!(benches);
