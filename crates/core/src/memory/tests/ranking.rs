//! Lexical ranking on the bilingual recall set (issue 49): same-language recall@5 per language
//! at least 0.95 with no embedder, and the three failures the issue names — common words
//! ("user", «зовут») and recency drowning the fact that matches — asserted directly; and
//! queries that are FTS5 syntax, empty, function words only or a pasted document reaching the
//! index without error and within their bounds.

use crate::memory::model::{Context, Scope};
use crate::memory::recall_set::{RecallSet, recall_at_5, recall_set, store_set};
use crate::memory::{Memory, facts, recall, text};
use crate::testing::TestHome;

/// The floor of same-language lexical recall@5, per language.
const FLOOR: f64 = 0.95;

async fn stored_set() -> (TestHome, Memory, RecallSet) {
    let set = recall_set().unwrap();
    let home = TestHome::new();
    let store = home.store().await;
    store_set(&store, &set).await.unwrap();
    (home, Memory::lexical(store), set)
}

#[tokio::test]
async fn the_recall_set_has_a_hundred_facts_and_queries_in_both_languages() {
    let set = recall_set().unwrap();
    assert!(set.facts.len() >= 100 && set.queries.len() >= 100);
    for language in ["en", "ru"] {
        let facts = set.facts.iter().filter(|f| f.language == language).count();
        let queries = set.queries.iter().filter(|q| q.language == language);
        assert!(facts >= 50, "{language}: {facts} facts");
        assert!(queries.clone().count() >= 50, "{language} queries");
        for query in queries.filter(|query| !query.is_cross(&set)) {
            for expected in &query.expected {
                let fact = set.facts.iter().find(|fact| &fact.id == expected);
                assert!(
                    fact.is_some_and(|fact| fact.language == language),
                    "{}: {expected} is not a fact in {language}",
                    query.text
                );
            }
        }
    }
    let cross = set.queries.iter().filter(|query| query.is_cross(&set));
    assert!(cross.count() >= 60, "cross-language queries");
}

#[tokio::test]
async fn lexical_recall_at_5_reaches_the_floor_in_each_language() {
    let (_home, memory, set) = stored_set().await;
    let figures = recall_at_5(&memory, &set).await.unwrap();
    let (english, russian) = (figures.english.recall(), figures.russian.recall());
    println!(
        "lexical recall@5: en {english:.3} ({}/{}), ru {russian:.3} ({}/{})",
        figures.english.found, figures.english.asked, figures.russian.found, figures.russian.asked
    );
    for missed in &figures.missed {
        println!("missed: {missed}");
    }
    assert!(english >= FLOOR, "en recall@5 {english:.3} < {FLOOR}");
    assert!(russian >= FLOOR, "ru recall@5 {russian:.3} < {FLOOR}");
}

/// The ids of the facts automatic recall chooses for `query`, best first.
async fn chosen(memory: &Memory, query: &str) -> Vec<String> {
    let context = Context {
        owner: "local".into(),
        session: None,
        project: None,
    };
    let (_, selected) = memory.recall(&context, query, 5).await.unwrap();
    selected.into_iter().map(|chosen| chosen.fact.id).collect()
}

#[tokio::test]
async fn a_rare_term_outranks_newer_facts_holding_only_a_common_one() {
    let (_home, memory, _set) = stored_set().await;
    // Sixty facts say "the user", the newest last; one says "coffee".
    let found = chosen(&memory, "user coffee").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("e_coffee"),
        "{found:?}"
    );
    let found = chosen(&memory, "How does the user take their coffee?").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("e_coffee"),
        "{found:?}"
    );
    // Eight facts say «зовут», most of them newer than the dog's.
    let found = chosen(&memory, "как зовут собаку").await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("r_dog"),
        "{found:?}"
    );
}

/// Queries that are FTS5 syntax, empty, only function words, or a pasted document.
fn hostile_queries() -> Vec<String> {
    let mut queries: Vec<String> = [
        "",
        "   ",
        "\"",
        "\"\"\"",
        "*",
        "coffee*",
        "^coffee",
        "title:coffee",
        "NEAR(user coffee)",
        "user OR",
        "AND AND",
        "NOT",
        "-coffee",
        "{terms}: coffee",
        "(((",
        "'; DROP TABLE x; --",
        "coffee\u{0}dog",
        "what is it",
        "как это",
        "the the the",
        "\u{202e}\u{301}",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    queries.push(format!("{} coffee", "the user ".repeat(50_000)));
    queries.push((0..20_000).map(|at| format!("w{at} ")).collect());
    queries
}

#[tokio::test]
async fn hostile_queries_reach_the_index_without_error_and_bounded() {
    let set = recall_set().unwrap();
    let home = TestHome::new();
    let store = home.store().await;
    store_set(&store, &set).await.unwrap();
    for query in hostile_queries() {
        let terms = text::match_terms(&query, 2, recall::MAX_QUERY_TERMS);
        assert!(
            terms.len() <= recall::MAX_QUERY_TERMS,
            "{} terms",
            terms.len()
        );
        let found = store
            .read(move |connection| {
                Ok::<_, crate::store::StoreError>(facts::lexical(
                    connection,
                    "local",
                    &[Scope::global()],
                    &terms,
                    40,
                ))
            })
            .await
            .unwrap();
        assert!(found.is_ok(), "{:.80}: {found:?}", query);
    }
    // Through automatic recall: no error, at most the count; nothing for no words.
    let memory = Memory::lexical(store);
    let context = Context {
        owner: "local".into(),
        session: None,
        project: None,
    };
    for query in hostile_queries() {
        let (_, selected) = memory.recall(&context, &query, 5).await.unwrap();
        assert!(selected.len() <= 5);
        if !query.chars().any(char::is_alphanumeric) {
            assert!(selected.is_empty(), "{query:?}: {selected:?}");
        }
    }
}

#[tokio::test]
async fn a_query_of_function_words_only_ranks_ties_newest_first() {
    let home = TestHome::new();
    let store = home.store().await;
    let memory = Memory::lexical(store);
    for title in ["First", "Second", "Third"] {
        memory
            .create_fact(super::fact(Scope::global(), title, "it is what it is"))
            .await
            .unwrap();
    }
    let context = Context {
        owner: "local".into(),
        session: None,
        project: None,
    };
    let (_, selected) = memory.recall(&context, "what is it", 5).await.unwrap();
    let titles: Vec<&str> = selected.iter().map(|c| c.fact.title.as_str()).collect();
    assert_eq!(titles, ["Third", "Second", "First"]);
}

/// A question in one language whose fact is held only in the other: the lexical source finds
/// only facts sharing its common words ("user"), the dense source finds the fact first with a
/// clear margin (similarities in the narrow band an embedding model gives). The fact must come
/// first: common words are next to no lexical evidence, and the dense margin counts.
#[tokio::test]
async fn a_fact_only_the_dense_source_finds_is_not_crowded_out_by_common_words() {
    let set = recall_set().unwrap();
    let home = TestHome::new();
    let store = home.store().await;
    store_set(&store, &set).await.unwrap();
    let asked = set
        .queries
        .iter()
        .find(|query| query.text == "Who teaches the user English?")
        .unwrap();
    assert!(asked.is_cross(&set));
    let expected = asked.expected[0].clone();
    let text = asked.text.clone();
    let (selected, lexical_found) = store
        .read(move |connection| {
            let context = Context {
                owner: "local".into(),
                session: None,
                project: None,
            };
            let hints = [text.clone()];
            let query = recall::Query {
                context: &context,
                semantic_query: &text,
                lexical_hints: &hints,
                max_facts: 5,
                token_budget: recall::AUTOMATIC_TOKEN_BUDGET,
                scopes: None,
            };
            let lexical = recall::lexical(connection, &query);
            let target = facts::by_ids(connection, &[expected.as_str()])?
                .remove(&expected)
                .unwrap();
            #[allow(clippy::cast_precision_loss)] // small numbers
            let dense: Vec<_> = std::iter::once((target, 0.88))
                .chain(
                    lexical
                        .iter()
                        .enumerate()
                        .map(|(at, (fact, _))| (fact.clone(), 0.80 - 0.001 * at as f64)),
                )
                .collect();
            let found = lexical.len();
            let started = recall::Started {
                lexical: || lexical,
                dense: |_: &rusqlite::Connection| Ok(dense),
            };
            let (selected, _) = recall::select(connection, &query, started)?;
            Ok::<_, crate::store::StoreError>((selected, found))
        })
        .await
        .unwrap();
    assert!(
        lexical_found >= 5,
        "facts sharing \"user\": {lexical_found}"
    );
    let titles: Vec<&str> = selected
        .iter()
        .map(|chosen| chosen.fact.title.as_str())
        .collect();
    assert_eq!(
        selected[0].fact.id, asked.expected[0],
        "the fact the dense source found first: {titles:?}"
    );
}
