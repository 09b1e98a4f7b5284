//! Native notifications: every approval request is posted with who asks, the tool and the key
//! argument, and Approve / Deny actions that decide it through the gate; a click on the body
//! opens the window at that approval; a decision made anywhere else withdraws it. Every question
//! an agent asks is posted as "Souz asks" with the question and its choices; a click opens the
//! window at the question, and an answer given anywhere withdraws it. Approvals that expire and
//! turns that end are posted too, as `[notifications]` in config.toml says. A scheduled run's
//! approval says which run waits; a scheduled run's end is posted with its outcome, and a click
//! opens the run's chat (else the schedule's history). A turn's end that left file changes
//! which can still be undone says how many files it changed and carries Undo, which undoes the
//! turn through the daemon (never forced: if a file changed since, nothing is undone and the
//! window opens at the History page's conflict view for that turn) and posts what came of it;
//! a click on its body opens the chat.
//!
//! Linux and the BSDs: `tauri-plugin-notification` speaks the freedesktop protocol over D-Bus,
//! with actions and withdrawal. macOS: the plugin's NSUserNotification path folds two actions
//! into an "Options" menu, so approvals go through UNUserNotificationCenter instead
//! (`macos`), with a category that has real side-by-side buttons.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_notification::{Action, ActionType, NotificationExt};

use souz_core::history::undo::MAX_LISTED as MAX_LISTED_CHANGES;
use souz_protocol::history::{UndoRequest, UndoSelection};

use crate::Shell;
use crate::state::{
    Notice, TurnChanges, UndoOutcome, chat_route, history_turn_route, notification_text,
    question_text, turn_ended_text, undo_text,
};
use crate::texts::{fill, tr};

#[cfg(target_os = "macos")]
mod macos;

/// The action type of approval notifications.
pub const APPROVAL_ACTIONS: &str = "souz.approval";
/// The Approve action.
pub const APPROVE: &str = "approve";
/// The Deny action.
pub const DENY: &str = "deny";
/// The action type of turn-end notifications whose changes can be undone.
pub const TURN_ACTIONS: &str = "souz.turn";
/// The Undo action.
pub const UNDO: &str = "undo";

/// What a notification on screen is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A pending approval (its id).
    Approval(String),
    /// A question an agent asks (its option id).
    Question(String),
    /// A notice whose click opens the window at a UI route (a scheduled run's end, a turn's
    /// end without changes to undo).
    Route(String),
    /// A turn's end whose file changes can be undone: Undo undoes them, a click opens the chat.
    Turn {
        /// The turn (chat execution).
        execution_id: String,
        /// Its chat.
        chat_id: String,
    },
}

impl Subject {
    /// What a turn's end is about: Undo when it left changes that can be undone, else a click
    /// that opens the chat.
    pub fn turn_end(chat_id: &str, execution_id: &str, changed: TurnChanges) -> Self {
        if changed.undoable() {
            Self::Turn {
                execution_id: execution_id.to_owned(),
                chat_id: chat_id.to_owned(),
            }
        } else {
            Self::Route(chat_route(chat_id))
        }
    }

    /// The approval's, the question's or the turn's id, or the route.
    fn id(&self) -> &str {
        match self {
            Self::Approval(id) | Self::Question(id) | Self::Route(id) => id,
            Self::Turn { execution_id, .. } => execution_id,
        }
    }

    /// The action type its notification carries: Approve / Deny for approvals, Undo for a
    /// turn's changes; none for questions and routes (a click opens the window at them).
    pub fn actions(&self) -> Option<&'static str> {
        match self {
            Self::Approval(_) => Some(APPROVAL_ACTIONS),
            Self::Turn { .. } => Some(TURN_ACTIONS),
            Self::Question(_) | Self::Route(_) => None,
        }
    }

    /// The notification's `extra`, which names what it is about.
    pub fn extras(&self) -> Vec<(&'static str, &str)> {
        match self {
            Self::Approval(id) => vec![("approvalId", id)],
            Self::Question(id) => vec![("optionId", id)],
            Self::Route(route) => vec![("route", route)],
            Self::Turn {
                execution_id,
                chat_id,
            } => vec![("executionId", execution_id), ("chatId", chat_id)],
        }
    }

    /// Reads what [`Subject::extras`] wrote, through `extra` (a key to its value).
    pub fn from_extras(extra: impl Fn(&str) -> Option<String>) -> Option<Self> {
        if let Some(id) = extra("approvalId") {
            return Some(Self::Approval(id));
        }
        if let Some(id) = extra("optionId") {
            return Some(Self::Question(id));
        }
        if let (Some(execution_id), Some(chat_id)) = (extra("executionId"), extra("chatId")) {
            return Some(Self::Turn {
                execution_id,
                chat_id,
            });
        }
        extra("route").map(Self::Route)
    }

    /// Its UNNotificationRequest identifier: `approval.<id>`, `question.<option id>`,
    /// `open.<route>` or `turn.<execution id>.<chat id>` (execution ids are UUIDs: no dot).
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    fn identifier(&self) -> String {
        match self {
            Self::Approval(id) => format!("approval.{id}"),
            Self::Question(id) => format!("question.{id}"),
            Self::Route(route) => format!("open.{route}"),
            Self::Turn {
                execution_id,
                chat_id,
            } => format!("turn.{execution_id}.{chat_id}"),
        }
    }

    /// Reads an identifier made by [`Subject::identifier`].
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    fn from_identifier(identifier: &str) -> Option<Self> {
        let (kind, rest) = identifier.split_once('.')?;
        match kind {
            "approval" => Some(Self::Approval(rest.to_owned())),
            "question" => Some(Self::Question(rest.to_owned())),
            "open" => Some(Self::Route(rest.to_owned())),
            "turn" => rest
                .split_once('.')
                .map(|(execution_id, chat_id)| Self::Turn {
                    execution_id: execution_id.to_owned(),
                    chat_id: chat_id.to_owned(),
                }),
            _ => None,
        }
    }
}

/// Notifications on screen: what each is about -> notification id.
#[derive(Default)]
pub struct Posted {
    ids: Mutex<HashMap<Subject, i32>>,
    next: AtomicI32,
}

impl Posted {
    fn assign(&self, subject: Subject) -> i32 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(subject, id);
        id
    }

    fn take(&self, subject: &Subject) -> Option<i32> {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(subject)
    }

    fn subject_of(&self, notification_id: i32) -> Option<Subject> {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(_, id)| **id == notification_id)
            .map(|(subject, _)| subject.clone())
    }
}

/// Registers the action types (Approve/Deny, Undo) and the handler of actions and clicks.
pub fn init<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(target_os = "macos")]
    macos::init(app);
    register_actions(app);
    let handle = app.clone();
    let _ = app.notification().on_action(move |performed| {
        let Some(active) = performed.notification() else {
            return;
        };
        let shell = handle.state::<Arc<Shell>>();
        let subject = Subject::from_extras(|key: &str| {
            active
                .extra()
                .get(key)
                .and_then(|value| value.as_str())
                .map(str::to_owned)
        })
        .or_else(|| shell.notifications.subject_of(active.id()));
        if let Some(subject) = subject {
            respond(&handle, subject, performed.action_id());
        }
    });
}

/// (Re)registers the action types with their titles in the shell's language now (Linux and the
/// BSDs; macOS registers its categories once, in `macos::init`).
fn register_actions<R: Runtime>(app: &AppHandle<R>) {
    let approval = ActionType::builder(APPROVAL_ACTIONS)
        .actions(vec![
            Action::builder(APPROVE, tr("Approve", "Разрешить")).build(),
            Action::builder(DENY, tr("Deny", "Отклонить"))
                .destructive(true)
                .build(),
        ])
        .build();
    let turn = ActionType::builder(TURN_ACTIONS)
        .actions(vec![Action::builder(UNDO, tr("Undo", "Отменить")).build()])
        .build();
    if let Err(error) = app
        .notification()
        .register_action_types(vec![approval, turn])
    {
        tracing::warn!(%error, "notification actions are not available");
    }
}

/// What a person did on a notification, by what it is about.
fn respond<R: Runtime>(app: &AppHandle<R>, subject: Subject, action: &str) {
    match subject {
        Subject::Approval(approval_id) => acted(app, &approval_id, action),
        Subject::Question(option_id) => asked(app, &option_id, action),
        Subject::Route(route) => {
            tracing::info!(%route, %action, "notification action");
            // Nothing to withdraw later: forget it once it was clicked.
            app.state::<Arc<Shell>>()
                .notifications
                .take(&Subject::Route(route.clone()));
            crate::window::open(app, Some(&route));
        }
        Subject::Turn {
            execution_id,
            chat_id,
        } => {
            tracing::info!(%execution_id, %action, "turn notification action");
            app.state::<Arc<Shell>>()
                .notifications
                .take(&Subject::Turn {
                    execution_id: execution_id.clone(),
                    chat_id: chat_id.clone(),
                });
            if action == UNDO {
                undo_turn(app, execution_id);
            } else {
                crate::window::open(app, Some(&chat_route(&chat_id)));
            }
        }
    }
}

/// The end of a turn: asks the history what the turn changed that can still be undone, then
/// posts how it ended, with Undo when there is something to undo. Without an answer (no
/// history kept, the daemon busy) it is posted without Undo.
fn turn_ended<R: Runtime>(
    app: &AppHandle<R>,
    chat_id: String,
    execution_id: String,
    how: String,
    title: Option<String>,
) {
    let handle = app.clone();
    crate::call_daemon(app, move |client| async move {
        let query = format!(
            "?execution_id={}&limit={MAX_LISTED_CHANGES}",
            query_value(&execution_id)
        );
        let changed = match client.history(&query).await {
            Ok(list) => TurnChanges::of(&list.changes),
            Err(error) => {
                tracing::debug!(%error, %execution_id, "could not read the turn's changes");
                TurnChanges::default()
            }
        };
        let title = match title {
            Some(title) => Some(title),
            None => chat_title(&client, &chat_id).await,
        };
        let text = turn_ended_text(&how, title.as_deref(), changed);
        tracing::info!(
            %execution_id,
            changes = changed.changes,
            files = changed.files,
            "turn notification"
        );
        let shell = handle.state::<Arc<Shell>>();
        let subject = Subject::turn_end(&chat_id, &execution_id, changed);
        post(&handle, &shell.notifications, subject, text);
    });
}

/// A chat's title when the shell did not learn it with the turn: the chats are listed most
/// recently changed first, so a chat whose turn just ended is at the top.
async fn chat_title(client: &souz_client::DaemonClient, chat_id: &str) -> Option<String> {
    match client
        .get::<souz_protocol::chat::ChatList>("/v1/chats?limit=20")
        .await
    {
        Ok(list) => list
            .items
            .into_iter()
            .find(|chat| chat.id == chat_id)
            .and_then(|chat| chat.title),
        Err(error) => {
            tracing::debug!(%error, "could not read the chat's title");
            None
        }
    }
}

/// Undo on a turn's notification: undoes the turn's changes through the daemon, never forced.
/// If files changed since, nothing is undone: the window opens at the turn's conflict view on
/// the History page, and the notification says so (its click opens it again).
fn undo_turn<R: Runtime>(app: &AppHandle<R>, execution_id: String) {
    let handle = app.clone();
    crate::call_daemon(app, move |client| async move {
        let request = UndoRequest {
            selection: UndoSelection::Turn {
                execution_id: execution_id.clone(),
            },
            force: false,
        };
        let outcome = UndoOutcome::of(
            client
                .undo(&request)
                .await
                .map_err(|error| error.to_string()),
        );
        tracing::info!(%execution_id, ?outcome, "undo from a notification");
        let shell = handle.state::<Arc<Shell>>();
        let text = undo_text(&outcome);
        if outcome.shows_conflicts() {
            let route = history_turn_route(&execution_id);
            tracing::info!(%route, "opened the turn's conflicts");
            crate::window::open(&handle, Some(&route));
            post(&handle, &shell.notifications, Subject::Route(route), text);
        } else {
            plain(&handle, &text.0, &text.1);
        }
    });
}

/// A value as it may stand in a URL query (ids are UUIDs; anything else is escaped).
fn query_value(value: &str) -> String {
    value
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// What a person did on a question's notification: any click shows it in the window.
pub fn asked<R: Runtime>(app: &AppHandle<R>, option_id: &str, action: &str) {
    tracing::info!(%option_id, %action, "notification action");
    crate::window::open(app, Some(&format!("/queue/{option_id}")));
}

/// What a person did on an approval notification.
pub fn acted<R: Runtime>(app: &AppHandle<R>, approval_id: &str, action: &str) {
    tracing::info!(%approval_id, %action, "notification action");
    match action {
        APPROVE => crate::decide(app, approval_id.to_owned(), true, "notification"),
        DENY => crate::decide(app, approval_id.to_owned(), false, "notification"),
        // A click on the body (`tap`, or the platform's default action): show it in the window.
        _ => crate::window::open(app, Some(&format!("/queue/{approval_id}"))),
    }
}

/// `[notifications]` as `config.toml` says now, so a change saved in Settings applies to the
/// next notice without a restart; the last good ones while the file does not load.
fn current_preferences(shell: &Shell) -> souz_core::config::NotificationsConfig {
    let mut preferences = shell
        .preferences
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match souz_core::config::Config::load(&souz_core::config::process_lookup) {
        Ok(config) => *preferences = config.notifications,
        Err(error) => tracing::debug!(%error, "kept the last [notifications] settings"),
    }
    preferences.clone()
}

/// Posts or withdraws the notification a state change calls for.
pub fn show<R: Runtime>(app: &AppHandle<R>, notice: Notice) {
    let shell = app.state::<Arc<Shell>>();
    let preferences = current_preferences(&shell);
    match notice {
        Notice::Approval(approval) if preferences.approval_requested => post(
            app,
            &shell.notifications,
            Subject::Approval(approval.id.clone()),
            notification_text(&approval),
        ),
        Notice::Question(question) if preferences.question_asked => post(
            app,
            &shell.notifications,
            Subject::Question(question.id.clone()),
            question_text(&question),
        ),
        Notice::Withdraw { approval_id } => {
            withdraw(app, &shell.notifications, &Subject::Approval(approval_id));
        }
        Notice::WithdrawQuestion { option_id } => {
            let subject = Subject::Question(option_id);
            if withdraw(app, &shell.notifications, &subject) {
                tracing::info!(option_id = %subject.id(), "question notification withdrawn");
            }
        }
        Notice::Expired { tool, .. } if preferences.approval_expired => {
            plain(
                app,
                tr("Approval expired", "Срок одобрения истёк"),
                &fill(
                    tr(
                        "Nobody answered, so {tool} was denied.",
                        "Никто не ответил, поэтому {tool} отклонён.",
                    ),
                    &[("tool", &tool)],
                ),
            );
        }
        Notice::TurnEnded {
            chat_id,
            execution_id,
            how,
            title,
        } if preferences.turn_finished => turn_ended(app, chat_id, execution_id, how, title),
        Notice::RunEnded {
            schedule_id,
            run_id,
            text,
            route,
        } => {
            tracing::info!(%schedule_id, run_id, "scheduled run ended");
            post(app, &shell.notifications, Subject::Route(route), text);
        }
        _ => {}
    }
}

/// Posts the notification of an approval or a question (title and body) and remembers it, so
/// that it can be withdrawn.
fn post<R: Runtime>(
    app: &AppHandle<R>,
    notifications: &Posted,
    subject: Subject,
    (title, body): (String, String),
) {
    let (title, body) = shown(&title, &body);
    let started = Instant::now();
    let id = notifications.assign(subject.clone());
    #[cfg(target_os = "macos")]
    let posted = macos::post(&subject.identifier(), &title, &body, subject.actions());
    #[cfg(not(target_os = "macos"))]
    let posted = {
        if subject.actions() == Some(TURN_ACTIONS) {
            // Undo in the language of the notification it is on.
            register_actions(app);
        }
        let mut builder = app.notification().builder().id(id).title(title).body(body);
        for (key, value) in subject.extras() {
            builder = builder.extra(key, value);
        }
        if let Some(actions) = subject.actions() {
            builder = builder.action_type_id(actions);
        }
        builder.show().map_err(|error| error.to_string())
    };
    #[cfg(target_os = "macos")]
    let _ = app;
    let micros = started.elapsed().as_micros() as u64;
    match (posted, &subject) {
        (Ok(()), Subject::Approval(approval_id)) => tracing::info!(
            %approval_id,
            notification_id = id,
            micros,
            "approval notification posted"
        ),
        (Ok(()), Subject::Question(option_id)) => tracing::info!(
            %option_id,
            notification_id = id,
            micros,
            "question notification posted"
        ),
        (Ok(()), Subject::Route(route)) => tracing::info!(
            %route,
            notification_id = id,
            micros,
            "notification posted"
        ),
        (Ok(()), Subject::Turn { execution_id, .. }) => tracing::info!(
            %execution_id,
            notification_id = id,
            micros,
            "turn notification posted with undo"
        ),
        (Err(error), _) => tracing::warn!(%error, "could not post a notification"),
    }
}

/// Withdraws the notification of an approval or a question; false if none was on screen.
fn withdraw<R: Runtime>(app: &AppHandle<R>, notifications: &Posted, subject: &Subject) -> bool {
    let Some(id) = notifications.take(subject) else {
        return false;
    };
    #[cfg(target_os = "macos")]
    {
        let _ = (app, id);
        macos::remove(&subject.identifier());
    }
    #[cfg(not(target_os = "macos"))]
    close(app, id);
    true
}

/// Closes a posted notification. On Linux the plugin closes it with a blocking D-Bus call, and
/// zbus (with the `tokio` feature another dependency turns on) blocks by starting a runtime,
/// which panics on the async runtime's worker threads that deliver events here: so it runs on
/// the blocking pool.
#[cfg(not(target_os = "macos"))]
fn close<R: Runtime>(app: &AppHandle<R>, id: i32) {
    let app = app.clone();
    tauri::async_runtime::spawn_blocking(move || {
        if let Err(error) = app.notification().remove_active(vec![id]) {
            tracing::debug!(%error, "could not withdraw a notification");
        }
    });
}

/// A notification's title and body as they may be shown: terminal controls and bidirectional
/// or invisible characters from tool names, summaries and chat titles escaped.
fn shown(title: &str, body: &str) -> (String, String) {
    (
        souz_protocol::display::display_line(title).into_owned(),
        souz_protocol::display::display_text(body).into_owned(),
    )
}

fn plain<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    let (title, body) = shown(title, body);
    if let Err(error) = app.notification().builder().title(title).body(body).show() {
        tracing::warn!(%error, "could not post a notification");
    }
}

#[cfg(test)]
mod tests;
