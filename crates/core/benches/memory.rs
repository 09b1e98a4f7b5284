//! Recall latency over 10k and 100k stored facts, inside the daemon's code path (SQLite reads,
//! FTS5, cosine over stored vectors, fusion; the retrieval-stats write runs in the background),
//! excluding the cost of embedding the query: the query vector comes from the hash embedder
//! (microseconds). Facts and queries draw from a 5,000-word vocabulary skewed towards common
//! words, a third of their words function words ("the", "my", "и", "что").
//!
//! - `recall/lexical/N`: automatic recall with no embedder (exact, lexical, priority).
//! - `recall/dense384/N`: the same with 384-dimension vectors stored for every fact.
//!
//! Besides criterion's estimates, each case prints p50 and p95 over 200 recalls of varied
//! queries. First, the bench prints recall quality: lexical recall@5 per language on the
//! bilingual recall set (`memory::recall_set`, the figure its test holds at 0.95 or more). Run with `CARGO_PROFILE_BENCH_LTO=false CARGO_PROFILE_BENCH_CODEGEN_UNITS=16 cargo bench
//! -p souz-core --features test-support --bench memory` (`-- lexical/10000` for one case).

#![allow(clippy::expect_used, clippy::panic, clippy::print_stdout)] // a benchmark may stop loudly

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use souz_core::memory::embedder::HashEmbedder;
use souz_core::memory::model::{Context, Fact, Kind, Retention, Scope, Status, content_hash};
use souz_core::memory::{Embedder, Memory, MemoryParts, NoWriter, facts, recall_set, vectors};
use souz_core::store::{Store, StoreError};

/// Real words mixed into the vocabulary (English and Russian, so both stemmers run).
const COMMON: &[&str] = &[
    "tea",
    "coffee",
    "project",
    "deploy",
    "release",
    "python",
    "rust",
    "meeting",
    "friday",
    "berlin",
    "moscow",
    "kazan",
    "editor",
    "helix",
    "vim",
    "server",
    "backup",
    "invoice",
    "doctor",
    "dentist",
    "birthday",
    "mother",
    "garden",
    "bicycle",
    "marathon",
    "budget",
    "report",
    "quarterly",
    "recipe",
    "pasta",
    "flight",
    "hotel",
    "passport",
    "insurance",
    "кошка",
    "собака",
    "работа",
    "отпуск",
    "встреча",
    "проект",
    "язык",
    "книга",
    "музыка",
    "погода",
    "машина",
    "ремонт",
    "квартира",
    "школа",
    "университет",
    "команда",
    "релиз",
];
/// Function words, a third of every text as in real notes and questions (recall must not let
/// them match everything).
const FUNCTION: &[&str] = &[
    "the", "a", "is", "my", "of", "to", "and", "in", "for", "with", "what", "that", "it", "on",
    "и", "в", "не", "на", "что", "мой", "моя", "с", "по", "это",
];
/// Syllables the synthetic words are made of.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "sa", "tor", "vel", "un", "bri", "da", "fen", "gor", "hil", "jo",
    "mar", "nes", "pol", "qui", "ras", "tel", "ver", "wen", "xo", "zan", "ко", "ла", "ми", "ран",
];
/// Distinct words in the vocabulary: a person's notes use thousands, not dozens.
const VOCABULARY: usize = 5_000;
const DIMENSION: usize = 384;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (self.0 >> 33) as usize
    }

    /// `count` content words of `vocabulary`, skewed towards its start (the smallest of three
    /// uniform draws), as word frequencies in real text are, with a function word after every
    /// second one.
    fn words(&mut self, vocabulary: &[String], count: usize) -> String {
        let mut text: Vec<&str> = Vec::new();
        for at in 0..count {
            let draw = (0..3)
                .map(|_| self.next() % vocabulary.len())
                .min()
                .unwrap_or(0);
            text.push(vocabulary[draw].as_str());
            if at % 2 == 1 {
                text.push(FUNCTION[self.next() % FUNCTION.len()]);
            }
        }
        text.join(" ")
    }
}

/// The common words, then synthetic ones of two to four syllables, `VOCABULARY` in all.
fn vocabulary() -> Vec<String> {
    let mut random = Lcg(3);
    let mut words: Vec<String> = COMMON.iter().map(|word| (*word).to_owned()).collect();
    let mut seen: std::collections::HashSet<String> = words.iter().cloned().collect();
    while words.len() < VOCABULARY {
        let syllables = 2 + random.next() % 3;
        let word: String = (0..syllables)
            .map(|_| SYLLABLES[random.next() % SYLLABLES.len()])
            .collect();
        if seen.insert(word.clone()) {
            words.push(word);
        }
    }
    words
}

fn fact(index: usize, random: &mut Lcg, vocabulary: &[String]) -> Fact {
    let title = format!("{} {index}", random.words(vocabulary, 3));
    let body = random.words(vocabulary, 14);
    let scope = if index.is_multiple_of(10) {
        Scope::session(&format!("chat-{}", index % 50))
    } else {
        Scope::global()
    };
    Fact {
        id: uuid::Uuid::now_v7().to_string(),
        owner: "local".into(),
        retention: if scope.kind == "session" {
            Retention::SessionLifetime
        } else {
            Retention::Durable
        },
        scope,
        kind: Kind::Semantic,
        content_hash: content_hash(Kind::Semantic, None, &title, &body),
        title,
        body,
        canonical_key: None,
        status: Status::Active,
        confidence: 0.8,
        importance: 0.5,
        pinned: index.is_multiple_of(1000),
        created_by: "writer".into(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: format!("2026-01-01T00:00:{:02}.000Z", index % 60),
        supersedes_fact_id: None,
    }
}

async fn populate(store: &Store, count: usize, embedder: Option<HashEmbedder>) {
    let mut random = Lcg(7);
    let vocabulary = vocabulary();
    let batch = 5_000;
    for start in (0..count).step_by(batch) {
        let mut batch_facts: Vec<Fact> = (start..(start + batch).min(count))
            .map(|index| fact(index, &mut random, &vocabulary))
            .collect();
        let embedder = embedder.clone();
        store
            .write(move |tx| {
                for fact in &mut batch_facts {
                    facts::insert(tx, fact, &[])?;
                    if let Some(embedder) = &embedder {
                        let vector = embedder.vector(&vectors::embedding_text(fact));
                        vectors::store_vector(
                            tx,
                            &fact.id,
                            embedder.model(),
                            &fact.content_hash,
                            &vector,
                        )?;
                    }
                }
                Ok::<_, StoreError>(())
            })
            .await
            .expect("populate");
    }
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.95))
}

/// Prints recall@5 on the bilingual recall set: lexical (no embedder) per language and
/// cross-language, then with the multilingual model (fused, as a turn recalls) when this machine
/// has it (`recall_set::multilingual`), or says plainly that it does not.
fn print_recall_quality(runtime: &tokio::runtime::Runtime) {
    let set = recall_set::recall_set().expect("the recall set");
    let dir = tempfile::tempdir().expect("tempdir");
    let figures = runtime.block_on(async {
        let store = Store::open(dir.path().join("souz.db"))
            .await
            .expect("store");
        recall_set::store_set(&store, &set)
            .await
            .expect("store the set");
        recall_set::recall_at_5(&Memory::lexical(store), &set)
            .await
            .expect("recall")
    });
    print_figures(&format!("lexical ({} facts)", set.facts.len()), &figures);
    for missed in &figures.missed {
        println!("  missed: {missed}");
    }
    let source = match recall_set::multilingual() {
        Ok(source) => source,
        Err(why) => {
            println!("recall quality with the multilingual model: not measured: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let figures = runtime.block_on(async {
        let store = Store::open(dir.path().join("souz.db"))
            .await
            .expect("store");
        let embedder = source.embedder().expect("the multilingual embedder");
        recall_set::embed_set(&store, &set, embedder.as_ref())
            .await
            .expect("embed the set");
        let memory = Memory::new(MemoryParts {
            store,
            embedder: Some(embedder),
            writer: Arc::new(NoWriter),
        });
        recall_set::recall_at_5(&memory, &set)
            .await
            .expect("recall")
    });
    print_figures(&format!("with {}", source.describe()), &figures);
    for missed in figures.missed.iter().chain(&figures.missed_cross) {
        println!("  missed: {missed}");
    }
}

/// One line of recall@5 figures.
fn print_figures(what: &str, figures: &recall_set::Figures) {
    let overall = figures.overall();
    println!(
        "recall quality {what}: recall@5 en {:.3} ({}/{}), ru {:.3} ({}/{}), cross-language \
         {:.3} ({}/{}), overall {:.3} ({}/{})",
        figures.english.recall(),
        figures.english.found,
        figures.english.asked,
        figures.russian.recall(),
        figures.russian.found,
        figures.russian.asked,
        figures.cross.recall(),
        figures.cross.found,
        figures.cross.asked,
        overall.recall(),
        overall.found,
        overall.asked,
    );
}

fn bench_recall(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    print_recall_quality(&runtime);
    let mut group = c.benchmark_group("recall");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    // A name filter (`cargo bench ... -- lexical/10000`) also skips populating other cases.
    let filter: Option<String> = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    for count in [10_000, 100_000] {
        for dense in [false, true] {
            let name = format!("{}/{count}", if dense { "dense384" } else { "lexical" });
            if filter
                .as_deref()
                .is_some_and(|filter| !name.contains(filter))
            {
                continue;
            }
            let dir = tempfile::tempdir().expect("tempdir");
            let (memory, _store) = runtime.block_on(async {
                let store = Store::open(dir.path().join("souz.db"))
                    .await
                    .expect("store");
                let embedder = dense.then(|| HashEmbedder::new(DIMENSION));
                populate(&store, count, embedder.clone()).await;
                let memory = Memory::new(MemoryParts {
                    store: store.clone(),
                    embedder: embedder.map(|e| Arc::new(e) as Arc<dyn Embedder>),
                    writer: Arc::new(NoWriter),
                });
                (memory, store)
            });
            let context = Context {
                owner: "local".into(),
                session: Some("chat-3".into()),
                project: None,
            };
            let mut random = Lcg(99);
            let vocabulary = vocabulary();
            let queries: Vec<String> = (0..200).map(|_| random.words(&vocabulary, 4)).collect();
            let samples: Vec<Duration> = runtime.block_on(async {
                let mut samples = Vec::new();
                for query in &queries {
                    let started = Instant::now();
                    memory.recall(&context, query, 8).await.expect("recall");
                    samples.push(started.elapsed());
                }
                samples
            });
            let (p50, p95) = percentiles(samples);
            println!(
                "recall/{name}: p50 {p50:?}, p95 {p95:?} over {} queries",
                queries.len()
            );
            let mut next = 0;
            group.bench_function(&name, |b| {
                b.to_async(&runtime).iter(|| {
                    next = (next + 1) % queries.len();
                    let query = queries[next].clone();
                    let memory = memory.clone();
                    let context = context.clone();
                    async move { memory.recall(&context, &query, 8).await.expect("recall") }
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_recall);
criterion_main!(benches);
