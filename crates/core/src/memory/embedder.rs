//! Turning text into vectors for dense recall: the [`Embedder`] seam, [`ProviderEmbedder`]
//! over the providers' embeddings endpoints (`[memory] embeddings_model`), the deterministic
//! [`HashEmbedder`] (tests, and a fallback that needs no model), the stored vector format
//! (little-endian `f32`) and cosine similarity.
//!
//! Invariant: an embedder names its model; vectors are only ever compared with vectors of the
//! same model and dimension (recall ignores the rest).

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::text::{stem, words};
use crate::llm::LlmError;
use crate::llm::embeddings::EmbeddingClient;

/// What a text is embedded as (some models prefix queries and documents differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedRole {
    /// A search query.
    Query,
    /// A stored fact.
    Document,
}

/// Why embedding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedding failed ({code}): {message}")]
pub struct EmbedError {
    /// A short stable code recorded on the job (`provider_error`, `empty_vector`, ...).
    pub code: String,
    /// What happened.
    pub message: String,
}

impl EmbedError {
    /// An error with `code`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// Anything that turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// The model's name, stored with each vector.
    fn model(&self) -> &str;

    /// One vector per text, in order.
    fn embed(
        &self,
        texts: Vec<String>,
        role: EmbedRole,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>>;

    /// Where an in-process model is (downloading, ready, loaded...); `None` for embedders
    /// with nothing to fetch or load (a provider's endpoint, the hash embedder).
    fn local_status(&self) -> Option<super::local::ModelStatus> {
        None
    }
}

/// An embedder over a provider's embeddings endpoint.
#[derive(Clone)]
pub struct ProviderEmbedder {
    label: String,
    request_name: String,
    client: Arc<dyn EmbeddingClient>,
}

impl std::fmt::Debug for ProviderEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderEmbedder")
            .field("model", &self.label)
            .finish_non_exhaustive()
    }
}

impl ProviderEmbedder {
    /// Embeds with `client`, sending `request_name` as the model and storing vectors under
    /// `label` (the model's full name, `provider/model`).
    pub fn new(
        label: impl Into<String>,
        request_name: impl Into<String>,
        client: Arc<dyn EmbeddingClient>,
    ) -> Self {
        Self {
            label: label.into(),
            request_name: request_name.into(),
            client,
        }
    }
}

fn provider_error(error: &LlmError) -> EmbedError {
    let code = match error {
        LlmError::Status { status, .. } => format!("http_{status}"),
        LlmError::Timeout { .. } => "timeout".to_owned(),
        LlmError::Malformed { .. } => "malformed".to_owned(),
        _ => "provider_error".to_owned(),
    };
    EmbedError::new(code, error.to_string())
}

impl Embedder for ProviderEmbedder {
    fn model(&self) -> &str {
        &self.label
    }

    fn embed(
        &self,
        texts: Vec<String>,
        _: EmbedRole,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        let request = self
            .client
            .embed(self.request_name.clone(), texts, CancellationToken::new());
        Box::pin(async move {
            let vectors = request.await.map_err(|error| provider_error(&error))?;
            if vectors.iter().any(Vec::is_empty) {
                return Err(EmbedError::new(
                    "empty_vector",
                    "the provider returned an empty vector",
                ));
            }
            Ok(vectors)
        })
    }
}

/// A deterministic embedder: each stemmed word adds ±1 to one of `dimension` buckets chosen by
/// a hash (FNV-1a), and the vector is normalised. Texts sharing words point the same way; no
/// model, no network.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    model: String,
    dimension: usize,
}

impl HashEmbedder {
    /// A hash embedder with `dimension` buckets (at least one).
    pub fn new(dimension: usize) -> Self {
        Self {
            model: format!("souz-hash-{dimension}"),
            dimension: dimension.max(1),
        }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0_f32; self.dimension];
        for word in words(text) {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in stem(&word).bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            let bucket = usize::try_from(hash % self.dimension as u64).unwrap_or(0);
            let sign = if (hash >> 63) == 0 { 1.0 } else { -1.0 };
            if let Some(slot) = vector.get_mut(bucket) {
                *slot += sign;
            }
        }
        normalize(&mut vector);
        vector
    }
}

impl Embedder for HashEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn embed(
        &self,
        texts: Vec<String>,
        _: EmbedRole,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        let vectors = texts.iter().map(|text| self.vector(text)).collect();
        Box::pin(async move { Ok(vectors) })
    }
}

/// Scales `vector` to unit length (a zero vector stays zero).
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 {
        for value in vector {
            *value /= norm;
        }
    }
}

/// Cosine similarity; 0 for different lengths or a zero vector.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut norm_a, mut norm_b) = (0.0_f32, 0.0_f32, 0.0_f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    dot / (norm_a.sqrt() * norm_b.sqrt())
}

/// The stored form of a vector: little-endian `f32`s.
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect()
}

/// A vector from its stored form (trailing bytes that make no whole `f32` are ignored).
pub fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_vectors_are_deterministic_and_meet_on_shared_words() {
        let embedder = HashEmbedder::new(64);
        let a = embedder.vector("favourite colour blue");
        assert_eq!(a, embedder.vector("favourite colour blue"));
        let near = cosine(&a, &embedder.vector("the colour is blue"));
        let far = cosine(&a, &embedder.vector("deploy with make release"));
        assert!(near > far, "{near} <= {far}");
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn blobs_round_trip_and_mismatched_lengths_score_zero() {
        let vector = vec![0.5_f32, -1.25, 3.0];
        assert_eq!(from_blob(&to_blob(&vector)), vector);
        assert_eq!(cosine(&vector, &[1.0, 2.0]), 0.0);
    }
}
