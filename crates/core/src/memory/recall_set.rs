//! The bilingual recall set (issue 49, `fixtures/recall_bilingual.tsv`): over a hundred facts
//! and a hundred queries, English and Russian about half each, every query asking for one
//! fact in its own language. It owns reading the set, storing its facts (each newer than the
//! one before, with importance and confidence varying from fact to fact, so neither recency
//! nor those weights can pass for relevance) and measuring same-language recall@5 per language
//! through automatic recall. The recall test holds the figure to its floor; the memory bench
//! prints it. Test support only.

use super::model::{Context, Fact, Kind, Retention, Scope, Status, content_hash};
use super::{Memory, MemoryError, facts};
use crate::store::{Store, StoreError};

const SET: &str = include_str!("fixtures/recall_bilingual.tsv");

/// One fact of the set.
#[derive(Debug, Clone)]
pub struct SetFact {
    /// Its id (also the stored fact's id).
    pub id: String,
    /// `en` or `ru`.
    pub language: String,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
}

/// One query of the set.
#[derive(Debug, Clone)]
pub struct SetQuery {
    /// `en` or `ru`.
    pub language: String,
    /// The ids of the facts it asks for (any of them counts).
    pub expected: Vec<String>,
    /// What is asked.
    pub text: String,
}

/// The whole set.
#[derive(Debug, Clone)]
pub struct RecallSet {
    /// Its facts, oldest first.
    pub facts: Vec<SetFact>,
    /// Its queries.
    pub queries: Vec<SetQuery>,
}

/// Reads the set; `Err` names the first line it cannot read.
pub fn recall_set() -> Result<RecallSet, String> {
    let mut set = RecallSet {
        facts: Vec::new(),
        queries: Vec::new(),
    };
    for (number, line) in SET.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split('\t').collect::<Vec<_>>().as_slice() {
            ["fact", id, language, title, body] => set.facts.push(SetFact {
                id: (*id).to_owned(),
                language: (*language).to_owned(),
                title: (*title).to_owned(),
                body: (*body).to_owned(),
            }),
            ["query", language, expected, text] => set.queries.push(SetQuery {
                language: (*language).to_owned(),
                expected: expected.split(',').map(str::to_owned).collect(),
                text: (*text).to_owned(),
            }),
            _ => return Err(format!("recall_bilingual.tsv:{}: {line}", number + 1)),
        }
    }
    Ok(set)
}

/// The stored form of the set's `at`-th fact: global, a minute newer than the one before,
/// importance 0.3–0.8 and confidence 0.6–0.9 varying with its place.
fn stored(at: usize, item: &SetFact) -> Fact {
    let minute = at % 60;
    let hour = at / 60;
    let time = format!("2026-01-01T{hour:02}:{minute:02}:00.000Z");
    #[allow(clippy::cast_precision_loss)] // small numbers
    let (importance, confidence) = (0.3 + 0.1 * (at % 6) as f64, 0.6 + 0.1 * (at % 4) as f64);
    Fact {
        id: item.id.clone(),
        owner: "local".into(),
        scope: Scope::global(),
        retention: Retention::Durable,
        kind: Kind::Semantic,
        content_hash: content_hash(Kind::Semantic, None, &item.title, &item.body),
        title: item.title.clone(),
        body: item.body.clone(),
        canonical_key: None,
        status: Status::Active,
        confidence,
        importance,
        pinned: false,
        created_by: "writer".into(),
        created_at: time.clone(),
        updated_at: time,
        supersedes_fact_id: None,
    }
}

/// Stores every fact of `set` for the owner `local`, oldest first.
pub async fn store_set(store: &Store, set: &RecallSet) -> Result<(), StoreError> {
    let mut all: Vec<Fact> = set
        .facts
        .iter()
        .enumerate()
        .map(|(at, item)| stored(at, item))
        .collect();
    store
        .write(move |tx| {
            for fact in &mut all {
                facts::insert(tx, fact, &[])?;
            }
            Ok::<_, StoreError>(())
        })
        .await
}

/// Recall@5 of one language: queries whose fact came among the first five, of how many.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figure {
    /// Queries answered within five facts.
    pub found: usize,
    /// Queries asked.
    pub asked: usize,
}

impl Figure {
    /// The share found (0 when nothing was asked).
    pub fn recall(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // small counts
        if self.asked == 0 {
            0.0
        } else {
            self.found as f64 / self.asked as f64
        }
    }
}

/// Recall@5 per language, and the queries missed (with what came instead).
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// English queries.
    pub english: Figure,
    /// Russian queries.
    pub russian: Figure,
    /// `query -> [titles chosen]` for each query whose fact was not among them.
    pub missed: Vec<String>,
}

/// Asks every query of `set` as a turn's automatic recall of five facts (the person's words as
/// the lexical hint; no embedder, so lexical only) and counts per language.
pub async fn recall_at_5(memory: &Memory, set: &RecallSet) -> Result<Figures, MemoryError> {
    let context = Context {
        owner: "local".into(),
        session: None,
        project: None,
    };
    let mut figures = Figures::default();
    for query in &set.queries {
        let (_, selected) = memory.recall(&context, &query.text, 5).await?;
        let found = selected
            .iter()
            .take(5)
            .any(|chosen| query.expected.contains(&chosen.fact.id));
        let figure = if query.language == "ru" {
            &mut figures.russian
        } else {
            &mut figures.english
        };
        figure.asked += 1;
        if found {
            figure.found += 1;
        } else {
            let titles: Vec<&str> = selected.iter().map(|c| c.fact.title.as_str()).collect();
            figures.missed.push(format!("{} -> {titles:?}", query.text));
        }
    }
    Ok(figures)
}
