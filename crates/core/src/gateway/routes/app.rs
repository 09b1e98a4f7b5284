//! `/app`: the Souz web UI (the same page the menu-bar app shows), embedded in the binary.
//!
//! The files are public: they hold no secret. The page reads the token from the URL fragment
//! (`/app/#token=...`, which browsers never send to a server or put in a `Referer`), keeps it in
//! `sessionStorage`, and sends it as `Authorization: Bearer` on requests and as the WebSocket
//! subprotocol `souz.token.<token>` (see [`perimeter`](crate::gateway::perimeter)). A strict
//! Content-Security-Policy keeps the page to its own scripts and its own origin.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;

/// Scripts, styles, connections and images from this origin only; no framing, no plugins.
/// Media only from `blob:` URLs the page made itself (a spoken answer it fetched from
/// `/v1/speech/synthesis`).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; media-src blob:; connect-src 'self'; font-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The UI's files: name, content type, bytes.
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../../../../ui/index.html"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../../../ui/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/api.js"),
    ),
    (
        "chat.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/chat.js"),
    ),
    (
        "history.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/history.js"),
    ),
    (
        "undo.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/undo.js"),
    ),
    (
        "review.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/review.js"),
    ),
    (
        "i18n.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/i18n.js"),
    ),
    (
        "markdown.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/markdown.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/dom.js"),
    ),
    (
        "events.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/events.js"),
    ),
    (
        "pages.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/pages.js"),
    ),
    (
        "questions.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/questions.js"),
    ),
    (
        "servers.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/servers.js"),
    ),
    (
        "memory.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/memory.js"),
    ),
    (
        "models.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/models.js"),
    ),
    (
        "settings.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/settings.js"),
    ),
    (
        "config-docs.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/config-docs.js"),
    ),
    (
        "approval.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/approval.js"),
    ),
    (
        "telegram.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/telegram.js"),
    ),
    (
        "voice.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/voice.js"),
    ),
    (
        "setup.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/setup.js"),
    ),
    (
        "connect.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/connect.js"),
    ),
    (
        "recovery.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/recovery.js"),
    ),
    (
        "skills.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/skills.js"),
    ),
    (
        "schedules.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/schedules.js"),
    ),
    (
        "schedule-form.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/schedule-form.js"),
    ),
    (
        "tool-lines.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/tool-lines.js"),
    ),
    (
        "providers.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../../ui/providers.js"),
    ),
    (
        "icon.svg",
        "image/svg+xml",
        include_bytes!("../../../../../ui/icon.svg"),
    ),
];

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/app")
                .summary("The Souz web UI (redirects to `/app/`).")
                .tag("ui")
                .public()
                .plain_response(308, "Redirect to `/app/`."),
            redirect,
        )
        .route(
            Operation::get("/app/")
                .summary("The Souz web UI. Open it as `/app/#token=<token>` (`souz ui`).")
                .tag("ui")
                .public()
                .plain_response(200, "The page."),
            index,
        )
        .route(
            Operation::get("/app/{file}")
                .summary("A file of the web UI (scripts, styles, icons).")
                .tag("ui")
                .public()
                .plain_response(200, "The file.")
                .plain_response(404, "No such file."),
            file,
        )
}

async fn redirect() -> Redirect {
    // A relative target keeps the browser on the Host it used; the fragment (the token) is
    // carried over by the browser, never sent here.
    Redirect::permanent("/app/")
}

async fn index() -> Response {
    serve("index.html")
}

async fn file(Path(name): Path<String>) -> Response {
    serve(&name)
}

pub(crate) fn serve(name: &str) -> Response {
    match FILES.iter().find(|(file, _, _)| *file == name) {
        Some((_, content_type, bytes)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::REFERRER_POLICY, "no-referrer"),
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_FRAME_OPTIONS, "DENY"),
            ],
            *bytes,
        )
            .into_response(),
        None => ApiError::not_found(format!("The web UI has no file `{name}`.")).into_response(),
    }
}
