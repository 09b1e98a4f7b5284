//! Review mode (issue 45): for a chat or an MCP client in review mode, a file tool's write is
//! staged instead of applied, and the person applies or discards each staged change later, in
//! one review.
//!
//! What is staged: the call itself — its tool, its full arguments (for `NewFile` the whole new
//! content; for `EditFile` the text replaced and its replacement; for moves and deletes the
//! paths), who asked, the plan's one-line summary and unified diff as planned when staged —
//! and the *base* of every path it writes: kind, permission bits and SHA-256 of what was on
//! disk then. It is kept in the database inside the Souz home (`review_changes`), never in
//! the history's blob store: nothing is written to the user's files until a change is applied.
//!
//! Invariants:
//! - A staged call runs nothing. It ends `succeeded` with a result that says it was staged and
//!   that the disk is unchanged until the person applies it (later reads in the same turn see
//!   the disk as it is: Souz does not pretend the write happened).
//! - A staged change counts as asked: no approval is requested per write. Applying is the
//!   approval: the call is made again through the gate in [`crate::tools::gate::CallMode::
//!   Reviewed`], planned again against the disk, and runs only if it still plans to the same
//!   summary and diff (unless forced) and no deny rule refuses it; it is checkpointed in the
//!   history like any write, so an applied change can be undone.
//! - A conflict is a path whose kind, content or mode differs from its base: applying refuses
//!   it unless forced ([`apply`]).
//! - Which review a staged change joins: a chat's, the review of its running turn (status
//!   `collecting`), opened when the turn ends ([`open_turn_review`], in the transaction that
//!   ends the execution); an MCP client's (or a chat's outside a turn), its one open review,
//!   which stays open — and takes further writes — until every change in it is decided.
//! - A review closes, in the transaction of its last decision, once no change in it is
//!   undecided.

pub mod apply;
mod records;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use souz_protocol::history::{PathKind, PathSnapshot};
use souz_protocol::review::{
    ChangeDecision, Review, ReviewList, ReviewModeUpdate, ReviewModes, StagedChange, StagedPath,
};
use souz_protocol::{Requester, RuntimeEvent};

use super::checkpoint::blocking;
use super::snapshot::{Snapshot, capture};
use super::{History, HistoryError};
use crate::sandbox::Sandbox;
use crate::store::StoreError;

pub(crate) use records::open_turn_review;

/// What a path held when a change was staged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Base {
    pub path: PathBuf,
    pub kind: PathKind,
    pub size: Option<u64>,
    pub mode: Option<u32>,
    pub hash: Option<String>,
}

impl Base {
    fn of(path: PathBuf, snapshot: Snapshot) -> Self {
        Self {
            path,
            kind: snapshot.kind,
            size: snapshot.size,
            mode: snapshot.mode,
            hash: snapshot.hash,
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            kind: self.kind,
            size: self.size,
            mode: self.mode,
            hash: self.hash.clone(),
            link: None,
            kept: false,
        }
    }
}

/// A call to stage.
#[derive(Debug, Clone)]
pub(crate) struct Staging {
    pub call_id: String,
    pub tool: String,
    pub requester: Requester,
    pub arguments: Value,
    pub summary: String,
    pub diff: Option<String>,
    pub paths: Vec<PathBuf>,
}

/// Where a staged call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Staged {
    pub review_id: i64,
    pub change_id: i64,
}

/// A staged change as stored.
#[derive(Debug, Clone)]
pub(crate) struct StoredStaged {
    pub id: i64,
    pub review_id: i64,
    pub call_id: String,
    pub tool: String,
    pub requester: Requester,
    pub arguments: Value,
    pub summary: String,
    pub diff: Option<String>,
    pub base: Vec<Base>,
    pub decision: Option<ChangeDecision>,
    pub result: Option<String>,
    pub applied_call_id: Option<String>,
}

/// The review-mode key of `requester`: a chat by its id, an MCP client by the name its
/// credential gives. Other requesters (the CLI, scripts, skills) are never in review mode.
fn mode_key(requester: &Requester) -> Option<(&'static str, String)> {
    match requester {
        Requester::Chat { chat_id } => Some(("chat", chat_id.clone())),
        Requester::Mcp { .. } => Some(("client", super::client_of(requester))),
        Requester::Cli | Requester::Api | Requester::Skill { .. } => None,
    }
}

impl History {
    /// Whether `requester`'s file writes are staged for review.
    pub(crate) async fn in_review_mode(&self, requester: &Requester) -> Result<bool, HistoryError> {
        let Some((scope, key)) = mode_key(requester) else {
            return Ok(false);
        };
        Ok(self
            .store()
            .read(move |connection| records::mode_on(connection, scope, &key))
            .await?)
    }

    /// Who is in review mode.
    pub async fn review_modes(&self) -> Result<ReviewModes, HistoryError> {
        Ok(self.store().read(records::modes).await?)
    }

    /// Turns review mode on or off for one chat or one client.
    pub async fn set_review_mode(
        &self,
        update: ReviewModeUpdate,
    ) -> Result<ReviewModes, HistoryError> {
        let (scope, key) = match (update.chat_id, update.client) {
            (Some(chat), None) if !chat.trim().is_empty() => ("chat", chat),
            (None, Some(client)) if !client.trim().is_empty() => ("client", client),
            _ => {
                return Err(HistoryError::Invalid(
                    "name exactly one of `chatId` and `client`".into(),
                ));
            }
        };
        let on = update.on;
        self.store()
            .write(move |transaction| records::set_mode(transaction, scope, &key, on))
            .await?;
        self.review_modes().await
    }

    /// Stages `staging`: keeps what its paths hold now as its base, and adds it to its review.
    pub(crate) async fn stage(
        &self,
        sandbox: Arc<Sandbox>,
        staging: Staging,
    ) -> Result<Staged, HistoryError> {
        let limit = self.limits().max_file_bytes;
        let paths = staging.paths.clone();
        let base = blocking(move || bases(&sandbox, &paths, limit)).await?;
        self.write_announcing(move |transaction| records::stage(transaction, &staging, &base))
            .await
    }

    /// The open reviews, oldest first.
    pub async fn reviews(&self) -> Result<ReviewList, HistoryError> {
        Ok(ReviewList {
            items: self.store().read(records::open_reviews).await?,
        })
    }

    /// Review `id` with its changes, each compared with the disk now (in `sandbox`).
    pub async fn review(&self, id: i64, sandbox: Arc<Sandbox>) -> Result<Review, HistoryError> {
        let (summary, staged) = self
            .store()
            .read(move |connection| {
                let summary = records::summary(connection, id)?;
                let staged = records::changes(connection, id)?;
                Ok::<_, StoreError>(summary.map(|summary| (summary, staged)))
            })
            .await?
            .ok_or_else(|| HistoryError::NotFound(format!("no review {id}")))?;
        let limit = self.limits().max_file_bytes;
        let items = blocking(move || {
            Ok(staged
                .into_iter()
                .map(|change| wire(&sandbox, change, limit))
                .collect())
        })
        .await?;
        Ok(Review { summary, items })
    }

    /// Staged change `change_id` of review `review_id`.
    pub(crate) async fn staged(
        &self,
        review_id: i64,
        change_id: i64,
    ) -> Result<StoredStaged, HistoryError> {
        self.store()
            .read(move |connection| records::change(connection, change_id))
            .await?
            .filter(|change| change.review_id == review_id)
            .ok_or_else(|| {
                HistoryError::NotFound(format!("no change {change_id} in review {review_id}"))
            })
    }

    /// Whether a path of `change` differs from its base now.
    pub(crate) async fn conflicted(
        &self,
        sandbox: Arc<Sandbox>,
        change: &StoredStaged,
    ) -> Result<bool, HistoryError> {
        let limit = self.limits().max_file_bytes;
        let base = change.base.clone();
        blocking(move || Ok(base.iter().any(|base| changed(&sandbox, base, limit)))).await
    }

    /// Marks undecided change `change_id` as being applied; false when it is decided already
    /// (or its review is not open).
    pub(crate) async fn claim(&self, review_id: i64, change_id: i64) -> Result<bool, HistoryError> {
        Ok(self
            .store()
            .write(move |transaction| records::claim(transaction, review_id, change_id))
            .await?)
    }

    /// Records the decision on change `change_id` (announced with `review.decided`, and
    /// `review.closed` when it was the last undecided one). Discarding refuses a change that
    /// is decided already; false then.
    pub(crate) async fn decide_change(
        &self,
        review_id: i64,
        change_id: i64,
        outcome: (ChangeDecision, Option<String>, Option<String>),
    ) -> Result<bool, HistoryError> {
        self.write_announcing(move |transaction| {
            records::decide(transaction, review_id, change_id, outcome)
        })
        .await
    }
}

/// What each of `paths` holds now.
fn bases(sandbox: &Sandbox, paths: &[PathBuf], limit: u64) -> Result<Vec<Base>, HistoryError> {
    let beneath = sandbox.beneath();
    paths
        .iter()
        .map(|path| {
            let captured = capture(&beneath, path, limit).map_err(|error| HistoryError::Path {
                path: sandbox.display(path),
                message: error.to_string(),
            })?;
            Ok(Base::of(path.clone(), captured.snapshot))
        })
        .collect()
}

/// Whether `base`'s path holds something else now (unreadable counts as changed).
fn changed(sandbox: &Sandbox, base: &Base, limit: u64) -> bool {
    match capture(&sandbox.beneath(), &base.path, limit) {
        Ok(now) => !base.snapshot().matches(&now.snapshot),
        Err(_) => true,
    }
}

/// A stored change as the wire shows it, compared with the disk now.
fn wire(sandbox: &Sandbox, change: StoredStaged, limit: u64) -> StagedChange {
    let undecided = change.decision.is_none();
    let paths: Vec<StagedPath> = change
        .base
        .iter()
        .map(|base| StagedPath {
            path: sandbox.display(&base.path),
            base: PathSnapshot {
                kind: base.kind,
                size: base.size,
                mode: base.mode,
                sha256: base.hash.clone().filter(|_| base.kind == PathKind::File),
                kept: false,
            },
            // Only an undecided change can conflict: a decided one is history.
            changed: undecided && changed(sandbox, base, limit),
        })
        .collect();
    StagedChange {
        id: change.id,
        call_id: change.call_id,
        tool: change.tool,
        requester: change.requester,
        summary: change.summary,
        diff: change.diff,
        conflict: paths.iter().any(|path| path.changed),
        paths,
        decision: change.decision,
        result: change.result,
        applied_call_id: change.applied_call_id,
    }
}

/// The `review.opened` event of review `id` as it is in `connection`.
fn opened_event(
    connection: &rusqlite::Connection,
    id: i64,
) -> Result<Option<RuntimeEvent>, StoreError> {
    Ok(
        records::summary(connection, id)?.map(|summary| RuntimeEvent::ReviewOpened {
            review_id: summary.id,
            client: summary.client,
            chat_id: summary.chat_id,
            execution_id: summary.execution_id,
            changes: summary.changes,
        }),
    )
}
