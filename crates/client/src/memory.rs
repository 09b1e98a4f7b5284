//! The calls of `/v1/memory`: list and filter, show, add, edit, pin, retire, forget (delete
//! with a tombstone), evidence, search.

use souz_protocol::{
    MemoryEvidenceList, MemoryFact, MemoryFactList, MemoryFactPatch, MemoryModelInfo, MemoryQuery,
    MemorySearchRequest, MemorySearchResult, NewMemoryFact,
};

use crate::calls::encode_segment as encode;
use crate::{ClientError, DaemonClient};

/// `query` as a query string (`?kind=PREFERENCE&...`, or nothing).
fn query_string(query: &MemoryQuery) -> Result<String, ClientError> {
    let value = serde_json::to_value(query).map_err(|error| ClientError::Decode {
        reason: error.to_string(),
    })?;
    let pairs: Vec<String> = value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, value)| {
            let text = match value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            format!("{name}={}", encode(&text))
        })
        .collect();
    Ok(if pairs.is_empty() {
        String::new()
    } else {
        format!("?{}", pairs.join("&"))
    })
}

impl DaemonClient {
    /// A page of remembered facts matching `query`.
    pub async fn memory(&self, query: &MemoryQuery) -> Result<MemoryFactList, ClientError> {
        self.get(&format!("/v1/memory{}", query_string(query)?))
            .await
    }

    /// One fact.
    pub async fn memory_fact(&self, id: &str) -> Result<MemoryFact, ClientError> {
        self.get(&format!("/v1/memory/{}", encode(id))).await
    }

    /// Remembers a fact written by hand; `true` when it is new, `false` when an active fact of
    /// the scope already held it and this writing confirmed it (`200` instead of `201`).
    pub async fn remember(&self, fact: &NewMemoryFact) -> Result<(MemoryFact, bool), ClientError> {
        let (status, fact) = self.post_with_status("/v1/memory", fact).await?;
        Ok((fact, status == 201))
    }

    /// Edits a fact.
    pub async fn edit_memory_fact(
        &self,
        id: &str,
        patch: &MemoryFactPatch,
    ) -> Result<MemoryFact, ClientError> {
        self.patch(&format!("/v1/memory/{}", encode(id)), patch)
            .await
    }

    /// Pins or unpins a fact.
    pub async fn pin_memory_fact(&self, id: &str, pinned: bool) -> Result<MemoryFact, ClientError> {
        let action = if pinned { "pin" } else { "unpin" };
        self.post(
            &format!("/v1/memory/{}/{action}", encode(id)),
            &serde_json::json!({}),
        )
        .await
    }

    /// Retires a fact (kept, never recalled).
    pub async fn retire_memory_fact(&self, id: &str) -> Result<MemoryFact, ClientError> {
        self.post(
            &format!("/v1/memory/{}/retire", encode(id)),
            &serde_json::json!({}),
        )
        .await
    }

    /// Deletes a fact; a tombstone keeps capture from storing it again.
    pub async fn forget_memory_fact(&self, id: &str) -> Result<(), ClientError> {
        self.delete(&format!("/v1/memory/{}", encode(id))).await
    }

    /// Where a fact came from.
    pub async fn memory_evidence(&self, id: &str) -> Result<MemoryEvidenceList, ClientError> {
        self.get(&format!("/v1/memory/{}/evidence", encode(id)))
            .await
    }

    /// What searches memory by meaning, and where a local model is (`GET /v1/memory/model`).
    pub async fn memory_model(&self) -> Result<MemoryModelInfo, ClientError> {
        self.get("/v1/memory/model").await
    }

    /// Searches memory with the recall the agents use.
    pub async fn search_memory(
        &self,
        request: &MemorySearchRequest,
    ) -> Result<MemorySearchResult, ClientError> {
        self.post("/v1/memory/search", request).await
    }
}
