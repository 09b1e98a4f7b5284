//! The window: the web UI served by the daemon's gateway (`/app`), opened on demand from the
//! tray or a notification (or at launch with `--show`). Closing it keeps the app running in
//! the menu bar. How long a person waits for it is logged: the page loaded, and its first
//! paint as the page reports it ([`window_painted`]), measured from the request to open the
//! window and from the app's start.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tauri::webview::PageLoadEvent;
use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

use crate::Shell;

/// The window's label (the capability in `capabilities/default.json` names it).
pub const MAIN: &str = "main";

/// Shows the window at `route` (`/queue/<approval id>`, `/live`, ...), creating it if needed.
pub fn open<R: Runtime>(app: &AppHandle<R>, route: Option<&str>) {
    let Some(client) = app.state::<Arc<Shell>>().client.get().cloned() else {
        return;
    };
    if let Some(window) = app.get_webview_window(MAIN) {
        if let Some(route) = route {
            let script = format!(
                "location.hash = {};",
                serde_json::Value::String(format!("#{route}"))
            );
            let _ = window.eval(&script);
        }
        let _ = window.show();
        let _ = window.set_focus();
        return;
    }
    let url = match client.ui_url(route).parse() {
        Ok(url) => url,
        Err(error) => {
            tracing::error!(%error, "the UI address is not a URL");
            return;
        }
    };
    let requested = Instant::now();
    app.state::<Arc<Shell>>().timing.opened(requested);
    let built = WebviewWindowBuilder::new(app, MAIN, WebviewUrl::External(url))
        .title("Souz")
        .inner_size(1040.0, 760.0)
        .min_inner_size(640.0, 480.0)
        // How long a person waits for the page (the app test reports it).
        .on_page_load(move |_, payload| {
            if payload.event() == PageLoadEvent::Finished {
                let ms = u64::try_from(requested.elapsed().as_millis()).unwrap_or(u64::MAX);
                tracing::info!(ms, "window page loaded");
            }
        })
        .build();
    if let Err(error) = built {
        tracing::error!(%error, "could not open the window");
    }
}

/// When the app started and when the window was last asked for.
#[derive(Debug)]
pub struct Timing {
    started: Instant,
    /// The last request to open the window, until its first paint is reported.
    requested: Mutex<Option<Instant>>,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            requested: Mutex::new(None),
        }
    }
}

impl Timing {
    fn opened(&self, at: Instant) {
        *self
            .requested
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(at);
    }

    /// Milliseconds from the window's request and from the app's start to now, once per
    /// opened window (`None` when no window was asked for since the last report).
    pub fn painted(&self) -> Option<(u64, u64)> {
        let requested = self
            .requested
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        let ms = |since: Instant| u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
        Some((ms(requested), ms(self.started)))
    }
}

/// The page painted for the first time (`first_paint_ms` after its navigation began, as its
/// paint timing says): logged with the time since the window was asked for and since the app
/// started, both read on arrival, so they include the report's trip.
#[tauri::command]
pub fn window_painted(shell: tauri::State<'_, Arc<Shell>>, first_paint_ms: f64) {
    if let Some((ms, since_start_ms)) = shell.timing.painted() {
        let page_ms = first_paint_ms.max(0.0).round() as u64;
        tracing::info!(ms, since_start_ms, page_ms, "window first paint");
    }
}
