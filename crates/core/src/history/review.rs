//! Review mode (issue 45): for a chat or an MCP client in review mode, a file tool's write is
//! staged instead of applied, and the person applies or discards each staged change later, in
//! one review.
//!
//! What is staged: the call itself — its tool, its full arguments (for `NewFile` the whole new
//! content; for `EditFile` the text replaced and its replacement; for moves and deletes the
//! paths), who asked, the plan's one-line summary and unified diff as planned when staged —
//! and the *base* of every path it writes: kind, permission bits and SHA-256 of what the path
//! holds for it. It is kept in the database inside the Souz home (`review_changes`), never in
//! the history's blob store: nothing is written to the user's files until a change is applied.
//!
//! Several writes to one file in one review: a write to a path that undecided changes of the
//! review it joins write too is planned against the *staged state* of that path — the disk
//! with those changes applied in staging order (for `EditFile` and `NewFile` the content, for
//! `MoveFile` and `DeleteFile` whether it is there; replayed from their arguments by
//! [`crate::tools::builtin::files::staged`]) — and that state is its base, so applying the
//! review in order finds no conflict. A path whose staged state cannot be known (an earlier
//! change no longer fits the disk, or a tool whose writes cannot be replayed wrote it) takes no
//! further staged write: that write fails, saying why.
//!
//! Invariants:
//! - A staged call runs nothing. It ends `succeeded` with a result that says it was staged and
//!   that the disk is unchanged until the person applies it (later reads in the same turn see
//!   the disk as it is: Souz does not pretend the write happened; only later staged writes
//!   are planned against the staged state).
//! - Staging is serialized ([`History::staging_lock`], held from before a write's plan to its
//!   row): a write is planned against every change staged before it.
//! - A staged change counts as asked: no approval is requested per write. Applying is the
//!   approval: the call is made again through the gate in [`crate::tools::gate::CallMode::
//!   Reviewed`], planned again against the disk, and runs only if it still plans to the same
//!   summary and diff (unless forced) and no deny rule refuses it; it is checkpointed in the
//!   history like any write, so an applied change can be undone.
//! - Applying goes in staging order. A conflict is a path that does not hold its base now
//!   ([`standing`]): `external` when the file changed outside (or is unreadable) since staging;
//!   `earlier_change` when an earlier staged change to it in the review was discarded, failed
//!   or is not applied yet — such a change is applied anyway when it still plans against the
//!   disk to the summary and diff staged. Applying refuses a conflict (leaves it undecided)
//!   unless forced; forced, it is planned again against the disk, and fails, saying why, when
//!   it no longer fits.
//! - Which review a staged change joins: a chat's, the review of its running turn (status
//!   `collecting`), opened when the turn ends ([`open_turn_review`], in the transaction that
//!   ends the execution); an MCP client's (or a chat's outside a turn), its one open review,
//!   which stays open — and takes further writes — until every change in it is decided.
//! - A review closes, in the transaction of its last decision, once no change in it is
//!   undecided.

pub mod apply;
mod records;
pub(crate) mod standing;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use souz_protocol::history::{PathKind, PathSnapshot};
use souz_protocol::review::{
    ChangeDecision, ConflictReason, Review, ReviewList, ReviewModeUpdate, ReviewModes,
    StagedChange, StagedPath,
};
use souz_protocol::{Requester, RuntimeEvent};

pub(crate) use standing::Standing;

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

    /// Nothing at `path`.
    pub(crate) fn absent(path: PathBuf) -> Self {
        Self {
            path,
            kind: PathKind::Absent,
            size: None,
            mode: None,
            hash: None,
        }
    }

    /// A folder at `path`.
    pub(crate) fn folder(path: PathBuf) -> Self {
        Self {
            kind: PathKind::Folder,
            ..Self::absent(path)
        }
    }

    /// A file at `path` holding `content` with the bits `mode` (`None`: whatever the file's
    /// creation gives it, as for a file a staged `NewFile` creates).
    pub(crate) fn file(path: PathBuf, content: &[u8], mode: Option<u32>) -> Self {
        Self {
            path,
            kind: PathKind::File,
            size: Some(content.len() as u64),
            mode,
            hash: Some(super::blobs::hash_of(content)),
        }
    }

    /// Whether `now` is what this base recorded: same kind, and for a file or link the same
    /// content identity and mode (any mode when the base names none). A folder holds any
    /// folder: what is inside belongs to the changes of the paths inside.
    pub(crate) fn holds(&self, now: &Snapshot) -> bool {
        if self.kind != now.kind {
            return false;
        }
        match self.kind {
            PathKind::Absent | PathKind::Folder => true,
            _ => self.hash == now.hash && (self.mode.is_none() || self.mode == now.mode),
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
    /// The bases of the paths earlier undecided changes of the review write: what those paths
    /// hold once the changes are applied in order (the other paths' bases are read from disk).
    pub staged_bases: Vec<Base>,
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

    /// The undecided changes, in staging order, of the review a write of `requester` staged
    /// now would join (empty when there is none yet); `None` when `requester` is not in review
    /// mode.
    pub(crate) async fn staged_before(
        &self,
        requester: &Requester,
    ) -> Result<Option<Vec<StoredStaged>>, HistoryError> {
        let Some((scope, key)) = mode_key(requester) else {
            return Ok(None);
        };
        let requester = requester.clone();
        Ok(self
            .store()
            .read(move |connection| {
                if !records::mode_on(connection, scope, &key)? {
                    return Ok(None);
                }
                records::undecided_of_joining(connection, &requester).map(Some)
            })
            .await?)
    }

    /// Held from before a review-mode write's plan to its staging (see the module header).
    pub(crate) async fn staging_lock(&self) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.inner.staging_lock).lock_owned().await
    }

    /// Stages `staging`: keeps what its paths hold for it as its base (its staged bases, the
    /// disk now for the others), and adds it to its review.
    pub(crate) async fn stage(
        &self,
        sandbox: Arc<Sandbox>,
        staging: Staging,
    ) -> Result<Staged, HistoryError> {
        let limit = self.limits().max_file_bytes;
        let paths = staging.paths.clone();
        let staged = staging.staged_bases.clone();
        let base = blocking(move || bases(&sandbox, &paths, &staged, limit)).await?;
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
            Ok((0..staged.len())
                .map(|index| wire(&sandbox, &staged, index, limit))
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

    /// Where undecided change `change_id` of review `review_id` stands against the disk now
    /// (read again: an earlier change of the review may have just written its paths).
    pub(crate) async fn standing(
        &self,
        sandbox: Arc<Sandbox>,
        review_id: i64,
        change_id: i64,
    ) -> Result<Standing, HistoryError> {
        let changes = self
            .store()
            .read(move |connection| records::changes(connection, review_id))
            .await?;
        let limit = self.limits().max_file_bytes;
        blocking(move || {
            let index = changes
                .iter()
                .position(|change| change.id == change_id)
                .ok_or_else(|| {
                    HistoryError::NotFound(format!("no change {change_id} in review {review_id}"))
                })?;
            Ok(standing::of_change(&sandbox, &changes, index, limit))
        })
        .await
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

/// The base of each of `paths`: its staged base when `staged` has one, what it holds now
/// otherwise.
fn bases(
    sandbox: &Sandbox,
    paths: &[PathBuf],
    staged: &[Base],
    limit: u64,
) -> Result<Vec<Base>, HistoryError> {
    let beneath = sandbox.beneath();
    paths
        .iter()
        .map(|path| {
            if let Some(base) = staged.iter().find(|base| &base.path == path) {
                return Ok(base.clone());
            }
            let captured = capture(&beneath, path, limit).map_err(|error| HistoryError::Path {
                path: sandbox.display(path),
                message: error.to_string(),
            })?;
            Ok(Base::of(path.clone(), captured.snapshot))
        })
        .collect()
}

/// A stored change as the wire shows it, compared with the disk now (`all` is its review's
/// changes in staging order; it is `all[index]`).
fn wire(sandbox: &Sandbox, all: &[StoredStaged], index: usize, limit: u64) -> StagedChange {
    let change = &all[index];
    let undecided = change.decision.is_none();
    let paths: Vec<StagedPath> = change
        .base
        .iter()
        .map(|base| {
            // Only an undecided change can conflict: a decided one is history. One waiting
            // for an earlier undecided change to its file is no conflict yet.
            let conflict = if undecided {
                standing::of_path(sandbox, all, index, base, limit).conflict()
            } else {
                None
            };
            StagedPath {
                path: sandbox.display(&base.path),
                base: PathSnapshot {
                    kind: base.kind,
                    size: base.size,
                    mode: base.mode,
                    sha256: base.hash.clone().filter(|_| base.kind == PathKind::File),
                    kept: false,
                },
                changed: conflict.is_some(),
                conflict,
            }
        })
        .collect();
    let conflict_reason = paths
        .iter()
        .filter_map(|path| path.conflict)
        .max_by_key(|reason| matches!(reason, ConflictReason::External));
    StagedChange {
        id: change.id,
        call_id: change.call_id.clone(),
        tool: change.tool.clone(),
        requester: change.requester.clone(),
        summary: change.summary.clone(),
        diff: change.diff.clone(),
        conflict: conflict_reason.is_some(),
        conflict_reason,
        paths,
        decision: change.decision,
        result: change.result.clone(),
        applied_call_id: change.applied_call_id.clone(),
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
