//! Recovery mode: `config.toml` does not validate, so no runtime can start. Rather than exit
//! (and lock the person out of the settings editor), the daemon serves only the web UI,
//! `/health` and the config routes on the address the defaults and the environment give, shows
//! every problem with its line and column, and starts normally once a valid file is saved.
//!
//! Invariants:
//! - The file is left untouched until a whole new text validates exactly as a normal start
//!   would load it; then it is written atomically with `config.toml.bak` (as the settings
//!   editor does), and recovery ends with the configuration it describes.
//! - No database is opened and no tool, agent or MCP route exists here. `/v1/config` needs the
//!   operator token; Host and Origin are checked as on every request of the normal gateway.
//! - The daemon still proves who it is (`GET /v1/identity`, for the operator token only: client
//!   tokens live in the database) and signs the web UI in (`/v1/ui-codes`), so the CLI and the
//!   app reach their own daemon in recovery instead of calling it a stranger.
//! - Every other path answers 503 `unavailable`, saying why.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Serialize;
use souz_protocol::config::{ConfigProblem, ConfigReplace, ConfigSaved};
use souz_protocol::{ErrorCode, IdentityProof, IdentityQuery, UiCode, UiCodeExchange, UiSession};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::Gateway;
use super::error::ApiError;
use super::extract::{ApiJson, ApiQuery};
use super::perimeter::{self, Perimeter};
use crate::config::edit::{self, EditError};
use crate::config::{Config, Problem};
use crate::runtime::ServiceError;
use crate::runtime::config_editor::{problem_on_wire, revision};
use crate::token::proof;
use crate::token::ui_codes::{self, UiCodes};

/// How recovery ended.
#[derive(Debug)]
pub(crate) enum RecoveryEnd {
    /// A valid `config.toml` was saved: start normally with it.
    Fixed(Box<Config>),
    /// The daemon was told to stop (the signal's name).
    Stopped(String),
}

/// `GET /health` in recovery mode.
#[derive(Debug, Serialize)]
struct RecoveryHealth {
    /// Always `recovery`.
    status: &'static str,
    version: &'static str,
    /// Why: the problems of `config.toml`.
    problems: Vec<ConfigProblem>,
}

/// `GET /v1/config` in recovery mode: the file as it is and what is wrong with it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RecoveryDocument {
    /// Always `true`.
    recovery: bool,
    path: String,
    revision: String,
    text: String,
    problems: Vec<ConfigProblem>,
}

struct Shared {
    /// The defaults with the environment's overrides: what a new text is validated against.
    base: Config,
    token: String,
    /// Codes `souz ui --open` hands the browser (the same one-time sign-in as normally).
    ui_codes: UiCodes,
    problems: Mutex<Vec<Problem>>,
    fixed: Mutex<Option<Config>>,
    done: CancellationToken,
}

type Recovery = Arc<Shared>;

impl Gateway {
    /// Serves recovery mode on this socket (which stays bound) until a valid `config.toml` is
    /// saved or `stop` completes. `base` is the configuration of the defaults and the
    /// environment; `problems` are the file's; `token` is the operator token.
    pub(crate) async fn serve_recovery<F>(
        &self,
        base: Config,
        problems: Vec<Problem>,
        token: String,
        stop: F,
    ) -> std::io::Result<RecoveryEnd>
    where
        F: Future<Output = String> + Send + 'static,
    {
        let shared = Arc::new(Shared {
            base,
            token,
            ui_codes: UiCodes::default(),
            problems: Mutex::new(problems),
            fixed: Mutex::new(None),
            done: CancellationToken::new(),
        });
        let app = router(Arc::clone(&shared), self.local_addr());
        let stopped = Arc::new(Mutex::new(None::<String>));
        let graceful = {
            let (shared, stopped) = (Arc::clone(&shared), Arc::clone(&stopped));
            async move {
                tokio::select! {
                    reason = stop => {
                        *stopped.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
                    }
                    () = shared.done.cancelled() => {}
                }
            }
        };
        let limits = super::connections::ConnectionLimits {
            max_connections: shared.base.server.max_connections,
            header_read_timeout: std::time::Duration::from_secs(
                shared.base.server.header_read_timeout_seconds,
            ),
        };
        super::connections::serve(Arc::clone(&self.listener), app, limits, graceful).await;
        let fixed = shared
            .fixed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let reason = stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        Ok(match (reason, fixed) {
            (Some(reason), _) => RecoveryEnd::Stopped(reason),
            (None, Some(config)) => RecoveryEnd::Fixed(Box::new(config)),
            (None, None) => RecoveryEnd::Stopped("stopped".to_owned()),
        })
    }
}

fn router(shared: Recovery, bound: SocketAddr) -> Router {
    let perimeter = Perimeter::new(&shared.base.server, bound);
    let body_limit = usize::try_from(perimeter.body_limit()).unwrap_or(usize::MAX);
    Router::new()
        .route("/health", get(health))
        .route("/app", get(|| async { Redirect::permanent("/app/") }))
        .route(
            "/app/",
            get(|| async { super::routes::app::serve("index.html") }),
        )
        .route(
            "/app/{file}",
            get(
                |axum::extract::Path(name): axum::extract::Path<String>| async move {
                    super::routes::app::serve(&name)
                },
            ),
        )
        .route("/v1/config", get(document).put(replace))
        .route("/v1/identity", get(identity))
        .route("/v1/ui-codes", axum::routing::post(issue_code))
        .route("/v1/ui-codes/exchange", axum::routing::post(exchange_code))
        .fallback(unavailable)
        .with_state(shared)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(from_fn_with_state(perimeter, perimeter::guard))
}

fn problems(shared: &Shared) -> Vec<ConfigProblem> {
    shared
        .problems
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(problem_on_wire)
        .collect()
}

async fn health(State(shared): State<Recovery>) -> axum::Json<RecoveryHealth> {
    axum::Json(RecoveryHealth {
        status: "recovery",
        version: env!("CARGO_PKG_VERSION"),
        problems: problems(&shared),
    })
}

/// The operator token, compared in constant time.
fn authorize(shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    let presented = perimeter::bearer(headers).unwrap_or_default();
    if !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(shared.token.as_bytes())) {
        Ok(())
    } else {
        Err(ApiError::unauthorized(
            "Send the operator token as `Authorization: Bearer <token>`.",
        ))
    }
}

/// `GET /v1/identity` for the operator token (client tokens are in the database, which
/// recovery does not open: they get 404 as a revoked token would).
async fn identity(
    State(shared): State<Recovery>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<IdentityQuery>,
) -> Result<axum::Json<IdentityProof>, ApiError> {
    if !proof::valid_nonce(&query.nonce) {
        return Err(ApiError::invalid("nonce must be 32 to 128 hex characters."));
    }
    let digest = proof::digest(&shared.token);
    if proof::key_id(&digest) != query.key.trim() {
        return Err(ApiError::not_found(
            "No active credential has this key; was its token revoked?",
        ));
    }
    // The perimeter already refused a Host that does not name this daemon.
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    Ok(axum::Json(IdentityProof {
        proof: proof::prove(&digest, &query.nonce, host),
    }))
}

/// `POST /v1/ui-codes`: a one-time code that signs the web UI in (operator token).
async fn issue_code(
    State(shared): State<Recovery>,
    headers: HeaderMap,
) -> Result<(StatusCode, axum::Json<UiCode>), ApiError> {
    authorize(&shared, &headers)?;
    let code = shared
        .ui_codes
        .issue(std::time::Instant::now())
        .map_err(|error| ApiError::internal(&error))?;
    let lifetime = chrono::Duration::from_std(ui_codes::CODE_LIFETIME).unwrap_or_default();
    Ok((
        StatusCode::CREATED,
        axum::Json(UiCode {
            code,
            expires_at: chrono::Utc::now() + lifetime,
        }),
    ))
}

/// `POST /v1/ui-codes/exchange`: the token for a code, once, from the daemon's own page.
async fn exchange_code(
    State(shared): State<Recovery>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<UiCodeExchange>,
) -> Result<axum::Json<UiSession>, ApiError> {
    // As in the normal gateway: a browser always sends `Origin` on a POST.
    if !headers.contains_key(header::ORIGIN) {
        return Err(ApiError::unauthorized(
            "A sign-in code works only from the Souz page it was opened in.",
        ));
    }
    if !shared
        .ui_codes
        .redeem(&request.code, std::time::Instant::now())
    {
        return Err(ApiError::unauthorized(
            "This sign-in code is unknown, used or expired; run `souz ui --open` again.",
        ));
    }
    Ok(axum::Json(UiSession {
        token: shared.token.clone(),
    }))
}

async fn document(
    State(shared): State<Recovery>,
    headers: HeaderMap,
) -> Result<axum::Json<RecoveryDocument>, ApiError> {
    authorize(&shared, &headers)?;
    let path = shared.base.paths.config_file();
    let text = {
        let paths = shared.base.paths.clone();
        tokio::task::spawn_blocking(move || read_current(&paths))
            .await
            .unwrap_or_default()
    };
    Ok(axum::Json(RecoveryDocument {
        recovery: true,
        path: path.display().to_string(),
        revision: revision(&text),
        text,
        problems: problems(&shared),
    }))
}

async fn replace(
    State(shared): State<Recovery>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<ConfigReplace>,
) -> Result<axum::Json<ConfigSaved>, ApiError> {
    authorize(&shared, &headers)?;
    let worker = Arc::clone(&shared);
    let text = request.text;
    let base_revision = request.revision;
    let saved = tokio::task::spawn_blocking(move || save(&worker, &text, base_revision))
        .await
        .map_err(|error| ServiceError::Internal(error.to_string()))??;
    let backup = shared.base.paths.config_file().with_extension("toml.bak");
    *shared.fixed.lock().unwrap_or_else(PoisonError::into_inner) = Some(saved.0);
    tracing::info!("a valid config.toml was saved: leaving recovery mode");
    shared.done.cancel();
    Ok(axum::Json(ConfigSaved {
        revision: saved.1,
        applied: Vec::new(),
        restart_required: Vec::new(),
        backup: backup.display().to_string(),
    }))
}

/// The text of `config.toml` (empty when missing or refused: a link there is not followed).
fn read_current(paths: &crate::config::SouzPaths) -> String {
    edit::read_current(paths).ok().flatten().unwrap_or_default()
}

/// Validates `text` as a start would and writes it; the new configuration and revision.
fn save(
    shared: &Shared,
    text: &str,
    base_revision: Option<String>,
) -> Result<(Config, String), ServiceError> {
    let file = shared.base.paths.config_file();
    let io = |error: EditError| ServiceError::Internal(error.to_string());
    let _lock = edit::lock(&file).map_err(io)?;
    let current = read_current(&shared.base.paths);
    if base_revision.is_some_and(|expected| expected != revision(&current)) {
        return Err(ServiceError::Conflict {
            code: ErrorCode::Conflict,
            message: "config.toml changed since you opened it; reload and apply your change again"
                .to_owned(),
        });
    }
    match edit::write_validated(&shared.base, text) {
        Ok(config) => Ok((config, revision(text))),
        Err(EditError::Invalid(found)) => {
            let wire: Vec<ConfigProblem> = found.iter().map(problem_on_wire).collect();
            let message = match found.first() {
                Some(first) => format!("Not saved: {first}"),
                None => "Not saved.".to_owned(),
            };
            *shared
                .problems
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = found;
            Err(ServiceError::ConfigRejected {
                message,
                problems: wire,
                text: text.to_owned(),
            })
        }
        Err(other) => Err(io(other)),
    }
}

async fn unavailable() -> Response {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unavailable,
        "Souz is in recovery mode: config.toml has problems. Fix it in Settings (/app/) or \
         with PUT /v1/config; Souz starts once a valid file is saved.",
    )
    .into_response()
}
