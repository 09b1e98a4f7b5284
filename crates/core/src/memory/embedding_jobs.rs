//! Embedding jobs: a fact's vector made when it is written, failed jobs retried when they
//! fall due (with backoff, until shutdown), and the pending ones run in batches.
//!
//! Invariants: a failed embedding never fails a write or a recall (the fact stays lexically
//! findable and its job is retried); the retry loop sleeps while nothing is pending and a
//! failure wakes it.

use std::sync::Arc;
use std::time::Duration;

use super::*;

impl Memory {
    pub(super) async fn embed_fact(&self, fact: &Fact) {
        let Some(embedder) = self.inner.embedder.clone() else {
            return;
        };
        let job = vectors::Job {
            fact_id: fact.id.clone(),
            model: embedder.model().to_owned(),
            content_hash: fact.content_hash.clone(),
            attempts: 0,
            text: vectors::embedding_text(fact),
        };
        self.run_job(embedder.as_ref(), job).await;
    }

    pub(super) async fn run_job(&self, embedder: &dyn Embedder, job: vectors::Job) -> bool {
        let outcome = match embedder
            .embed(vec![job.text.clone()], EmbedRole::Document)
            .await
        {
            Ok(mut vectors) if vectors.len() == 1 => match vectors.pop() {
                Some(vector) if !vector.is_empty() => Ok(vector),
                _ => Err(EmbedError::new(
                    "empty_vector",
                    "the embedder returned an empty vector",
                )),
            },
            Ok(_) => Err(EmbedError::new(
                "vector_count",
                "the embedder returned the wrong number of vectors",
            )),
            Err(error) => Err(error),
        };
        let index = Arc::clone(&self.inner.vectors);
        let write = self.inner.store.write(move |tx| -> Result<bool, MemoryError> {
            match outcome {
                Ok(vector) => {
                    let stored = vectors::store_vector(
                        tx,
                        &job.fact_id,
                        &job.model,
                        &job.content_hash,
                        &vector,
                    )?;
                    if stored && let Some(fact) = facts::get(tx, &job.fact_id)? {
                        index
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .put(&job.model, &fact, &vector);
                    }
                    Ok(stored)
                }
                Err(error) => {
                    if error.code == vectors::NOT_READY {
                        tracing::debug!(%error, fact_id = %job.fact_id, "embedding waits for its model");
                    } else {
                        tracing::warn!(%error, fact_id = %job.fact_id, "embedding a memory fact failed");
                    }
                    vectors::fail_job(tx, &job, &error.code, MAX_EMBED_ATTEMPTS)?;
                    Ok(false)
                }
            }
        });
        match write.await {
            Ok(stored) => {
                if !stored {
                    self.inner.retry.notify_one();
                }
                stored
            }
            Err(error) => {
                tracing::warn!(%error, "could not record a memory embedding");
                false
            }
        }
    }

    /// Runs up to `limit` embedding jobs that are due; how many stored a vector.
    pub async fn embed_pending(&self, limit: usize) -> Result<usize, MemoryError> {
        let Some(embedder) = self.inner.embedder.clone() else {
            return Ok(0);
        };
        let model = embedder.model().to_owned();
        let jobs = self
            .inner
            .store
            .read(move |connection| {
                Ok::<_, MemoryError>(vectors::due_jobs(connection, &model, limit)?)
            })
            .await?;
        let mut stored = 0;
        for job in jobs {
            if self.run_job(embedder.as_ref(), job).await {
                stored += 1;
            }
        }
        Ok(stored)
    }
}

impl Memory {
    /// Retries failed embedding jobs when they fall due, until `shutdown` fires. Sleeps while
    /// nothing is pending (a failure wakes it); does nothing without an embedder.
    pub async fn retry_embeddings(self, shutdown: tokio_util::sync::CancellationToken) {
        let Some(model) = self.embedding_model().map(str::to_owned) else {
            return;
        };
        loop {
            if let Err(error) = self.embed_pending(RETRY_BATCH).await {
                tracing::warn!(%error, "memory embedding retries failed");
            }
            let model = model.clone();
            let due = self
                .inner
                .store
                .read(move |connection| {
                    Ok::<_, MemoryError>(vectors::next_due(connection, &model)?)
                })
                .await;
            let wait = match due {
                Ok(Some(due)) => crate::store::codec::from_time("next_attempt_at", &due)
                    .ok()
                    .and_then(|due| (due - now()).to_std().ok())
                    .unwrap_or(Duration::ZERO)
                    .max(MIN_RETRY_WAIT),
                Ok(None) => Duration::MAX,
                Err(error) => {
                    tracing::warn!(%error, "cannot read memory embedding jobs");
                    MAX_RETRY_WAIT
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.inner.retry.notified() => {}
                () = tokio::time::sleep(wait.min(MAX_RETRY_WAIT)), if wait != Duration::MAX => {}
            }
        }
    }
}

/// Jobs retried per round.
const RETRY_BATCH: usize = 32;
/// The shortest and longest sleep of the retry loop.
const MIN_RETRY_WAIT: Duration = Duration::from_secs(1);
const MAX_RETRY_WAIT: Duration = Duration::from_secs(3600);
