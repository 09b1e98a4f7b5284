//! The history of file changes for the adapters: the list of recorded changes and undo (see
//! [`crate::history`]). Operator only: what is restored is the person's files.

use souz_protocol::history::{HistoryList, UndoCheck, UndoReport, UndoRequest, UndoSelection};
use souz_protocol::review::{
    Review, ReviewDecisions, ReviewList, ReviewModeUpdate, ReviewModes, ReviewOutcome,
};
use souz_protocol::{Requester, RuntimeEvent};

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

    /// What an undo of `selection` would take back now, and the files that changed since Souz
    /// wrote them; nothing is touched (the History page's conflict view of a turn).
    pub async fn undo_check(&self, selection: UndoSelection) -> Result<UndoCheck, ServiceError> {
        let history = self.file_history()?;
        let (changes, conflicts) = history.preview(self.gate().sandbox(), selection).await?;
        Ok(UndoCheck {
            changes: changes.iter().map(|change| change.id).collect(),
            conflicts,
        })
    }

    /// Who is in review mode.
    pub async fn review_modes(&self) -> Result<ReviewModes, ServiceError> {
        Ok(self.file_history()?.review_modes().await?)
    }

    /// Turns review mode on or off for a chat or a client.
    pub async fn set_review_mode(
        &self,
        update: ReviewModeUpdate,
    ) -> Result<ReviewModes, ServiceError> {
        let modes = self.file_history()?.set_review_mode(update).await?;
        // Clients that show the setting read it again; a failure to announce loses nothing.
        if let Err(error) = self
            .events()
            .publish(RuntimeEvent::SettingsChanged {})
            .await
        {
            tracing::warn!(%error, "could not announce a review-mode change");
        }
        Ok(modes)
    }

    /// The open reviews of staged file changes.
    pub async fn reviews(&self) -> Result<ReviewList, ServiceError> {
        Ok(self.file_history()?.reviews().await?)
    }

    /// Review `id`, each change compared with the disk now.
    pub async fn review(&self, id: i64) -> Result<Review, ServiceError> {
        Ok(self
            .file_history()?
            .review(id, self.gate().sandbox())
            .await?)
    }

    /// The person's decisions on review `id`.
    pub async fn decide_review(
        &self,
        id: i64,
        decisions: ReviewDecisions,
    ) -> Result<ReviewOutcome, ServiceError> {
        let history = self.file_history()?;
        Ok(crate::history::review::apply::decide(history, self.gate(), id, decisions).await?)
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
