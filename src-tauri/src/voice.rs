//! Push-to-talk from anywhere: the `[voice] hotkey` as a global shortcut
//! (`tauri-plugin-global-shortcut`), and the listening state in the tray.
//!
//! Pressing the hotkey shows the window's chat and asks the page to start (or stop) recording
//! (the `souz://voice` event); the page records, transcribes and reports what it is doing
//! (`voice_state`), which the tray shows. The page records rather than the shell: the
//! microphone, the level meter, the transcript for review and the upload are the web UI's, the
//! same in a browser; and the window is shown first because a webview records only from a
//! page that is on screen (WKWebView asks for the microphone in a visible window and pauses
//! capture in hidden ones on macOS; WebKitGTK needs the page's permission request on Linux).
//! A press that comes before the page is loaded waits in [`Shell`] until the page's first
//! `voice_state` takes it.
//!
//! Invariants: the shortcut is registered once, at setup, from the config the app started
//! with; one that cannot be registered (taken by another app, not a key) is logged and the
//! app runs without it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::Shell;
use crate::texts::tr;

/// The event the page listens to: toggle recording.
pub const VOICE_EVENT: &str = "souz://voice";

/// What push-to-talk in the window is doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoiceActivity {
    /// Not recording.
    #[default]
    Idle,
    /// Recording what the person says.
    Listening,
    /// Turning the recording into text.
    Transcribing,
}

impl VoiceActivity {
    /// The tray's words for it (`None` when idle).
    pub fn describe(self) -> Option<&'static str> {
        match self {
            Self::Idle => None,
            Self::Listening => Some(tr("listening…", "слушаю…")),
            Self::Transcribing => Some(tr("turning speech into text…", "распознаю речь…")),
        }
    }
}

/// What the page learns when it reports its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoiceAnswer {
    /// A hotkey press waited for the page: start recording now.
    pub listen: bool,
}

/// The page reports what push-to-talk is doing; the tray shows it. Answers whether a hotkey
/// press waited for the page (pressed while the window was still loading).
#[tauri::command]
pub fn voice_state<R: Runtime>(
    app: AppHandle<R>,
    shell: tauri::State<'_, Arc<Shell>>,
    state: VoiceActivity,
) -> VoiceAnswer {
    let changed = {
        let mut shown = shell.state();
        let changed = shown.voice != state;
        shown.voice = state;
        changed
    };
    if changed {
        crate::changed(&app);
    }
    VoiceAnswer {
        listen: shell.voice_pressed.swap(false, Ordering::SeqCst),
    }
}

/// The hotkey was pressed: show the chat and toggle recording there (or leave the press for
/// the page to take once it has loaded).
pub fn pressed<R: Runtime>(app: &AppHandle<R>) {
    tracing::info!("push-to-talk hotkey pressed");
    let shell = app.state::<Arc<Shell>>().inner().clone();
    match app.get_webview_window(crate::window::MAIN) {
        Some(window) => {
            let _ = window.show();
            let _ = window.set_focus();
            if let Err(error) = window.emit(VOICE_EVENT, ()) {
                tracing::warn!(%error, "could not tell the window to listen");
            }
        }
        None => {
            shell.voice_pressed.store(true, Ordering::SeqCst);
            crate::window::open(app, Some("/chat"));
        }
    }
}

/// Registers `hotkey` (`[voice] hotkey`; empty: none) as the global shortcut that starts and
/// stops listening.
#[cfg(desktop)]
pub fn register<R: Runtime>(app: &AppHandle<R>, hotkey: &str) {
    use tauri_plugin_global_shortcut::{GlobalShortcutExt, ShortcutState};
    let hotkey = hotkey.trim();
    if hotkey.is_empty() {
        return;
    }
    let registered = app
        .global_shortcut()
        .on_shortcut(hotkey, |app, _shortcut, event| {
            if event.state() == ShortcutState::Pressed {
                pressed(app);
            }
        });
    match registered {
        Ok(()) => tracing::info!(hotkey, "push-to-talk hotkey registered"),
        Err(error) => {
            tracing::warn!(hotkey, %error, "the push-to-talk hotkey could not be registered")
        }
    }
}
