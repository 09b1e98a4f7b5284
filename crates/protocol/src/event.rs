//! Runtime events: what happened inside the daemon, in order, durable before announced.
//!
//! Event types are dotted names (`approval.requested`, `tool.call.started`), as in the
//! original API. Every event gets a global sequence number when it is stored. Clients replay from any
//! number (`WS /v1/events?after_seq=N`) and then follow live with no gap and no duplicate.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approvals::{Approval, ExpiryReason, RecordedDecision, Requester};
use crate::chat::Question;
use crate::memory::MemoryKind;
use crate::tools::Outcome;

/// A stored runtime event with its position in the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventEnvelope {
    /// Position in the runtime event stream, strictly increasing from 1.
    pub seq: i64,
    /// When the event was stored.
    pub at: DateTime<Utc>,
    /// What happened.
    pub event: RuntimeEvent,
}

/// Something that happened inside the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum RuntimeEvent {
    /// The daemon started and is about to accept requests.
    #[serde(rename = "daemon.started")]
    DaemonStarted {
        /// Daemon version.
        version: String,
        /// Process id.
        pid: u32,
    },
    /// The daemon was asked to stop and is draining requests.
    #[serde(rename = "daemon.stopping")]
    DaemonStopping {
        /// Why it stops (`SIGTERM`, `SIGINT`, `requested`).
        reason: String,
    },
    /// The person paused Souz: new approval requests are denied and agent turns are stopped
    /// until [`RuntimeEvent::DaemonResumed`].
    #[serde(rename = "daemon.paused")]
    DaemonPaused {
        /// Where it was paused from (`tray`, `ui`, `api`, `cli`).
        via: String,
    },
    /// The person resumed Souz after a pause.
    #[serde(rename = "daemon.resumed")]
    DaemonResumed {
        /// Where it was resumed from.
        via: String,
    },
    /// A tool call waits for a person's decision.
    #[serde(rename = "approval.requested")]
    ApprovalRequested {
        /// Everything a person needs to decide.
        approval: Box<Approval>,
    },
    /// A person decided a pending approval.
    #[serde(rename = "approval.decided")]
    ApprovalDecided {
        /// Approval id.
        approval_id: String,
        /// The call it was about.
        call_id: String,
        /// The tool.
        tool: String,
        /// The decision.
        decision: RecordedDecision,
    },
    /// A pending approval ended without a decision, which counts as a denial.
    #[serde(rename = "approval.expired")]
    ApprovalExpired {
        /// Approval id.
        approval_id: String,
        /// The call it was about.
        call_id: String,
        /// The tool.
        tool: String,
        /// Why.
        reason: ExpiryReason,
    },
    /// An agent asked the person a question; its turn waits for the answer
    /// (`POST /v1/options/{id}/answer`).
    #[serde(rename = "option.requested")]
    OptionRequested {
        /// The question, its choices and who asks.
        option: Box<Question>,
    },
    /// A question was answered; its turn resumes.
    #[serde(rename = "option.answered")]
    OptionAnswered {
        /// Option id.
        option_id: String,
        /// The chat.
        chat_id: String,
        /// The execution that resumes.
        execution_id: String,
        /// The chosen choice ids.
        selected_option_ids: Vec<String>,
        /// The answer in the person's words, if any.
        free_text: Option<String>,
    },
    /// A question stopped waiting because its execution ended (cancelled or failed).
    #[serde(rename = "option.cancelled")]
    OptionCancelled {
        /// Option id.
        option_id: String,
        /// The chat.
        chat_id: String,
        /// The execution that ended.
        execution_id: String,
    },
    /// A question stopped waiting because nobody answered in time.
    #[serde(rename = "option.expired")]
    OptionExpired {
        /// Option id.
        option_id: String,
        /// The chat.
        chat_id: String,
        /// The execution it belonged to.
        execution_id: String,
    },
    /// A tool call was allowed and started running.
    #[serde(rename = "tool.call.started")]
    ToolCallStarted {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Who asked.
        requester: Requester,
        /// What it does.
        summary: String,
    },
    /// A tool call ran and produced a result.
    #[serde(rename = "tool.call.finished")]
    ToolCallFinished {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Milliseconds it ran.
        duration_ms: u64,
    },
    /// A tool call failed, was refused, or was cancelled.
    #[serde(rename = "tool.call.failed")]
    ToolCallFailed {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// How it ended (`failed`, `denied`, `cancelled`).
        outcome: Outcome,
        /// Why, redacted and truncated.
        error: String,
    },
    /// A local embedding model is being downloaded (sent every few megabytes).
    #[serde(rename = "memory.model.download.progress")]
    MemoryModelDownloadProgress {
        /// The model (`local/<name>`).
        model: String,
        /// Bytes received so far.
        received: u64,
        /// Bytes in all.
        total: u64,
    },
    /// A local embedding model's download finished and verified; recall by meaning starts.
    #[serde(rename = "memory.model.download.completed")]
    MemoryModelDownloadCompleted {
        /// The model (`local/<name>`).
        model: String,
    },
    /// A local embedding model's download failed (retried on a later use; recall by words
    /// meanwhile).
    #[serde(rename = "memory.model.download.failed")]
    MemoryModelDownloadFailed {
        /// The model (`local/<name>`).
        model: String,
        /// Why.
        error: String,
    },
    /// A local model's file is being downloaded (`souz models pull`, the Models page); sent at
    /// each whole percent.
    #[serde(rename = "local.model.download.progress")]
    LocalModelDownloadProgress {
        /// The profile (`smollm2-135m-instruct`; the model is `local/<profile>`).
        model: String,
        /// Bytes on disk so far.
        received: u64,
        /// Bytes in all.
        total: u64,
    },
    /// A local model's file arrived and matched its pinned checksum.
    #[serde(rename = "local.model.download.completed")]
    LocalModelDownloadCompleted {
        /// The profile.
        model: String,
    },
    /// A local model's download failed (what arrived is kept when it can be resumed).
    #[serde(rename = "local.model.download.failed")]
    LocalModelDownloadFailed {
        /// The profile.
        model: String,
        /// Why.
        error: String,
    },
    /// A local model's download was stopped (the model removed, or the daemon stopping).
    #[serde(rename = "local.model.download.cancelled")]
    LocalModelDownloadCancelled {
        /// The profile.
        model: String,
    },
    /// A speech model's files are being downloaded (Settings › Voice, `souz models pull`,
    /// `POST /v1/speech/models/{id}/pull`); sent at each whole percent of all its files.
    #[serde(rename = "speech.model.download.progress")]
    SpeechModelDownloadProgress {
        /// The speech model's id (`whisper-base`).
        model: String,
        /// Bytes on disk so far, all its files together.
        received: u64,
        /// Bytes in all.
        total: u64,
    },
    /// A speech model's files all arrived and matched their pinned digests.
    #[serde(rename = "speech.model.download.completed")]
    SpeechModelDownloadCompleted {
        /// The speech model's id.
        model: String,
    },
    /// A speech model's download failed (what arrived is kept when it can be resumed).
    #[serde(rename = "speech.model.download.failed")]
    SpeechModelDownloadFailed {
        /// The speech model's id.
        model: String,
        /// Why.
        error: String,
    },
    /// A speech model's download was stopped (the model removed, or the daemon stopping).
    #[serde(rename = "speech.model.download.cancelled")]
    SpeechModelDownloadCancelled {
        /// The speech model's id.
        model: String,
    },
    /// A memory fact was stored (by hand, by an MCP client or by capture after a turn).
    #[serde(rename = "memory.fact.created")]
    MemoryFactCreated {
        /// Fact id.
        fact_id: String,
        /// Its kind.
        kind: MemoryKind,
        /// Its scope (`global`, `session:<chat id>`, `project:<id>`).
        scope: String,
        /// Who stored it (`user`, `writer`, `mcp:<client>`).
        created_by: String,
    },
    /// A memory fact was edited, pinned or unpinned.
    #[serde(rename = "memory.fact.updated")]
    MemoryFactUpdated {
        /// Fact id.
        fact_id: String,
        /// Its kind.
        kind: MemoryKind,
        /// Its scope.
        scope: String,
        /// Whether it is pinned now.
        pinned: bool,
    },
    /// A memory fact was retired (kept, never recalled).
    #[serde(rename = "memory.fact.retired")]
    MemoryFactRetired {
        /// Fact id.
        fact_id: String,
    },
    /// A memory fact was deleted with its evidence; a tombstone keeps it from coming back.
    #[serde(rename = "memory.fact.deleted")]
    MemoryFactDeleted {
        /// Fact id.
        fact_id: String,
    },
    /// A user's settings changed (`PATCH /v1/me/settings`: the interface language among them).
    /// It names no one: a client that shows them (the tray's language) reads its own again
    /// with `GET /v1/me/settings`.
    #[serde(rename = "settings.changed")]
    SettingsChanged {},
    /// Schedules were created, changed, paused, resumed or deleted, or one fired (its next
    /// fire moved). It names no one: a client that shows them (the tray's next run) reads its
    /// own again with `GET /v1/schedules`.
    #[serde(rename = "schedules.changed")]
    SchedulesChanged {},
    /// A scheduled run ended: `ok`, `blocked` (an approval it waited on was denied or ran
    /// out) or `failed`, with the reason in the person's language.
    #[serde(rename = "schedule.run.ended")]
    ScheduleRunEnded {
        /// The schedule.
        schedule_id: String,
        /// Its name.
        schedule_name: String,
        /// The run.
        run_id: i64,
        /// How it ended.
        state: crate::schedules::RunState,
        /// Why, when it did not end `ok`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The chat it ran in (where its answer and trace are), when it got that far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat_id: Option<String>,
    },
    /// A change to files was recorded in the history: a tool call's, once its write ended, or
    /// an undo's own (`undoes` names the change it took back). It names the paths, never
    /// their contents; `GET /v1/history` has the rest.
    #[serde(rename = "history.change.recorded")]
    HistoryChangeRecorded {
        /// The change's id.
        change_id: i64,
        /// The gate's id of the call that made it (or the undo's own id).
        call_id: String,
        /// The tool (`EditFile`), or `Undo`.
        tool: String,
        /// The client that asked (`souz`, an MCP client's token name, `cli`, `api`).
        client: String,
        /// The chat whose agent made it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat_id: Option<String>,
        /// What the call did, in one line.
        summary: String,
        /// The paths it changed.
        paths: Vec<String>,
        /// For an undo: the change it took back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        undoes: Option<i64>,
    },
    /// Recorded changes were undone (from the UI, the CLI, the API or an MCP client's
    /// `UndoChanges`); each undo is also announced as a `history.change.recorded`.
    #[serde(rename = "history.undone")]
    HistoryUndone {
        /// The client that asked.
        client: String,
        /// The changes taken back, newest first, each with its undo's own change.
        undone: Vec<crate::history::UndoneChange>,
        /// Whether it restored anyway where a file had changed since Souz wrote it.
        forced: bool,
    },
    /// A review of staged file changes waits for the person: a chat turn in review mode ended
    /// with staged writes, or an MCP client in review mode staged its first write of a review.
    #[serde(rename = "review.opened")]
    ReviewOpened {
        /// The review's id (`GET /v1/reviews/{id}`).
        review_id: i64,
        /// The client whose writes it holds (`souz` for a chat's agent).
        client: String,
        /// The chat, for a chat turn's review.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat_id: Option<String>,
        /// The chat turn (execution), for a chat turn's review.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        /// How many changes it holds now.
        changes: usize,
    },
    /// A staged change was decided: applied, discarded, or failed to apply.
    #[serde(rename = "review.decided")]
    ReviewDecided {
        /// The review.
        review_id: i64,
        /// The change and what became of it.
        change: crate::review::ReviewedChange,
    },
    /// Every change of a review is decided.
    #[serde(rename = "review.closed")]
    ReviewClosed {
        /// The review.
        review_id: i64,
    },
}

impl RuntimeEvent {
    /// The `type` tag of this event as stored and sent.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::DaemonStarted { .. } => "daemon.started",
            Self::DaemonStopping { .. } => "daemon.stopping",
            Self::DaemonPaused { .. } => "daemon.paused",
            Self::DaemonResumed { .. } => "daemon.resumed",
            Self::ApprovalRequested { .. } => "approval.requested",
            Self::ApprovalDecided { .. } => "approval.decided",
            Self::ApprovalExpired { .. } => "approval.expired",
            Self::OptionRequested { .. } => "option.requested",
            Self::OptionAnswered { .. } => "option.answered",
            Self::OptionCancelled { .. } => "option.cancelled",
            Self::OptionExpired { .. } => "option.expired",
            Self::ToolCallStarted { .. } => "tool.call.started",
            Self::ToolCallFinished { .. } => "tool.call.finished",
            Self::ToolCallFailed { .. } => "tool.call.failed",
            Self::MemoryModelDownloadProgress { .. } => "memory.model.download.progress",
            Self::MemoryModelDownloadCompleted { .. } => "memory.model.download.completed",
            Self::MemoryModelDownloadFailed { .. } => "memory.model.download.failed",
            Self::LocalModelDownloadProgress { .. } => "local.model.download.progress",
            Self::LocalModelDownloadCompleted { .. } => "local.model.download.completed",
            Self::LocalModelDownloadFailed { .. } => "local.model.download.failed",
            Self::LocalModelDownloadCancelled { .. } => "local.model.download.cancelled",
            Self::SpeechModelDownloadProgress { .. } => "speech.model.download.progress",
            Self::SpeechModelDownloadCompleted { .. } => "speech.model.download.completed",
            Self::SpeechModelDownloadFailed { .. } => "speech.model.download.failed",
            Self::SpeechModelDownloadCancelled { .. } => "speech.model.download.cancelled",
            Self::MemoryFactCreated { .. } => "memory.fact.created",
            Self::MemoryFactUpdated { .. } => "memory.fact.updated",
            Self::MemoryFactRetired { .. } => "memory.fact.retired",
            Self::MemoryFactDeleted { .. } => "memory.fact.deleted",
            Self::SettingsChanged {} => "settings.changed",
            Self::SchedulesChanged {} => "schedules.changed",
            Self::ScheduleRunEnded { .. } => "schedule.run.ended",
            Self::HistoryChangeRecorded { .. } => "history.change.recorded",
            Self::HistoryUndone { .. } => "history.undone",
            Self::ReviewOpened { .. } => "review.opened",
            Self::ReviewDecided { .. } => "review.decided",
            Self::ReviewClosed { .. } => "review.closed",
        }
    }
}

/// A frame on `WS /v1/events` that is not an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamControl {
    /// Replay of stored events is done; what follows is live.
    Live {
        /// The last sequence number replayed (or `after_seq` when nothing was replayed).
        last_seq: i64,
    },
    /// The client fell too far behind; it must reconnect with `after_seq` to resync.
    Resync {
        /// The last sequence number delivered to this client.
        last_seq: i64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_matches_serde_tag() {
        let events = [
            RuntimeEvent::DaemonStarted {
                version: "1".into(),
                pid: 7,
            },
            RuntimeEvent::DaemonStopping {
                reason: "signal".into(),
            },
            RuntimeEvent::DaemonPaused { via: "tray".into() },
            RuntimeEvent::DaemonResumed { via: "ui".into() },
            RuntimeEvent::OptionAnswered {
                option_id: "o".into(),
                chat_id: "c".into(),
                execution_id: "e".into(),
                selected_option_ids: vec!["choice-1".into()],
                free_text: None,
            },
            RuntimeEvent::OptionCancelled {
                option_id: "o".into(),
                chat_id: "c".into(),
                execution_id: "e".into(),
            },
            RuntimeEvent::OptionExpired {
                option_id: "o".into(),
                chat_id: "c".into(),
                execution_id: "e".into(),
            },
            RuntimeEvent::MemoryModelDownloadProgress {
                model: "local/m".into(),
                received: 1,
                total: 2,
            },
            RuntimeEvent::MemoryModelDownloadCompleted {
                model: "local/m".into(),
            },
            RuntimeEvent::MemoryModelDownloadFailed {
                model: "local/m".into(),
                error: "e".into(),
            },
            RuntimeEvent::LocalModelDownloadProgress {
                model: "m".into(),
                received: 1,
                total: 2,
            },
            RuntimeEvent::LocalModelDownloadCompleted { model: "m".into() },
            RuntimeEvent::LocalModelDownloadFailed {
                model: "m".into(),
                error: "e".into(),
            },
            RuntimeEvent::LocalModelDownloadCancelled { model: "m".into() },
            RuntimeEvent::SchedulesChanged {},
            RuntimeEvent::ScheduleRunEnded {
                schedule_id: "s".into(),
                schedule_name: "Inbox".into(),
                run_id: 1,
                state: crate::schedules::RunState::Blocked,
                reason: Some("denied".into()),
                chat_id: Some("c".into()),
            },
            RuntimeEvent::HistoryChangeRecorded {
                change_id: 1,
                call_id: "call".into(),
                tool: "EditFile".into(),
                client: "claude-code".into(),
                chat_id: None,
                summary: "Edit ~/a.txt".into(),
                paths: vec!["/home/a.txt".into()],
                undoes: None,
            },
            RuntimeEvent::HistoryUndone {
                client: "cli".into(),
                undone: vec![crate::history::UndoneChange {
                    change_id: 1,
                    undo_id: 2,
                }],
                forced: false,
            },
            RuntimeEvent::ReviewOpened {
                review_id: 1,
                client: "souz".into(),
                chat_id: Some("c".into()),
                execution_id: Some("e".into()),
                changes: 3,
            },
            RuntimeEvent::ReviewDecided {
                review_id: 1,
                change: crate::review::ReviewedChange {
                    change_id: 2,
                    decision: crate::review::ChangeDecision::Applied,
                },
            },
            RuntimeEvent::ReviewClosed { review_id: 1 },
        ];
        for event in events {
            let json = serde_json::to_value(&event).unwrap();
            assert_eq!(json["type"], event.kind());
        }
    }

    #[test]
    fn speech_model_download_kinds_match_serde_tags() {
        let model = || "whisper-tiny".to_owned();
        let events = [
            RuntimeEvent::SpeechModelDownloadProgress {
                model: model(),
                received: 1,
                total: 2,
            },
            RuntimeEvent::SpeechModelDownloadCompleted { model: model() },
            RuntimeEvent::SpeechModelDownloadFailed {
                model: model(),
                error: "e".into(),
            },
            RuntimeEvent::SpeechModelDownloadCancelled { model: model() },
        ];
        for event in events {
            let json = serde_json::to_value(&event).unwrap();
            assert_eq!(json["type"], event.kind());
            assert!(event.kind().starts_with("speech.model.download."));
        }
    }
}
