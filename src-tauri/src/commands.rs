//! Commands the window may call (see `capabilities/default.json`): the connection and start at
//! login. Generic over `tauri::Runtime` so the mock runtime drives them in tests.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_autostart::ManagerExt;

use crate::Shell;
use crate::state::Connection;

/// How the app reaches the daemon, for the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionInfo {
    /// `starting`, `embedded`, `attached` or `disconnected`.
    pub mode: String,
    /// The daemon's URL, or why it cannot be reached.
    pub detail: String,
}

/// How the app reaches the daemon.
#[tauri::command]
pub fn connection(shell: State<'_, Arc<Shell>>) -> ConnectionInfo {
    let connection = shell.state().connection.clone();
    let mode = match &connection {
        Connection::Starting => "starting",
        Connection::Embedded { .. } => "embedded",
        Connection::Attached { .. } => "attached",
        Connection::Disconnected { .. } => "disconnected",
    };
    ConnectionInfo {
        mode: mode.to_owned(),
        detail: connection.describe(),
    }
}

/// Whether the app starts at login, as the system says now.
#[tauri::command]
pub fn autostart_enabled<R: Runtime>(app: AppHandle<R>) -> Result<bool, String> {
    read_autostart(&app)
}

/// Turns start at login on or off; returns the system's state afterwards.
#[tauri::command]
pub fn set_autostart<R: Runtime>(app: AppHandle<R>, enabled: bool) -> Result<bool, String> {
    write_autostart(&app, enabled)?;
    crate::refresh_autostart(&app);
    crate::changed(&app);
    read_autostart(&app)
}

/// Reads start at login from the system (LaunchAgent on macOS, XDG autostart on Linux).
pub fn read_autostart<R: Runtime>(app: &AppHandle<R>) -> Result<bool, String> {
    app.autolaunch()
        .is_enabled()
        .map_err(|error| error.to_string())
}

/// Changes start at login.
pub fn write_autostart<R: Runtime>(app: &AppHandle<R>, enabled: bool) -> Result<(), String> {
    let launcher = app.autolaunch();
    let result = if enabled {
        launcher.enable()
    } else {
        launcher.disable()
    };
    result.map_err(|error| error.to_string())
}
