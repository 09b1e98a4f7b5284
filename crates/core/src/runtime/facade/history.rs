//! The history of file changes for the adapters: the list of recorded changes and undo (see
//! [`crate::history`]). Operator only: what is restored is the person's files.

use souz_protocol::Requester;
use souz_protocol::history::{HistoryList, UndoReport, UndoRequest};

use super::ServiceError;
use crate::history::HistoryError;
use crate::history::undo::{HistoryQuery, UndoOrder};
use crate::runtime::RuntimeHandle;
use crate::store::StoreError;

impl RuntimeHandle {
    /// Recorded changes, newest first.
    pub async fn history(&self, query: HistoryQuery) -> Result<HistoryList, ServiceError> {
        let history = self.file_history()?;
        Ok(HistoryList {
            changes: history.list(query).await?,
        })
    }

    /// Undoes the changes `request` selects, for `requester` (recorded on the undo).
    pub async fn undo(
        &self,
        request: UndoRequest,
        requester: Requester,
    ) -> Result<UndoReport, ServiceError> {
        let history = self.file_history()?;
        let order = UndoOrder {
            selection: request.selection,
            force: request.force,
            requester,
        };
        Ok(history.undo(self.gate().sandbox(), order).await?)
    }

    fn file_history(&self) -> Result<&crate::history::History, ServiceError> {
        self.gate().history().ok_or_else(|| {
            ServiceError::conflict(
                souz_protocol::ErrorCode::Conflict,
                "Souz keeps no history of file changes ([history] enabled = false).",
            )
        })
    }
}

impl From<HistoryError> for ServiceError {
    fn from(error: HistoryError) -> Self {
        match error {
            HistoryError::NotFound(message) => {
                Self::not_found(souz_protocol::ErrorCode::NotFound, message)
            }
            HistoryError::Invalid(message) => Self::Invalid(message),
            HistoryError::Path { .. } => {
                Self::conflict(souz_protocol::ErrorCode::Conflict, error.to_string())
            }
            HistoryError::Store(StoreError::Closed) => Self::Unavailable,
            other => Self::internal(&other),
        }
    }
}
