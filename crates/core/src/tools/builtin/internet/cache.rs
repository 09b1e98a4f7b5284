//! The search cache in SQLite (`web_search_cache`): results by the configured backend choice
//! and the normalized query, reused for `[web] cache_ttl_secs`.
//!
//! Invariants: a cache failure never fails a search (it is logged and the search goes to the
//! network); only searches with results are cached; expired rows are pruned on every write.

use rusqlite::OptionalExtension;

use super::WebServices;
use super::search::SearchHit;
use crate::store::StoreError;

/// The query as the cache keys it: trimmed, lower case, single spaces.
pub(crate) fn normalize(query: &str) -> String {
    query
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The cached results of `query`, when fresh: the backend that found them and the results.
pub(crate) async fn lookup(
    services: &WebServices,
    cache_key: &str,
    query: &str,
) -> Option<(String, Vec<SearchHit>)> {
    let store = services.store.as_ref()?;
    let ttl = i64::try_from(services.config.cache_ttl_secs).unwrap_or(i64::MAX);
    if ttl == 0 {
        return None;
    }
    let key = cache_key.to_owned();
    let query = normalize(query);
    let oldest = now_secs().saturating_sub(ttl);
    let row = store
        .read(move |connection| {
            connection
                .query_row(
                    "SELECT backend, results FROM web_search_cache
                     WHERE cache_key = ?1 AND query = ?2 AND fetched_at > ?3",
                    rusqlite::params![key, query, oldest],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
                )
                .optional()
                .map_err(StoreError::from)
        })
        .await;
    match row {
        Ok(Some((backend, results))) => match serde_json::from_str(&results) {
            Ok(hits) => Some((backend, hits)),
            Err(error) => {
                tracing::warn!(%error, "unreadable search cache row; searching again");
                None
            }
        },
        Ok(None) => None,
        Err(error) => {
            tracing::warn!(%error, "search cache lookup failed");
            None
        }
    }
}

/// Caches `hits` of `query` found by `backend`.
pub(crate) async fn save(
    services: &WebServices,
    cache_key: &str,
    query: &str,
    backend: &str,
    hits: &[SearchHit],
) {
    let Some(store) = services.store.as_ref() else {
        return;
    };
    let ttl = i64::try_from(services.config.cache_ttl_secs).unwrap_or(i64::MAX);
    if ttl == 0 {
        return;
    }
    let Ok(results) = serde_json::to_string(hits) else {
        return;
    };
    let key = cache_key.to_owned();
    let query = normalize(query);
    let backend = backend.to_owned();
    let now = now_secs();
    let saved = store
        .write(move |transaction| {
            transaction.execute(
                "DELETE FROM web_search_cache WHERE fetched_at <= ?1",
                [now.saturating_sub(ttl)],
            )?;
            transaction.execute(
                "INSERT INTO web_search_cache (cache_key, query, backend, results, fetched_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (cache_key, query) DO UPDATE SET
                     backend = excluded.backend,
                     results = excluded.results,
                     fetched_at = excluded.fetched_at",
                rusqlite::params![key, query, backend, results, now],
            )?;
            Ok::<_, StoreError>(())
        })
        .await;
    if let Err(error) = saved {
        tracing::warn!(%error, "search cache write failed");
    }
}
