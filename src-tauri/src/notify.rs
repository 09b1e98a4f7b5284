//! Native notifications: every approval request is posted with who asks, the tool and the key
//! argument, and Approve / Deny actions that decide it through the gate; a click on the body
//! opens the window at that approval; a decision made anywhere else withdraws it. Every question
//! an agent asks is posted as "Souz asks" with the question and its choices; a click opens the
//! window at the question, and an answer given anywhere withdraws it. Approvals that expire and
//! turns that end are posted too, as `[notifications]` in config.toml says. A scheduled run's
//! approval says which run waits; a scheduled run's end is posted with its outcome, and a click
//! opens the run's chat (else the schedule's history).
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

use crate::Shell;
use crate::state::{Notice, notification_text, question_text};
use crate::texts::{fill, tr};

#[cfg(target_os = "macos")]
mod macos;

/// The action type of approval notifications.
pub const APPROVAL_ACTIONS: &str = "souz.approval";
/// The Approve action.
pub const APPROVE: &str = "approve";
/// The Deny action.
pub const DENY: &str = "deny";

/// What a notification on screen is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A pending approval (its id).
    Approval(String),
    /// A question an agent asks (its option id).
    Question(String),
    /// A notice whose click opens the window at a UI route (a scheduled run's end).
    Route(String),
}

impl Subject {
    /// The approval's or the question's id.
    fn id(&self) -> &str {
        match self {
            Self::Approval(id) | Self::Question(id) | Self::Route(id) => id,
        }
    }

    /// The action type its notification carries: Approve / Deny for approvals; none for
    /// questions (a click opens the window at them).
    fn actions(&self) -> Option<&'static str> {
        match self {
            Self::Approval(_) => Some(APPROVAL_ACTIONS),
            Self::Question(_) | Self::Route(_) => None,
        }
    }

    /// The key of the notification's `extra` that names it.
    #[cfg(not(target_os = "macos"))]
    fn extra_key(&self) -> &'static str {
        match self {
            Self::Approval(_) => "approvalId",
            Self::Question(_) => "optionId",
            Self::Route(_) => "route",
        }
    }

    /// Its UNNotificationRequest identifier: `approval.<id>` or `question.<option id>`.
    #[cfg(target_os = "macos")]
    fn identifier(&self) -> String {
        match self {
            Self::Approval(id) => format!("approval.{id}"),
            Self::Question(id) => format!("question.{id}"),
            Self::Route(route) => format!("open.{route}"),
        }
    }

    /// Reads an identifier made by [`Subject::identifier`].
    #[cfg(target_os = "macos")]
    fn from_identifier(identifier: &str) -> Option<Self> {
        if let Some(id) = identifier.strip_prefix("approval.") {
            Some(Self::Approval(id.to_owned()))
        } else if let Some(route) = identifier.strip_prefix("open.") {
            Some(Self::Route(route.to_owned()))
        } else {
            identifier
                .strip_prefix("question.")
                .map(|id| Self::Question(id.to_owned()))
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

/// Registers the Approve/Deny action type and the handler of actions and clicks.
pub fn init<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(target_os = "macos")]
    macos::init(app);
    let notification = app.notification();
    let actions = ActionType::builder(APPROVAL_ACTIONS)
        .actions(vec![
            Action::builder(APPROVE, tr("Approve", "Разрешить")).build(),
            Action::builder(DENY, tr("Deny", "Отклонить"))
                .destructive(true)
                .build(),
        ])
        .build();
    if let Err(error) = notification.register_action_types(vec![actions]) {
        tracing::warn!(%error, "notification actions are not available");
    }
    let handle = app.clone();
    let _ = notification.on_action(move |performed| {
        let Some(active) = performed.notification() else {
            return;
        };
        let shell = handle.state::<Arc<Shell>>();
        let extra = |key: &str| {
            active
                .extra()
                .get(key)
                .and_then(|value| value.as_str())
                .map(str::to_owned)
        };
        let subject = extra("approvalId")
            .map(Subject::Approval)
            .or_else(|| extra("optionId").map(Subject::Question))
            .or_else(|| extra("route").map(Subject::Route))
            .or_else(|| shell.notifications.subject_of(active.id()));
        if let Some(subject) = subject {
            respond(&handle, subject, performed.action_id());
        }
    });
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
    }
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
        Notice::TurnEnded { how, title, .. } if preferences.turn_finished => {
            let chat = title.unwrap_or_else(|| tr("A chat", "Чат").to_owned());
            plain(app, &format!("Agent turn {how}"), &chat);
        }
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
        let mut builder = app
            .notification()
            .builder()
            .id(id)
            .title(title)
            .body(body)
            .extra(subject.extra_key(), subject.id());
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
            "run notification posted"
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
