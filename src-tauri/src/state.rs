//! What the shell shows, as plain data: pending approvals, the agents' pending questions, live
//! turns, the pause switch, the connection and the schedules (`schedules`: the next run, runs
//! parked on an approval), folded from the daemon's events; and what each
//! change means for the tray and for notifications. Nothing here touches Tauri, so it is tested
//! as ordinary code.
//!
//! Invariants: the state is rebuilt from the API on every (re)connection and then only moved by
//! events, so a missed event heals at the next reconnect; a notification is posted once per
//! approval or question and withdrawn as soon as it is decided, answered, withdrawn or expires
//! anywhere.

use std::collections::BTreeMap;

use souz_protocol::chat::{ActiveTurn, ChatEvent, ChatEventBody, Question, SelectionMode};
use souz_protocol::{Approval, RuntimeEvent};

use crate::texts::{fill, tr};

mod schedules;
mod undo;

pub use schedules::{
    KnownSchedule, approval_line, parked_line, parked_text, run_ended_text, run_route, short_time,
};
pub use undo::{
    TurnChanges, UndoOutcome, chat_route, history_turn_route, turn_ended_text, undo_text,
};

/// How the shell reaches the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Starting up.
    Starting,
    /// The daemon runs inside this app.
    Embedded {
        /// Its base URL.
        url: String,
    },
    /// Another `souz serve` owns the port; the app is its client.
    Attached {
        /// Its base URL.
        url: String,
    },
    /// The daemon cannot be reached.
    Disconnected {
        /// Why, in words.
        reason: String,
    },
}

impl Connection {
    /// One line for the tray.
    pub fn describe(&self) -> String {
        match self {
            Self::Starting => "Starting…".to_owned(),
            Self::Embedded { url } => format!("Running at {url}"),
            Self::Attached { url } => format!("Attached to souz serve at {url}"),
            Self::Disconnected { reason } => format!("Not connected: {reason}"),
        }
    }
}

/// A turn the tray lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTurn {
    /// Execution id.
    pub execution_id: String,
    /// Chat id.
    pub chat_id: String,
    /// Chat title, if any.
    pub title: Option<String>,
}

/// A model the daemon is fetching (memory's local embedding model), as its events tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// The model (`local/<name>` for memory's, the profile for a local chat model).
    pub model: String,
    /// Whether it is a local model pulled by the person (else memory's embedding model).
    pub local: bool,
    /// Bytes received so far.
    pub received: u64,
    /// Bytes in all.
    pub total: u64,
    /// Why the last attempt failed (memory searches by words until a later use fetches it).
    pub failed: Option<String>,
}

impl Download {
    /// Where it is kept in [`ShellState::downloads`].
    fn key(local: bool, model: &str) -> String {
        format!("{}:{model}", if local { "local" } else { "memory" })
    }

    /// One line for the tray menu and tooltip.
    pub fn describe(&self) -> String {
        let (failed, running) = if self.local {
            (
                tr(
                    "Local model {model} could not be downloaded: {error}",
                    "Локальная модель {model} не скачалась: {error}",
                ),
                tr(
                    "Downloading local model {model}: {percent}% of {total} MB",
                    "Скачивается локальная модель {model}: {percent}% из {total} МБ",
                ),
            )
        } else {
            (
                tr(
                    "Memory model {model} could not be downloaded: {error}",
                    "Модель памяти {model} не скачалась: {error}",
                ),
                tr(
                    "Downloading memory model {model}: {percent}% of {total} MB",
                    "Скачивается модель памяти {model}: {percent}% из {total} МБ",
                ),
            )
        };
        match &self.failed {
            Some(error) => fill(
                failed,
                &[("model", &self.model), ("error", &shorten(error, 60))],
            ),
            None => fill(
                running,
                &[
                    ("model", &self.model),
                    ("percent", &percent(self.received, self.total).to_string()),
                    ("total", &format!("{:.0}", self.total as f64 / 1_048_576.0)),
                ],
            ),
        }
    }
}

/// `part` of `whole` in whole percent, 0 to 100 (0 of nothing is 0).
fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        0
    } else {
        (u128::from(part.min(whole)) * 100 / u128::from(whole)) as u64
    }
}

/// Everything the shell shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellState {
    /// How the daemon is reached.
    pub connection: Connection,
    /// Pending approvals by id.
    pub pending: BTreeMap<String, Approval>,
    /// Questions the agents wait on, by option id.
    pub questions: BTreeMap<String, Question>,
    /// Running turns by execution id.
    pub turns: BTreeMap<String, LiveTurn>,
    /// Whether Souz is paused.
    pub paused: bool,
    /// Whether the app starts at login (as the system reports it).
    pub autostart: bool,
    /// Model downloads under way or failed, memory's and local models' (by kind and model).
    pub downloads: BTreeMap<String, Download>,
    /// The schedules by id, as `GET /v1/schedules` last listed them.
    pub schedules: BTreeMap<String, KnownSchedule>,
    /// What push-to-talk in the window is doing (the page reports it: `voice_state`).
    pub voice: crate::voice::VoiceActivity,
}

impl Default for ShellState {
    fn default() -> Self {
        Self {
            connection: Connection::Starting,
            pending: BTreeMap::new(),
            questions: BTreeMap::new(),
            turns: BTreeMap::new(),
            paused: false,
            autostart: false,
            downloads: BTreeMap::new(),
            schedules: BTreeMap::new(),
            voice: crate::voice::VoiceActivity::Idle,
        }
    }
}

/// What the tray icon shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayIcon {
    /// Nothing going on.
    Idle,
    /// An agent turn is running.
    Busy,
    /// Approvals or questions wait for the person (with the count).
    Attention(usize),
}

/// A notification to post or withdraw.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// An approval waits: who asks, the tool, the key argument; Approve and Deny actions.
    Approval(Box<Approval>),
    /// Withdraw the approval's notification (decided or expired elsewhere).
    Withdraw {
        /// The approval.
        approval_id: String,
    },
    /// An agent asks a question: "Souz asks", the question and its choices.
    Question(Box<Question>),
    /// Withdraw the question's notification (answered, cancelled or expired anywhere).
    WithdrawQuestion {
        /// The option id.
        option_id: String,
    },
    /// An approval expired unanswered (a denial).
    Expired {
        /// The approval.
        approval_id: String,
        /// The tool.
        tool: String,
    },
    /// An agent turn ended: how, and (once the history is asked) the files it changed, with
    /// Undo when they can still be undone.
    TurnEnded {
        /// The chat.
        chat_id: String,
        /// The turn (chat execution).
        execution_id: String,
        /// `finished`, `failed` or `cancelled`.
        how: String,
        /// The chat title, if known.
        title: Option<String>,
    },
    /// A scheduled run ended: its outcome; a click opens `route` (the run's chat, else the
    /// schedule's history).
    RunEnded {
        /// The schedule.
        schedule_id: String,
        /// The run.
        run_id: i64,
        /// Title and body ([`run_ended_text`]).
        text: (String, String),
        /// The UI route a click opens.
        route: String,
    },
}

impl ShellState {
    /// What waits for the person: approvals and questions.
    pub fn waiting(&self) -> usize {
        self.pending.len() + self.questions.len()
    }

    /// The icon for the current state: what waits for the person beats running turns beats
    /// idle.
    pub fn icon(&self) -> TrayIcon {
        if self.waiting() > 0 {
            TrayIcon::Attention(self.waiting())
        } else if !self.turns.is_empty() {
            TrayIcon::Busy
        } else {
            TrayIcon::Idle
        }
    }

    /// The tooltip.
    pub fn tooltip(&self) -> String {
        let mut parts = vec!["Souz".to_owned()];
        if self.paused {
            parts.push("paused".to_owned());
        }
        match self.pending.len() {
            0 => {}
            1 => parts.push("1 approval waiting".to_owned()),
            count => parts.push(format!("{count} approvals waiting")),
        }
        match self.questions.len() {
            0 => {}
            1 => parts.push("1 question waiting".to_owned()),
            count => parts.push(format!("{count} questions waiting")),
        }
        match self.turns.len() {
            0 => {}
            1 => parts.push("1 agent turn running".to_owned()),
            count => parts.push(format!("{count} agent turns running")),
        }
        for download in self.downloads.values() {
            parts.push(download.describe());
        }
        if let Some(said) = self.voice.describe() {
            parts.push(said.to_owned());
        }
        parts.join(" — ")
    }

    /// Replaces what the API reported at (re)connection; returns the notifications to post
    /// for approvals and questions that are new and to withdraw for ones that went away.
    pub fn reset(
        &mut self,
        pending: Vec<Approval>,
        questions: Vec<Question>,
        turns: Vec<ActiveTurn>,
        paused: bool,
    ) -> Vec<Notice> {
        let mut notices = Vec::new();
        let fresh: BTreeMap<String, Approval> = pending
            .into_iter()
            .map(|approval| (approval.id.clone(), approval))
            .collect();
        for id in self.pending.keys() {
            if !fresh.contains_key(id) {
                notices.push(Notice::Withdraw {
                    approval_id: id.clone(),
                });
            }
        }
        for (id, approval) in &fresh {
            if !self.pending.contains_key(id) {
                notices.push(Notice::Approval(Box::new(approval.clone())));
            }
        }
        self.pending = fresh;
        let fresh: BTreeMap<String, Question> = questions
            .into_iter()
            .map(|question| (question.id.clone(), question))
            .collect();
        for id in self.questions.keys() {
            if !fresh.contains_key(id) {
                notices.push(Notice::WithdrawQuestion {
                    option_id: id.clone(),
                });
            }
        }
        for (id, question) in &fresh {
            if !self.questions.contains_key(id) {
                notices.push(Notice::Question(Box::new(question.clone())));
            }
        }
        self.questions = fresh;
        self.turns = turns
            .into_iter()
            .map(|turn| {
                (
                    turn.execution.id.clone(),
                    LiveTurn {
                        execution_id: turn.execution.id,
                        chat_id: turn.execution.chat_id,
                        title: turn.chat_title,
                    },
                )
            })
            .collect();
        self.paused = paused;
        notices
    }

    /// Applies a runtime event; returns the notifications it calls for.
    pub fn apply_runtime(&mut self, event: &RuntimeEvent) -> Vec<Notice> {
        match event {
            RuntimeEvent::ApprovalRequested { approval } => {
                if self
                    .pending
                    .insert(approval.id.clone(), (**approval).clone())
                    .is_none()
                {
                    vec![Notice::Approval(approval.clone())]
                } else {
                    Vec::new()
                }
            }
            RuntimeEvent::ApprovalDecided { approval_id, .. } => {
                self.pending.remove(approval_id);
                vec![Notice::Withdraw {
                    approval_id: approval_id.clone(),
                }]
            }
            RuntimeEvent::ApprovalExpired {
                approval_id, tool, ..
            } => {
                self.pending.remove(approval_id);
                vec![
                    Notice::Withdraw {
                        approval_id: approval_id.clone(),
                    },
                    Notice::Expired {
                        approval_id: approval_id.clone(),
                        tool: tool.clone(),
                    },
                ]
            }
            RuntimeEvent::OptionRequested { option } => {
                if self
                    .questions
                    .insert(option.id.clone(), (**option).clone())
                    .is_none()
                {
                    vec![Notice::Question(option.clone())]
                } else {
                    Vec::new()
                }
            }
            RuntimeEvent::OptionAnswered { option_id, .. }
            | RuntimeEvent::OptionCancelled { option_id, .. }
            | RuntimeEvent::OptionExpired { option_id, .. } => {
                self.questions.remove(option_id);
                vec![Notice::WithdrawQuestion {
                    option_id: option_id.clone(),
                }]
            }
            RuntimeEvent::DaemonPaused { .. } => {
                self.paused = true;
                Vec::new()
            }
            RuntimeEvent::DaemonResumed { .. } => {
                self.paused = false;
                Vec::new()
            }
            RuntimeEvent::MemoryModelDownloadProgress {
                model,
                received,
                total,
            } => {
                self.download_progress(false, model, *received, *total);
                Vec::new()
            }
            RuntimeEvent::LocalModelDownloadProgress {
                model,
                received,
                total,
            } => {
                self.download_progress(true, model, *received, *total);
                Vec::new()
            }
            RuntimeEvent::MemoryModelDownloadCompleted { model } => {
                self.downloads.remove(&Download::key(false, model));
                Vec::new()
            }
            RuntimeEvent::LocalModelDownloadCompleted { model }
            | RuntimeEvent::LocalModelDownloadCancelled { model } => {
                self.downloads.remove(&Download::key(true, model));
                Vec::new()
            }
            RuntimeEvent::MemoryModelDownloadFailed { model, error } => {
                self.download_failed(false, model, error);
                Vec::new()
            }
            RuntimeEvent::LocalModelDownloadFailed { model, error } => {
                self.download_failed(true, model, error);
                Vec::new()
            }
            RuntimeEvent::ScheduleRunEnded { .. } => self.run_ended(event),
            _ => Vec::new(),
        }
    }

    fn download_progress(&mut self, local: bool, model: &str, received: u64, total: u64) {
        self.downloads.insert(
            Download::key(local, model),
            Download {
                model: model.to_owned(),
                local,
                received,
                total,
                failed: None,
            },
        );
    }

    fn download_failed(&mut self, local: bool, model: &str, error: &str) {
        let download = self
            .downloads
            .entry(Download::key(local, model))
            .or_insert_with(|| Download {
                model: model.to_owned(),
                local,
                received: 0,
                total: 0,
                failed: None,
            });
        download.failed = Some(error.to_owned());
    }

    /// Applies a chat event: turns start and end, or wait on a question.
    pub fn apply_chat(&mut self, event: &ChatEvent) -> Vec<Notice> {
        let Some(execution_id) = event.execution_id.as_deref() else {
            return Vec::new();
        };
        let chat_id = event.chat_id.as_str();
        let how = match &event.body {
            ChatEventBody::ExecutionStarted(_) => {
                self.turns
                    .entry(execution_id.to_owned())
                    .or_insert_with(|| LiveTurn {
                        execution_id: execution_id.to_owned(),
                        chat_id: chat_id.to_owned(),
                        title: None,
                    });
                return Vec::new();
            }
            // A question for the person: the turn waits, it does not run.
            ChatEventBody::OptionRequested(_) => {
                self.turns.remove(execution_id);
                return Vec::new();
            }
            ChatEventBody::ExecutionFinished(_) => "finished",
            ChatEventBody::ExecutionFailed(_) => "failed",
            ChatEventBody::ExecutionCancelled(_) => "cancelled",
            _ => return Vec::new(),
        };
        let ended = self.turns.remove(execution_id);
        vec![Notice::TurnEnded {
            chat_id: chat_id.to_owned(),
            execution_id: execution_id.to_owned(),
            how: how.to_owned(),
            title: ended.and_then(|turn| turn.title),
        }]
    }

    /// Whether a chat event changes what the shell shows (turns start and end, or wait on a
    /// question): deltas and tool lines do not.
    pub fn moves_turns(event: &ChatEvent) -> bool {
        matches!(
            event.body,
            ChatEventBody::ExecutionStarted(_) | ChatEventBody::OptionRequested(_)
        ) || event.body.ends_execution()
    }
}

/// The argument a person most needs to see: the path, the command, or the domain.
pub fn key_argument(approval: &Approval) -> Option<String> {
    let arguments = approval.arguments.as_object()?;
    for key in [
        "command",
        "path",
        "url",
        "from",
        "source",
        "target",
        "destination",
    ] {
        if let Some(value) = arguments.get(key).and_then(|value| value.as_str()) {
            let value = if key == "url" {
                value
                    .split("://")
                    .nth(1)
                    .and_then(|rest| rest.split('/').next())
                    .unwrap_or(value)
            } else {
                value
            };
            return Some(shorten(value, 120));
        }
    }
    None
}

/// The tool an approval is about, with the external MCP server it belongs to if any
/// ("mcp__files__read from the MCP server files").
pub fn tool_label(approval: &Approval) -> String {
    match &approval.server {
        Some(server) => format!("{} from the MCP server {server}", approval.tool),
        None => approval.tool.clone(),
    }
}

/// The notification's title and body for an approval (a parked run's: [`parked_text`]).
pub fn notification_text(approval: &Approval) -> (String, String) {
    match &approval.parked {
        Some(run) => parked_text(approval, run),
        None => approval_text(approval),
    }
}

/// The notification's title and body for an approval a person or client asks for.
pub fn approval_text(approval: &Approval) -> (String, String) {
    let title = format!(
        "{} wants to use {}",
        approval.requester_label,
        tool_label(approval)
    );
    let mut body = shorten(&approval.summary, 200);
    if let Some(argument) = key_argument(approval)
        && !body.contains(&argument)
    {
        body.push('\n');
        body.push_str(&argument);
    }
    (title, body)
}

/// Who asks a question, in words: the chat's title, or its short id.
pub fn asker(question: &Question) -> String {
    match &question.chat_title {
        Some(title) if !title.trim().is_empty() => title.clone(),
        _ => format!(
            "Chat {}",
            question.chat_id.chars().take(8).collect::<String>()
        ),
    }
}

/// The notification's title and body for a question: "Souz asks", the question, its choices.
pub fn question_text(question: &Question) -> (String, String) {
    let mut body = shorten(&question.title, 200);
    let choices: Vec<&str> = question
        .options
        .iter()
        .map(|choice| choice.label.as_str())
        .collect();
    if !choices.is_empty() {
        body.push('\n');
        body.push_str(&shorten(&choices.join(" · "), 200));
    }
    ("Souz asks".to_owned(), body)
}

/// A tray menu entry: its id (what choosing it does) and its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuEntry {
    /// `show:<option id>` opens the window at the question, as for an approval;
    /// `answer:<option id>:<choice id>` answers it with that choice.
    pub id: String,
    /// What the menu shows.
    pub label: String,
}

/// The tray entries of a question: who asks and the question; for a single-choice question
/// each choice, which answers it; "Answer in Souz…" when the answer takes more than one click
/// (several choices, or words of one's own).
pub fn question_entries(question: &Question) -> Vec<MenuEntry> {
    let open = format!("show:{}", question.id);
    let mut entries = vec![MenuEntry {
        id: open.clone(),
        label: format!(
            "{} asks: {}",
            shorten(&asker(question), 30),
            shorten(&question.title, 70)
        ),
    }];
    let one_click = question.selection_mode == SelectionMode::Single;
    if one_click {
        entries.extend(question.options.iter().map(|choice| MenuEntry {
            id: format!("answer:{}:{}", question.id, choice.id),
            label: format!("    {}", shorten(&choice.label, 60)),
        }));
    }
    if !one_click || question.free_text || question.options.is_empty() {
        entries.push(MenuEntry {
            id: open,
            label: "    Answer in Souz…".to_owned(),
        });
    }
    entries
}

/// Reads an `answer:<option id>:<choice id>` menu id made by [`question_entries`] into the
/// option and the choice; `None` for other ids.
pub fn answer_choice(id: &str) -> Option<(&str, &str)> {
    // Option ids are UUIDs (no colon); the choice id is everything after them.
    let (option_id, choice_id) = id.strip_prefix("answer:")?.split_once(':')?;
    (!option_id.is_empty() && !choice_id.is_empty()).then_some((option_id, choice_id))
}

/// Cuts `text` to `limit` characters, marking the cut.
pub fn shorten(text: &str, limit: usize) -> String {
    let mut out: String = text.chars().take(limit).collect();
    if text.chars().count() > limit {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
