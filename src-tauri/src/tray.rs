//! The tray icon and its menu, redrawn from [`ShellState`] after every change: the icon shows
//! idle, a turn running, or approvals and questions waiting (with the count in the title); the
//! menu lists pending approvals (who asks, what, Approve / Deny), the agents' questions (who
//! asks, the question, a choice per item or "Answer in Souz…", from
//! [`question_entries`]), live turns, the next scheduled run ("Next: <name> at Mon 08:30") and
//! the runs parked on an approval ("<name> waits for your approval since …", with Approve /
//! Deny like any approval), Open Souz, Pause, Start at login and Quit. Desktop only;
//! never built under the mock runtime (GTK is not initialised there).

use std::sync::Arc;

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Runtime};

use crate::Shell;
use crate::state::{
    ShellState, TrayIcon as IconState, answer_choice, approval_line, question_entries, shorten,
};
use crate::texts::{fill, tr};

/// The tray icon's id.
pub const TRAY: &str = "souz";
/// Approvals listed in the menu before "more…".
const LISTED_APPROVALS: usize = 6;
/// Questions listed in the menu before "more…".
const LISTED_QUESTIONS: usize = 4;

// macOS tints template images itself; other systems get the white icon for dark panels.
#[cfg(target_os = "macos")]
mod images {
    pub const IDLE: &[u8] = include_bytes!("../../icons/tray/tray-idle-black@2x.png");
    pub const BUSY: &[u8] = include_bytes!("../../icons/tray/tray-busy-black@2x.png");
    pub const ATTENTION: &[u8] = include_bytes!("../../icons/tray/tray-attention-black@2x.png");
}
#[cfg(not(target_os = "macos"))]
mod images {
    pub const IDLE: &[u8] = include_bytes!("../../icons/tray/tray-idle-white.png");
    pub const BUSY: &[u8] = include_bytes!("../../icons/tray/tray-busy-white.png");
    pub const ATTENTION: &[u8] = include_bytes!("../../icons/tray/tray-attention-white.png");
}

fn image(state: IconState) -> tauri::Result<Image<'static>> {
    Image::from_bytes(match state {
        IconState::Idle => images::IDLE,
        IconState::Busy => images::BUSY,
        IconState::Attention(_) => images::ATTENTION,
    })
}

/// Creates the tray icon.
pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<TrayIcon<R>> {
    let state = app.state::<Arc<Shell>>().state().clone();
    TrayIconBuilder::with_id(TRAY)
        .icon(image(state.icon())?)
        .icon_as_template(cfg!(target_os = "macos"))
        .tooltip(state.tooltip())
        .menu(&menu(app, &state)?)
        .show_menu_on_left_click(true)
        .on_menu_event(on_menu_event)
        .build(app)
}

/// Redraws the icon, title, tooltip and menu from the current state, on the main thread.
///
/// The event followers redraw from their own threads, often at once (a question arrives as a
/// runtime event and as a chat event). Each redraw reads the state when it runs on the main
/// thread, so the last one shows the newest state; read beforehand, an older snapshot's menu
/// could be set last and hide what just arrived.
pub fn refresh<R: Runtime>(app: &AppHandle<R>) {
    let handle = app.clone();
    if let Err(error) = app.run_on_main_thread(move || redraw(&handle)) {
        tracing::warn!(%error, "could not update the tray");
    }
}

fn redraw<R: Runtime>(app: &AppHandle<R>) {
    let Some(tray) = app.tray_by_id(TRAY) else {
        return;
    };
    let state = app.state::<Arc<Shell>>().state().clone();
    let icon = state.icon();
    let title = match icon {
        IconState::Attention(count) => Some(count.to_string()),
        _ => None,
    };
    let result = image(icon)
        .and_then(|image| tray.set_icon(Some(image)))
        .and_then(|()| tray.set_icon_as_template(cfg!(target_os = "macos")))
        .and_then(|()| tray.set_title(title.as_deref()))
        .and_then(|()| tray.set_tooltip(Some(state.tooltip())))
        .and_then(|()| menu(app, &state))
        .and_then(|menu| tray.set_menu(Some(menu)));
    match result {
        Ok(()) => tracing::debug!(
            approvals = state.pending.len(),
            questions = state.questions.len(),
            autostart = state.autostart,
            language = %crate::texts::language().code(),
            "tray redrawn"
        ),
        Err(error) => tracing::warn!(%error, "could not update the tray"),
    }
}

fn menu<R: Runtime>(app: &AppHandle<R>, state: &ShellState) -> tauri::Result<Menu<R>> {
    let mut items: MenuItems<R> = Vec::new();
    items.push(Box::new(label(app, "status", state.connection.describe())?));
    if state.paused {
        items.push(Box::new(label(
            app,
            "paused",
            tr(
                "Paused: asks are denied, agents stopped",
                "Пауза: запросы отклоняются, агенты остановлены",
            )
            .into(),
        )?));
    }
    for (key, download) in &state.downloads {
        items.push(Box::new(label(
            app,
            &format!("download:{key}"),
            download.describe(),
        )?));
    }
    if let Some(next) = state.next_run_line(&chrono::Local) {
        items.push(Box::new(item(app, "open:/schedules", shown(&next))?));
    }
    items.push(Box::new(PredefinedMenuItem::separator(app)?));
    approval_items(app, state, &mut items)?;
    question_items(app, state, &mut items)?;
    turn_items(app, state, &mut items)?;
    control_items(app, state, &mut items)?;
    let references: Vec<&dyn IsMenuItem<R>> = items.iter().map(AsRef::as_ref).collect();
    Menu::with_items(app, &references)
}

/// A tray menu's items, in order.
type MenuItems<R> = Vec<Box<dyn IsMenuItem<R>>>;

/// The approvals waiting for the person, oldest first, each with Approve and Deny.
fn approval_items<R: Runtime>(
    app: &AppHandle<R>,
    state: &ShellState,
    items: &mut MenuItems<R>,
) -> tauri::Result<()> {
    if state.pending.is_empty() {
        items.push(Box::new(label(
            app,
            "no-approvals",
            tr(
                "Nothing waits for your approval",
                "Ничто не ждёт вашего одобрения",
            )
            .into(),
        )?));
    } else {
        items.push(Box::new(label(
            app,
            "approvals",
            fill(
                tr("Waiting for you ({n})", "Ждут вашего решения ({n})"),
                &[("n", &state.pending.len().to_string())],
            ),
        )?));
        // Oldest first: the one that expires soonest.
        let mut pending: Vec<_> = state.pending.values().collect();
        pending.sort_by_key(|approval| approval.created_at);
        for approval in pending.iter().take(LISTED_APPROVALS) {
            items.push(Box::new(item(
                app,
                format!("show:{}", approval.id),
                shown(&approval_line(approval, &chrono::Local)),
            )?));
            items.push(Box::new(item(
                app,
                format!("approve:{}", approval.id),
                shown(&format!(
                    "    {} {}",
                    tr("Approve", "Разрешить"),
                    approval.tool
                )),
            )?));
            items.push(Box::new(item(
                app,
                format!("deny:{}", approval.id),
                shown(&format!(
                    "    {} {}",
                    tr("Deny", "Отклонить"),
                    approval.tool
                )),
            )?));
        }
        if pending.len() > LISTED_APPROVALS {
            items.push(Box::new(item(
                app,
                "open:/queue",
                fill(
                    tr("{n} more…", "ещё {n}…"),
                    &[("n", &(pending.len() - LISTED_APPROVALS).to_string())],
                ),
            )?));
        }
    }
    Ok(())
}

/// The questions agents asked, oldest first.
fn question_items<R: Runtime>(
    app: &AppHandle<R>,
    state: &ShellState,
    items: &mut MenuItems<R>,
) -> tauri::Result<()> {
    if !state.questions.is_empty() {
        items.push(Box::new(PredefinedMenuItem::separator(app)?));
        items.push(Box::new(label(
            app,
            "questions",
            fill(
                tr("Questions for you ({n})", "Вопросы к вам ({n})"),
                &[("n", &state.questions.len().to_string())],
            ),
        )?));
        // Oldest first, like the approvals.
        let mut questions: Vec<_> = state.questions.values().collect();
        questions.sort_by_key(|question| question.created_at);
        for question in questions.iter().take(LISTED_QUESTIONS) {
            for entry in question_entries(question) {
                items.push(Box::new(item(app, entry.id, shown(&entry.label))?));
            }
        }
        if questions.len() > LISTED_QUESTIONS {
            items.push(Box::new(item(
                app,
                "open:/queue",
                fill(
                    tr("{n} more…", "ещё {n}…"),
                    &[("n", &(questions.len() - LISTED_QUESTIONS).to_string())],
                ),
            )?));
        }
    }
    Ok(())
}

/// The agent turns running now.
fn turn_items<R: Runtime>(
    app: &AppHandle<R>,
    state: &ShellState,
    items: &mut MenuItems<R>,
) -> tauri::Result<()> {
    if !state.turns.is_empty() {
        items.push(Box::new(PredefinedMenuItem::separator(app)?));
        items.push(Box::new(label(
            app,
            "turns",
            tr("Agents working", "Агенты работают").into(),
        )?));
        for turn in state.turns.values() {
            let title = turn
                .title
                .clone()
                .unwrap_or_else(|| format!("{} {}", tr("Chat", "Чат"), shorten(&turn.chat_id, 8)));
            items.push(Box::new(item(
                app,
                "open:/live",
                shown(&format!("    {title}")),
            )?));
        }
    }
    Ok(())
}

/// Open, Pause, Start at login and Quit.
fn control_items<R: Runtime>(
    app: &AppHandle<R>,
    state: &ShellState,
    items: &mut MenuItems<R>,
) -> tauri::Result<()> {
    items.push(Box::new(PredefinedMenuItem::separator(app)?));
    items.push(Box::new(item(
        app,
        "open",
        tr("Open Souz", "Открыть Souz"),
    )?));
    items.push(Box::new(item(
        app,
        "open:/setup",
        tr("Set up Souz…", "Настроить Souz…"),
    )?));
    items.push(Box::new(item(
        app,
        "open:/connect",
        tr("Connect Claude…", "Подключить Claude…"),
    )?));
    items.push(Box::new(CheckMenuItem::with_id(
        app,
        "pause",
        tr("Pause", "Пауза"),
        true,
        state.paused,
        None::<&str>,
    )?));
    items.push(Box::new(CheckMenuItem::with_id(
        app,
        "autostart",
        tr("Start at login", "Запускать при входе"),
        true,
        state.autostart,
        None::<&str>,
    )?));
    items.push(Box::new(PredefinedMenuItem::separator(app)?));
    items.push(Box::new(item(
        app,
        "restart",
        tr("Restart Souz", "Перезапустить Souz"),
    )?));
    items.push(Box::new(item(
        app,
        "quit",
        tr("Quit Souz", "Выйти из Souz"),
    )?));
    Ok(())
}

/// A line that only informs (greyed out).
fn label<R: Runtime>(app: &AppHandle<R>, id: &str, text: String) -> tauri::Result<MenuItem<R>> {
    MenuItem::with_id(app, id, shown(&text), false, None::<&str>)
}

/// A line that does something when clicked.
fn item<R: Runtime>(
    app: &AppHandle<R>,
    id: impl AsRef<str>,
    text: impl AsRef<str>,
) -> tauri::Result<MenuItem<R>> {
    MenuItem::with_id(app, id.as_ref(), text.as_ref(), true, None::<&str>)
}

/// A menu label as it may be shown: names, summaries and arguments come from models and
/// clients, so terminal controls and bidirectional or invisible characters are escaped.
fn shown(text: &str) -> String {
    souz_protocol::display::display_line(text).into_owned()
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    let id = event.id().as_ref().to_owned();
    tracing::info!(item = %id, "tray menu");
    if let Some((option_id, choice_id)) = answer_choice(&id) {
        return crate::answer(app, option_id.to_owned(), choice_id.to_owned());
    }
    match id.split_once(':') {
        Some(("approve", approval)) => crate::decide(app, approval.to_owned(), true, "tray"),
        Some(("deny", approval)) => crate::decide(app, approval.to_owned(), false, "tray"),
        // An approval or a question: the window at it in the Queue.
        Some(("show", id)) => crate::window::open(app, Some(&format!("/queue/{id}"))),
        Some(("open", route)) => crate::window::open(app, Some(route)),
        _ => match id.as_str() {
            "open" => crate::window::open(app, None),
            "pause" => {
                let paused = app.state::<Arc<Shell>>().state().paused;
                crate::set_paused(app, !paused);
            }
            "autostart" => {
                let enabled = app.state::<Arc<Shell>>().state().autostart;
                if let Err(error) = crate::commands::write_autostart(app, !enabled) {
                    tracing::warn!(%error, "could not change start at login");
                }
                crate::refresh_autostart(app);
                refresh(app);
            }
            "restart" => crate::restart_daemon(app),
            "quit" => app.exit(0),
            _ => {}
        },
    }
}
