//! The calls of `/v1/history`: the changes Souz's file tools made, and undo.

use souz_protocol::history::{HistoryList, UndoReport, UndoRequest};

use crate::{ClientError, DaemonClient};

impl DaemonClient {
    /// Recorded changes, newest first; `query` is the URL query (`?client=cli&limit=20`) or
    /// empty.
    pub async fn history(&self, query: &str) -> Result<HistoryList, ClientError> {
        self.get(&format!("/v1/history{query}")).await
    }

    /// Undoes what `request` selects; conflicts come back in the report (nothing undone).
    pub async fn undo(&self, request: &UndoRequest) -> Result<UndoReport, ClientError> {
        self.post("/v1/history/undo", request).await
    }
}
