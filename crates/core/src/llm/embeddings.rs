//! Embeddings over OpenAI-style endpoints (`POST {base}/embeddings`): OpenAI and the
//! compatible providers.
//!
//! Invariants: the answer has exactly one vector per input, ordered as the inputs (the API may
//! return them in any order, keyed by `index`); anything else is an error, never a silent
//! misalignment. An answer may take [`BODY_LIMIT`] bytes, or
//! [`EMBEDDING_BYTES_PER_INPUT`] per input when that is more.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::http::bounded::EMBEDDING_BYTES_PER_INPUT;
use super::http::{BODY_LIMIT, ProviderHttp, endpoint, read_body};
use super::keys::ApiKey;
use super::{LlmError, ProviderId};

/// Anything that turns texts into vectors.
pub trait EmbeddingClient: Send + Sync {
    /// One vector per input, in input order.
    fn embed(
        &self,
        model: String,
        inputs: Vec<String>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, LlmError>>;
}

/// An embeddings client for one OpenAI-style endpoint.
#[derive(Clone, Debug)]
pub(crate) struct OpenAiEmbeddings {
    http: ProviderHttp,
    provider: ProviderId,
    base_url: String,
    key: Option<ApiKey>,
}

impl OpenAiEmbeddings {
    /// A client for `base_url` (up to `/v1`).
    pub(crate) fn new(
        http: ProviderHttp,
        provider: ProviderId,
        base_url: impl Into<String>,
        key: Option<ApiKey>,
    ) -> Self {
        Self {
            http,
            provider,
            base_url: base_url.into(),
            key,
        }
    }
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

/// Most bytes of an answer for `inputs` inputs: the limit scales with the request Souz made,
/// never with what the server says.
fn answer_limit(inputs: usize) -> usize {
    BODY_LIMIT.max(inputs.saturating_mul(EMBEDDING_BYTES_PER_INPUT))
}

impl EmbeddingClient for OpenAiEmbeddings {
    fn embed(
        &self,
        model: String,
        inputs: Vec<String>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, LlmError>> {
        let this = self.clone();
        Box::pin(async move {
            let provider = this.provider;
            if inputs.is_empty() {
                return Ok(Vec::new());
            }
            let url = endpoint(&this.base_url, "embeddings");
            let count = inputs.len();
            let body = json!({"model": model, "input": inputs, "encoding_format": "float"});
            let key = this.key.clone();
            let response = this
                .http
                .send(
                    provider,
                    |client| {
                        let request = client.post(&url).json(&body);
                        match &key {
                            Some(key) => request.bearer_auth(key.expose()),
                            None => request,
                        }
                    },
                    &cancel,
                )
                .await?;
            let bytes = read_body(
                provider,
                response,
                answer_limit(count),
                this.http.settings().request_timeout,
                &cancel,
            )
            .await?;
            let response: Response =
                serde_json::from_slice(&bytes).map_err(|error| LlmError::Malformed {
                    provider,
                    detail: format!("embeddings response: {error}"),
                })?;
            let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
            for item in response.data {
                match vectors.get_mut(item.index) {
                    Some(slot @ None) => *slot = Some(item.embedding),
                    _ => {
                        return Err(LlmError::Malformed {
                            provider,
                            detail: format!(
                                "embedding index {} is out of range or repeated",
                                item.index
                            ),
                        });
                    }
                }
            }
            vectors
                .into_iter()
                .enumerate()
                .map(|(index, vector)| {
                    vector.ok_or_else(|| LlmError::Malformed {
                        provider,
                        detail: format!("no embedding for input {index} (of {count})"),
                    })
                })
                .collect()
        })
    }
}
