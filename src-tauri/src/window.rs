//! The window: the web UI served by the daemon's gateway (`/app`), opened on demand from the
//! tray or a notification. Closing it keeps the app running in the menu bar.

use std::sync::Arc;
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
