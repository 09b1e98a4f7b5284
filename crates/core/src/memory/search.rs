//! The two recall sources that run beside the rest: dense candidates from the vector index
//! (loaded when it holds another model or dimension) and the lexical (bm25) ranking on another
//! reader connection.

use rusqlite::Connection;

use super::*;

/// The dense candidates of `query`, best first, with their cosine similarities, checked against
/// the database; the vector index is loaded first when it holds another model or dimension.
pub(super) fn dense_search(
    connection: &Connection,
    index: &std::sync::RwLock<VectorIndex>,
    query: &recall::Query<'_>,
    vector: &QueryVector,
) -> rusqlite::Result<Vec<(Fact, f64)>> {
    let scopes = recall::query_scopes(query);
    let dense = DenseQuery {
        owner: &query.context.owner,
        scopes: &scopes,
        model: &vector.model,
        vector: &vector.vector,
        min_score: recall::DENSE_MIN_SCORE,
        limit: recall::DENSE_LIMIT,
    };
    let candidates = index
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .candidates(&dense);
    let hits = match candidates {
        Some(candidates) => candidates.verify(connection)?,
        None => {
            let mut index = index
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if index.needs_load(&vector.model, vector.vector.len()) {
                index.load(connection, &vector.model, vector.vector.len())?;
            }
            index.search(connection, &dense)?
        }
    };
    Ok(hits
        .into_iter()
        .map(|(fact, score)| (fact, f64::from(score)))
        .collect())
}

/// The lexical candidates ranked on another reader connection while the recall's own reads
/// the other sources: the bm25 ranking of every full-text match is the most expensive part of
/// a recall over many facts, and on two cores it runs beside the rest instead of after it.
pub(super) struct LexicalSearch {
    found: std::sync::mpsc::Receiver<Vec<(Fact, f64)>>,
}

impl LexicalSearch {
    pub(super) fn start(store: &Store, query: &recall::Query<'_>) -> Self {
        let (send, found) = std::sync::mpsc::sync_channel(1);
        let (store, owned) = (store.clone(), OwnedQuery::from(query));
        #[allow(
            clippy::disallowed_methods,
            reason = "one lexical read of a recall, whose result the recall waits for in finish()"
        )]
        tokio::spawn(async move {
            let found = store
                .read(move |connection| {
                    Ok::<_, StoreError>(recall::lexical(connection, &owned.borrow()))
                })
                .await
                .unwrap_or_else(|error| {
                    tracing::warn!(%error, "lexical memory search failed; going on without it");
                    Vec::new()
                });
            // The recall may have ended without it (no scope to read).
            let _ = send.send(found);
        });
        Self { found }
    }

    /// The search's facts with their bm25 scores, best first (none if it stopped).
    pub(super) fn finish(self) -> Vec<(Fact, f64)> {
        self.found.recv().unwrap_or_else(|_| {
            tracing::warn!("the lexical memory search stopped; recall goes on without it");
            Vec::new()
        })
    }
}

/// A [`recall::Query`] that can move into a blocking task.
pub(super) struct OwnedQuery {
    context: Context,
    semantic_query: String,
    lexical_hints: Vec<String>,
    max_facts: usize,
    token_budget: usize,
    scopes: Option<Vec<Scope>>,
}

impl From<&recall::Query<'_>> for OwnedQuery {
    fn from(query: &recall::Query<'_>) -> Self {
        Self {
            context: query.context.clone(),
            semantic_query: query.semantic_query.to_owned(),
            lexical_hints: query.lexical_hints.to_vec(),
            max_facts: query.max_facts,
            token_budget: query.token_budget,
            scopes: query.scopes.clone(),
        }
    }
}

impl OwnedQuery {
    pub(super) fn borrow(&self) -> recall::Query<'_> {
        recall::Query {
            context: &self.context,
            semantic_query: &self.semantic_query,
            lexical_hints: &self.lexical_hints,
            max_facts: self.max_facts,
            token_budget: self.token_budget,
            scopes: self.scopes.clone(),
        }
    }
}
