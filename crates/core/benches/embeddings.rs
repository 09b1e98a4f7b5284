//! The local embedding model on this machine's CPU: throughput (texts per second, batches of
//! 32 short facts) and the process's resident memory before loading, with the model loaded,
//! and after it is unloaded. The model is the test model (all-MiniLM-L6-v2, see
//! `souz_core::testing::embedding_model_dir`); threads follow `RAYON_NUM_THREADS`:
//!
//! `RAYON_NUM_THREADS=1 cargo bench -p souz-core --features test-support --bench embeddings`
//! (then `=2`). Prints its figures; no criterion statistics (one measured run of 256 texts).

#![allow(clippy::expect_used, clippy::print_stdout)] // a benchmark may stop loudly

use std::time::{Duration, Instant};

use souz_core::memory::local::{LocalEmbedder, LocalOptions, profile};
use souz_core::memory::{EmbedRole, Embedder};
use souz_core::testing::embedding_model_dir;

/// Resident memory of this process in MiB (Linux; 0 elsewhere).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

fn texts(count: usize) -> Vec<String> {
    let subjects = [
        "Anna",
        "the team",
        "my brother",
        "Мама",
        "Коллега Игорь",
        "the landlord",
    ];
    let facts = [
        "prefers green tea in the morning and never drinks coffee after noon",
        "moved the quarterly planning meeting to Thursday at ten",
        "is allergic to peanuts and always carries medication",
        "ездит на работу на велосипеде, если нет дождя",
        "просит присылать отчёты до пятницы в формате PDF",
        "keeps the backups of the home server on an external disk",
    ];
    (0..count)
        .map(|at| {
            format!(
                "{} {} (note {at})",
                subjects[at % subjects.len()],
                facts[(at / 6) % facts.len()]
            )
        })
        .collect()
}

fn main() {
    // As `souz serve` does: freed large blocks go back to the system.
    souz_core::host::return_large_blocks();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let before = rss_mib();
        let embedder = LocalEmbedder::new(LocalOptions {
            profile: profile("local/all-minilm-l6-v2").expect("profile"),
            dir: embedding_model_dir(),
            client: None,
            mirror: None,
            idle_unload: Duration::from_secs(3600),
            retry_after: Duration::from_secs(60),
            on_status: None,
        });
        let started = Instant::now();
        embedder
            .embed(vec!["warm up".into()], EmbedRole::Document)
            .await
            .expect("embed");
        let load = started.elapsed();
        let all = texts(256);
        let started = Instant::now();
        for batch in all.chunks(32) {
            embedder
                .embed(batch.to_vec(), EmbedRole::Document)
                .await
                .expect("embed");
        }
        let elapsed = started.elapsed();
        let loaded = rss_mib();
        let started = Instant::now();
        for text in all.iter().take(32) {
            embedder
                .embed(vec![text.clone()], EmbedRole::Query)
                .await
                .expect("embed");
        }
        let single = started.elapsed() / 32;
        embedder.unload();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let unloaded = rss_mib();
        println!(
            "embeddings/{}: load+first {load:?}; {:.1} texts/s in batches of 32; one query {single:?}; \
             RSS before {before:.0} MiB, loaded {loaded:.0} MiB, after unload {unloaded:.0} MiB",
            embedder.model(),
            all.len() as f64 / elapsed.as_secs_f64()
        );
    });
}
